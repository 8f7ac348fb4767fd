import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusMessage } from '../../src/adapters/bus/port.js';
import { deliveryStream } from '../../src/domain/webhook.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, specVerify, startReceiver, type Receiver } from './receiver.js';

// Ten attempts: one retry a second later (so its signature timestamp differs), then quick ones.
const retryDelays = '1000,20,20,20,20,20,20,20,20';
const env = { WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: retryDelays };
const api = '/comms/v1/api/comms';

let service: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  service = await startTestService(env);
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service.close();
});

async function receiverFor(client: Client, options: Parameters<typeof startReceiver>[0] = {}): Promise<Receiver> {
  const receiver = await startReceiver(options);
  receivers.push(receiver);
  const configured = await client.call('POST', `${api}/webhook`, { url: receiver.url });
  expect(configured.status).toBe(200);
  receiver.secret = configured.body.secret;
  return receiver;
}

const commsClient = () => createClient(service, { commsApiEnabled: true, senderTrusted: true });

async function deliveryOf(client: Client, webhookId: string, status?: string) {
  return eventually(async () => {
    const reply = await client.call('GET', `${api}/webhook/deliveries/${webhookId}`);
    return reply.status === 200 && (!status || reply.body.status === status) ? reply.body : undefined;
  }, 10_000, `delivery ${webhookId} ${status ?? ''}`);
}

