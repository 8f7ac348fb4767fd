import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventStore, StoredEvent } from '../../src/adapters/eventstore/port.js';
import { batchLogStream, completeOpenBatches } from '../../src/commands/batch-intents.js';
import { accountDecider } from '../../src/domain/account.js';
import { guestDecider, guestStream, type GuestState } from '../../src/domain/guest.js';
import { customIdStream as hashedCustomIdStream, reservationDecider, reservationKey, usernameStream, type StreamNameKey } from '../../src/domain/reservation.js';
import { teamMemberDecider, teamMemberStream } from '../../src/domain/team-member.js';
import { scopedKey } from '../../src/shared/ids.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { StreamByStreamStore } from '../support/stream-by-stream-store.js';

/**
 * The command layer on EventStoreDB's write semantics (no multi-stream transaction), with a
 * crash injected at every gap between two stream appends of a request. After the "restart"
 * (appends work again and the completer runs), an accepted batch is applied whole, a refused
 * one left nothing, and every unique key is held by exactly the entity that uses it.
 */

let service: TestService;
let store: StreamByStreamStore;
let alice: Client;
let eventId: string;
let nameKey: StreamNameKey | undefined;
/** The customId reservation stream as the service names it (hashed: docs/personal-data.md). */
const customIdStream = (clientId: string, event: string, customId: string) => hashedCustomIdStream(clientId, event, customId, nameKey);

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true' }, { wrapEventStore: (inner) => (store = new StreamByStreamStore(inner)) });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  nameKey = await service.platform.dataKeys?.streamNameKey();
  eventId = (await alice.call('POST', '/checkin/v1/api/event', { title: 'Ball', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' })).body.id;
});
afterAll(() => service.close());

const prefixes = (...names: string[]) => (stream: string) => names.some((n) => stream.startsWith(n));

/** Crash (or one failure, `throw`) after `after` appends to the streams `counts` names; the caller's request then fails. */
function crashAfter(after: number, counts: (stream: string) => boolean, mode: 'crash' | 'throw' = 'crash') {
  store.failAfter({ after, mode, counts });
}

/** The process comes back: appends work again, and the completer finishes what was left. */
async function restart() {
  store.restart();
  // Through the service's store, as the batch completer runs: intents are sealed (docs/personal-data.md).
  await completeOpenBatches(service.platform.eventStore, { logger: service.services.logger, olderThanMs: 0 });
}

/** Folds through the service's store: the personal-data codec above `store` opens sealed fields (docs/personal-data.md). */
async function fold<S>(decider: { initialState(): S; evolve(s: S, e: never): S }, stream: string, from: EventStore = service.platform.eventStore) {
  let state = decider.initialState();
  for (const event of await from.readStream(stream)) state = decider.evolve(state, event as never);
  return state;
}

async function allEvents(): Promise<StoredEvent[]> {
  const head = await store.headPosition();
  const events: StoredEvent[] = [];
  const subscription = store.subscribeToAll({ fromPosition: -1 });
  for await (const batch of subscription) {
    events.push(...batch.events);
    if (batch.position >= head) break;
  }
  await subscription.stop();
  return events;
}

/**
 * Every customId a guest uses is reserved by that guest, every reserved customId is used by
 * its owner (nothing leaked), and the same for user names of accounts and team members.
 */
async function assertUniqueKeys() {
  const streams = new Set((await allEvents()).map((e) => e.streamName));
  const expected = new Map<string, string>();
  for (const stream of streams) {
    if (stream.startsWith('guest-')) {
      const guest = (await fold(guestDecider, stream)) as GuestState;
      if (guest.exists && guest.details.customId) expected.set(customIdStream(guest.clientId!, guest.eventId!, guest.details.customId), guest.guestId!);
    } else if (stream.startsWith('teammember-')) {
      const member = await fold(teamMemberDecider, stream);
      const [registered] = await store.readStream(stream, { maxCount: 1 });
      // A team member's name is held by its client and id (ids are scoped per client).
      if (member.status === 'registered') expected.set(usernameStream(member.profile.userName), scopedKey(registered!.metadata.tenantId, (registered!.data as { teamMemberId: string }).teamMemberId));
    } else if (stream.startsWith('account-')) {
      const account = await fold(accountDecider, stream);
      if (account.status === 'registered') expected.set(usernameStream(account.profile.userName), stream.slice('account-'.length));
    }
  }
  const held = new Map<string, string>();
  for (const stream of streams) {
    if (!stream.startsWith('guestcustomid-') && !stream.startsWith('username-')) continue;
    const { ownerId } = await fold(reservationDecider, stream);
    // A racer of the tests below writes its reservation directly: it owns no entity.
    if (ownerId && ownerId !== 'racer') held.set(stream, ownerId);
  }
  expect(Object.fromEntries(held)).toEqual(Object.fromEntries(expected));
}

const guestCount = async (customId: string) =>
  (await service.platform.readStore.collection('guests').find({ eventId, customIdLower: reservationKey(customId) }, { limit: 10 })).items.length;

describe.each(['crash', 'throw'] as const)('guest create with a customId, a %s at every gap (intent, claim, guest, outcome)', (mode) => {
  const gaps = 4;
  for (let after = 0; after <= gaps; after++) {
    it(`${mode} after ${after} append(s): applied whole after the restart, or not at all`, async () => {
      const customId = `crash-${after}-${randomUUID().slice(0, 6)}`;
      const id = randomUUID();
      if (after < gaps) crashAfter(after, prefixes(batchLogStream, 'guest-', 'guestcustomid-'), mode);
      const reply = await alice.call('POST', '/checkin/v1/api/guest', { id, eventId, firstName: 'Ada', customId });
      expect(reply.status).toBe(after < gaps ? 500 : 200);
      await restart();
      const guest = (await fold(guestDecider, guestStream(alice.id, id))) as GuestState;
      const reservation = await fold(reservationDecider, customIdStream(alice.id, eventId, customId));
      if (after === 0) {
        // The intent was never written: nothing of the request is.
        expect(guest.exists).toBe(false);
        expect(reservation.ownerId).toBeUndefined();
      } else {
        expect(guest.details.customId).toBe(customId);
        expect(reservation.ownerId).toBe(id);
      }
      await assertUniqueKeys();
      // The client's retry of the same request: created now, or found done and answered the same.
      const retry = await alice.call('POST', '/checkin/v1/api/guest', { id, eventId, firstName: 'Ada', customId });
      expect(retry.status).toBe(200);
      await assertUniqueKeys();
    });
  }
});

describe('batch intents hold personal data sealed, and only while the batch is open', () => {
  it("seals an intent's items with a key of the batch, deleted once the batch completed", async () => {
    const tag = randomUUID().slice(0, 8);
    const guest = { eventId, firstName: `Intent${tag}`, email: `intent.${tag}@example.com`, customId: `intent-${tag}@example.com` };
    // A crash after the intent and the claim: the batch stays open until the completer runs.
    crashAfter(2, prefixes(batchLogStream, 'guest-', 'guestcustomid-'));
    expect((await alice.call('POST', '/checkin/v1/api/guest', guest)).status).toBe(500);
    store.restart();
    const intentOf = async (from: EventStore) => (await from.readStream(batchLogStream)).filter((e) => e.type === 'BatchStarted').at(-1)!;
    const raw = await intentOf(store);
    expect(JSON.stringify(raw.data)).not.toContain(tag);
    expect(raw.data).toMatchObject({ personalData: { alg: 'A256GCM' } });
    // Open: the completer reads the intent (its items) and completes the batch.
    expect(JSON.stringify((await intentOf(service.platform.eventStore)).data)).toContain(guest.customId);
    expect((await completeOpenBatches(service.platform.eventStore, { logger: service.services.logger, olderThanMs: 0 })).completed).toBe(1);
    expect(await guestCount(guest.customId)).toBe(1);
    // Completed: the batch's key is gone, the intent opens without its items.
    const opened = await intentOf(service.platform.eventStore);
    expect(opened.data).toMatchObject({ personalDataErased: true });
    expect(opened.data.items).toBeUndefined();
    // A batch its writer completes at once leaves the same.
    const next = { ...guest, firstName: 'Next', customId: `next-${tag}` };
    expect((await alice.call('POST', '/checkin/v1/api/guest', next)).status).toBe(200);
    expect((await intentOf(service.platform.eventStore)).data).toMatchObject({ personalDataErased: true });
    await assertUniqueKeys();
  });
});

describe('guest upsert that changes a customId, a crash at every gap (intent, claim, guest, release, outcome)', () => {
  const gaps = 5;
  for (let after = 0; after <= gaps; after++) {
    it(`crash after ${after} append(s): the guest holds exactly the key it uses`, async () => {
      const tag = `${after}-${randomUUID().slice(0, 6)}`;
      const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo', customId: `old-${tag}` });
      expect(created.status).toBe(200);
      const id = created.body.id as string;
      if (after < gaps) crashAfter(after, prefixes(batchLogStream, 'guest-', 'guestcustomid-'));
      const reply = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id, customId: `new-${tag}` }]);
      expect(reply.status).toBe(after < gaps ? 500 : 204);
      await restart();
      const guest = (await fold(guestDecider, guestStream(alice.id, id))) as GuestState;
      expect(guest.details.customId).toBe(after === 0 ? `old-${tag}` : `new-${tag}`);
      await assertUniqueKeys();
    });
  }
});

