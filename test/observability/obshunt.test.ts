/**
 * What an on-call operator wires to the service (docs/operations.md "Metrics", "Health", "Logs
 * and traces"): Kubernetes probes, Prometheus scrapes and a log pipeline.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventStore, Subscription } from '../../src/adapters/eventstore/port.js';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import { projections } from '../../src/main.js';
import { checkpointName } from '../../src/projections/projection.js';
import { createClient, newEvent, request, startTestService } from '../support/service.js';
import { loggedLines } from '../support/log-lines.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

describe('readiness after a restart behind the event store', () => {
  it('answers 503 naming the catch-up until the projections reach the head they found at start, then 200', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'obshunt-'));
    dirs.push(dataDir);
    const first = await startTestService({}, { dataDir });
    const client = await createClient(first);
    await newEvent(client, { title: 'Gala' });
    await first.stop();
    // As a crash during an import leaves it: events in the store the read models have not applied.
    const readStore = new EmbeddedReadStore(path.join(dataDir, 'read-models.sqlite'));
    for (const projection of projections) {
      for (const collection of projection.collections) await readStore.dropCollection(collection.name);
      await readStore.setCheckpoint(checkpointName(projection), null);
    }
    await readStore.close();

    // The projections' catch-up from the start waits until the test has probed.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const gated = (store: EventStore): EventStore =>
      new Proxy(store, {
        get(target, property) {
          const value = Reflect.get(target, property, target) as unknown;
          if (property !== 'subscribeToAll') return typeof value === 'function' ? value.bind(target) : value;
          return (options: Parameters<EventStore['subscribeToAll']>[0]): Subscription => {
            const subscription = target.subscribeToAll(options);
            // The metrics' age probe reads one event (batchSize 1): not held.
            if (options?.fromPosition !== -1 || options.batchSize === 1) return subscription;
            return {
              async *[Symbol.asyncIterator]() {
                await released;
                yield* subscription;
              },
              stop: () => subscription.stop(),
            };
          };
        },
      });
    const { logger, lines } = loggedLines();
    const second = await startTestService({}, { dataDir, logger, wrapEventStore: gated });
    try {
      await expect.poll(() => lines.find((l) => l.msg === 'projections catching up'), { timeout: 60_000 }).toBeDefined();
      const head = lines.find((l) => l.msg === 'projections catching up')!.head as number;
      const during = await request(second.url, 'GET', '/readyz');
      expect(during.status).toBe(503);
      expect(during.body.ready).toBe(false);
      expect(during.body.checks.projections).toMatchObject({ ok: false, catchingUp: true, position: -1, head, lag: head + 1 });
      expect(during.body.checks.projections.error).toMatch(/catching up/);
      // Liveness stays up: a restart would only start the catch-up again.
      expect((await request(second.url, 'GET', '/healthz')).status).toBe(200);
      release();
      await expect.poll(async () => (await request(second.url, 'GET', '/readyz')).status, { timeout: 60_000 }).toBe(200);
      expect((await request(second.url, 'GET', '/readyz')).body.checks.projections).toMatchObject({ ok: true, lag: 0 });
    } finally {
      release();
      await second.stop();
    }
  }, 120_000);
});

describe('the request log line', () => {
  it('names the route template, as the metrics label does, next to the raw URL', async () => {
    const { logger, lines } = loggedLines();
    const service = await startTestService({ LOG_LEVEL: 'info' }, { logger });
    try {
      const client = await createClient(service);
      const eventId = await newEvent(client, { title: 'Gala' });
      expect((await client.call('GET', `/checkin/v1/api/event/${eventId}`)).status).toBe(200);
      expect((await request(service.url, 'GET', `/checkin/v1/api/event/${eventId}`)).status).toBe(401);
      expect((await request(service.url, 'GET', '/no/such/path/1234')).status).toBe(404);
      const completed = () => lines.filter((l) => l.msg === 'request completed') as { route?: string; req: { url: string }; res: { statusCode: number } }[];
      await expect.poll(() => completed().length, { timeout: 30_000 }).toBeGreaterThanOrEqual(5);
      const byUrl = (url: string, status: number) => completed().find((l) => l.req.url === url && l.res.statusCode === status);
      expect(byUrl(`/checkin/v1/api/event/${eventId}`, 200)?.route).toBe('/checkin/v1/api/event/:id');
      expect(byUrl(`/checkin/v1/api/event/${eventId}`, 401)?.route).toBe('/checkin/v1/*');
      expect(byUrl('/no/such/path/1234', 404)?.route).toBe('unmatched');
      expect(byUrl('/checkin/v1/api/event', 200)?.route).toBe('/checkin/v1/api/event');
    } finally {
      await service.close();
    }
  }, 120_000);
});

describe('counters a Prometheus alert reads with rate() or increase()', () => {
  it('are exported at 0 before their first increment in a process that runs the workers', async () => {
    const service = await startTestService();
    try {
      const text = await (await fetch(`${service.url}/metrics`)).text();
      const series = (line: string) => text.split('\n').includes(line);
      for (const probe of ['projections', 'relay', 'consumers', 'webhook_deliveries']) {
        expect(series(`metrics_probe_failures_total{probe="${probe}"} 0`), probe).toBe(true);
      }
      for (const outcome of ['delivered', 'failed', 'error']) expect(series(`webhook_attempts_total{outcome="${outcome}"} 0`), outcome).toBe(true);
      expect(series('invitation_sends_total{outcome="sent",code=""} 0')).toBe(true);
    } finally {
      await service.close();
    }
  }, 120_000);
});
