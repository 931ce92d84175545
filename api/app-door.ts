// The app's entry in place of Express's walk of the app-level router. createApp's app has three app-level layers:
// one every request goes through (the constant headers, then the public routes, the album page or the keyed
// chain: keyed-chain.ts), the 404, and the error handler. Express's app.handle walks its router over them, and for
// every request made a final handler (finalhandler and a bound logger), a closure restoring the request's router
// fields, the router's own `next` closure, the path parsed and matched against a layer and a params object, before
// the first layer ran. Without them a keyed GET allocates 2.4 KB less (56.2 → 53.8 KB, bench/api-per-request.ts
// --allocations) and bench/api-per-request.ts --cpu moved 3 points (api/README.md, stop 26's round). AppWalk runs
// the same layers in the same order with the same contract, as a class (no closure per request):
//  - the request gets what app.handle and the router give it (req.res, res.req, the app's request and response
//    prototypes, res.locals, req.baseUrl, req.originalUrl, req.params, req.next);
//  - a request handler's next() goes to the next request handler, next(error) (or a throw, or a rejected
//    promise) to the next error handler (four parameters), skipping request handlers, as Express skips them;
//    next('route') is next(), next('router') leaves the app as Express's walk does;
//  - past the last layer, the callback of an app mounted in another, else an answer of its own (Express's
//    finalhandler would send HTML, and leave a response whose head is out open where this ends it): the app's
//    error handler answers every error, so this is only reached when it fails itself.
// Not done here (none of this app's app-level layers needs it): path-mounted layers (every layer is at '/'),
// parameters, OPTIONS answered from routes (no app-level route). The router's diagnostics_channel tracing of
// these three layers is not emitted (the routers below still emit theirs).
import type { ErrorRequestHandler, Express, NextFunction, Request, RequestHandler, Response } from 'express';

export type AppLayer = RequestHandler | ErrorRequestHandler;

/** AppWalk is one request's walk through the app-level layers. */
class AppWalk {
  private index = 0;
  readonly step: NextFunction;
  private rejected?: (error: unknown) => void;

  constructor(
    private readonly layers: readonly AppLayer[],
    private readonly req: Request,
    private readonly res: Response,
    private readonly done: ((error?: unknown) => void) | undefined,
    /** parent holds a mounting app's router fields of the request, given back to it when the walk leaves. */
    private readonly parent: { baseUrl: string; next: NextFunction | undefined; params: Request['params'] },
  ) {
    this.step = this.advance.bind(this) as NextFunction;
  }

  advance(passed?: unknown): void {
    if (passed === 'router') {
      this.leave(null);
      return;
    }
    let error = passed === 'route' ? null : passed;
    for (;;) {
      const layer = this.layers[this.index++];
      if (layer === undefined) {
        this.leave(error);
        return;
      }
      const handlesErrors = layer.length === 4;
      if (error !== undefined && error !== null) {
        if (!handlesErrors) continue;
      } else if (handlesErrors) continue;
      try {
        const result: unknown =
          error !== undefined && error !== null
            ? (layer as ErrorRequestHandler)(error, this.req, this.res, this.step)
            : (layer as RequestHandler)(this.req, this.res, this.step);
        if (result instanceof Promise) result.then(undefined, (this.rejected ??= this.fail.bind(this)));
        return;
      } catch (thrown) {
        error = thrown ?? new Error('a layer threw nothing');
      }
    }
  }

  fail(error: unknown): void {
    this.advance(error ?? new Error('Rejected promise'));
  }

  /** leave ends the walk: to the mounting app's callback, else an answer of its own. */
  private leave(error: unknown): void {
    if (this.done !== undefined) {
      this.req.baseUrl = this.parent.baseUrl;
      this.req.next = this.parent.next;
      this.req.params = this.parent.params;
      this.done(error ?? undefined);
      return;
    }
    const { res } = this;
    if (res.headersSent) {
      // Part of an answer is out: the client must see it cut, not complete.
      if (error !== undefined && error !== null) res.destroy();
      else if (!res.writableEnded) res.end();
      return;
    }
    const failed = error !== undefined && error !== null;
    const body = JSON.stringify(
      failed
        ? { code: 'INTERNAL', message: 'internal error', requestId: this.req.requestId ?? '' }
        : { code: 'NOT_FOUND', message: 'no such route', requestId: this.req.requestId ?? '' },
    );
    res.statusCode = failed ? 500 : 404;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(body);
  }
}

/**
 * enterWithoutRouterWalk makes `layers` the app's app-level layers, run by an AppWalk from its app.handle instead
 * of the app's router. The app must have no app.use or route of its own: they would never run.
 */
export function enterWithoutRouterWalk(app: Express, layers: readonly AppLayer[]): void {
  const request = app.request;
  const response = app.response;
  (app as unknown as { handle: (req: Request, res: Response, callback?: (error?: unknown) => void) => void }).handle =
    function handle(req, res, callback) {
      if (app.enabled('x-powered-by')) res.setHeader('X-Powered-By', 'Express');
      req.res = res;
      res.req = req;
      Object.setPrototypeOf(req, request);
      Object.setPrototypeOf(res, response);
      res.locals ??= Object.create(null) as Record<string, unknown>;
      const parent = { baseUrl: req.baseUrl, next: req.next, params: req.params };
      req.baseUrl ||= '';
      req.originalUrl ||= req.url;
      req.params = {};
      const walk = new AppWalk(layers, req, res, callback, parent);
      req.next = walk.step;
      walk.advance();
    };
}
