import type { RequestHandler, Router } from 'express';
import { undecodableParam } from '../errors.js';
import { declaredRoutes, routesAlone } from '../route.js';
import { routePath, type RoutePath } from './route-paths.js';

/** Paths remembered per dispatcher; past this the memory starts over (ids in paths make them many). */
const cachedPaths = 5_000;

/** A route (or a whole router) that may run for a path. */
interface Candidate {
  run: RequestHandler;
  /** Upper-case method of a lone route; undefined for a whole router. */
  method?: string;
  path: RoutePath;
}

/** The candidates chosen for one path, each with what it makes of the path's parameters. */
interface Chosen {
  run: RequestHandler;
  method?: string;
  /** A parameter whose percent-encoding is not UTF-8: the route answers 400 naming it. */
  undecodable?: string;
}

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
 *
 * When several routes match a path, those whose params schemas take its values go first: a
 * literal route wins only where its own parameter could be meant, whatever the mounting order.
 * `GET /event/export/timeline` matches `/event/export/:exportId` (mounted first) and
 * `/event/:id/timeline`; `timeline` is no GUID, so it is the timeline of the event "export"
 * (docs/identifiers.md, "Ids in paths").
 * A parameter that is not valid percent-encoded UTF-8 is a 400 naming it, in the error shape.
 */
export function routersFor(routers: Router[]): RequestHandler {
  const routes: Candidate[] = routers.flatMap((router) => {
    const alone = routesAlone(router);
    const onlyDeclared = alone.length > 0 && alone.length === (router as Router & { stack?: unknown[] }).stack?.length;
    const declared = declaredRoutes([router]);
    const paths = declared.map((route) => routePath(route));
    // Every route of a router with other layers runs the whole router: one candidate, not one per route.
    return onlyDeclared
      ? alone.map((route, i) => ({ run: route.alone as RequestHandler, method: declared[i]!.method.toUpperCase(), path: paths[i]! }))
      : [{ run: router as RequestHandler, path: anyOf(paths) }];
  });
  const everything: Chosen[] = (routers as RequestHandler[]).map((run) => ({ run }));
  const byPath = new Map<string, Chosen[]>();
  const candidates = (path: string): Chosen[] => {
    let found = byPath.get(path);
    if (!found) {
      const matching = routes.flatMap((route) => {
        const raw = route.path.match(path);
        return raw ? [{ route, raw }] : [];
      });
      if (matching.length === 0) found = everything;
      else {
        // Only where routes compete are their schemas asked (most paths have one match); the sort is stable.
        const ranked =
          matching.length === 1
            ? matching
            : matching.map((m) => ({ ...m, takes: m.route.path.takes(m.raw) })).sort((a, b) => Number(b.takes) - Number(a.takes));
        found = ranked.map(({ route, raw }) => {
          const undecodable = route.path.undecodable(raw);
          return { run: route.run, ...(route.method ? { method: route.method } : {}), ...(undecodable ? { undecodable } : {}) };
        });
      }
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
      const candidate = chosen[at++];
      if (!candidate) return next();
      // Express would fail on it whatever the method (its URIError, code bad_request): ours names the parameter.
      if (candidate.undecodable) return handles(candidate.method!, req.method) ? next(undecodableParam(candidate.undecodable)) : step();
      candidate.run(req, res, step);
    };
    step();
  };
}

/** A whole router: it matches when one of its routes does, and its own layers decide the rest. */
const anyOf = (paths: RoutePath[]): RoutePath => ({
  match: (path) => (paths.some((p) => p.match(path) !== undefined) ? {} : undefined),
  undecodable: () => undefined,
  takes: () => true,
});

/** Whether a route of `method` answers a request of `requestMethod` (express answers HEAD with GET). */
const handles = (method: string, requestMethod: string) => method === requestMethod || (method === 'GET' && requestMethod === 'HEAD');

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