describe('a batch refused while it runs (a racer took a customId between decision and append)', () => {
  const gaps = 4; // intent, claim of the free key, abort, release of the free key
  for (let after = 0; after <= gaps; after++) {
    it(`crash after ${after} append(s): nothing of the batch remains, the racer keeps its key`, async () => {
      const tag = `${after}-${randomUUID().slice(0, 6)}`;
      const contested = customIdStream(alice.id, eventId, `b-${tag}`);
      let raced = false;
      store.beforeAppend = async (stream) => {
        if (stream !== contested || raced) return;
        raced = true;
        await store.inner.append(stream, [{ id: randomUUID(), type: 'KeyReserved', data: { key: `b-${tag}`, ownerType: 'guest', ownerId: 'racer' }, metadata: { tenantId: 'x', actor: { type: 'system', id: 'racer' }, correlationId: 'race', occurredAt: new Date().toISOString() } }], 'no_stream');
      };
      if (after < gaps) crashAfter(after, prefixes(batchLogStream, 'guest-', 'guestcustomid-'));
      const reply = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [
        { firstName: 'A', customId: `a-${tag}` },
        { firstName: 'B', customId: `b-${tag}` },
      ]);
      expect(reply.status).toBe(after < gaps ? 500 : 409);
      if (reply.status === 409) expect(reply.body.code).toBe('custom_id_taken');
      // The racer is still there when the completer runs the batch again.
      await restart();
      store.beforeAppend = undefined;
      expect((await fold(reservationDecider, customIdStream(alice.id, eventId, `a-${tag}`))).ownerId).toBeUndefined();
      expect((await fold(reservationDecider, contested)).ownerId).toBe(after === 0 ? undefined : 'racer');
      expect(await guestCount(`a-${tag}`)).toBe(0);
      await assertUniqueKeys();
    });
  }
});

