// The keyed part of the app as few Express layers as possible: every layer is a step of Express's router walk
// for every request (router/index.js `next` and `handle` were ~60 µs/req of a GET /projects on the cluster
// bench), so authentication, rate limit, body parser and validator run as one layer (inSequence), and a request
// the validator has matched to a documented route goes straight to the routers that declare that route
// (routeDispatch) instead of walking every router and every route before it.
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';

/**
 * SequenceRun is one request's walk through a sequence. A class, not closures: tsx (esbuild's keepNames) renames
 * every function expression each time it is created, which cost microseconds per closure per request.
 */
class SequenceRun {
  private index = 0;
  readonly step: (error?: unknown) => void;
  private rejected?: (error: unknown) => void;

  constructor(
    private readonly handlers: readonly RequestHandler[],
    private readonly req: Request,
    private readonly res: Response,
    private readonly next: NextFunction,
  ) {
    this.step = this.advance.bind(this);
  }

  advance(error?: unknown): void {
    // As Express's own layers: anything passed on (an error, or 'route' / 'router') leaves the sequence.
    if (error !== undefined && error !== null) {
      this.next(error);
      return;
    }
    const handler = this.handlers[this.index++];
    if (!handler) {
      this.next();
      return;
    }
    try {
      const result: unknown = handler(this.req, this.res, this.step);
      if (result instanceof Promise) result.then(undefined, (this.rejected ??= this.fail.bind(this)));
    } catch (thrown) {
      this.next(thrown);
    }
  }

  fail(error: unknown): void {
    this.next(error ?? new Error('Rejected promise'));
  }
}

/**
 * inSequence runs handlers one after another as one layer, as Express would run them as consecutive layers:
 * an error (passed or thrown, or a rejected promise) skips the rest and goes to the app's error handlers.
 */
export function inSequence(handlers: readonly RequestHandler[]): RequestHandler {
  return function runSequence(req, res, next) {
    new SequenceRun(handlers, req, res, next).advance();
  };
}

/** ExpressRoute is the part of router 2.x's `Route` routeDispatch uses to run a route's handlers itself. */
interface ExpressRoute {
  path: unknown;
  dispatch(req: Request, res: Response, done: (error?: unknown) => void): void;
  _handlesMethod(method: string | undefined): boolean;
}

/** ExpressLayer is the part of Express 5's router layers (router 2.x `Layer`) routeDispatch reads. */
interface ExpressLayer {
  route?: ExpressRoute;
  handle?: { stack?: ExpressLayer[] };
}

const stackOf = (router: Router): ExpressLayer[] => (router as unknown as { stack: ExpressLayer[] }).stack;

/**
 * RouteWalk is one request's walk through the routes of one path without parameters, as the routers declaring
 * them would walk them: each route that handles the method, in order, until one answers; `next('route')` or
 * `next()` goes on to the next; an error leaves to the app's error handlers; none answering goes on (404).
 * A class, not closures (see SequenceRun).
 */
class RouteWalk {
  private index = 0;
  readonly step: (error?: unknown) => void;

  constructor(
    private readonly routes: readonly ExpressRoute[],
    private readonly req: Request,
    private readonly res: Response,
    private readonly next: NextFunction,
  ) {
    this.step = this.advance.bind(this);
  }

  advance(error?: unknown): void {
    if (error !== undefined && error !== null && error !== 'route') {
      this.next(error);
      return;
    }
    while (this.index < this.routes.length) {
      const route = this.routes[this.index++]!;
      if (route._handlesMethod(this.req.method)) {
        route.dispatch(this.req, this.res, this.step);
        return;
      }
    }
    this.next();
  }
}

/**
 * directRoutesOf: the routes declaring `path` in these routers, in order, when the routers' own walk would do
 * nothing but reach them: a path without parameters (so the request's params are empty, as the validator set
 * them) and routers holding only routes (no middleware of their own, no nested router, which the walk would
 * run first). Otherwise null: the routers are walked.
 */
function directRoutesOf(path: string, routers: readonly Router[]): ExpressRoute[] | null {
  if (/[:*?()[\]{}+]/.test(path)) return null;
  const routes: ExpressRoute[] = [];
  for (const router of routers) {
    for (const layer of stackOf(router)) {
      if (layer.route === undefined) return null;
      if (layer.route.path === path) routes.push(layer.route);
    }
  }
  return routes.length > 0 ? routes : null;
}

/** routePathsOf lists the route paths a router declares, nested routers included. */
export function routePathsOf(router: Router): string[] {
  const paths: string[] = [];
  const walk = (stack: ExpressLayer[], depthLeft: number): void => {
    for (const layer of stack) {
      if (layer.route && typeof layer.route.path === 'string') paths.push(layer.route.path);
      else if (layer.handle?.stack && depthLeft > 0) walk(layer.handle.stack, depthLeft - 1);
    }
  };
  walk(stackOf(router), routerNestingMax);
  return paths;
}

/** expressPathOf turns an OpenAPI path (`/projects/{id}`) into the Express route the validator names. */
export function expressPathOf(openApiPath: string): string {
  return openApiPath.replace(/\{([^}]+)\}/g, ':$1');
}

/** routerNestingMax bounds how deep routePathsOf looks into routers mounted in routers. */
const routerNestingMax = 4;

/**
 * routeDispatch sends a request whose validator match (req.openapi.expressRoute) names a route to the routers
 * that declare that path, in their order; any other request (undocumented, ignored by the validator) walks
 * all routers as consecutive app.use layers would. The validator has already refused documented paths with
 * an undocumented method (405), so a documented route's routers are the only ones that could answer it.
 * A path without parameters declared by routers that hold only routes goes to those routes directly
 * (directRoutesOf, RouteWalk): the routers' walk (matching every layer's path, params, prefix trimming) would
 * only find them, at a cost the router's walk of the app had already paid once per request.
 */
export function routeDispatch(routers: readonly Router[], documentedPaths: readonly string[] = []): RequestHandler {
  const byRoute = new Map<string, Router[]>();
  for (const router of routers) {
    for (const path of new Set(routePathsOf(router))) {
      const list = byRoute.get(path) ?? [];
      list.push(router);
      byRoute.set(path, list);
    }
  }
  // A documented route no router declares would be dispatched to no router (404): refuse to start instead.
  const undeclared = documentedPaths.map(expressPathOf).filter((path) => !byRoute.has(path));
  if (undeclared.length > 0) throw new Error(`documented routes no router declares: ${undeclared.join(', ')}`);
  const everyRouter = inSequence(routers as unknown as RequestHandler[]);
  const routersOf = new Map<string, RequestHandler>();
  for (const [path, list] of byRoute) {
    const direct = directRoutesOf(path, list);
    routersOf.set(
      path,
      direct !== null
        ? (req, res, next) => {
            new RouteWalk(direct, req, res, next).advance();
          }
        : list.length === 1
          ? (list[0]! as unknown as RequestHandler)
          : inSequence(list as unknown as RequestHandler[]),
    );
  }
  return (req: Request, res: Response, next: NextFunction) => {
    const expressRoute = (req as Request & { openapi?: { expressRoute?: string } }).openapi?.expressRoute;
    const handler = (expressRoute !== undefined ? routersOf.get(expressRoute) : undefined) ?? everyRouter;
    handler(req, res, next);
  };
}
