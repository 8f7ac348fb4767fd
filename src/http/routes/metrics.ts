import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Metrics } from '../../observability/metrics.js';
import { HttpError } from '../errors.js';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** A request from this machine that no proxy forwarded (a proxy on loopback would add its headers). */
function fromLoopback(req: Request): boolean {
  const address = req.socket.remoteAddress ?? '';
  const loopback = address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
  return loopback && !req.get('x-forwarded-for') && !req.get('forwarded');
}

/**
 * GET /metrics (docs/operations.md "Metrics"): Prometheus text. With METRICS_TOKEN set it needs
 * `Authorization: Bearer <METRICS_TOKEN>`; without it, it answers only on loopback.
 */
export function metricsEndpoint(metrics: Metrics, token: string | undefined): RequestHandler {
  const expected = token ? digest(token) : undefined;
  return async (req, res) => {
    if (expected) {
      const [scheme, presented] = (req.get('authorization') ?? '').split(' ', 2);
      if (scheme?.toLowerCase() !== 'bearer' || !presented || !timingSafeEqual(digest(presented), expected)) {
        throw new HttpError(401, 'unauthorized', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', undefined, {
          'WWW-Authenticate': 'Bearer realm="metrics"',
        });
      }
    } else if (!fromLoopback(req)) {
      throw new HttpError(403, 'forbidden', 'GET /metrics answers only on loopback while METRICS_TOKEN is not set; set METRICS_TOKEN to scrape it from elsewhere');
    }
    const body = await metrics.render();
    res.set('Content-Type', metrics.contentType).set('Cache-Control', 'no-store').send(body);
  };
}
