import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchLogStream, completeOpenBatches } from '../../src/commands/batch-intents.js';
import { guestStream } from '../../src/domain/guest.js';
import { customIdStream, reservationDecider } from '../../src/domain/reservation.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { StreamByStreamStore, type Fault } from '../support/stream-by-stream-store.js';

/**
 * Crash windows of requests that EventStoreDB may finish after their caller heard an error: a
 * batch whose intent was recorded is completed by the completer, and an append whose answer was
 * lost (a timeout, a process that died) may have been stored. The caller's retry with the same
 * Idempotency-Key must then find the first attempt's work, not do it again (docs/eventstore.md).
 */

let service: TestService;
let store: StreamByStreamStore;
let alice: Client;
let eventId: string;
let templateId: string;

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true' }, { wrapEventStore: (inner) => (store = new StreamByStreamStore(inner)) });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  eventId = (await alice.call('POST', '/checkin/v1/api/event', { title: 'Ball', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' })).body.id;
  const template = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', subject: 'Hello {{firstName}}', html: '<p>Dear {{fullName}}</p>' });
  expect(template.status, JSON.stringify(template.body)).toBe(200);
  templateId = template.body.id;
});
afterAll(() => service.close());

/** The process comes back: appends work again, and the completer finishes what was left. */
async function restart() {
  store.restart();
  await completeOpenBatches(service.platform.eventStore, { logger: service.services.logger, olderThanMs: 0 });
}

const inStreams = (...names: string[]) => (stream: string) => names.some((n) => stream.startsWith(n));

async function newGuests(count: number): Promise<string[]> {
  const tag = randomUUID().slice(0, 6);
  const records = Array.from({ length: count }, (_, i) => ({ firstName: `G${i}`, email: `g${i}-${tag}@example.com` }));
  const created = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, records);
  expect(created.status).toBe(200);
  return created.body.map((g: { id: string }) => g.id);
}

const requestedInvitations = async (guestId: string) =>
  (await store.readStream(guestStream(alice.id, guestId))).filter((e) => e.type === 'InvitationRequested').map((e) => (e.data as { attendeeInvitationId: string }).attendeeInvitationId);

describe('an invitation send retried with the same Idempotency-Key after a crash', () => {
  const cases: { name: string; guests: number; fault: Omit<Fault, 'counts'> }[] = [
    { name: 'two guests, a crash after the intent', guests: 2, fault: { after: 1, mode: 'crash' } },
    { name: 'two guests, a crash after the intent and the first guest', guests: 2, fault: { after: 2, mode: 'crash' } },
    { name: 'two guests, a crash before BatchCompleted', guests: 2, fault: { after: 3, mode: 'crash' } },
    { name: "one guest, its append stored but the answer lost", guests: 1, fault: { after: 0, mode: 'lost' } },
  ];
  for (const { name, guests, fault } of cases) {
    it(`${name}: each guest's invitation is requested (and emailed) once, and the retry answers its id`, async () => {
      const ids = await newGuests(guests);
      const key = `send-${randomUUID()}`;
      store.failAfter({ ...fault, counts: inStreams(batchLogStream, ...ids.map((id) => guestStream(alice.id, id))) });
      const failed = await alice.call('POST', '/comms/v1/api/comms/send', { templateId, attendeeIds: ids }, { 'idempotency-key': key });
      expect(failed.status).toBe(500);
      await restart();
      const retried = await alice.call('POST', '/comms/v1/api/comms/send', { templateId, attendeeIds: ids }, { 'idempotency-key': key });
      expect(retried.status, JSON.stringify(retried.body)).toBe(200);
      for (const [i, id] of ids.entries()) {
        const requested = await requestedInvitations(id);
        expect(requested).toHaveLength(1);
        expect(retried.body.invitations[i].attendeeInvitationId).toBe(requested[0]);
      }
    });
  }

  it('retried before the completer ran the first batch: still once each, after the completer too', async () => {
    const ids = await newGuests(2);
    const key = `send-${randomUUID()}`;
    store.failAfter({ after: 1, mode: 'crash', counts: inStreams(batchLogStream, ...ids.map((id) => guestStream(alice.id, id))) });
    expect((await alice.call('POST', '/comms/v1/api/comms/send', { templateId, attendeeIds: ids }, { 'idempotency-key': key })).status).toBe(500);
    store.restart();
    const retried = await alice.call('POST', '/comms/v1/api/comms/send', { templateId, attendeeIds: ids }, { 'idempotency-key': key });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect((await completeOpenBatches(service.platform.eventStore, { logger: service.services.logger, olderThanMs: 0 })).completed).toBeGreaterThanOrEqual(1);
    for (const [i, id] of ids.entries()) expect(await requestedInvitations(id)).toEqual([retried.body.invitations[i].attendeeInvitationId]);
  });

  it('a new send without the key is a new invitation, as before', async () => {
    const [id] = await newGuests(1);
    expect((await alice.call('POST', '/comms/v1/api/comms/send', { templateId, attendeeIds: [id] })).status).toBe(200);
    expect((await alice.call('POST', '/comms/v1/api/comms/send', { templateId, attendeeIds: [id] })).status).toBe(200);
    expect(await requestedInvitations(id!)).toHaveLength(2);
  });
});

