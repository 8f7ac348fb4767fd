import type { Request, RequestHandler } from 'express';
import type { Metrics } from '../../observability/metrics.js';

/** API areas: a request refused before it reached a route (401, 429, 503) is labelled by its area. */
const areas = ['/checkin/v1', '/comms/v1', '/users/v1', '/admin/v1', '/core'];

/** The route template (`/checkin/v1/api/event/:id`), never the raw path, so label values stay few. */
export function routeLabel(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof path === 'string') return `${req.baseUrl}${path}`;
  const area = areas.find((prefix) => req.originalUrl === prefix || req.originalUrl.startsWith(`${prefix}/`));
  return area ? `${area}/*` : 'unmatched';
}

/** Observes every answered request in http_request_duration_seconds. */
export function httpMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    res.once('finish', () => metrics.observeHttp(routeLabel(req), req.method, res.statusCode, (performance.now() - started) / 1000));
    next();
  };
}
