import type { RequestHandler } from 'express';
import type { ZodType } from 'zod';
import { HttpError } from '../errors.js';
import { routePath } from './route-paths.js';

/** A route as `defineRoute` declared it: the method, the express path and its params schema. */
export interface KnownRoute {
  method: string;
  path: string;
  /** The route's params schema: a route whose schema refuses a path's values yields it to one that takes them (dispatch.ts). */
  params?: ZodType;
  /** Answered without compression, the middleware not even entered (RouteSpec `uncompressed`). */
  uncompressed?: boolean;
}

interface Pattern {
  matches: (path: string) => boolean;
  methods: Set<string>;
  /** How many parameters the path has: the fewest name the resource `/openapi.json` documents at a path. */
  params: number;
}

/**
 * 405 and OPTIONS for the declared routes. A path several patterns match takes the methods of
 * each of them: a literal route names the path only for the methods it defines, so
 * `/event/export` is the export for POST and the event "export" of `/event/:id` for GET
 * (docs/identifiers.md, "Ids in paths"). `Allow` lists the methods of the resource the document
 * describes at that path, the pattern with the fewest parameters (`/event/export`: POST), as a
 * client reading `/openapi.json` expects; a GET there still reaches the event. Paths no route
 * matches are left to the 404 handler.
 */
export function methodGuard(routes: KnownRoute[]): RequestHandler {
  const patterns = new Map<string, Pattern>();
  for (const route of routes) {
    let pattern = patterns.get(route.path);
    if (!pattern) {
      const path = routePath(route);
      pattern = { matches: (p) => path.match(p) !== undefined, methods: new Set(), params: (route.path.match(/[:*]/g) ?? []).length };
      patterns.set(route.path, pattern);
    }
    pattern.methods.add(route.method.toUpperCase());
  }
  const all = [...patterns.values()];

  /** Per path: the `Allow` list and its methods, or null when no declared route matches (bounded memory). */
  const byPath = new Map<string, { allow: string; methods: Set<string> } | null>();
  const allowedOn = (path: string) => {
    const known = byPath.get(path);
    if (known !== undefined) return known;
    const matching = all.filter((p) => p.matches(path));
    let found: { allow: string; methods: Set<string> } | null = null;
    if (matching.length > 0) {
      const withHeadAndOptions = (list: Pattern[]) => {
        const methods = new Set(list.flatMap((p) => [...p.methods]));
        if (methods.has('GET')) methods.add('HEAD');
        methods.add('OPTIONS');
        return methods;
      };
      const methods = withHeadAndOptions(matching);
      const fewest = Math.min(...matching.map((p) => p.params));
      const documented = withHeadAndOptions(matching.filter((p) => p.params === fewest));
      const allow = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => documented.has(m)).join(', ');
      found = { allow, methods };
    }
    if (byPath.size >= 5_000) byPath.clear();
    byPath.set(path, found);
    return found;
  };

  return (req, res, next) => {
    const found = allowedOn(req.path);
    if (!found) return next();
    const { allow, methods } = found;
    if (req.method === 'OPTIONS') {
      res.set('Allow', allow).status(204).end();
      return;
    }
    if (!methods.has(req.method)) {
      return next(
        new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${req.path}; use ${allow}`, undefined, { Allow: allow }),
      );
    }
    next();
  };
}
