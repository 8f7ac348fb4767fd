/**
 * Webhooks as a receiver sees them, driven through HTTP (branch webhookrx): what the interface
 * text promises a receiver, checked with a receiver written from that text (./receiver.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, specVerify, startReceiver, type Receiver } from './receiver.js';

// Attempts held by a test receiver stay in flight well past any stall of a loaded machine.
const env = { WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '50,50,50,50,50,50,50,50,50', WEBHOOK_TIMEOUT_MS: '60000' };
const api = '/comms/v1/api/comms';

let service: TestService;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  service = await startTestService(env);
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
  await service.close();
});

const commsClient = () => createClient(service, { commsApiEnabled: true, senderTrusted: true });

async function receiverFor(client: Client, options: Parameters<typeof startReceiver>[0] = {}): Promise<Receiver> {
  const receiver = await startReceiver(options);
  closers.push(() => receiver.close());
  const configured = await client.call('POST', `${api}/webhook`, { url: receiver.url });
  expect(configured.status).toBe(200);
  receiver.secret = configured.body.secret;
  return receiver;
}

/** The delivery once it is no longer pending or retrying. */
async function settled(client: Client, webhookId: string) {
  return eventually(async () => {
    const reply = await client.call('GET', `${api}/webhook/deliveries/${webhookId}`);
    return reply.status === 200 && !['pending', 'retrying'].includes(reply.body.status) ? reply.body : undefined;
  }, 20_000, `delivery ${webhookId} settled`);
}

/** A receiver that holds each request until `release(status)` answers it. */
async function holdingReceiver() {
  const held: http.ServerResponse[] = [];
  let arrived: () => void = () => {};
  const first = new Promise<void>((resolve) => (arrived = resolve));
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      held.push(res);
      arrived();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    first,
    held: () => held.length,
    release(status: number) {
      for (const res of held.splice(0)) {
        res.statusCode = status;
        res.end();
      }
    },
  };
}

describe('webhook delete (docs/webhooks.md: deliveries not yet made stop)', () => {
  it('does not send a retry of the deleted webhook to one configured again before that retry; redeliver sends it there', async () => {
    const client = await commsClient();
    const old = await holdingReceiver();
    expect((await client.call('POST', `${api}/webhook`, { url: old.url })).status).toBe(200);
    const test = await client.call('POST', `${api}/webhook/test`);
    expect(test.status).toBe(200);
    await old.first;

    // While the first attempt is in flight, the integrator deletes the webhook and configures a new one.
    expect((await client.call('POST', `${api}/webhook/delete`)).status).toBe(200);
    const fresh = await receiverFor(client);
    old.release(503);

    const delivery = await settled(client, test.body.webhookId);
    expect(delivery.status).toBe('failed');
    expect(delivery.failureReason).toBe('the webhook was deleted');
    expect(delivery.attemptLog.map((a: { statusCode?: number }) => a.statusCode)).toEqual([503, undefined]);
    expect(fresh.deliveries).toHaveLength(0);

    // Asked for explicitly, it goes to the webhook configured now, signed with its secret.
    const again = await client.call('POST', `${api}/webhook/deliveries/${test.body.webhookId}/redeliver`);
    expect(again.status).toBe(200);
    const [redelivered] = await fresh.waitFor(1, 20_000);
    expect(redelivered!.specVerified).toBe(true);
    expect(redelivered!.headers['x-service-webhook-id']).toBe(test.body.webhookId);
    expect((await settled(client, test.body.webhookId)).status).toBe('delivered');
  });
});

describe('events the dispatcher reaches late (the interface: latency up to about a minute)', () => {
  it('does not send an event that happened before the webhook was deleted to the one configured after it', async () => {
    const client = await commsClient();
    const old = await receiverFor(client);
    const relay = service.relay!;
    // The bus lags: the event is stored, the dispatcher has not seen it yet.
    await relay.stop();
    let before: { status: number; body: { webhookId: string } };
    let fresh: Receiver;
    try {
      before = await client.call('POST', `${api}/webhook/test`, { correlationId: 'under-the-old-webhook' });
      expect(before.status).toBe(200);
      expect((await client.call('POST', `${api}/webhook/delete`)).status).toBe(200);
      fresh = await receiverFor(client);
    } finally {
      await relay.start();
    }
    // One stream, in order: once the dispatcher delivered this one, it has handled the one before.
    const after = await client.call('POST', `${api}/webhook/test`, { correlationId: 'under-the-new-webhook' });
    const [delivery] = await fresh.waitFor(1, 20_000);
    expect(delivery!.headers['x-service-webhook-id']).toBe(after.body.webhookId);
    expect(delivery!.specVerified).toBe(true);
    await settled(client, after.body.webhookId);
    expect(fresh.deliveries.map((d) => d.body.data.correlationId)).toEqual(['under-the-new-webhook']);
    expect(old.deliveries).toHaveLength(0);
    // No delivery was made for it; it stays readable for reconciliation.
    expect((await client.call('GET', `${api}/webhook/deliveries/${before.body.webhookId}`)).status).toBe(404);
    const events = await client.call('GET', `${api}/events`);
    expect(events.body.items.map((e: { id: string }) => e.id)).toEqual(expect.arrayContaining([before.body.webhookId, after.body.webhookId]));
  });
});