describe('racing requests for one customId, streams interleaved', () => {
  it('lets exactly one guest have it and leaves no reservation behind', async () => {
    const customId = `race-${randomUUID().slice(0, 6)}`;
    store.beforeAppend = () => new Promise((resolve) => setImmediate(resolve));
    try {
      const replies = await Promise.all(
        Array.from({ length: 6 }, (_, i) => alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: `R${i}`, customId })),
      );
      expect(replies.filter((r) => r.status === 200), JSON.stringify(replies.map((r) => [r.status, r.body]))).toHaveLength(1);
      expect(replies.filter((r) => r.status === 409)).toHaveLength(5);
    } finally {
      store.beforeAppend = undefined;
    }
    await assertUniqueKeys();
  });
});

describe.each(['crash', 'throw'] as const)('team member registration, a %s at every gap (intent, user name claim, member, outcome)', (mode) => {
  const gaps = 4;
  for (let after = 0; after <= gaps; after++) {
    it(`${mode} after ${after} append(s): the member and its user name come together, or neither`, async () => {
      const userName = `door-${after}-${randomUUID().slice(0, 6)}`;
      const id = randomUUID();
      if (after < gaps) crashAfter(after, prefixes(batchLogStream, 'username-', 'teammember-'), mode);
      const reply = await alice.call('POST', '/checkin/v1/api/teammember', { id, userName, password: 'door staff pass 1', email: `${userName}@example.com` });
      expect(reply.status).toBe(after < gaps ? 500 : 200);
      await restart();
      const member = await fold(teamMemberDecider, teamMemberStream(alice.id, id));
      const name = await fold(reservationDecider, usernameStream(userName));
      expect(member.status).toBe(after === 0 ? 'none' : 'registered');
      expect(name.ownerId).toBe(after === 0 ? undefined : scopedKey(alice.id, id));
      await assertUniqueKeys();
      // Another request for the same name: free only if the first never happened.
      const other = await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'door staff pass 1', email: `x${userName}@example.com` });
      expect(other.status).toBe(after === 0 ? 200 : 409);
      await assertUniqueKeys();
    });
  }
});

