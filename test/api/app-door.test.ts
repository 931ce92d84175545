// app-door.ts: an app's layers entered without Express's app-level router walk run as Express runs them.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { ErrorRequestHandler, Express, RequestHandler } from 'express';
import fc from 'fast-check';
import { enterWithoutRouterWalk, type AppLayer } from '../../api/app-door.js';

/** Behaviour is what one app-level layer does with a request (or, for the error kinds, with an error). */
const behaviours = [
  'answer',
  'answer-later',
  'next',
  'next-error',
  'throw',
  'reject',
  'next-route',
  'next-router',
  'error-answer',
  'error-next',
  'error-throw',
] as const;
type Behaviour = (typeof behaviours)[number];

/** layerOf makes layer `index` with a behaviour; each notes what it saw of the request in `seen`. */
function layerOf(behaviour: Behaviour, index: number, seen: string[]): AppLayer {
  const note = (req: express.Request, what: string): void => {
    seen.push(
      `${index} ${what} baseUrl=${req.baseUrl} originalUrl=${req.originalUrl} url=${req.url} ` +
        `params=${JSON.stringify(req.params)} next=${typeof req.next} res.req=${req.res?.req === req} ` +
        `json=${typeof req.res?.json} locals=${typeof req.res?.locals}`,
    );
  };
  const request = (handle: RequestHandler): RequestHandler => handle;
  switch (behaviour) {
    case 'answer':
      return request((req, res) => {
        note(req, 'answer');
        res.status(200).json({ by: index });
      });
    case 'answer-later':
      return request(async (req, res) => {
        await Promise.resolve();
        note(req, 'answer-later');
        res.status(201).json({ by: index });
      });
    case 'next':
      return request((req, _res, next) => {
        note(req, 'next');
        next();
      });
    case 'next-error':
      return request((req, _res, next) => {
        note(req, 'next-error');
        next(new Error(`passed by ${index}`));
      });
    case 'throw':
      return request((req) => {
        note(req, 'throw');
        throw new Error(`thrown by ${index}`);
      });
    case 'reject':
      return request(async (req) => {
        await Promise.resolve();
        note(req, 'reject');
        throw new Error(`rejected by ${index}`);
      });
    case 'next-route':
      return request((req, _res, next) => {
        note(req, 'next-route');
        next('route');
      });
    case 'next-router':
      return request((req, _res, next) => {
        note(req, 'next-router');
        next('router');
      });
    case 'error-answer': {
      const handle: ErrorRequestHandler = (error: Error, req, res, _next) => {
        note(req, `error-answer ${error.message}`);
        res.status(500).json({ error: error.message, by: index });
      };
      return handle;
    }
    case 'error-next': {
      const handle: ErrorRequestHandler = (error: Error, req, _res, next) => {
        note(req, `error-next ${error.message}`);
        next(error);
      };
      return handle;
    }
    case 'error-throw': {
      const handle: ErrorRequestHandler = (error: Error, req) => {
        note(req, `error-throw ${error.message}`);
        throw new Error(`error thrown by ${index}`);
      };
      return handle;
    }
  }
}

async function listen(app: Express): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Outcome is what a client and the layers saw of one request. */
interface Outcome {
  status: number;
  /** body is the answer's JSON when a layer answered (the final answers differ in form, not in status). */
  body: unknown;
  seen: string[];
}

async function outcome(url: string, seen: string[]): Promise<Outcome> {
  seen.length = 0;
  const response = await fetch(url);
  const text = await response.text();
  const answeredByLayer = /"by":/.test(text);
  return { status: response.status, body: answeredByLayer ? JSON.parse(text) : null, seen: [...seen] };
}

describe('api: the app entered without the router walk (app-door.ts)', () => {
  it('runs any list of layers as Express runs them (fast-check; the seed is printed on failure)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...behaviours), { minLength: 0, maxLength: 6 }),
        fc.constantFrom('/', '/a/b?x=1', '/projects?limit=5'),
        async (kinds, path) => {
          const expressSeen: string[] = [];
          const doorSeen: string[] = [];
          const walked = express();
          // Express's final handler logs every error it ends with, but under 'test'.
          walked.set('env', 'test');
          for (const [index, kind] of kinds.entries()) walked.use(layerOf(kind, index, expressSeen) as RequestHandler);
          const entered = express();
          enterWithoutRouterWalk(
            entered,
            kinds.map((kind, index) => layerOf(kind, index, doorSeen)),
          );
          const [a, b] = await Promise.all([listen(walked), listen(entered)]);
          try {
            const expected = await outcome(a.url + path, expressSeen);
            const actual = await outcome(b.url + path, doorSeen);
            assert.deepEqual(actual, expected, `layers ${kinds.join(', ')} at ${path}`);
          } finally {
            await Promise.all([a.close(), b.close()]);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('gives a mounting app its router fields back when it passes on', async () => {
    const seen: string[] = [];
    const child = express();
    enterWithoutRouterWalk(child, [layerOf('next', 0, seen)]);
    const parent = express();
    parent.use('/sub', child);
    parent.use('/sub/:x', (req, res) => {
      seen.push(`parent baseUrl=${req.baseUrl} params=${JSON.stringify(req.params)} url=${req.url}`);
      res.json({ by: 'parent' });
    });
    const served = await listen(parent);
    try {
      const response = await fetch(`${served.url}/sub/7`);
      assert.equal(response.status, 200);
      assert.deepEqual(seen, [
        '0 next baseUrl=/sub originalUrl=/sub/7 url=/7 params={} next=function res.req=true json=function locals=object',
        'parent baseUrl=/sub/7 params={"x":"7"} url=/',
      ]);
    } finally {
      await served.close();
    }
  });
});
