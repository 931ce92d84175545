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
import { OpenApiContext } from 'express-openapi-validator/dist/framework/openapi.context.js';
import { SchemaPreprocessor } from 'express-openapi-validator/dist/middlewares/parsers/schema.preprocessor.js';
import { inSequence } from '../keyed-chain.js';

// The same path-to-regexp the library resolves, so that both compile routes alike.
const libraryRequire = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
const { pathToRegexp } = libraryRequire('path-to-regexp') as {
  pathToRegexp(
    path: string,
    options: { sensitive: boolean; strict: boolean },
  ): { regexp: RegExp; keys: Array<{ name: string }> };
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
      routes = Object.entries(context.expressRouteMap as Record<string, RouteMethods>).map(
        ([expressRoute, methods]) => {
          const openApiRoute = context.routePair(expressRoute).openApiRoute;
          const { regexp, keys } = pathToRegexp(expressRoute, { sensitive, strict });
          return {
            expressRoute,
            openApiRoute,
            pathKey: openApiRoute.substring(methods.basePath.length),
            regexp,
            paramNames: keys.map((key) => key.name),
          };
        },
      );
      compiled.set(cacheKey, routes);
    }
    return routes;
  };
}

/**
 * routeLookupCacheEntriesMax bounds lookupRoute's cache of which route a parameterless path matched (per
 * strict/sensitive table); when full it is emptied and refilled.
 */
export const routeLookupCacheEntriesMax = 1024;

/** routeIndexCaches holds, per compiled table, path → index of the parameterless route it matched. */
const routeIndexCaches = new WeakMap<CompiledRoute[], Map<string, number>>();

/** lookupRoute is the library's lookupRoute over precompiled routes: first match in order, params decoded. */
export function lookupRoute(
  table: ReturnType<typeof routeTable>,
  context: OpenApiContext,
  responseApiDoc: ApiDocPaths | null,
  req: Request,
): RouteMatch | null {
  const url = context.useRequestUrl ? req.url : req.originalUrl;
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const method = req.method.toLowerCase();
  const routes = table(!!req.app.enabled('strict routing'), !!req.app.enabled('case sensitive routing'));
  let cache = routeIndexCaches.get(routes);
  if (!cache) routeIndexCaches.set(routes, (cache = new Map()));
  // A path that matched a route without parameters matches it again (the first match of a fixed list of
  // regexps on the same string): skip the scan.
  const cachedIndex = cache.get(path);
  // Matched before, so it matches again, with no parameters to decode: no need to run its regexp.
  if (cachedIndex !== undefined) return routeMatch(routes[cachedIndex]!, context, responseApiDoc, method, {});
  for (let index = 0; index < routes.length; index++) {
    const route = routes[index]!;
    const matched = route.regexp.exec(path);
    if (!matched) continue;
    const pathParams: Record<string, string> = {};
    for (let group = 1; group < matched.length; group++) {
      try {
        pathParams[route.paramNames[group - 1]!] = decodeURIComponent(matched[group]!);
      } catch {
        throw new validatorErrors.BadRequest({ path: req.path, message: "malformed uri'" });
      }
    }
    if (route.paramNames.length === 0) {
      if (cache.size >= routeLookupCacheEntriesMax) cache.clear();
      cache.set(path, index);
    }
    return routeMatch(route, context, responseApiDoc, method, pathParams);
  }
  return null;
}