describe('a guest batch without ids retried with the same Idempotency-Key after a crash', () => {
  for (const after of [1, 2]) {
    it(`a crash after ${after} append(s): the guests are created once`, async () => {
      const tag = randomUUID().slice(0, 8);
      const records = [{ firstName: `A${tag}` }, { firstName: `B${tag}` }];
      const key = `import-${tag}`;
      store.failAfter({ after, mode: 'crash', counts: inStreams(batchLogStream, 'guest-') });
      const failed = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, records, { 'idempotency-key': key });
      expect(failed.status).toBe(500);
      await restart();
      const retried = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, records, { 'idempotency-key': key });
      expect(retried.status, JSON.stringify(retried.body)).toBe(200);
      const stored = [];
      for (const firstName of [`A${tag}`, `B${tag}`]) {
        stored.push(...(await service.platform.readStore.collection('guests').find({ clientId: alice.id, eventId, firstName }, { limit: 10 })).items);
      }
      expect(stored).toHaveLength(2);
      expect(retried.body.map((g: { id: string }) => g.id).sort()).toEqual(stored.map((g) => (g as { guestId?: string; _id: string }).guestId ?? g._id).sort());
    });
  }
});

describe('an erasure of a guest with a customId, a crash after the guest is erased', () => {
  const ownerOf = async (stream: string) => {
    let state = reservationDecider.initialState();
    for (const event of await store.readStream(stream)) state = reservationDecider.evolve(state, event as never);
    return state.ownerId;
  };

  for (const mode of ['crash', 'lost'] as const) {
    it(`${mode}: after the restart the customId is free again and the guest's data key is gone`, async () => {
      const customId = `erase-${randomUUID().slice(0, 8)}`;
      const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Eve', customId });
      expect(created.status).toBe(200);
      const id = created.body.id as string;
      const reservation = customIdStream(alice.id, eventId, customId, await service.platform.dataKeys?.streamNameKey());
      expect(await ownerOf(reservation)).toBe(id);
      // `lost`: the process dies as GuestErased is stored; `crash`: it dies before the release.
      const guest = guestStream(alice.id, id);
      store.failAfter({ after: 0, mode, counts: (stream) => (mode === 'lost' ? stream === guest : stream.startsWith('guestcustomid-')) });
      const failed = await alice.call('POST', `/checkin/v1/api/guest/${encodeURIComponent(customId)}/erase?eventId=${eventId}`, { reason: 'GDPR request' });
      expect(failed.status).toBe(500);
      await restart();
      expect((await store.readStream(guest)).some((e) => e.type === 'GuestErased')).toBe(true);
      // The guest no longer has the customId; its reservation must not outlive it.
      expect(await ownerOf(reservation)).toBeUndefined();
      const [registered] = await service.platform.eventStore.readStream(guest, { maxCount: 1 });
      expect(registered!.data).toMatchObject({ personalDataErased: true });
      const reused = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Other', customId });
      expect(reused.status, JSON.stringify(reused.body)).toBe(200);
    });
  }
});
