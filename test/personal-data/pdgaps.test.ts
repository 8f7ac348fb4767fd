/**
 * Gaps in personal-data handling (docs/personal-data.md):
 * - the suppression list is about an address, whichever guest's invitation bounced: erasing one
 *   guest must neither lift the suppression for another guest of the client who has the address
 *   (who would be emailed again after a bounce or an unsubscribe) nor keep the erased guest's
 *   address; the entry is named by a keyed hash of the address instead;
 * - a webhook delivery dead-lettered without its source event must not publish its opened body
 *   (a comms.dropped's error quotes the recipient) to the dead-letter topic.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusMessage } from '../../src/adapters/bus/port.js';
import type { EventStore } from '../../src/adapters/eventstore/port.js';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { filesHolding } from '../support/files-holding.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';

const api = '/checkin/v1/api';
const comms = '/comms/v1/api/comms';
const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
let service: TestService;
const receivers: Receiver[] = [];
/** Streams whose single-event reads (a source event read back) find nothing: a source event that cannot be read. */
const unreadable = new Set<string>();

const hidingSources = (store: EventStore): EventStore =>
  new Proxy(store, {
    get(target, property) {
      if (property === 'readStream') {
        return (name: string, options?: { fromRevision?: number; maxCount?: number }) =>
          unreadable.has(name) && options?.maxCount === 1 ? Promise.resolve([]) : target.readStream(name, options as never);
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });

beforeAll(async () => {
  service = await startTestService(
    {
      SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      INVITES_SENDING_ADDRESS: 'invites@checkin.test',
      WEBHOOK_ALLOW_INSECURE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: '300,300,300,20',
    },
    { wrapEventStore: hidingSources },
  );
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service?.close();
});

const report = (events: unknown[]) => postSendGridEvents(service.url, privateKey, events);

async function templateOf(client: Client, eventId: string): Promise<string> {
  const template = await client.call('POST', `${comms}/template`, { eventId, name: 'Pass', subject: 'Your pass', html: '<p>Hello {{firstName}}</p>' });
  expect(template.status, JSON.stringify(template.body)).toBe(200);
  return template.body.id as string;
}

async function guest(client: Client, fields: Record<string, unknown>): Promise<string> {
  const created = await client.call('POST', `${api}/guest`, fields);
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body.id as string;
}

/** The guest's invitation once sent (hang guard only, far above any real figure). */
const sentInvitation = (client: Client, guestId: string) =>
  eventually(async () => {
    const [item] = (await client.call('GET', `${comms}/invitations?attendeeId=${guestId}`)).body.items;
    return item?.status === 'sent' ? (item as { attendeeInvitationId: string }) : undefined;
  }, 30_000, 'invitation sent');

const providerEvent = (email: string, attendeeInvitationId: string, event: string, reason?: string) => ({
  email,
  timestamp: Math.floor(Date.now() / 1000),
  attendeeInvitationId,
  event,
  sg_event_id: `ev-${randomUUID()}`,
  ...(reason ? { reason } : {}),
});

const send = (client: Client, templateId: string, guestId: string) => client.call('POST', `${comms}/send`, { templateId, attendeeIds: [guestId] });

/** A guest invited (sent) whose address the provider then reported bounced, once the list holds it. */
async function bouncedGuest(client: Client, email: string) {
  const eventId = await newEvent(client);
  const templateId = await templateOf(client, eventId);
  const guestId = await guest(client, { eventId, firstName: 'Bo', email, commsTemplateId: templateId });
  const invitation = await sentInvitation(client, guestId);
  expect((await report([providerEvent(email, invitation.attendeeInvitationId, 'bounce', '550 5.1.1 mailbox unknown')])).status).toBe(200);
  await eventually(async () => ((await send(client, templateId, guestId)).status === 422 ? true : undefined), 30_000, 'the address suppressed');
  return { eventId, templateId, guestId };
}

const suppressionDocs = async (clientId: string) => {
  const docs: unknown[] = [];
  for await (const doc of service.platform.readStore.collection('comms_suppressions').stream({ clientId }, { readOnly: true })) docs.push(doc);
  return docs;
};

describe('the suppression list after an erasure', () => {
  it('keeps suppressing an address for another guest of the client who has it, after the bounced guest is erased and after a rebuild', async () => {
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const email = `shared.${randomUUID().slice(0, 8)}@example.com`;
    const first = await bouncedGuest(client, email);
    const otherEvent = await newEvent(client);
    const otherTemplate = await templateOf(client, otherEvent);
    const other = await guest(client, { eventId: otherEvent, firstName: 'Cy', email });
    expect((await send(client, otherTemplate, other)).body).toMatchObject({ code: 'previous_send_permanently_failed' });

    expect((await client.call('POST', `${api}/guest/${first.guestId}/erase`, { reason: 'art. 17' })).status).toBe(200);
    const refused = await send(client, otherTemplate, other);
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body).toMatchObject({ code: 'previous_send_permanently_failed' });
    const access = await client.call('GET', `${api}/guest/${other}/personal-data`);
    expect(access.body.suppressions).toEqual([{ email, reason: 'bounced', at: expect.any(String) }]);

    await service.runner!.rebuild([]);
    expect((await send(client, otherTemplate, other)).status).toBe(422);
  }, 120_000);

  it('holds no erased guest’s address anywhere under DATA_DIR, and still suppresses the address for a guest given it later', async () => {
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const email = `gone.${randomUUID().slice(0, 8)}@example.com`;
    const bounced = await bouncedGuest(client, email);
    expect((await client.call('POST', `${api}/guest/${bounced.guestId}/erase`, { reason: 'art. 17' })).status).toBe(200);
    expect(JSON.stringify(await suppressionDocs(client.id)).toLowerCase()).not.toContain(email);
    expect(await suppressionDocs(client.id)).toHaveLength(1);
    expect(filesHolding(service.dataDir, [email])).toEqual([]);

    const later = await guest(client, { eventId: bounced.eventId, firstName: 'Di', email });
    const refused = await send(client, bounced.templateId, later);
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body).toMatchObject({ code: 'previous_send_permanently_failed' });
  }, 120_000);

  it('turns a legacy entry (named by the address) into one named by its keyed hash on erasure: the other guest stays suppressed, the address goes', async () => {
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const email = `legacy.${randomUUID().slice(0, 8)}@example.com`;
    const eventId = await newEvent(client);
    const templateId = await templateOf(client, eventId);
    const erased = await guest(client, { eventId, firstName: 'Ed', email });
    const kept = await guest(client, { eventId: await newEvent(client), firstName: 'Flo', email });
    // What the projection wrote for a report recorded before entries were named by the hash.
    await service.platform.readStore
      .collection('comms_suppressions')
      .replaceOne(`${client.id}:${email}`, { clientId: client.id, email, reason: 'unsubscribed', at: '2026-01-01T00:00:00.000Z', attendeeInvitationId: randomUUID() });
    expect((await send(client, templateId, erased)).status).toBe(422);

    expect((await client.call('POST', `${api}/guest/${erased}/erase`, { reason: 'art. 17' })).status).toBe(200);
    expect(JSON.stringify(await suppressionDocs(client.id)).toLowerCase()).not.toContain(email);
    const access = await client.call('GET', `${api}/guest/${kept}/personal-data`);
    expect(access.body.suppressions).toEqual([{ email, reason: 'unsubscribed', at: '2026-01-01T00:00:00.000Z' }]);
  }, 120_000);
});

