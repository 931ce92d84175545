import assert from 'node:assert/strict';
import { startTestApi } from './harness.js';
import type { TestApi } from './harness.js';

describe('api: projects', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ config: { workspaceRoot: '/srv/work' } });
  });
  after(async () => {
    await api.close();
  });

  it('creates, lists, gets, updates and deletes a project', async () => {
    const created = await api.call('POST', '/projects', {
      body: { name: 'site', workspace: '/srv/work/site', command: ['/usr/bin/agent', '--yes'], network: true },
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(
      [created.json.workspace, created.json.command, created.json.network],
      ['/srv/work/site', ['/usr/bin/agent', '--yes'], true],
    );
    const second = await api.call('POST', '/projects', {
      body: { name: 'lib', workspace: '/srv/work/lib', command: ['agent'] },
    });
    assert.equal(second.json.network, false, 'network defaults to off');

    const listed = await api.call('GET', '/projects');
    assert.deepEqual(
      listed.json.items.map((item: { name: string }) => item.name),
      ['site', 'lib'],
      'oldest first',
    );
    const id = created.json.id as string;
    assert.deepEqual((await api.call('GET', `/projects/${id}`)).json, created.json);

    const updated = await api.call('PATCH', `/projects/${id}`, { body: { network: false, command: ['agent', '-q'] } });
    assert.equal(updated.status, 200);
    assert.equal(updated.json.network, false);
    assert.deepEqual(updated.json.command, ['agent', '-q']);
    assert.equal(updated.json.name, 'site');
    assert.ok(updated.json.updated_at >= created.json.updated_at);

    assert.equal((await api.call('DELETE', `/projects/${id}`)).status, 204);
    assert.equal((await api.call('GET', `/projects/${id}`)).json.code, 'NOT_FOUND');
    assert.equal((await api.call('PATCH', `/projects/${id}`, { body: { name: 'x' } })).json.code, 'NOT_FOUND');
    assert.equal((await api.call('DELETE', `/projects/${id}`)).json.code, 'NOT_FOUND');
  });

  it('answers 422 INVALID_WORKSPACE for relative, escaping or out-of-root workspaces', async () => {
    for (const workspace of ['relative/dir', '/srv/work/../etc', '/etc', '/srv/workshop', '/srv/work/a\u0000b']) {
      const result = await api.call('POST', '/projects', { body: { name: 'bad', workspace, command: ['agent'] } });
      assert.equal(result.status, 422, workspace);
      assert.equal(result.json.code, 'INVALID_WORKSPACE');
    }
  });

  it('validates the command argv', async () => {
    for (const command of [[], 'agent --yes', [''], [1, 2], Array.from({ length: 65 }, () => 'a')]) {
      const result = await api.call('POST', '/projects', { body: { name: 'bad', workspace: '/srv/work/x', command } });
      assert.equal(result.status, 400, JSON.stringify(command).slice(0, 80));
      assert.equal(result.json.code, 'VALIDATION_FAILED');
    }
    assert.equal((await api.call('PATCH', '/projects/prj_000000000aaaaaaaaaaaaaaaa', { body: {} })).status, 400);
  });

  it('pages the listing with limit and cursor', async () => {
    for (let index = 0; index < 5; index++) {
      await api.call('POST', '/projects', { body: { name: `p${index}`, workspace: '/srv/work/p', command: ['a'] } });
    }
    const first = await api.call('GET', '/projects?limit=2');
    assert.equal(first.json.items.length, 2);
    const second = await api.call('GET', `/projects?limit=2&cursor=${first.json.next_cursor}`);
    assert.notEqual(second.json.items[0].id, first.json.items[0].id);
  });
});
