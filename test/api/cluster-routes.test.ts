// GET /cluster and GET /cluster/events in process, over a real ClusterFeed whose node is a stand-in
// (test/transports/cluster-feed-host.ts), with responses validated against the OpenAPI document: the feed's view
// matches the ClusterView schema (members with unknown figures included); admin keys only; the stream starts with
// the kept events and the view, resumes after Last-Event-ID (an id of another epoch reads from the start), and an
// event the node records reaches an open stream. Without a node, both answer 404.
import assert from 'node:assert/strict';
import { ClusterFeed } from '../../transports/node/cluster-feed.js';
import type { EngineLeadership } from '../../engine/types.js';
import { FakeHost, ownStatus, three } from '../transports/cluster-feed-host.js';
import { startTestApi, type TestApi } from './harness.js';

const reading = (fields: Partial<EngineLeadership> = {}): EngineLeadership => ({
  role: 'follower',
  term: 3,
  leaderId: 1,
  membershipVersion: 1,
  ...fields,
});

interface SseBlock {
  id: string;
  event: string;
  data: { kind?: string; summary?: string; leader?: { name: string } | null };
}

/** readBlocks reads an SSE response until `until` holds of the blocks so far (bounded by readsMax reads). */
async function readBlocks(response: Response, until: (blocks: SseBlock[]) => boolean, onOpen?: () => void) {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const blocks: SseBlock[] = [];
  let buffer = '';
  let opened = false;
  for (let read = 0; read < 200 && !until(blocks); read++) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
      const lines = buffer.slice(0, cut).split('\n');
      buffer = buffer.slice(cut + 2);
      const field = (name: string) => lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
      if (lines[0] === ': stream open' && !opened) {
        opened = true;
        onOpen?.();
      }
      if (field('event') === undefined) continue;
      blocks.push({ id: field('id')!, event: field('event')!, data: JSON.parse(field('data')!) as SseBlock['data'] });
    }
  }
  await reader.cancel();
  return blocks;
}

/** throughFirstView: the blocks up to the first view (the members' reads may publish more views after it). */
function throughFirstView(blocks: SseBlock[]): SseBlock[] {
  return blocks.slice(0, blocks.findIndex((block) => block.event === 'cluster.view') + 1);
}

describe('api: /cluster over a node feed', () => {
  const host = new FakeHost();
  host.answers.set('https://h-a', {
    ok: true,
    document: { role: 'leader', term: 3, commitSeq: 12, appliedSeq: 12, ready: true, buildVersion: '0.2.0' },
  });
  const feed = new ClusterFeed(host, { clusterPollIntervalMs: 50 });
  feed.started(reading({ leaderId: 0, term: 2 }), 'b');
  feed.stepped(reading(), 'b', () => three);
  let api: TestApi;
  let bare: TestApi;
  let developerKey = '';
  before(async () => {
    api = await startTestApi({ cluster: feed });
    bare = await startTestApi();
    const user = await api.call('POST', '/users', { body: { name: 'dev' } });
    developerKey = (
      await api.call('POST', '/keys', { body: { name: 'dev', user_id: user.json.id, role: 'developer' } })
    ).json.key as string;
  });
  after(async () => {
    feed.close();
    await api.close();
    await bare.close();
  });

  it('answers the view, valid against ClusterView, to an admin key only', async () => {
    const view = await api.call('GET', '/cluster');
    assert.equal(view.status, 200, view.text);
    assert.equal(view.json.leader.name, 'a');
    assert.deepEqual(
      view.json.members.map((m: { name: string; reachable: boolean }) => [m.name, m.reachable]),
      [
        ['a', true],
        ['b', true],
        ['c', false],
      ],
    );
    assert.equal(view.json.members[2].error, 'unreachable: ECONNREFUSED');
    for (const path of ['/cluster', '/cluster/events']) {
      const none = await api.call('GET', path, { key: null });
      assert.deepEqual([none.status, none.json.code], [401, 'UNAUTHORIZED']);
      const developer = await api.call('GET', path, { key: developerKey });
      assert.deepEqual([developer.status, developer.json.code], [403, 'FORBIDDEN']);
      const noNode = await bare.call('GET', path);
      assert.deepEqual([noNode.status, noNode.json.code], [404, 'NOT_FOUND']);
    }
    const badId = await api.call('GET', '/cluster/events', { headers: { 'last-event-id': 'yesterday' } });
    assert.deepEqual([badId.status, badId.json.code], [400, 'VALIDATION_FAILED']);
  });

  it('streams the kept events and the view, resumes after Last-Event-ID, and sends new events at once', async () => {
    const headers = { 'x-api-key': api.adminKey };
    const first = await fetch(`${api.baseUrl}/cluster/events`, { headers });
    assert.equal(first.status, 200);
    const blocks = throughFirstView(
      await readBlocks(first, (so) => so.some((block) => block.event === 'cluster.view')),
    );
    assert.deepEqual(
      blocks.map((block) => block.data.summary ?? block.event),
      ['b started as follower in term 2', 'a leads term 3', 'cluster.view'],
    );
    const [epoch] = blocks[0]!.id.split('-');
    assert.equal(Number(epoch), feed.epoch);

    // Resumed after the view: what follows it only (views as the members' reads change them), and an event the
    // node records while the stream is open, with a view naming the new leader after it.
    const resumed = await fetch(`${api.baseUrl}/cluster/events`, {
      headers: { ...headers, 'last-event-id': blocks.at(-1)!.id },
    });
    const electedAt = (so: SseBlock[]) => so.findIndex((block) => block.data.summary === 'c leads term 4');
    const later = await readBlocks(
      resumed,
      (so) => electedAt(so) >= 0 && so.slice(electedAt(so)).some((block) => block.event === 'cluster.view'),
      () => {
        // The node's status follows its engine: c leads term 4.
        host.own = ownStatus({ term: 4, leaderId: 3 });
        feed.stepped(reading({ term: 4, leaderId: 3 }), 'b', () => three);
      },
    );
    assert.ok(later.every((block) => block.data.summary === undefined || block.data.summary === 'c leads term 4'));
    const seqOf = (block: SseBlock) => Number(block.id.split('-')[1]);
    assert.ok(later.every((block) => seqOf(block) > seqOf(blocks.at(-1)!)));
    assert.equal(later.slice(electedAt(later)).find((block) => block.event === 'cluster.view')!.data.leader?.name, 'c');

    // An id of another epoch (from before a restart) reads from the start.
    const stale = await fetch(`${api.baseUrl}/cluster/events`, { headers: { ...headers, 'last-event-id': '1-99' } });
    const again = await readBlocks(stale, (so) => so.some((block) => block.event === 'cluster.view'));
    assert.equal(again[0]!.data.summary, 'b started as follower in term 2');
  });
});