describe('a dead-lettered webhook delivery', () => {
  it('whose source event cannot be read publishes its delivery event sealed, never the opened body quoting the recipient', async () => {
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const receiver = await startReceiver({ fallback: 503 });
    receivers.push(receiver);
    receiver.secret = (await client.call('POST', `${comms}/webhook`, { url: receiver.url })).body.secret;
    const email = `dropped.${randomUUID().slice(0, 8)}@example.com`;
    const eventId = await newEvent(client);
    const templateId = await templateOf(client, eventId);
    const guestId = await guest(client, { eventId, firstName: 'Gil', email });
    expect((await send(client, templateId, guestId)).status).toBe(200);
    const invitation = await sentInvitation(client, guestId);
    const deadLetters: BusMessage[] = [];
    const consumer = await service.platform.bus.consume(
      { groupId: `test-dlq-pdgaps-${client.id}`, topics: ['comms.events.v1.dlq'] },
      async (message) => void deadLetters.push(message),
    );
    try {
      expect((await report([providerEvent(email, invitation.attendeeInvitationId, 'dropped', `Bounced Address <${email}>`)])).status).toBe(200);
      // The comms.dropped delivery, scheduled (its body opened from the event store), failing at the receiver.
      const delivery = await eventually(async () => {
        const items = (await client.call('GET', `${comms}/webhook/deliveries`)).body.items as { id: string; type?: string; eventType?: string }[];
        return items.find((d) => JSON.stringify(d).includes('comms.dropped'));
      }, 30_000, 'the comms.dropped delivery');
      // From now on its source event reads back as nothing.
      unreadable.add(`invitation-${invitation.attendeeInvitationId}`);
      const letter = await eventually(async () => deadLetters.find((m) => m.headers['x-webhook-id'] === delivery.id), 30_000, 'the dead letter');
      expect(letter.value.toLowerCase()).not.toContain(email);
      expect(JSON.parse(letter.value)).toMatchObject({ type: 'WebhookDeliveryScheduled', data: { personalData: { ciphertext: expect.any(String) } } });
    } finally {
      unreadable.clear();
      await consumer.close();
    }
  }, 120_000);
});

