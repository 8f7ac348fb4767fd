import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import cors from 'cors';

/**
 * Where a browser app on an allowed origin may call (docs/operations.md, "Browsers (CORS)"): the
 * API, the dev identity provider's token endpoint and discovery, and the OpenAPI document. Not
 * /admin/v1 (the operator key belongs in no browser), the probes, /metrics, /docs or /dashboard
 * (pages of this origin).
 */
export const corsPaths = ['/checkin/v1', '/comms/v1', '/users/v1', '/core', '/openapi.json'];

/** A preflight's route label in the metrics: its area, as src/http/middleware/http-metrics.ts labels a request no route took. */
const routeLabels = new Map(corsPaths.map((path) => [path, path.endsWith('.json') ? path : `${path}/*`]));

/** The request headers the service reads, which a browser asks leave for in a preflight. */
export const corsRequestHeaders = [
  'Authorization',
  'Ocp-Apim-Subscription-Key',
  'Content-Type',
  'Idempotency-Key',
  'X-Request-Id',
  'X-Correlation-Id',
  'traceparent',
  'tracestate',
];

/** The answer headers the service sets that a page can read only when they are exposed. */
export const corsExposedHeaders = [
  'X-Request-Id',
  'Idempotent-Replayed',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Location',
  'Content-Location',
  'Content-Disposition',
  'X-Export-Id',
  'X-Next-Cursor',
  'WWW-Authenticate',
  'Allow',
];

export interface CorsOptions {
  /** Origins as browsers send them (config.ts parses CORS_ORIGINS so). */
  origins: string[];
  /** Hears each preflight answered here, with its route label (`/checkin/v1/*`). */
  onPreflight?: (route: string, seconds: number) => void;
}

/**
 * CORS in front of the server's request listener, before load shedding and the app, so that
 * every answer an allowed origin gets carries the CORS headers (a 503 `overloaded`, a 429, a 401
 * included): without them the page sees a network error, not the status and its `Retry-After`.
 *
 * A preflight (OPTIONS with `Access-Control-Request-Method`) from an allowed origin is answered
 * here, 204: no authentication, method guard, rate limit or load shedding sees it, since it
 * carries no credentials and does no work. Any request from another origin, or without `Origin`
 * (a native app, a server), goes on as if CORS did not exist: no CORS header at all, and a
 * preflight reaches the method guard, which answers it without them, so the browser refuses.
 * Answers on these paths say `Vary: Origin` whatever the request, so no cache hands one
 * origin's answer to another.
 */
export function withCors(listener: RequestListener, options: CorsOptions): RequestListener {
  const allowed = new Set(options.origins);
  const common = {
    origin: true, // reflect: the origin is checked against the list above
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: corsRequestHeaders,
    exposedHeaders: corsExposedHeaders,
    // Chromium's ceiling (Firefox keeps one a day): a page sends one preflight per URL and two hours.
    maxAge: 7200,
  };
  const preflight = cors({ ...common, preflightContinue: false, optionsSuccessStatus: 204 });
  // Any other request, a plain OPTIONS too (answered by the method guard with `Allow`), gets the headers and goes on.
  const actual = cors({ ...common, preflightContinue: true });
  return (req: IncomingMessage, res: ServerResponse) => {
    const area = corsArea(req.url ?? '');
    if (area === undefined) return listener(req, res);
    res.setHeader('Vary', 'Origin');
    const origin = req.headers.origin;
    if (origin === undefined || !allowed.has(origin)) return listener(req, res);
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      const started = performance.now();
      preflight(req, res, () => {});
      options.onPreflight?.(routeLabels.get(area)!, (performance.now() - started) / 1000);
      return;
    }
    actual(req, res, () => listener(req, res));
  };
}

/**
 * The CORS path `url` is under (case-insensitive, as express matches), or undefined. A request
 * target in absolute form (`GET http://host/checkin/v1/... HTTP/1.1`, which RFC 9112 section 3.2.2
 * says a server must accept, and express routes by its path) is read by its path too.
 */
function corsArea(target: string): string | undefined {
  const url = target.startsWith('/') ? target : target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '');
  for (const path of corsPaths) {
    if (url.length < path.length || url.slice(0, path.length).toLowerCase() !== path) continue;
    const next = url[path.length];
    if (next === undefined || next === '/' || next === '?') return path;
  }
  return undefined;
}
