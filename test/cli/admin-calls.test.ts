// The CLI retries an admin refusal by its typed code (the x-svc-code trailer), never by its text.
import assert from 'node:assert/strict';
import { status as grpcStatus } from '@grpc/grpc-js';
import { retryableAdminError } from '../../cli/admin-calls.js';
import { AdminCallError, RETRYABLE_ADMIN_CODES } from '../../transports/admin/admin-client.js';

describe('cli: which admin refusals are retried', () => {
  it('retries the codes waiting can cure, whatever the text says', () => {
    for (const code of ['not-leader', 'term-not-committed', 'change-in-flight', 'learner-behind']) {
      assert.equal(RETRYABLE_ADMIN_CODES.has(code), true, code);
      const err = new AdminCallError(grpcStatus.FAILED_PRECONDITION, 'no hint in this text', '', code);
      assert.equal(retryableAdminError(err), true, code);
    }
  });

  it('gives up at once on every other refusal, even one whose text says "retry"', () => {
    for (const code of ['not-a-learner', 'leadership-lost', 'member-lacks-kind4', 'transfer-refused', '']) {
      const err = new AdminCallError(grpcStatus.FAILED_PRECONDITION, 'not the leader; retry', '', code);
      assert.equal(retryableAdminError(err), false, code);
    }
  });

  it('retries when nobody answered (UNAVAILABLE), and never an error that is not an admin call', () => {
    assert.equal(retryableAdminError(new AdminCallError(grpcStatus.UNAVAILABLE, 'connection refused')), true);
    assert.equal(retryableAdminError(new Error('not the leader; retry')), false);
  });
});
