import type { RequestHandler, Router } from 'express';
import { match } from 'path-to-regexp';
import { declaredRoutes, routesAlone } from '../route.js';

/** Paths remembered per dispatcher; past this the memory starts over (ids in paths make them many). */
const cachedPaths = 5_000;

/**
 * The API routers, each route tried only when its path matches.
 *
 * Mounted one after another with `app.use(router)`, every router would be walked for every
 * request (each route's pattern tested) and each router that has no match hands over on the
 * next turn of the event loop (`setImmediate`). Here the routes whose paths match a path are
 * found once per path (the door's scans all post to the same one) and only those run, each on
 * a router that holds it alone (`routesAlone`), in mounting and declaration order; a route
 * that passes the request on (`next()`) hands it to the next of them, as express would. A
 * router with anything besides declared routes runs whole when one of its routes matches. A
 * path no declared route matches goes through every router as before (and on to the 404
 * handler). Matching is express's: case-insensitive, trailing slash allowed.
 */
export function routersFor(routers: Router[]): RequestHandler {
  const routes = routers.flatMap((router) => {
    const alone = routesAlone(router);
    const onlyDeclared = alone.length > 0 && alone.length === (router as Router & { stack?: unknown[] }).stack?.length;
    const matchers = declaredRoutes([router]).map((route) => {
      const matches = match(route.path, { decode: false });
      return (path: string) => matches(path) !== false;
    });
    // Every route of a router with other layers runs the whole router: one candidate, not one per route.
    return onlyDeclared
      ? alone.map((route, i) => ({ matches: matchers[i]!, run: route.alone as RequestHandler }))
      : [{ matches: (path: string) => matchers.some((m) => m(path)), run: router as RequestHandler }];
  });
  const everything = routers as RequestHandler[];
  const byPath = new Map<string, RequestHandler[]>();
  const candidates = (path: string): RequestHandler[] => {
    let found = byPath.get(path);
    if (!found) {
      const matching = routes.filter((route) => route.matches(path)).map((route) => route.run);
      found = matching.length > 0 ? matching : everything;
      if (byPath.size >= cachedPaths) byPath.clear();
      byPath.set(path, found);
    }
    return found;
  };
  return (req, res, next) => {
    const chosen = candidates(req.path);
    let at = 0;
    const step = (error?: unknown): void => {
      // An error, or 'router' (leave this router), ends the walk as express's own router would.
      if (error !== undefined && error !== null && error !== 'route') return next(error === 'router' ? undefined : error);
      const run = chosen[at++];
      if (!run) return next();
      run(req, res, step);
    };
    step();
  };
}

/**
 * A router that serves only paths under `prefix` (its routes declare full paths), skipped
 * without being walked for every other path. Case-insensitive, as express matches.
 */
export function onlyUnder(prefix: string, router: Router): RequestHandler {
  const lower = prefix.toLowerCase();
  return (req, res, next) => {
    const path = req.path.toLowerCase();
    if (path === lower || path.startsWith(`${lower}/`)) router(req, res, next);
    else next();
  };
}
