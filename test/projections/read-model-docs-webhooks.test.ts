import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';

/**
 * docs/read-models.md against the documents of the collections test/projections/read-model-docs.test.ts
 * does not build: `webhooks`, `webhook_deliveries` and `sending_domains`. Their sections describe
 * the fields in prose, so the field names are read from the page itself (every `code` word of the
 * collection's section): a field a projection writes that the page does not name fails here
 * (fields were added to `webhook_deliveries` that the page did not name).
 */
const page = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'read-models.md'), 'utf8');

/** The `code` words of the section headed "## `<collection>` ...", up to the next heading. */
function namedIn(collection: string): Set<string> {
  const start = page.indexOf(`## \`${collection}\``);
  expect(start, `docs/read-models.md has a section for ${collection}`).toBeGreaterThanOrEqual(0);
  const rest = page.slice(start + 3);
  const section = rest.slice(0, rest.search(/^#{1,6} /m) === -1 ? undefined : rest.search(/^#{1,6} /m));
  return new Set([...section.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)/g)].map((match) => match[1]!));
}

const api = '/comms/v1/api/comms';
let service: TestService;
let client: Client;
let receiver: Receiver;
const docs: Record<string, Record<string, unknown>[]> = {};

async function read(name: string): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  for await (const doc of service.platform.readStore.collection(name).stream({}, { readOnly: true })) found.push(doc as Record<string, unknown>);
  return found;
}

describe('docs/read-models.md against the webhook and sending-domain documents (embedded store)', () => {
  beforeAll(async () => {
    // One retry 50 ms after the first attempt: a delivery goes retrying, then dead, quickly.
    service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '50' });
    client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    receiver = await startReceiver({ answers: [500, 500], fallback: 200 });
    const expectOk = (reply: { status: number; body: unknown }) => expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expectOk(await client.call('POST', `${api}/webhook`, { url: receiver.url }));
    const rotated = await client.call('POST', `${api}/webhook/rotate`);
    expectOk(rotated);
    // The receiver checks signatures with the account's secret, and answers 401 to anything else.
    receiver.secret = rotated.body.secret;
    const test = await client.call('POST', `${api}/webhook/test`);
    expectOk(test);
    const id = test.body.webhookId as string;
    await eventually(async () => (await client.call('GET', `${api}/webhook/deliveries/${id}`)).body.deadLetteredAt, 20_000, 'the delivery dead-lettered');
    expectOk(await client.call('POST', `${api}/webhook/deliveries/${id}/redeliver`));
    await eventually(async () => (await client.call('GET', `${api}/webhook/deliveries/${id}`)).body.status === 'delivered', 20_000, 'the redelivery delivered');
    expectOk(await client.call('POST', `${api}/domain`, { domain: 'example.com' }));
    for (const name of ['webhooks', 'webhook_deliveries', 'sending_domains']) docs[name] = await read(name);
  }, 60_000);
  afterAll(async () => {
    await receiver?.close();
    await service?.close();
  });

  it.each(['webhooks', 'webhook_deliveries', 'sending_domains'])('%s: every field of every document is documented', (name) => {
    expect(docs[name]!.length, `${name} has documents`).toBeGreaterThan(0);
    const documented = namedIn(name);
    const undocumented = new Set<string>();
    for (const doc of docs[name]!) for (const key of Object.keys(doc)) if (key !== '_pos' && !documented.has(key)) undocumented.add(key);
    expect([...undocumented]).toEqual([]);
  });

  it('a delivery retried, dead-lettered and redelivered carries the documented fields, and each attempt the documented ones', () => {
    const [delivery] = docs.webhook_deliveries!;
    expect(delivery).toMatchObject({
      clientId: client.id,
      type: 'comms.test',
      sourceEventId: expect.any(String),
      status: 'delivered',
      attempts: 3,
      lastAttemptAt: expect.any(String),
      lastStatusCode: 200,
      deliveredAt: expect.any(String),
      redeliveries: 1,
    });
    const attempts = delivery!.attemptLog as Record<string, unknown>[];
    expect(attempts.map((attempt) => attempt.statusCode)).toEqual([500, 500, 200]);
    const documented = namedIn('webhook_deliveries');
    for (const attempt of attempts) expect(Object.keys(attempt).filter((key) => !documented.has(key))).toEqual([]);
    expect(docs.webhooks).toEqual([expect.objectContaining({ _id: client.id, url: receiver.url, secretRotatedAt: expect.any(String) })]);
  });
});
