import type { Server } from 'node:http';
import express from 'express';
import { errorHandler, unknownRoute } from '../http/errors.js';
import { metricsEndpoint } from '../http/routes/metrics.js';
import type { Metrics } from './metrics.js';

/**
 * A listener of its own for a process without the api role (projections, relay, workers): the
 * send and webhook counters live in the workers' process, so it must be scraped too.
 * GET /metrics (same access rules as on the API) and GET /healthz.
 */
export async function startMetricsServer(options: { metrics: Metrics; token?: string; port: number; host: string }): Promise<{ server: Server; url: string }> {
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/metrics', metricsEndpoint(options.metrics, options.token));
  app.use(unknownRoute);
  app.use(errorHandler);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(options.port, options.host, () => resolve(s));
    s.once('error', reject);
  });
  const address = server.address();
  return { server, url: `http://${options.host}:${typeof address === 'object' && address ? address.port : options.port}` };
}
