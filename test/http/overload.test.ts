import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