function routeMatch(
  route: CompiledRoute,
  context: OpenApiContext,
  responseApiDoc: ApiDocPaths | null,
  method: string,
  pathParams: Record<string, string>,
): RouteMatch {
  return {
    schema: (context.apiDoc as unknown as ApiDocPaths).paths[route.pathKey]![method],
    expressRoute: route.expressRoute,
    openApiRoute: route.openApiRoute,
    pathParams,
    serial: -1,
    _responseSchema: responseApiDoc?.paths[route.pathKey]?.[method],
  };
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
          path: req.path,
          message: `${req.method} method not allowed`,
          headers: {
            Allow: Object.keys(methods)
              .filter((key) => httpMethods.has(key.toLowerCase()))
              .join(', '),
          },
        } as ConstructorParameters<typeof validatorErrors.MethodNotAllowed>[0]);
      }
      const openapi: Record<string, unknown> = {
        expressRoute: matched.expressRoute,
        openApiRoute: matched.openApiRoute,
        pathParams: matched.pathParams,
        schema: matched.schema,
        serial: context.serial,
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

export interface ValidatorShortcuts {
  /**
   * skipInputlessRequests (default true): a request with no query string and no body, for an operation whose
   * only parameters are optional query parameters and that takes no body, skips the library's request
   * validation: there is nothing it could check or refuse (path, header and cookie parameters, required ones,
   * and bodies all rule the shortcut out). test/api/validator-shortcut.test.ts runs both ways side by side.
   */
  skipInputlessRequests?: boolean;
  /** onSkip hears each request whose validation the shortcut skipped (tests count them). */
  onSkip?: () => void;
}

/** hasNoInput: no query string (or an empty one) and no body announced. */
function hasNoInput(req: Request): boolean {
  const url = req.url;
  const queryAt = url.indexOf('?');
  return (
    (queryAt === -1 || queryAt === url.length - 1) &&
    req.headers['content-length'] === undefined &&
    req.headers['transfer-encoding'] === undefined
  );
}

/** Parameter is the part of an OpenAPI parameter (or a $ref to one) operationNeedsInput reads. */
export interface Parameter {
  in?: string;
  required?: boolean;
  $ref?: string;
}
export interface Operation {
  parameters?: Parameter[];
  requestBody?: unknown;
  $ref?: string;
}

/** inputNeeds remembers, per operation object, whether it has anything but optional query parameters. */
const inputNeeds = new WeakMap<object, boolean>();

/**
 * needsInput: whether an operation (with its path item, undefined when unknown) takes a body or has any
 * parameter other than an optional query parameter; a $ref it cannot see through counts as needing input.
 */
export function needsInput(operation: Operation, pathItem: { parameters?: Parameter[] } | undefined): boolean {
  // The library's loader turns an absent requestBody into null.
  if (pathItem === undefined || operation.$ref != null || operation.requestBody != null) return true;
  const parameters = [...(pathItem.parameters ?? []), ...(operation.parameters ?? [])];
  return !parameters.every((p) => p.$ref === undefined && p.in === 'query' && p.required !== true);
}

/** operationNeedsInput is needsInput for the request's matched operation; undefined when it matched none. */
function operationNeedsInput(req: Request, paths: Record<string, Operations>): boolean | undefined {
  const openapi = (req as Request & { openapi?: { schema?: Operation; openApiRoute?: string } }).openapi;
  const operation = openapi?.schema;
  if (!operation || typeof operation !== 'object') return undefined;
  let needs = inputNeeds.get(operation);
  if (needs === undefined) {
    // No path item under that name (a base path in the way) leaves its parameters unknown: validate.
    const pathItem =
      openapi.openApiRoute !== undefined
        ? (paths[openapi.openApiRoute] as { parameters?: Parameter[] } | undefined)
        : undefined;
    needs = needsInput(operation, pathItem);
    inputNeeds.set(operation, needs);
  }
  return needs;
}

/** ValidatorInternals are the OpenApiValidator members installMiddleware uses (private in its types). */
interface ValidatorInternals {
  options: OpenApiValidatorOpts & {
    ignorePaths?: RegExp | ((path: string) => boolean);
    ignoreUndocumented?: boolean;
    useRequestUrl?: boolean;
  };
  ajvOpts: { preprocessor: unknown };
  installPathParams(app: unknown, context: OpenApiContext): void;
  securityMiddleware(apiDoc: unknown): RequestHandler;
  multipartMiddleware(apiDoc: unknown): RequestHandler;
  requestValidationMiddleware(apiDoc: unknown): RequestHandler;
  responseValidationMiddleware(apiDoc: unknown, serial: number): RequestHandler;
}

/**
 * openApiValidatorChain is the library's chain (installMiddleware in dist/openapi.validator.js) for these
 * options, with the cached route lookup, and without its per-step promise: the library runs each of its four or
 * five steps inside `specPromise.then(...)`, a microtask hop and two promises per step per request, long after
 * the document has loaded. Here the same steps, built by the library's own methods from the same loaded
 * document, run directly once it has loaded (requests before that wait for it, as the library's do). The
 * multipart step is skipped for an operation without a request body: the library's own check
 * (openapi.multipart.js `shouldHandle`) looks only at the operation's requestBody, so it could never act.
 */
export function openApiValidatorChain(
  options: OpenApiValidatorOpts,
  shortcuts: ValidatorShortcuts = {},
): RequestHandler[] & { loaded: Promise<void> } {
  const skipInputless = shortcuts.skipInputlessRequests ?? true;
  const onSkip = shortcuts.onSkip;
  const validator = new OpenApiValidator(options);
  const internals = validator as unknown as ValidatorInternals;
  const settings = internals.options;
  if (settings.operationHandlers) throw new Error('openApiValidatorChain: operationHandlers are not supported');
  const loaded = new OpenApiSpecLoader({
    apiDoc: structuredClone(options.apiSpec) as never,
    validateApiSpec: settings.validateApiSpec,
    $refParser: settings.$refParser,
  })
    .load()
    .then((spec) => {
      const responseApiDoc = new SchemaPreprocessor(
        spec.apiDoc,
        internals.ajvOpts.preprocessor as never,
        settings.validateResponses as never,
      ).preProcess().apiDocRes as unknown as ApiDocPaths;
      const context = new OpenApiContext(
        spec,
        settings.ignorePaths as never,
        settings.ignoreUndocumented,
        settings.useRequestUrl,
      );
      const apiDoc = context.apiDoc as unknown as { components?: { securitySchemes?: unknown } };
      let pathParamsInstalled = false;
      const metadata = cachedMetadataMiddleware(context, responseApiDoc);
      // The library's first two steps as one: its path-parameter hooks installed on the first request, then the
      // route's metadata.
      const steps: RequestHandler[] = [
        (req, res, next) => {
          if (!pathParamsInstalled) internals.installPathParams(req.app, context);
          pathParamsInstalled = true;
          return metadata(req, res, next);
        },
      ];
      if (settings.validateSecurity && apiDoc.components?.securitySchemes)
        steps.push(internals.securityMiddleware(apiDoc));
      if (settings.fileUploader) {
        const multipart = internals.multipartMiddleware(apiDoc);
        steps.push((req, res, next) => {
          const schema = (req as Request & { openapi?: { schema?: { requestBody?: unknown; $ref?: unknown } } }).openapi
            ?.schema;
          // The loader turns an absent requestBody into null.
          return schema?.requestBody == null && schema?.$ref == null ? next() : multipart(req, res, next);
        });
      }
      if (settings.validateRequests) {
        const validateRequest = internals.requestValidationMiddleware(apiDoc);
        const paths = (context.apiDoc as unknown as ApiDocPaths).paths;
        steps.push(
          skipInputless
            ? (req, res, next) => {
                if (!hasNoInput(req) || operationNeedsInput(req, paths) !== false)
                  return validateRequest(req, res, next);
                onSkip?.();
                return next();
              }
            : validateRequest,
        );
      }
      if (settings.validateResponses)
        steps.push(internals.responseValidationMiddleware(responseApiDoc, context.serial));
      return inSequence(steps);
    });
  let chain: RequestHandler | undefined;
  // A document that fails to load fails every request with the library's error, as the library does.
  loaded.then(
    (built) => {
      chain = built;
    },
    () => undefined,
  );
  const handlers: RequestHandler[] = [
    (req, res, next) => {
      if (chain) chain(req, res, next);
      else
        loaded.then((built) => {
          built(req, res, next);
        }, next);
    },
  ];
  // loaded settles once the document is loaded and the steps built (or failed to), for a start that orders its
  // remaining work after it (api/server.ts starts its workers then).
  return Object.assign(handlers, {
    loaded: loaded.then(
      () => undefined,
      () => undefined,
    ),
  });
}