describe('webhook configuration (spec: Comms rules 2-4)', () => {
  it('returns the secret once on create, never on GET, keeps it on a URL change and replaces it on rotate', async () => {
    const client = await commsClient();
    const created = await client.call('POST', `${api}/webhook`, { url: 'http://127.0.0.1:9/first' });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ url: 'http://127.0.0.1:9/first', secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/) });

    const read = await client.call('GET', `${api}/webhook`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ url: 'http://127.0.0.1:9/first', createdAt: expect.any(String), updatedAt: expect.any(String) });
    expect(JSON.stringify(read.body)).not.toContain('whsec_');

    const changed = await client.call('POST', `${api}/webhook`, { url: 'http://127.0.0.1:9/second' });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({ url: 'http://127.0.0.1:9/second', secret: null });
    expect((await client.call('GET', `${api}/webhook`)).body.url).toBe('http://127.0.0.1:9/second');

    const rotated = await client.call('POST', `${api}/webhook/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.url).toBe('http://127.0.0.1:9/second');
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    const afterRotate = await client.call('GET', `${api}/webhook`);
    expect(afterRotate.body.secretRotatedAt).toEqual(expect.any(String));
    expect(JSON.stringify(afterRotate.body)).not.toContain('whsec_');

    // The stored form is ciphertext with a key id: the plaintext appears in no stored event.
    const history = await service.platform.eventStore.readStream(`webhook-${client.id}`);
    expect(history.map((e) => e.type)).toEqual(['WebhookConfigured', 'WebhookUrlChanged', 'WebhookSecretRotated']);
    expect(history[0]!.data).toMatchObject({ encryptedSecret: expect.any(String), keyId: expect.any(String) });
    expect(JSON.stringify(history)).not.toContain(created.body.secret);
    expect(JSON.stringify(history)).not.toContain(rotated.body.secret);
  });

  it('never keeps a secret in the Idempotency-Key store: create and rotate run again on a repeat', async () => {
    const client = await commsClient();
    const key = { 'idempotency-key': `wh-${Date.now()}` };
    const first = await client.call('POST', '/comms/v1/api/comms/webhook', { url: 'http://127.0.0.1:9/a' }, key);
    expect(first.body.secret).toBeTruthy();
    const rotated = await client.call('POST', '/comms/v1/api/comms/webhook/rotate', undefined, { 'idempotency-key': `${key['idempotency-key']}-r` });
    expect(rotated.body, JSON.stringify(rotated.body)).toHaveProperty('secret');
    const stored: string[] = [];
    for await (const doc of service.platform.readStore.collection('idempotency_keys').stream({})) stored.push(JSON.stringify(doc));
    expect(stored.join('\n')).not.toContain(first.body.secret);
    expect(stored.join('\n')).not.toContain(rotated.body.secret);
    const again = await client.call('POST', '/comms/v1/api/comms/webhook', { url: 'http://127.0.0.1:9/a' }, key);
    expect(again.status).toBe(200);
    expect(again.body.secret).toBeNull();
  });

  it('answers 404 on GET, rotate, test and delete when no webhook is configured, and deletes one that is', async () => {
    const client = await commsClient();
    for (const [method, path] of [
      ['GET', '/webhook'],
      ['POST', '/webhook/rotate'],
      ['POST', '/webhook/test'],
      ['POST', '/webhook/delete'],
    ] as const) {
      const reply = await client.call(method, `${api}${path}`);
      expect(reply.status, `${method} ${path}`).toBe(404);
      expect(reply.body.code).toBe('not_found');
    }
    await client.call('POST', `${api}/webhook`, { url: 'http://127.0.0.1:9/x' });
    const deleted = await client.call('POST', `${api}/webhook/delete`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ url: 'http://127.0.0.1:9/x', deleted: true });
    expect((await client.call('GET', `${api}/webhook`)).status).toBe(404);
    // After a delete, create starts again with a fresh secret.
    const again = await client.call('POST', `${api}/webhook`, { url: 'http://127.0.0.1:9/x' });
    expect(again.body.secret).toMatch(/^whsec_/);
  });

  it('rejects a missing or malformed url with 400 validation_error on url', async () => {
    const client = await commsClient();
    for (const body of [{}, { url: '' }, { url: 'not a url' }, { url: 'ftp://example.com/x' }]) {
      const reply = await client.call('POST', `${api}/webhook`, body);
      expect(reply.status).toBe(400);
      expect(reply.body.code).toBe('validation_error');
      expect(reply.body.errors.map((e: { path: string }) => e.path)).toContain('url');
    }
  });

  it('accepts a URL whose host does not resolve yet (every delivery resolves again), and refuses a refused address at once', async () => {
    const client = await commsClient();
    // RFC 6761: .invalid never resolves.
    const pending = await client.call('POST', `${api}/webhook`, { url: 'https://hooks.not-yet.invalid/comms' });
    expect(pending.status).toBe(200);
    expect(pending.body).toMatchObject({ url: 'https://hooks.not-yet.invalid/comms' });
    expect(pending.body.secret).toMatch(/^whsec_/);
    const metadata = await client.call('POST', `${api}/webhook`, { url: 'https://169.254.169.254/latest' });
    expect(metadata.status).toBe(400);
    expect(metadata.body.errors.map((e: { path: string }) => e.path)).toEqual(['url']);
    expect((await client.call('GET', `${api}/webhook`)).body.url).toBe('https://hooks.not-yet.invalid/comms');
  });

  it('documents every webhook route in the OpenAPI document', async () => {
    const doc = await fetch(`${service.url}/openapi.json`).then((r) => r.json() as Promise<{ paths: Record<string, unknown> }>);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        `${api}/webhook`,
        `${api}/webhook/rotate`,
        `${api}/webhook/delete`,
        `${api}/webhook/test`,
        `${api}/webhook/deliveries`,
        `${api}/webhook/deliveries/{id}`,
        `${api}/webhook/deliveries/{id}/redeliver`,
        `${api}/events`,
      ]),
    );
  });

  it('applies the comms gates (spec: Authentication rules 2 and 3)', async () => {
    const closed = await createClient(service);
    expect((await closed.call('GET', `${api}/webhook`)).body.code).toBe('comms_api_not_enabled');
    const untrusted = await createClient(service, { commsApiEnabled: true });
    expect((await untrusted.call('POST', `${api}/webhook`, { url: 'http://127.0.0.1:9/x' })).body.code).toBe('trust_required');
  });
});

describe('delivery (spec: Events)', () => {
  it('sends comms.test with exactly the spec headers and body, signed over the bytes sent', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const asked = Math.floor(Date.now() / 1000);
    const test = await client.call('POST', `${api}/webhook/test`, { correlationId: 'corr-42' });
    expect(test.status).toBe(200);
    expect(test.body).toEqual({ webhookId: expect.stringMatching(/^[0-9a-f-]{36}$/), type: 'comms.test' });

    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.specVerified).toBe(true);
    expect(delivery!.helperVerified).toBe(true);
    expect(delivery!.headers['content-type']).toBe('application/json');
    expect(delivery!.headers['x-service-event']).toBe('comms.test');
    expect(delivery!.headers['x-service-webhook-id']).toBe(test.body.webhookId);
    expect(delivery!.headers['x-service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    // Signed at the attempt: after the request, before it arrived (no bound on how long that took).
    expect(delivery!.signature.t).toBeGreaterThanOrEqual(asked);
    expect(delivery!.signature.t).toBeLessThanOrEqual(Math.floor(delivery!.receivedAt / 1000));
    expect(Object.keys(delivery!.body)).toEqual(['id', 'type', 'createdAt', 'data']);
    expect(delivery!.body).toEqual({
      id: test.body.webhookId,
      type: 'comms.test',
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      data: {
        attendeeId: expect.any(String),
        templateId: expect.any(String),
        attendeeInvitationId: expect.any(String),
        status: 'test',
        error: null,
        correlationId: 'corr-42',
      },
    });

    const logged = await deliveryOf(client, test.body.webhookId, 'delivered');
    expect(logged).toMatchObject({ id: test.body.webhookId, type: 'comms.test', status: 'delivered', attempts: 1 });
    // A finished delivery shows no lease of an attempt long over.
    expect(logged).not.toHaveProperty('leaseUntil');
    expect(logged.attemptLog).toEqual([
      { attempt: 1, attemptedAt: expect.any(String), url: receiver.url, durationMs: expect.any(Number), statusCode: 200 },
    ]);
  });

  it('retries a receiver that answers 500 twice: three deliveries, one webhook id, fresh signatures', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client, { answers: [500, 500] });
    const test = await client.call('POST', `${api}/webhook/test`);
    const deliveries = await receiver.waitFor(3);
    expect(deliveries.map((d) => d.headers['x-service-webhook-id'])).toEqual(Array(3).fill(test.body.webhookId));
    expect(deliveries.every((d) => d.specVerified && d.helperVerified)).toBe(true);
    // The body bytes are the same; the timestamp and signature are made at each attempt.
    expect(new Set(deliveries.map((d) => d.rawBody.toString())).size).toBe(1);
    expect(deliveries[1]!.signature.t).toBeGreaterThan(deliveries[0]!.signature.t);
    expect(deliveries[1]!.signature.v1).not.toBe(deliveries[0]!.signature.v1);
    // Each signed at its own attempt: after the previous one arrived, before this one did.
    deliveries.forEach((d, i) => {
      expect(d.signature.t).toBeLessThanOrEqual(Math.floor(d.receivedAt / 1000));
      if (i > 0) expect(d.signature.t).toBeGreaterThanOrEqual(Math.floor(deliveries[i - 1]!.receivedAt / 1000));
    });

    const logged = await deliveryOf(client, test.body.webhookId, 'delivered');
    expect(logged.attemptLog.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 500, 200]);
    expect(receiver.deliveries).toHaveLength(3);
  });

  it('treats a 4xx other than 408/429 as final, and retries 408 and 429', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client, { answers: [429, 408], fallback: 404 });
    const test = await client.call('POST', `${api}/webhook/test`);
    const logged = await deliveryOf(client, test.body.webhookId, 'failed');
    expect(logged.attemptLog.map((a: { statusCode: number }) => a.statusCode)).toEqual([429, 408, 404]);
    expect(logged.failureReason).toContain('404');
    // The receiver records a request before answering it, and the log an attempt after its answer:
    // what the log shows has arrived, so the receiver's side is compared with it, with no sleep.
    // The failed delivery is final: no attempt started after its failure.
    expect(receiver.deliveries.map((d) => [d.headers['x-service-webhook-id'], d.answered])).toEqual([429, 408, 404].map((status) => [test.body.webhookId, status]));
    const stream = (await service.platform.eventStore.readStream(deliveryStream(test.body.webhookId))).map((e) => e.type);
    expect(stream).toContain('WebhookDeliveryFailed');
    expect(stream.slice(stream.indexOf('WebhookDeliveryFailed'))).not.toContain('WebhookDeliveryAttemptStarted');
  });

  it('dead-letters a receiver that always fails after the configured attempts, then redelivers it from there', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client, { fallback: 503 });
    const deadLetters: BusMessage[] = [];
    const consumer = await service.platform.bus.consume(
      { groupId: `test-dlq-${client.id}`, topics: ['comms.events.v1.dlq'] },
      async (message) => void deadLetters.push(message),
    );
    try {
      const test = await client.call('POST', `${api}/webhook/test`);
      const dead = await deliveryOf(client, test.body.webhookId, 'dead');
      expect(dead.attempts).toBe(10);
      expect(receiver.deliveries).toHaveLength(10);
      const letter = await eventually(async () => deadLetters.find((m) => m.headers['x-webhook-id'] === test.body.webhookId));
      expect(letter.headers).toMatchObject({ 'x-dlq-attempts': '10', 'event-type': 'WebhookTestRequested', 'tenant-id': client.id });
      expect(letter.headers['x-dlq-error']).toContain('503');
      expect((await deliveryOf(client, test.body.webhookId)).deadLetteredAt).toEqual(expect.any(String));
      expect((await client.call('GET', `${api}/webhook/deliveries?status=dead`)).body.items.map((d: { id: string }) => d.id)).toEqual([
        test.body.webhookId,
      ]);

      receiver.fallback = 200;
      const redelivered = await client.call('POST', `${api}/webhook/deliveries/${test.body.webhookId}/redeliver`);
      expect(redelivered.status).toBe(200);
      expect(redelivered.body.status).toBe('pending');
      const [, , , , , , , , , first, again] = await receiver.waitFor(11);
      expect(again!.headers['x-service-webhook-id']).toBe(test.body.webhookId);
      expect(again!.rawBody.equals(first!.rawBody)).toBe(true);
      expect(again!.specVerified).toBe(true);
      const delivered = await deliveryOf(client, test.body.webhookId, 'delivered');
      expect(delivered.attempts).toBe(11);
      expect(delivered.deadLetteredAt).toBeUndefined();
    } finally {
      await consumer.close();
    }
  });

  it("dead-letters an invitation's outcome as the relay published it: the guest's email stays sealed", async () => {
    const client = await commsClient();
    await receiverFor(client, { fallback: 503 });
    const deadLetters: BusMessage[] = [];
    const consumer = await service.platform.bus.consume(
      { groupId: `test-dlq-sealed-${client.id}`, topics: ['comms.events.v1.dlq'] },
      async (message) => void deadLetters.push(message),
    );
    try {
      const eventId = (await client.call('POST', '/checkin/v1/api/event', { title: 'Dinner', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' })).body.id;
      const email = `sealed-${client.id.slice(0, 8)}@example.com`;
      const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Sealed', email });
      const template = await client.call('POST', `${api}/template`, { eventId, name: 'Invite', subject: 'Hello', html: '<p>Hello {{firstName}}</p>' });
      expect((await client.call('POST', `${api}/send`, { templateId: template.body.id, attendeeIds: [guest.body.id] })).status).toBe(200);
      const letter = await eventually(async () => deadLetters.find((m) => m.headers['event-type'] === 'SendSucceeded' && m.headers['tenant-id'] === client.id), 20_000);
      const event = JSON.parse(letter.value) as { data: { to?: string; personalData?: { ciphertext: string } } };
      expect(event.data.to).toBeUndefined();
      expect(event.data.personalData?.ciphertext).toEqual(expect.any(String));
      expect(letter.value).not.toContain(email);
    } finally {
      await consumer.close();
    }
  });

  it('signs with the new secret at once after a rotation: the old secret fails verification', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const oldSecret = receiver.secret;
    const rotated = await client.call('POST', `${api}/webhook/rotate`);
    // The receiver still trusts the old secret: it must refuse the delivery (spec step 5).
    const test = await client.call('POST', `${api}/webhook/test`);
    const [refused] = await receiver.waitFor(1);
    expect(refused!.specVerified).toBe(false);
    expect(refused!.answered).toBe(401);
    expect((await deliveryOf(client, test.body.webhookId, 'failed')).lastStatusCode).toBe(401);

    receiver.secret = rotated.body.secret;
    const second = await client.call('POST', `${api}/webhook/test`);
    const [, accepted] = await receiver.waitFor(2);
    expect(accepted!.specVerified).toBe(true);
    expect(accepted!.headers['x-service-webhook-id']).toBe(second.body.webhookId);
    receiver.secret = oldSecret;
    expect(receiver.deliveries.slice(0, 2).every((d) => !verifyWith(oldSecret, d))).toBe(true);
  });

  it('keeps the secret when only the URL changes: the new URL gets deliveries signed with it', async () => {
    const client = await commsClient();
    const first = await receiverFor(client);
    const second = await startReceiver({ secret: first.secret });
    receivers.push(second);
    const changed = await client.call('POST', `${api}/webhook`, { url: second.url });
    expect(changed.body.secret).toBeNull();
    await client.call('POST', `${api}/webhook/test`);
    const [delivery] = await second.waitFor(1);
    expect(delivery!.specVerified).toBe(true);
    expect(first.deliveries).toHaveLength(0);
  });

  it('never lets a hanging receiver delay another account', async () => {
    const slow = await commsClient();
    const slowReceiver = await receiverFor(slow, { fallback: 'hang' });
    for (let i = 0; i < 6; i++) await slow.call('POST', `${api}/webhook/test`);
    await slowReceiver.waitFor(4);
    const fast = await commsClient();
    const fastReceiver = await receiverFor(fast);
    await fast.call('POST', `${api}/webhook/test`);
    await fastReceiver.waitFor(1);
    // Delivered while all four of the slow account's attempts still hang (each waits out a 10 s timeout):
    // the fast account did not wait for a slot of the slow one.
    expect(slowReceiver.hangingOpen()).toBe(4);
    // At most 4 attempts of one account are in flight at once.
    expect(slowReceiver.deliveries).toHaveLength(4);
  });
});

describe('tenancy (spec: Authentication rule 4)', () => {
  it('never sends one client’s events to another, and hides its deliveries and events', async () => {
    const alice = await commsClient();
    const bob = await commsClient();
    const aliceReceiver = await receiverFor(alice);
    const bobReceiver = await receiverFor(bob);
    const test = await alice.call('POST', `${api}/webhook/test`);
    await aliceReceiver.waitFor(1);
    await deliveryOf(alice, test.body.webhookId, 'delivered');
    // Where each attempt went, from the delivery's stream (final once delivered): a check after a
    // fixed sleep could end before a misdirected attempt reached bob's receiver.
    const attemptedUrls = async () =>
      (await service.platform.eventStore.readStream(deliveryStream(test.body.webhookId))).filter((e) => e.type === 'WebhookDeliveryAttempted').map((e) => (e.data as { url: string }).url);
    expect(new Set(await attemptedUrls())).toEqual(new Set([aliceReceiver.url]));
    expect(bobReceiver.deliveries).toHaveLength(0);

    expect((await bob.call('GET', `${api}/webhook/deliveries/${test.body.webhookId}`)).status).toBe(404);
    const redeliver = await bob.call('POST', `${api}/webhook/deliveries/${test.body.webhookId}/redeliver`);
    expect(redeliver.status).toBe(404);
    expect(redeliver.body.code).toBe('not_found');
    expect((await bob.call('GET', `${api}/webhook/deliveries`)).body.items).toEqual([]);
    expect((await bob.call('GET', `${api}/events`)).body.items).toEqual([]);
    expect((await bob.call('POST', `${api}/webhook/deliveries/${crypto.randomUUID()}/redeliver`)).status).toBe(404);
    // Bob's redeliver changed nothing: no redelivery was asked on the delivery's stream (so none is
    // sent), every attempt went to alice, and each delivery alice got is this one (by id: webhooks
    // are at least once); bob got none.
    const types = (await service.platform.eventStore.readStream(deliveryStream(test.body.webhookId))).map((e) => e.type);
    expect(types).not.toContain('WebhookRedeliveryRequested');
    expect(new Set(await attemptedUrls())).toEqual(new Set([aliceReceiver.url]));
    expect(bobReceiver.deliveries).toHaveLength(0);
    expect(new Set(aliceReceiver.deliveries.map((d) => d.headers['x-service-webhook-id']))).toEqual(new Set([test.body.webhookId]));
  });
});

describe('delivery log and reconciliation', () => {
  it('lists deliveries newest first, filtered and paged, and the comms events since a time', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client, { answers: [404] });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await client.call('POST', `${api}/webhook/test`, { correlationId: `c${i}` })).body.webhookId);
    await receiver.waitFor(3);
    await eventually(async () => {
      const all = (await client.call('GET', `${api}/webhook/deliveries`)).body.items;
      return all.length === 3 && all.every((d: { status: string }) => d.status !== 'pending') ? all : undefined;
    });
    const failed = await client.call('GET', `${api}/webhook/deliveries?status=failed`);
    expect(failed.body.items.map((d: { id: string }) => d.id)).toEqual([ids[0]]);
    const page1 = await client.call('GET', `${api}/webhook/deliveries?type=comms.test&limit=2`);
    expect(page1.body.items).toHaveLength(2);
    const page2 = await client.call('GET', `${api}/webhook/deliveries?limit=2&type=comms.test&cursor=${page1.body.nextCursor}`);
    expect([...page1.body.items, ...page2.body.items].map((d: { id: string }) => d.id).sort()).toEqual([...ids].sort());
    expect(page2.body.nextCursor).toBeUndefined();
    const future = await client.call('GET', `${api}/webhook/deliveries?from=2999-01-01T00:00:00Z`);
    expect(future.body.items).toEqual([]);
    expect((await client.call('GET', `${api}/webhook/deliveries?status=nonsense`)).status).toBe(400);
    expect((await client.call('GET', `${api}/webhook/deliveries?cursor=garbage`)).status).toBe(400);

    const events = await client.call('GET', `${api}/events?since=2000-01-01T00:00:00Z&limit=2`);
    expect(events.status).toBe(200);
    expect(events.body.items.map((e: { id: string }) => e.id)).toEqual(ids.slice(0, 2));
    expect(events.body.items[0]).toMatchObject({ type: 'comms.test', data: { status: 'test', correlationId: 'c0' }, deliveryStatus: 'failed' });
    const rest = await client.call('GET', `${api}/events?since=2000-01-01T00:00:00Z&limit=2&cursor=${events.body.nextCursor}`);
    expect(rest.body.items.map((e: { id: string }) => e.id)).toEqual([ids[2]]);
    // The events list carries exactly what the webhook body carried.
    const sent = receiver.deliveries.find((d) => d.body.id === ids[1])!.body;
    expect({ ...events.body.items[1], deliveryStatus: undefined }).toEqual({ ...sent, deliveryStatus: undefined });
    expect((await client.call('GET', `${api}/events?since=2999-01-01T00:00:00Z`)).body.items).toEqual([]);
  });
});

function verifyWith(secret: string, delivery: { rawBody: Buffer; headers: Record<string, unknown> }): boolean {
  return specVerify(delivery.rawBody, delivery.headers['x-service-signature'] as string, secret);
}
