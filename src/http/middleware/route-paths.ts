import { match } from 'path-to-regexp';
import type { KnownRoute } from './methods.js';

/** A declared route's pattern as express matches it: case-insensitive, trailing slash allowed. */
export interface RoutePath {
  /** The raw (still percent-encoded) parameters when the pattern matches the path, else undefined. */
  match(path: string): Record<string, string> | undefined;
  /** The first parameter whose percent-encoding is not UTF-8 (express could not decode it), if any. */
  undecodable(raw: Record<string, string>): string | undefined;
  /**
   * Whether the route takes these parameters: they decode and its params schema passes them.
   * `/event/export/stats` matches `/event/export/:exportId`, but `stats` is no GUID, so that
   * route does not take it and `/event/:id/stats` does.
   */
  takes(raw: Record<string, string>): boolean;
}

export function routePath(route: KnownRoute): RoutePath {
  const matcher = match(route.path, { decode: false });
  const undecodable = (raw: Record<string, string>) => Object.keys(raw).find((name) => decoded(raw[name]!) === undefined);
  return {
    match: (path) => {
      const found = matcher(path);
      return found ? (found.params as Record<string, string>) : undefined;
    },
    undecodable,
    takes: (raw) => {
      if (undecodable(raw) !== undefined) return false;
      const params = Object.fromEntries(Object.entries(raw).map(([name, value]) => [name, decoded(value)]));
      return route.params?.safeParse(params).success ?? true;
    },
  };
}

/** A parameter as express decodes it, or undefined when it is not percent-encoded UTF-8. */
function decoded(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}
