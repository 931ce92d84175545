// sendCachedPage (api/store-helpers.ts, api/page-cache.ts) over a stand-in read session: the kept JSON text is
// sent only while the session's state seq is the one it was listed at, the answer is byte for byte what res.json
// sends of the listed page, and a session that cannot answer at once, a response whose res.json was replaced (the
// validator's response check) or a repeated query value is listed as before, uncached.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { DocumentStore, JsonObject, ListOptions, ListResult } from '../../store/document-store.js';
import { sendCachedPage, sendPage } from '../../api/store-helpers.js';
import { PageCache, pageCacheEntriesMax } from '../../api/page-cache.js';

/** StandIn is a read session over a fixed list of records at a settable seq, counting its listings. */
class StandIn {
  seq: number | null = 1;
  listings = 0;
  records: JsonObject[] = [
    { id: 'p1', name: 'one', note: 'ünïcode \u2028' },
    { id: 'p2', name: 'two' },
    { id: 'p3', name: 'three' },
  ];

  session(): DocumentStore {
    const listNow = <T extends JsonObject>(prefix: string, options: ListOptions = {}): ListResult<T> | null => {
      if (this.seq === null) return null;
      this.listings++;
      const from =
        options.after === undefined ? 0 : this.records.findIndex((r) => `${prefix}${r.id}` === options.after) + 1;
      const slice = this.records.slice(from, from + (options.limit ?? 100));
      return {
        entries: slice.map((value) => ({ key: `${prefix}${value.id as string}`, value: value as T, version: 1 })),
        nextAfter: from + slice.length < this.records.length ? `${prefix}${slice.at(-1)!.id as string}` : null,
      };
    };
    return {
      listNow,
      stateSeqNow: () => this.seq,
      // list (a session that must wait) reads through listNow, which counts it.
      list: async <T extends JsonObject>(prefix: string, options?: ListOptions) => {
        const saved = this.seq;
        this.seq = 0;
        try {
          return listNow<T>(prefix, options)!;
        } finally {
          this.seq = saved;
        }
      },
    } as unknown as DocumentStore;
  }
}

const view = (record: JsonObject): JsonObject => ({ ...record, viewed: true });

describe('sendCachedPage: a listing’s JSON kept per query and state seq', function () {
  const standIn = new StandIn();
  let pages = new PageCache();
  let server: Server;
  let base: string;
  /** replaceJson: the next answers' res.json is replaced on the response, as the response validator does. */
  let replaceJson = false;

  before(async () => {
    const app = express();
    app.disable('x-powered-by');
    app.set('etag', false);
    app.set('query parser', 'simple');
    app.get('/cached', (req, res) => {
      if (replaceJson) {
        const json = res.json.bind(res);
        res.json = (body: unknown) => json(body);
      }
      return sendCachedPage(res, standIn.session(), 'projects/', req.query, view, pages);
    });
    app.get('/fresh', (req, res) => sendPage(res, standIn.session(), 'projects/', req.query, view));
    // A type set before the answer: res.json keeps it and res.send adds the charset; the kept page must too.
    app.get('/cached-typed', (req, res) => {
      res.type('application/vnd.svc+json');
      return sendCachedPage(res, standIn.session(), 'projects/', req.query, view, pages);
    });
    app.get('/fresh-typed', (req, res) => {
      res.type('application/vnd.svc+json');
      return sendPage(res, standIn.session(), 'projects/', req.query, view);
    });
    app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(400).json({ message: error.message });
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());
  beforeEach(() => {
    pages = new PageCache();
    standIn.seq = 1;
    replaceJson = false;
  });

  async function get(
    path: string,
  ): Promise<{ status: number; body: string; type: string | null; length: string | null }> {
    const answer = await fetch(base + path);
    return {
      status: answer.status,
      body: await answer.text(),
      type: answer.headers.get('content-type'),
      length: answer.headers.get('content-length'),
    };
  }

  it('sends the kept text while the seq holds, byte for byte what res.json sends, and lists again once it moves', async () => {
    for (const query of ['', '?limit=2', '?limit=1&cursor=cHJvamVjdHMvcDE']) {
      const fresh = await get(`/fresh${query}`);
      assert.equal(fresh.status, 200, fresh.body);
      const before = standIn.listings;
      assert.deepEqual(await get(`/cached${query}`), fresh);
      const listedOnce = standIn.listings;
      assert.ok(listedOnce > before, 'the first answer lists');
      assert.deepEqual(await get(`/cached${query}`), fresh);
      assert.deepEqual(await get(`/cached${query}`), fresh);
      assert.equal(standIn.listings, listedOnce, 'the next answers are the kept text');
    }
    standIn.seq = 2;
    standIn.records = [...standIn.records, { id: 'p4', name: 'four' }];
    const moved = await get('/cached');
    assert.deepEqual(moved, await get('/fresh'));
    assert.match(moved.body, /"four"/);
    // Text beyond ASCII: the kept bytes and their length are res.json's.
    standIn.seq = 3;
    standIn.records = [...standIn.records.slice(0, 3), { id: 'p5', name: 'cinq é ✓ 🎵' }];
    const wide = await get('/cached');
    assert.deepEqual(await get('/cached'), wide);
    assert.deepEqual(wide, await get('/fresh'));
    assert.match(wide.body, /🎵/);
    assert.deepEqual(await get('/cached-typed'), await get('/fresh-typed'));
    assert.deepEqual(await get('/cached-typed'), await get('/fresh-typed'));
    assert.equal((await get('/cached-typed')).type, 'application/vnd.svc+json; charset=utf-8');
    standIn.records = standIn.records.slice(0, 3);
  });

  it('lists as before when the session cannot answer at once, res.json was replaced, or a value is repeated', async () => {
    await get('/cached');
    const listed = standIn.listings;
    standIn.seq = null;
    assert.equal((await get('/cached')).status, 200);
    assert.equal(standIn.listings, listed + 1, 'a session that must wait lists (list, not the kept text)');
    standIn.seq = 1;
    replaceJson = true;
    await get('/cached');
    assert.equal(standIn.listings, listed + 2, 'a replaced res.json gets the page itself');
    replaceJson = false;
    const repeated = await get('/cached?limit=1&limit=2');
    assert.deepEqual(repeated, await get('/fresh?limit=1&limit=2'));
    assert.equal((await get('/cached?limit=0')).status, 400, 'a query the listing refuses is refused, not kept');
    assert.equal((await get('/cached?limit=0')).status, 400);
  });

  it('keeps at most pageCacheEntriesMax queries', () => {
    const cache = new PageCache();
    for (let index = 0; index <= pageCacheEntriesMax; index++) cache.keep(String(index), 1, Buffer.from(`${index}`));
    assert.equal(cache.bodyAt(String(pageCacheEntriesMax), 1)?.toString(), String(pageCacheEntriesMax));
    assert.equal(cache.bodyAt('0', 1), undefined, 'the kept answers were dropped to make room');
  });
});
