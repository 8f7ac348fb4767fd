import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OverloadGuard } from '../../src/http/middleware/overload.js';
import { createClient, request, startTestService, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

let service: TestService;

beforeAll(async () => {
  // OVERLOAD_MIN_IN_FLIGHT=0: refuse every request while overloaded, so one request at a time shows it.
  service = await startTestService({ OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '100', OVERLOAD_RETRY_AFTER_SECONDS: '2', OVERLOAD_MIN_IN_FLIGHT: '0' });
});
afterAll(() => service.close());

/** Keeps the event loop busy in 250 ms slices (the service shares this process), until stopped. */
function hogEventLoop(): { stop: () => Promise<void> } {
  let running = true;
  const done = (async () => {
    while (running) {
      const end = performance.now() + 250;
      while (performance.now() < end) {
        // busy on purpose
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
    },
  };
}

describe('overload (issue 12 item 8)', () => {
  it('refuses API requests with 503 overloaded and Retry-After while the event loop lags, keeps /healthz and /metrics answering, and recovers', async () => {
    // On a loaded machine the service may already shed the account and token requests: retry them, as a client should.
    const client = await eventually(async () => createClient(service).catch(() => undefined), 60_000, 'an account and a token');
    // Start-up work may lag the loop for a moment: begin once requests are accepted.
    await eventually(async () => (await client.call('GET', '/checkin/v1/api/events')).status === 200, 30_000, 'requests accepted');

    const hog = hogEventLoop();
    try {
      const refused = await eventually(async () => {
        const reply = await client.call('GET', '/checkin/v1/api/events');
        return reply.status === 503 ? reply : undefined;
      }, 30_000, 'a 503 while the event loop is hogged');
      expect(refused.body).toEqual({ code: 'overloaded', message: 'the service is overloaded; retry after 2 s' });
      expect(refused.headers.get('retry-after')).toBe('2');
      expect(refused.headers.get('x-request-id')).toBeTruthy();

      expect((await request(service.url, 'GET', '/healthz')).status).toBe(200);
      const metrics = await request(service.url, 'GET', '/metrics');
      expect(metrics.status).toBe(200);
      expect(String(metrics.body)).toMatch(/^overload_refusals_total [1-9]\d*$/m);
    } finally {
      await hog.stop();
    }

    await eventually(async () => (await client.call('GET', '/checkin/v1/api/events')).status === 200, 30_000, 'requests accepted again');
  }, 90_000);

  it('never refuses with the guard switched off (OVERLOAD_MAX_EVENT_LOOP_DELAY_MS=0)', async () => {
    const unguarded = await startTestService({ OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0' });
    const client = await createClient(unguarded);
    // Token keys fetched and cached before the loop is hogged.
    expect((await client.call('GET', '/checkin/v1/api/events')).status).toBe(200);
    const hog = hogEventLoop();
    try {
      const statuses: number[] = [];
      for (let round = 0; round < 3; round++) {
        const replies = await Promise.all(Array.from({ length: 20 }, () => client.call('GET', '/checkin/v1/api/events')));
        statuses.push(...replies.map((r) => r.status));
      }
      expect(statuses).toEqual(Array(60).fill(200));
    } finally {
      await hog.stop();
      await unguarded.close();
    }
  }, 60_000);

  it('admits at most OVERLOAD_MAX_IN_FLIGHT API requests at once, refuses the next at once, passes /healthz, and admits again when one finishes', async () => {
    const held: ServerResponse[] = [];
    const app = (_req: IncomingMessage, res: ServerResponse) => void held.push(res);
    const guard = new OverloadGuard({ maxEventLoopDelayMs: 10_000, retryAfterSeconds: 1, maxInFlight: 2, minInFlight: 0 });
    const server = createServer(guard.handler(app));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const first = fetch(`${url}/checkin/v1/api/events`);
      const second = fetch(`${url}/checkin/v1/api/events`);
      await eventually(async () => held.length === 2, 60_000, 'two requests in flight');
      const third = await fetch(`${url}/checkin/v1/api/events`);
      expect(third.status).toBe(503);
      expect(await third.json()).toEqual({ code: 'overloaded', message: 'the service is overloaded; retry after 1 s' });
      expect(third.headers.get('retry-after')).toBe('1');
      // Health passes whatever is in flight (and is held by this app like any request).
      void fetch(`${url}/healthz`);
      await eventually(async () => held.length === 3, 60_000, '/healthz admitted past the cap');
      for (const res of held.splice(0)) res.end('ok');
      expect((await first).status).toBe(200);
      expect((await second).status).toBe(200);
      const again = fetch(`${url}/checkin/v1/api/events`);
      await eventually(async () => held.length === 1, 60_000, 'a request admitted again');
      held.splice(0).forEach((res) => res.end('ok'));
      expect((await again).status).toBe(200);
    } finally {
      guard.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('has no cap with load shedding switched off (OVERLOAD_MAX_EVENT_LOOP_DELAY_MS=0)', async () => {
    const held: ServerResponse[] = [];
    const guard = new OverloadGuard({ maxEventLoopDelayMs: 0, retryAfterSeconds: 1, maxInFlight: 1 });
    const server = createServer(guard.handler((_req, res) => void held.push(res)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const replies = Array.from({ length: 3 }, () => fetch(`${url}/checkin/v1/api/events`));
      await eventually(async () => held.length === 3, 60_000, 'three requests in flight');
      held.splice(0).forEach((res) => res.end('ok'));
      expect((await Promise.all(replies)).map((r) => r.status)).toEqual([200, 200, 200]);
    } finally {
      guard.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
