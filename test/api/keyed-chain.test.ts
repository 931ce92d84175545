// keyed-chain.ts: the keyed middleware run as one layer, and requests dispatched to the routers that declare
// the route the validator matched instead of walking every router.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { Router } from 'express';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { expressPathOf, inSequence, routeDispatch, routePathsOf } from '../../api/keyed-chain.js';

interface Served {
  url: string;
  close(): Promise<void>;
}

async function serve(handler: RequestHandler, seen: string[]): Promise<Served> {
  const app = express();
  app.use(handler);
  app.use((_req, res) => {
    seen.push('404');
    res.status(404).json({ code: 'NOT_FOUND' });
  });
  const onError: ErrorRequestHandler = (error: unknown, _req, res, _next) => {
    res.status(500).json({ error: error instanceof Error ? error.message : String(error) });
  };
  app.use(onError);
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
      }),
  };
}

/** matchedAs stands in for the validator: it names the route a request matched (or none). */
const matchedAs =
  (route: string | undefined): RequestHandler =>
  (req, _res, next) => {
    if (route !== undefined) (req as unknown as { openapi: unknown }).openapi = { expressRoute: route };
    next();
  };

function routers(seen: string[]): Router[] {
  const first = Router();
  // A route that passes on: the dispatch must then try the next router declaring the same route.
  first.get('/things/:id', (_req, _res, next) => {
    seen.push('first /things/:id');
    next();
  });
  first.get('/first', (_req, res) => {
    seen.push('first /first');
    res.json({ from: 'first' });
  });
  first.use((_req, _res, next) => {
    seen.push('first walked');
    next();
  });
  const second = Router();
  second.get('/things/:id', (req, res) => {
    seen.push('second /things/:id');
    res.json({ id: req.params.id });
  });
  const nested = Router();
  nested.get('/deep/:x', (_req, res) => {
    seen.push('nested /deep/:x');
    res.json({ from: 'nested' });
  });
  const third = Router();
  third.use(nested);
  return [first, second, third];
}

describe('api: keyed chain', () => {
  it('lists the route paths of routers, nested ones included, and converts OpenAPI paths', () => {
    const [first, second, third] = routers([]);
    assert.deepEqual(routePathsOf(first!), ['/things/:id', '/first']);
    assert.deepEqual(routePathsOf(second!), ['/things/:id']);
    assert.deepEqual(routePathsOf(third!), ['/deep/:x']);
    assert.equal(expressPathOf('/albums/{id}/shots/{index}'), '/albums/:id/shots/:index');
  });

  it('sends a matched route only to the routers that declare it, in order; anything else walks them all', async () => {
    for (const [route, path, expected, status] of [
      ['/things/:id', '/things/7', ['first /things/:id', 'first walked', 'second /things/:id'], 200],
      ['/deep/:x', '/deep/1', ['nested /deep/:x'], 200],
      [undefined, '/first', ['first /first'], 200],
      // Undocumented: every router is walked (the first's pass-through middleware shows it), then 404.
      [undefined, '/nowhere', ['first walked', '404'], 404],
      [undefined, '/deep/1', ['first walked', 'nested /deep/:x'], 200],
    ] as const) {
      const seen: string[] = [];
      const served = await serve(inSequence([matchedAs(route), routeDispatch(routers(seen))]), seen);
      try {
        const response = await fetch(served.url + path);
        assert.equal(response.status, status, path);
        assert.deepEqual(seen, expected, `${route ?? 'unmatched'} ${path}`);
      } finally {
        await served.close();
      }
    }
  });

  it('runs the routes of a parameterless path directly when their routers hold only routes, as their walk would', async () => {
    const routesOnly = (seen: string[]): Router[] => {
      const first = Router();
      first.post('/items', (_req, res) => {
        seen.push('first POST');
        res.json({});
      });
      // next('route') and next() both go on to the next route of the path, in this router or the next.
      first.get('/items', (_req, _res, next) => {
        seen.push('first GET');
        next('route');
      });
      first.get('/items', (_req, _res, next) => {
        seen.push('first GET again');
        next();
      });
      const second = Router();
      second.get('/items', (req, res) => {
        seen.push(`second ${req.method}`);
        res.json({ route: (req.route as { path: string }).path });
      });
      second.get('/failing', async () => {
        await Promise.resolve();
        throw new Error('rejected');
      });
      second.get('/passing', (_req, _res, next) => {
        next();
      });
      // The routers' own walk is not taken (it would show in `seen`).
      for (const router of [first, second]) {
        const walked = router as unknown as { handle: (...args: unknown[]) => void };
        const handle = walked.handle.bind(router);
        walked.handle = (...args) => {
          seen.push('router walked');
          handle(...args);
        };
      }
      return [first, second];
    };
    for (const [method, route, path, expected, status] of [
      ['GET', '/items', '/items', ['first GET', 'first GET again', 'second GET'], 200],
      ['HEAD', '/items', '/items', ['first GET', 'first GET again', 'second HEAD'], 200],
      ['POST', '/items', '/items', ['first POST'], 200],
      // A method no route handles, and a route that passes on, go on to the 404; an error to the error handler.
      ['DELETE', '/items', '/items', ['404'], 404],
      ['GET', '/passing', '/passing', ['404'], 404],
      ['GET', '/failing', '/failing', [], 500],
    ] as const) {
      const seen: string[] = [];
      const served = await serve(inSequence([matchedAs(route), routeDispatch(routesOnly(seen))]), seen);
      try {
        const response = await fetch(served.url + path, { method });
        assert.equal(response.status, status, `${method} ${path}`);
        assert.deepEqual(seen, expected, `${method} ${path}`);
        if (method === 'GET' && status === 200) assert.deepEqual(await response.json(), { route: '/items' });
      } finally {
        await served.close();
      }
    }
  });

  it('refuses to build when a documented route has no router', () => {
    assert.throws(() => routeDispatch(routers([]), ['/things/{id}', '/missing/{id}']), /\/missing\/:id/);
    assert.doesNotThrow(() => routeDispatch(routers([]), ['/things/{id}', '/deep/{x}']));
  });

  it('runs a sequence as consecutive layers: an error passed, thrown or rejected skips the rest', async () => {
    const failures: Record<string, RequestHandler> = {
      passed: (_req, _res, next) => {
        next(new Error('passed'));
      },
      thrown: () => {
        throw new Error('thrown');
      },
      rejected: async () => {
        await Promise.resolve();
        throw new Error('rejected');
      },
    };
    for (const [name, failing] of Object.entries(failures)) {
      const seen: string[] = [];
      const served = await serve(
        inSequence([
          (_req, _res, next) => {
            seen.push('before');
            next();
          },
          failing,
          (_req, res) => {
            seen.push('after');
            res.json({});
          },
        ]),
        seen,
      );
      try {
        const response = await fetch(served.url + '/x');
        assert.equal(response.status, 500, name);
        assert.deepEqual(await response.json(), { error: name });
        assert.deepEqual(seen, ['before'], name);
      } finally {
        await served.close();
      }
    }
  });
});