describe('secret rotation (spec: Comms rule 3, the old secret stops working immediately)', () => {
  it('retries, with the new secret, a delivery the receiver rejected (401) because it was signed before a rotation', async () => {
    const client = await commsClient();
    // A receiver written from the interface: it verifies with the secret it holds when it reads the
    // request, and answers 401 (and ignores the event) when verification fails.
    let secret = '';
    const arrivals: { webhookId: string; verified: boolean }[] = [];
    const held: (() => void)[] = [];
    let arrived: () => void = () => {};
    const first = new Promise<void>((resolve) => (arrived = resolve));
    let holdNext = true;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const answer = () => {
          const verified = specVerify(Buffer.concat(chunks), req.headers['x-service-signature'] as string, secret);
          arrivals.push({ webhookId: String(req.headers['x-service-webhook-id']), verified });
          res.statusCode = verified ? 200 : 401;
          res.end();
        };
        if (!holdNext) return answer();
        holdNext = false;
        held.push(answer);
        arrived();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const configured = await client.call('POST', `${api}/webhook`, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` });
    secret = configured.body.secret;
    const test = await client.call('POST', `${api}/webhook/test`);
    await first;

    // The delivery is on its way, signed with the old secret; the integrator rotates and switches the receiver over.
    const rotated = await client.call('POST', `${api}/webhook/rotate`);
    expect(rotated.status).toBe(200);
    secret = rotated.body.secret;
    held.shift()!();

    const delivery = await settled(client, test.body.webhookId);
    expect(delivery.status).toBe('delivered');
    expect(delivery.attemptLog.map((a: { statusCode?: number }) => a.statusCode)).toEqual([401, 200]);
    expect(arrivals).toEqual([
      { webhookId: test.body.webhookId, verified: false },
      { webhookId: test.body.webhookId, verified: true },
    ]);
  });

  it('still treats a 401 as final when the secret was not rotated during the attempt', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    receiver.secret = 'whsec_not-the-one-the-service-holds';
    const test = await client.call('POST', `${api}/webhook/test`);
    const delivery = await settled(client, test.body.webhookId);
    expect(delivery.status).toBe('failed');
    expect(delivery.attemptLog.map((a: { statusCode?: number }) => a.statusCode)).toEqual([401]);
  });
});

describe('URL change (spec: Comms rule 2)', () => {
  it('retries at the new URL a delivery the old URL rejected for good while the URL was being changed', async () => {
    const client = await commsClient();
    const old = await holdingReceiver();
    const configured = await client.call('POST', `${api}/webhook`, { url: old.url });
    const test = await client.call('POST', `${api}/webhook/test`);
    await old.first;

    // The old endpoint is being retired: the integrator points the webhook elsewhere, then the old one answers 410.
    const moved = await startReceiver({ secret: configured.body.secret });
    closers.push(() => moved.close());
    expect((await client.call('POST', `${api}/webhook`, { url: moved.url })).body).toEqual({ url: moved.url, secret: null });
    old.release(410);

    const delivery = await settled(client, test.body.webhookId);
    expect(delivery.status).toBe('delivered');
    expect(delivery.attemptLog.map((a: { url: string; statusCode?: number }) => [a.url, a.statusCode])).toEqual([
      [old.url, 410],
      [moved.url, 200],
    ]);
    expect(moved.deliveries.map((d) => [d.headers['x-service-webhook-id'], d.specVerified])).toEqual([[test.body.webhookId, true]]);
  });

  it('still treats a 410 as final when the URL did not change', async () => {
    const client = await commsClient();
    await receiverFor(client, { fallback: 410 });
    const test = await client.call('POST', `${api}/webhook/test`);
    const delivery = await settled(client, test.body.webhookId);
    expect(delivery.status).toBe('failed');
    expect(delivery.attemptLog.map((a: { statusCode?: number }) => a.statusCode)).toEqual([410]);
  });
});
