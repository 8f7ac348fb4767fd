import type { RequestHandler, Router } from 'express';
import { match } from 'path-to-regexp';
import { declaredRoutes } from '../route.js';

/** Paths remembered per dispatcher; past this the memory starts over (ids in paths make them many). */
const cachedPaths = 5_000;

/**
 * The API routers, each tried only when one of its declared routes matches the path.
 *
 * Mounted one after another with `app.use(router)`, every router would be walked for every
 * request (each route's pattern tested) and each router that has no match hands over on the
 * next turn of the event loop (`setImmediate`). Here the routers whose routes match a path are
 * found once per path (the door's scans all post to the same one) and only those run, in their
 * mounting order; a router that passes the request on (`next()`) hands it to the next of them,
 * as express would. A path no declared route matches goes through every router as before (and
 * on to the 404 handler). Matching is express's: case-insensitive, trailing slash allowed.
 */
export function routersFor(routers: Router[]): RequestHandler {
  const matchers = routers.map((router) =>
    declaredRoutes([router]).map((route) => {
      const matches = match(route.path, { decode: false });
      return (path: string) => matches(path) !== false;
    }),
  );
  const byPath = new Map<string, Router[]>();
  const candidates = (path: string): Router[] => {
    let found = byPath.get(path);
    if (!found) {
      const matching = routers.filter((_, i) => matchers[i]!.some((matches) => matches(path)));
      found = matching.length > 0 ? matching : routers;
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
      const router = chosen[at++];
      if (!router) return next();
      router(req, res, step);
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
