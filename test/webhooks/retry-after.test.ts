/**
 * A receiver that answers 429 or 503 with Retry-After says when to come back: the next attempt
 * waits at least that long (capped at an hour), not the schedule's shorter delay.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryAfterOf } from '../../src/workers/webhook-sender.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from './receiver.js';

let service: TestService;
let alice: Client;
let receiver: http.Server;
let posts = 0;

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      posts += 1;
      res.writeHead(503, { 'Retry-After': '600' }).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '1000,1000' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(async () => {
  await service.close();
  receiver.close();
});

describe("a receiver's Retry-After", () => {
  it('holds the next attempt back as long as a 503 asks (600 s), not the schedule\'s 1 s', async () => {
    const port = (receiver.address() as AddressInfo).port;
    expect((await alice.call('POST', '/comms/v1/api/comms/webhook', { url: `http://127.0.0.1:${port}/hook` })).status).toBe(200);
    expect((await alice.call('POST', '/comms/v1/api/comms/webhook/test', {})).status).toBe(200);
    const delivery = await eventually(async () => {
      const list = await alice.call('GET', '/comms/v1/api/comms/webhook/deliveries');
      const found = list.body.items.find((d: { status: string }) => d.status === 'retrying');
      return found ?? undefined;
    });
    const waited = Date.parse(delivery.nextAttemptAt) - Date.parse(delivery.lastAttemptAt);
    expect(waited).toBeGreaterThanOrEqual(600_000);
    expect(posts).toBe(1);
  });

  it('reads delay-seconds and HTTP-dates, caps them at an hour, and ignores what it cannot read', () => {
    const now = Date.parse('2026-11-28T10:00:00Z');
    expect(retryAfterOf('120', now)).toBe(120_000);
    expect(retryAfterOf('Sat, 28 Nov 2026 10:05:00 GMT', now)).toBe(300_000);
    expect(retryAfterOf('86400', now)).toBe(3_600_000);
    expect(retryAfterOf('Sat, 28 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterOf('soon', now)).toBeUndefined();
    expect(retryAfterOf(undefined, now)).toBeUndefined();
  });
});
