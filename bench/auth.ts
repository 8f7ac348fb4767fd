/**
 * npm run bench -- auth: authenticated GET /checkin/v1/api/event/{id} against the same route
 * with authentication switched off, and a bare express route as the ceiling, in one run.
 * Target: authenticated keeps at least 80% of the unauthenticated throughput.
 */
import type { Server } from 'node:http';
import express from 'express';
import { createApp } from '../src/http/app.js';
import { createClient, startTestService } from '../test/support/service.js';
import { fmt, load, record, table } from './support.js';

const listen = (app: express.Express) =>
  new Promise<{ server: Server; url: string }>((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => {
      const address = server.address() as { port: number };
      resolve({ server, url: `http://127.0.0.1:${address.port}` });
    });
  });

export async function authBench(): Promise<void> {
  const service = await startTestService({ LOG_LEVEL: 'silent', SQLITE_SYNCHRONOUS: 'FULL' });
  const client = await createClient(service);
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Bench', startTime: '2026-12-01T10:00:00Z', endTime: '2026-12-01T12:00:00Z' });
  const path = `/checkin/v1/api/event/${event.body.id}`;

  // The same app and services, with a fixed principal instead of authentication.
  const open = await listen(
    createApp({
      services: service.services,
      readiness: async () => ({ ready: true, checks: {} }),
      bodyLimit: '1mb',
      trustProxy: false,
      authenticate: (_req, res, next) => {
        res.locals.principal = { tenantId: client.id, actor: { type: 'client', id: client.id }, role: 'client' };
        next();
      },
    }),
  );
  const bare = express();
  bare.get('/ping', (_req, res) => void res.json({ ok: true }));
  const ceiling = await listen(bare);

  const common = { connections: 50, durationSec: 10 };
  const headers = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey };
  await load({ url: `${service.url}${path}`, headers, connections: 10, durationSec: 2 }); // warm-up
  const bareResult = await load({ url: `${ceiling.url}/ping`, ...common });
  const openResult = await load({ url: `${open.url}${path}`, ...common });
  const authResult = await load({ url: `${service.url}${path}`, headers, ...common });
  for (const r of [bareResult, openResult, authResult]) {
    if (r.non2xx > 0 || r.errors > 0) throw new Error(`bench run had failures: ${JSON.stringify(r)}`);
  }
  const ratio = authResult.requestsPerSec / openResult.requestsPerSec;
  const output = table(
    ['route (50 connections, 10 s)', 'requests/s', 'p50 ms', 'p99 ms'],
    [
      ['bare express route (ceiling)', fmt(bareResult.requestsPerSec), bareResult.p50, bareResult.p99],
      ['GET event, authentication off', fmt(openResult.requestsPerSec), openResult.p50, openResult.p99],
      ['GET event, bearer token + subscription key', fmt(authResult.requestsPerSec), authResult.p50, authResult.p99],
    ],
  );
  const verdict = `Authenticated throughput is ${fmt(ratio * 100, 1)}% of unauthenticated (target ≥ 80%).`;
  console.log(`${output}\n\n${verdict}`);
  record('Auth', `${output}\n\n${verdict}`);
  open.server.close();
  ceiling.server.close();
  await service.close();
}
