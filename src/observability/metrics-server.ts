import type { Server } from 'node:http';
import express from 'express';
import { errorHandler, unknownRoute } from '../http/errors.js';
import { metricsEndpoint } from '../http/routes/metrics.js';
import type { Readiness } from '../http/app.js';
import type { Metrics } from './metrics.js';

/**
 * A listener of its own for a process without the api role (projections, relay, workers): the
 * send and webhook counters live in the workers' process, so it must be scraped too.
 * GET /metrics (same access rules as on the API), GET /healthz and GET /readyz (the same checks as
 * the API's: a projections process rebuilding or catching up after start is not ready).
 */
export async function startMetricsServer(options: {
  metrics: Metrics;
  token?: string;
  port: number;
  host: string;
  readiness: () => Promise<Readiness>;
}): Promise<{ server: Server; url: string }> {
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', async (_req, res) => {
    const readiness = await options.readiness();
    res.status(readiness.ready ? 200 : 503).json(readiness);
  });
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