describe('an invitation send to two guests, a crash at every gap (intent, guest 1, guest 2, outcome)', () => {
  let templateId: string;
  beforeAll(async () => {
    const template = await alice.call('POST', '/comms/v1/api/comms/template', {
      eventId,
      name: 'Invite',
      subject: 'Hello {{firstName}}',
      html: '<p>Dear {{fullName}}</p>',
    });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    templateId = template.body.id;
  });
  const gaps = 4;
  for (let after = 0; after <= gaps; after++) {
    it(`crash after ${after} append(s): both guests get the request once, or neither`, async () => {
      const created = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
        { firstName: 'Di', email: `di-${after}@example.com` },
        { firstName: 'Ed', email: `ed-${after}@example.com` },
      ]);
      const ids = created.body.map((g: { id: string }) => g.id) as string[];
      if (after < gaps) crashAfter(after, prefixes(batchLogStream, ...ids.map((id) => guestStream(alice.id, id))));
      const reply = await alice.call('POST', '/comms/v1/api/comms/send', { templateId, attendeeIds: ids });
      expect(reply.status).toBe(after < gaps ? 500 : 200);
      await restart();
      for (const id of ids) {
        const requested = (await store.readStream(guestStream(alice.id, id))).filter((e) => e.type === 'InvitationRequested');
        expect(requested).toHaveLength(after === 0 ? 0 : 1);
      }
    });
  }
});

describe('webhook configuration (one stream), a crash before its append', () => {
  it('writes nothing, and the retry creates the webhook and its secret once', async () => {
    const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    crashAfter(0, prefixes('webhook-'));
    const failed = await client.call('POST', '/comms/v1/api/comms/webhook', { url: 'http://127.0.0.1:9/hook' });
    expect(failed.status).toBe(500);
    await restart();
    expect(await store.readStream(`webhook-${client.id}`)).toEqual([]);
    const retried = await client.call('POST', '/comms/v1/api/comms/webhook', { url: 'http://127.0.0.1:9/hook' });
    expect(retried.status).toBe(200);
    expect(retried.body.secret).toMatch(/^whsec_/);
    expect((await store.readStream(`webhook-${client.id}`)).map((e) => e.type)).toEqual(['WebhookConfigured']);
  });
});
