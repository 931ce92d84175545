// The node's /cluster feed without a node: which engine readings become events, the ring's bound, the feed's
// order and resumption, members' /status answers taken as input (a wrong type is unknown, never trusted), lag,
// and that the other members are read only while someone listens.
import assert from 'node:assert/strict';
import type { EngineLeadership } from '../../engine/types.js';
import { EventRing, leadershipEvents, membershipChange } from '../../transports/node/cluster-events.js';
import { ClusterFeed, type ClusterView } from '../../transports/node/cluster-feed.js';
import { DEFAULT_CLUSTER_FEED_LIMITS } from '../../transports/node/cluster-limits.js';
import { waitFor } from '../node/harness.js';
import { FakeHost, names, three } from './cluster-feed-host.js';

const reading = (fields: Partial<EngineLeadership> = {}): EngineLeadership => ({
  role: 'follower',
  term: 3,
  leaderId: 1,
  membershipVersion: 1,
  ...fields,
});
describe('transports/node: the /cluster feed', () => {
  it('turns engine readings into election, role and membership events', () => {
    const roster = () => ({ now: three, before: three });
    assert.deepEqual(
      leadershipEvents(reading(), reading(), (id) => names[id]!, roster, 'b'),
      [],
    );
    const [won] = leadershipEvents(reading(), reading({ term: 4, leaderId: 3 }), (id) => names[id]!, roster, 'b');
    assert.equal(won!.kind, 'election');
    assert.equal(won!.summary, 'c leads term 4');
    assert.equal(won!.leaderName, 'c');
    // A pre-vote forgets the leader without a new term: an election with no leader known.
    const lost = leadershipEvents(
      reading(),
      reading({ leaderId: 0, role: 'precandidate' }),
      (id) => names[id]!,
      roster,
      'b',
    );
    assert.deepEqual(
      lost.map((event) => [event.kind, event.summary]),
      [
        ['election', 'term 3: no leader known'],
        ['role', 'b is precandidate (was follower)'],
      ],
    );
    const grown = [...three, { id: 4, name: 'd', role: 'learner' }];
    const [joined] = leadershipEvents(
      reading(),
      reading({ membershipVersion: 2 }),
      (id) => names[id]!,
      () => ({ now: grown, before: three }),
      'b',
    );
    assert.equal(joined!.summary, 'membership 2: d joined as learner');
    assert.deepEqual(joined!.members, grown);
    assert.equal(
      membershipChange(grown, [
        { id: 1, name: 'a', role: 'voter' },
        { id: 2, name: 'b', role: 'removed' },
        { id: 4, name: 'd', role: 'voter' },
      ]),
      'b removed, d is voter, c left',
    );
  });

  it('keeps the newest clusterEventCountMax events, in order, and resumes after a number', () => {
    assert.throws(() => new EventRing(0), RangeError);
    const host = new FakeHost();
    const feed = new ClusterFeed(host, { clusterEventCountMax: 3 });
    feed.started(reading({ leaderId: 0, term: 0 }), 'b');
    for (let term = 1; term <= 5; term++) feed.stepped(reading({ term, leaderId: 1 + (term % 3) }), 'b', () => three);
    assert.equal(feed.eventCount, 3);
    const all = feed.entriesAfter(0, 100);
    const events = all.filter((entry) => entry.event === 'cluster.event');
    assert.deepEqual(
      events.map((entry) => (entry.data as { summary: string }).summary),
      ['a leads term 3', 'b leads term 4', 'c leads term 5'],
    );
    // Events, then the one newest view, numbered in order; nothing after the last number.
    const seqs = all.map((entry) => entry.seq);
    assert.deepEqual(
      seqs,
      [...seqs].sort((x, y) => x - y),
    );
    assert.equal(all.at(-1)!.event, 'cluster.view');
    assert.deepEqual(feed.entriesAfter(all.at(-1)!.seq, 100), []);
    // A reader that saw the first of the kept events gets the rest and the view.
    assert.deepEqual(
      feed.entriesAfter(events[0]!.seq, 100).map((entry) => entry.event),
      ['cluster.event', 'cluster.event', 'cluster.view'],
    );
    assert.equal(feed.entriesAfter(0, 2).length, 2, 'bounded by countMax');
    assert.equal(DEFAULT_CLUSTER_FEED_LIMITS.clusterEventCountMax, 256);
  });

  it("reads the members' /status as input, measures lag from the highest commit, and falls back to heartbeats", async () => {
    const host = new FakeHost();
    host.answers.set('https://h-a', {
      ok: true,
      document: { role: 'leader', term: 3, commitSeq: 14, appliedSeq: 14, ready: true, buildVersion: '0.2.0' },
    });
    // c answers, but with figures of the wrong types: each is unknown, and its version comes from heartbeats.
    host.answers.set('https://h-c', {
      ok: true,
      document: { role: 7, term: '3', commitSeq: -1, appliedSeq: 1.5, ready: 'yes', buildVersion: 5 },
    });
    const feed = new ClusterFeed(host);
    const view: ClusterView = await feed.snapshot();
    assert.equal(view.leader?.name, 'a');
    assert.equal(view.commitSeq, 14);
    const [a, b, c] = view.members;
    assert.equal(a!.role, 'leader');
    assert.equal(a!.leader, true);
    assert.equal(a!.applyLag, 0);
    assert.equal(b!.self, true);
    assert.equal(b!.applyLag, 5, 'b applied 9 of the 14 committed');
    assert.equal(b!.buildVersion, '0.2.0');
    assert.equal(c!.reachable, true);
    assert.deepEqual([c!.role, c!.term, c!.commitSeq, c!.appliedSeq, c!.ready], [null, null, null, null, null]);
    assert.equal(c!.applyLag, null);
    assert.deepEqual([c!.buildVersion, c!.buildVersionFrom], ['0.1.9', 'heartbeat']);

    host.answers.delete('https://h-a');
    host.clock += DEFAULT_CLUSTER_FEED_LIMITS.clusterPollIntervalMs;
    const later = await feed.snapshot();
    assert.equal(later.members[0]!.reachable, false);
    assert.equal(later.members[0]!.error, 'unreachable: ECONNREFUSED');
    assert.equal(later.members[0]!.buildVersionFrom, 'heartbeat');
  });

  it('reads the other members only while a stream listens, and wakes it on every event', async () => {
    const host = new FakeHost();
    const feed = new ClusterFeed(host, { clusterPollIntervalMs: 5 });
    feed.started(reading(), 'b');
    assert.equal(host.fetches, 0, 'nobody listens: no reads');
    let wakes = 0;
    const stop = feed.listen(() => wakes++);
    await waitFor(() => host.fetches >= 4, 'two rounds of reads', 5_000, { intervalMs: 5 });
    const before = wakes;
    feed.stepped(reading({ term: 4, leaderId: 3 }), 'b', () => three);
    assert.ok(wakes > before, 'an event wakes the listener at once');
    assert.equal(feed.entriesAfter(0, 100).at(-1)!.event, 'cluster.view');
    stop();
    await waitFor(() => !feed.pollingMembers, 'the reads to stop', 5_000, { intervalMs: 5 });
    const fetches = host.fetches;
    feed.stepped(reading({ term: 5, leaderId: 1 }), 'b', () => three);
    assert.equal(host.fetches, fetches, 'no reads without a listener');
    feed.close();
  });
});
