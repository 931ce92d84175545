// The API's logger (api/log.ts): secrets are censored wherever a line carries them by mistake, a node's logger
// keeps its own fields in the API's child, and a line written while serving a request (the error handler's)
// carries the request id through the request's child logger, at the level its caller chose.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { withApiRedaction } from '../../api/log.js';
import { errorHandler } from '../../api/errors.js';
import { requestId } from '../../api/request-id.js';
import { createLogger } from '../../transports/node/logger.js';
import { memoryLogger } from './harness.js';

const secrets = ['Bearer s3cret-bearer', 'svc_key_never_logged', 'credential-value-never-logged', 'hunter2'];

function lineWithSecrets(): Record<string, unknown> {
  return {
    event: 'test.slip',
    headers: { authorization: secrets[0], 'x-api-key': secrets[1] },
    err: { config: { headers: { Authorization: secrets[0] } } },
    apiKey: secrets[1],
    credential: { name: 'gitea', value: secrets[2] },
    password: secrets[3],
    keep: 'this stays',
  };
}

describe('api: the logger', () => {
  it('censors keys, authorization headers and credential values that slip into a line', () => {
    const memory = memoryLogger();
    memory.logger.warn(lineWithSecrets(), 'a line that carries what it should not');
    const text = memory.written.join('');
    for (const secret of secrets) assert.ok(!text.includes(secret), `${secret} censored`);
    assert.ok(text.includes('[redacted]'));
    assert.equal(memory.lines[0]!.fields.keep, 'this stays');
    assert.equal((memory.lines[0]!.fields.credential as Record<string, unknown>).name, 'gitea');
    assert.equal(memory.lines[0]!.level, 'warn');
  });

  it("a node's logger handed to the API keeps the node's fields and level and gains the API's redaction", () => {
    const written: string[] = [];
    const nodeLog = createLogger('n7', 'warn', { write: (line: string) => written.push(line) });
    const api = withApiRedaction(nodeLog);
    api.info({ event: 'below.level' }, 'not written: the node logs at warn');
    api.warn(lineWithSecrets(), 'written');
    assert.equal(written.length, 1);
    const line = JSON.parse(written[0]!) as Record<string, unknown>;
    assert.equal(line.node, 'n7');
    assert.equal(line.source, 'api');
    for (const secret of secrets) assert.ok(!written[0]!.includes(secret), `${secret} censored`);
  });

  it("logs a request's internal error at error level with the request's id", async () => {
    const memory = memoryLogger();
    const app = express();
    app.use(requestId());
    app.get('/boom', () => {
      throw new Error('boom');
    });
    app.use(errorHandler(memory.logger));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}/boom`, {
        headers: { 'x-request-id': 'boom-1', 'x-api-key': secrets[1]! },
      });
      assert.equal(response.status, 500);
      assert.equal(((await response.json()) as { requestId: string }).requestId, 'boom-1');
    } finally {
      server.close();
    }
    const [line] = memory.lines.filter((entry) => entry.event === 'request.error');
    assert.ok(line, 'the error is logged');
    assert.equal(line.level, 'error');
    assert.equal(line.fields.requestId, 'boom-1');
    assert.match(String(line.fields.error), /boom/);
    assert.ok(!memory.written.join('').includes(secrets[1]!));
  });
});