describe('a block reason', () => {
  const scansJson = async (client: Client, eventId: string) => JSON.stringify((await client.call('GET', `${api}/event/${eventId}/scans`)).body);
  const eventStoreFiles = (needles: string[]) => filesHolding(service.dataDir, needles).filter((file) => file.startsWith('events.sqlite'));

  it('is sealed with the guest’s data key in the event store; the door shows it, a rejected scan repeats it, and after the erasure it is nowhere under DATA_DIR (nor after a rebuild)', async () => {
    const client = await createClient(service);
    const eventId = await newEvent(client);
    const tag = randomUUID().slice(0, 8);
    const reason = `Quillfeather${tag} shouted at the door staff`;
    const barcode = `BLK-${tag}`;
    const guestId = await guest(client, { eventId, firstName: 'Ann', barcode });
    expect((await client.call('POST', `${api}/guests/${eventId}/block`, { ids: [guestId], reason })).status).toBe(200);
    const scan = await client.call('POST', `${api}/guests/${eventId}/checkin`, { barcode, gate: 'North' });
    expect(scan.body).toMatchObject({ result: 'rejected', reason: 'blocked', blockedReason: reason });
    await eventually(async () => (await scansJson(client, eventId)).includes(reason), 30_000, 'the rejected scan with its reason');
    // Sealed: neither GuestBlocked nor GuestScanRejected holds it readable; the access document opens both.
    expect(eventStoreFiles([`Quillfeather${tag}`])).toEqual([]);
    const history = (await client.call('GET', `${api}/guest/${guestId}/personal-data`)).body.history as { type: string; data: Record<string, unknown> }[];
    expect(history.find((e) => e.type === 'GuestBlocked')?.data.reason).toBe(reason);
    expect(history.find((e) => e.type === 'GuestScanRejected')?.data.blockedReason).toBe(reason);

    expect((await client.call('POST', `${api}/guest/${guestId}/erase`, { reason: 'art. 17' })).status).toBe(200);
    expect(filesHolding(service.dataDir, [`Quillfeather${tag}`])).toEqual([]);
    expect(await scansJson(client, eventId)).toContain('"reason":"blocked"');
    await service.runner!.rebuild([]);
    expect(filesHolding(service.dataDir, [`Quillfeather${tag}`])).toEqual([]);
    expect(await scansJson(client, eventId)).toContain('"reason":"blocked"');
  }, 120_000);

  it('written unsealed by an earlier version is still read as written: the door shows it', async () => {
    const client = await createClient(service);
    const eventId = await newEvent(client);
    const tag = randomUUID().slice(0, 8);
    const barcode = `OLD-${tag}`;
    const guestId = await guest(client, { eventId, firstName: 'Old', barcode });
    const [doc] = await (async () => {
      const found: { _id: string }[] = [];
      for await (const d of service.platform.readStore.collection<{ _id: string; clientId: string }>('guests').stream({ clientId: client.id, eventId }, { readOnly: true })) found.push(d);
      return found;
    })();
    const metadata = { tenantId: client.id, actor: { type: 'client' as const, id: client.id }, correlationId: 'c', occurredAt: new Date().toISOString() };
    const data = { guestId, eventId, reason: 'see the manager', at: new Date().toISOString() };
    // The stored form as an earlier version wrote it, past the codec.
    await service.platform.sealedEventStore.append(`guest-${doc!._id}`, [{ id: randomUUID(), type: 'GuestBlocked', data, metadata }], 'any');
    await service.services.readYourWrites(await service.platform.eventStore.headPosition());
    const scan = await client.call('POST', `${api}/guests/${eventId}/checkin`, { barcode });
    expect(scan.body).toMatchObject({ result: 'rejected', reason: 'blocked', blockedReason: 'see the manager' });
  }, 60_000);
});
