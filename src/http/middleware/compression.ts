import type { RequestHandler } from 'express';
import compression from 'compression';
import type { KnownRoute } from './methods.js';
import { routePath } from './route-paths.js';

/** Answers smaller than this go as they are: the headers and the stream would cost more than they save. */
export const compressionThresholdBytes = 1024;

/** Paths remembered; past this the memory starts over (ids in paths make them many). */
const cachedPaths = 5_000;

/**
 * Negotiated compression (docs/operations.md, "Compression"): brotli (quality 4, the library's
 * default, about gzip's speed) or gzip, as the client's `Accept-Encoding` prefers, for answers of
 * a compressible type (JSON, CSV, HTML, JavaScript; not the xlsx, PDF or PNG files, which are
 * compressed already) of at least 1 KiB. A streamed answer (a guest list, an export file) is
 * compressed as it is written, with backpressure.
 *
 * The `compression` middleware wraps `write`, `end` and `on` of every response it sees, which
 * costs some 20 to 35 µs a request even when the answer turns out small (measured on a bare
 * express route). So it is not entered at all for a request without `Accept-Encoding`, for HEAD,
 * or for a route declared `uncompressed` (the door's scans, where those microseconds count). An
 * answer with `Content-Range` (a static asset's 206) is not compressed: the range is of the
 * identity bytes. `Cache-Control: no-transform` is honoured by the library.
 *
 * Mounted before the idempotency middleware, which then stores and replays the plain answer.
 */
export function compressAnswers(routes: KnownRoute[]): RequestHandler {
  const compress = compression({
    threshold: compressionThresholdBytes,
    filter: (req, res) => res.getHeader('Content-Range') === undefined && compression.filter(req, res),
  });
  const plain = routes
    .filter((route) => route.uncompressed)
    .map((route) => ({ method: route.method.toUpperCase(), path: routePath(route) }));
  const plainMethods = new Set(plain.map((route) => route.method));
  const byPath = new Map<string, boolean>();
  const uncompressed = (method: string, path: string): boolean => {
    if (!plainMethods.has(method)) return false;
    const key = `${method} ${path}`;
    let found = byPath.get(key);
    if (found === undefined) {
      found = plain.some((route) => route.method === method && route.path.match(path) !== undefined);
      if (byPath.size >= cachedPaths) byPath.clear();
      byPath.set(key, found);
    }
    return found;
  };
  return (req, res, next) => {
    if (!req.headers['accept-encoding'] || req.method === 'HEAD' || uncompressed(req.method, req.path)) return next();
    compress(req, res, next);
  };
}
