// openApiValidator is express-openapi-validator with one change: the route lookup of its metadata middleware.
// The library's lookup (dist/middlewares/openapi.metadata.js) compiles every documented route with
// path-to-regexp on every request, in order, until one matches: about a tenth of a cheap request's time was
// spent there (bench/api-cluster.ts). Here each route is compiled once, in the library's order, with the same
// options, and the rest of the middleware is the library's logic unchanged; the request and response
// validators are the library's own. test/cluster-api/validator-routes.test.ts checks that both lookups give
// the same answer for the same requests.
import { createRequire } from 'node:module';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { error as validatorErrors } from 'express-openapi-validator';
import { OpenApiValidator } from 'express-openapi-validator/dist/openapi.validator.js';
import type { OpenApiValidatorOpts } from 'express-openapi-validator/dist/openapi.validator.js';
import { OpenApiSpecLoader } from 'express-openapi-validator/dist/framework/openapi.spec.loader.js';
import type { OpenApiContext } from 'express-openapi-validator/dist/framework/openapi.context.js';

// The same path-to-regexp the library resolves, so that both compile routes alike.
const libraryRequire = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
const { pathToRegexp } = libraryRequire('path-to-regexp') as {
  pathToRegexp(path: string, options: { sensitive: boolean; strict: boolean }): { regexp: RegExp; keys: Array<{ name: string }> };
};

type Operations = Record<string, unknown>;
type ApiDocPaths = { paths: Record<string, Operations> };

/** RouteMethods is one entry of the library's expressRouteMap: a schema per method plus its route names. */
interface RouteMethods {
  basePath: string;
  _openApiRoute: string;
  _expressRoute: string;
  [method: string]: unknown;
}

interface CompiledRoute {
  expressRoute: string;
  openApiRoute: string;
  pathKey: string;
  regexp: RegExp;
  paramNames: string[];
}

/** RouteMatch is what the library's lookupRoute returns for a matching path. */
export interface RouteMatch {
  schema: unknown;
  expressRoute: string;
  openApiRoute: string;
  pathParams: Record<string, string>;
  serial: number;
  _responseSchema: unknown;
}

/** routeTable compiles the context's routes once per (strict, sensitive) pair, in the library's order. */
export function routeTable(context: OpenApiContext): (strict: boolean, sensitive: boolean) => CompiledRoute[] {
  const compiled = new Map<string, CompiledRoute[]>();
  return (strict, sensitive) => {
    const cacheKey = `${strict}:${sensitive}`;
    let routes = compiled.get(cacheKey);
    if (!routes) {
      routes = Object.entries(context.expressRouteMap as Record<string, RouteMethods>).map(([expressRoute, methods]) => {
        const openApiRoute = context.routePair(expressRoute).openApiRoute;
        const { regexp, keys } = pathToRegexp(expressRoute, { sensitive, strict });
        return { expressRoute, openApiRoute, pathKey: openApiRoute.substring(methods.basePath.length), regexp, paramNames: keys.map((key) => key.name) };
      });
      compiled.set(cacheKey, routes);
    }
    return routes;
  };
}

/** lookupRoute is the library's lookupRoute over precompiled routes: first match in order, params decoded. */
export function lookupRoute(table: ReturnType<typeof routeTable>, context: OpenApiContext, responseApiDoc: ApiDocPaths | null,
  req: Request): RouteMatch | null {
  const path = context.useRequestUrl ? req.url.split('?')[0]! : req.originalUrl.split('?')[0]!;
  const method = req.method.toLowerCase();
  const routes = table(!!req.app.enabled('strict routing'), !!req.app.enabled('case sensitive routing'));
  for (const route of routes) {
    const matched = route.regexp.exec(path);
    if (!matched) continue;
    const pathParams: Record<string, string> = {};
    try {
      matched.slice(1).forEach((value, index) => { pathParams[route.paramNames[index]!] = decodeURIComponent(value); });
    } catch {
      throw new validatorErrors.BadRequest({ path: req.path, message: "malformed uri'" });
    }
    return {
      schema: (context.apiDoc as unknown as ApiDocPaths).paths[route.pathKey]![method],
      expressRoute: route.expressRoute, openApiRoute: route.openApiRoute, pathParams, serial: -1,
      _responseSchema: responseApiDoc?.paths[route.pathKey]?.[method],
    };
  }
  return null;
}

/** cachedMetadataMiddleware is the library's applyOpenApiMetadata with lookupRoute above. */
export function cachedMetadataMiddleware(context: OpenApiContext, responseApiDoc: ApiDocPaths | null): RequestHandler {
  const table = routeTable(context);
  const httpMethods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
  return (req: Request, _res: Response, next: NextFunction) => {
    const path = req.path.startsWith(req.baseUrl) ? req.path : `${req.baseUrl}/${req.path}`;
    if (context.shouldIgnoreRoute(path)) return next();
    const matched = lookupRoute(table, context, responseApiDoc, req);
    if (matched) {
      if (!matched.schema) {
        // A documented path with an undocumented method.
        if (context.ignoreUndocumented) return next();
        const methods = (context.openApiRouteMap as Record<string, Operations>)[matched.openApiRoute] ?? {};
        throw new validatorErrors.MethodNotAllowed({
          path: req.path, message: `${req.method} method not allowed`,
          headers: { Allow: Object.keys(methods).filter((key) => httpMethods.has(key.toLowerCase())).join(', ') },
        } as ConstructorParameters<typeof validatorErrors.MethodNotAllowed>[0]);
      }
      const openapi: Record<string, unknown> = {
        expressRoute: matched.expressRoute, openApiRoute: matched.openApiRoute, pathParams: matched.pathParams,
        schema: matched.schema, serial: context.serial,
      };
      if (responseApiDoc) openapi._responseSchema = matched._responseSchema;
      (req as Request & { openapi?: unknown }).openapi = openapi;
      req.params = matched.pathParams;
    } else if (context.isManagedRoute(path) && !context.ignoreUndocumented) {
      throw new validatorErrors.NotFound({ path: req.path, message: 'not found' });
    }
    next();
  };
}

/**
 * openApiValidator is the library's middleware chain for these options (as its `middleware(options)` builds
 * it), with the cached route lookup in place of the per-request one, run as one Express layer: each layer
 * costs every request, and the chain's steps only ever hand on to the next.
 */
export function openApiValidator(options: OpenApiValidatorOpts): RequestHandler {
  const chain = openApiValidatorChain(options);
  return (req, res, next) => {
    let index = 0;
    const step = (error?: unknown): void => {
      if (error !== undefined && error !== null) {
        next(error);
        return;
      }
      const handler = chain[index++];
      if (!handler) {
        next();
        return;
      }
      try {
        const result: unknown = handler(req, res, step);
        if (result instanceof Promise) result.catch(step);
      } catch (thrown) {
        next(thrown);
      }
    };
    step();
  };
}

/** openApiValidatorChain is the library's chain itself, with the cached route lookup. */
export function openApiValidatorChain(options: OpenApiValidatorOpts): RequestHandler[] {
  const validator = new OpenApiValidator(options);
  // metadataMiddleware is private in the library's types; an own property shadows the prototype's method,
  // which installMiddleware calls once, on the first request.
  (validator as unknown as { metadataMiddleware: typeof cachedMetadataMiddleware }).metadataMiddleware = cachedMetadataMiddleware;
  const spec = new OpenApiSpecLoader({
    apiDoc: structuredClone(options.apiSpec) as never, validateApiSpec: validator.options.validateApiSpec, $refParser: validator.options.$refParser,
  }).load();
  return validator.installMiddleware(spec) as unknown as RequestHandler[];
}
