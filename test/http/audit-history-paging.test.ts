import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { NewEvent, StoredEvent } from '../../src/adapters/eventstore/port.js';
import { request } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';
import { allEvents, buildAuditDataset, type AuditDataset } from '../projections/audit-dataset.js';

/**
 * GET /guest/{id}/history a page at a time (docs/guests.md, "History for auditors"): Ann's
 * invitation email opened 1,200 times (as SendGrid's reports are stored), with changes of the
 * guest and a second invitation between the reports, so that the pages merge three streams.
 */
let data: AuditDataset;
/** Between the first and the second 400 reports. */
let asOf: string;
let secondInvitationId: string;

const historyPath = (id: string, query = '') => `/checkin/v1/api/guest/${encodeURIComponent(id)}/history${query}`;
const history = (id: string, query = '') => data.alice.call('GET', historyPath(id, query));
const store = () => data.service.platform.eventStore;

/** `count` opens of the invitation, as the provider-events worker stores them (one append each batch). */
async function appendOpens(attendeeInvitationId: string, count: number, tag: string): Promise<void> {
  const stream = `invitation-${attendeeInvitationId}`;
  // A report SendGrid sent about Ann's first email, made this email's.
  const sample = (await store().readStream(`invitation-${data.attendeeInvitationId}`)).find((e) => e.type === 'ProviderEventReceived')!;
  const occurredAt = new Date().toISOString();
  const events: NewEvent[] = Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    type: 'ProviderEventReceived',
    data: { ...sample.data, attendeeInvitationId, event: 'open', providerEventId: `${tag}-${i}`, at: occurredAt },
    metadata: { tenantId: data.alice.id, actor: { type: 'system', id: 'provider-events' }, correlationId: randomUUID(), occurredAt },
  }));
  await store().append(stream, events, 'any');
}

/** Ann's history as the store holds it: her stream and her invitations' streams, in store order. */
async function expected(filter: (e: StoredEvent) => boolean = () => true): Promise<string[]> {
  const events = await allEvents(data.service);
  const guestStream = `guest-${data.alice.id}:${data.ann}`;
  const invitations = new Set(
    events
      .filter((e) => e.streamName === guestStream && e.type === 'InvitationRequested' && filter(e))
      .map((e) => `invitation-${(e.data as { attendeeInvitationId: string }).attendeeInvitationId}`),
  );
  return events.filter((e) => (e.streamName === guestStream || invitations.has(e.streamName)) && filter(e)).map((e) => `${e.streamName}@${e.revision}:${e.type}`);
}

const ids = (events: any[]) => events.map((e) => `${e.stream}@${e.revision}:${e.type}`);

/** Every page from `query` on, to the one without nextCursor. */
async function walk(query: string, cursor?: string): Promise<{ pages: any[]; events: any[] }> {
  const pages: any[] = [];
  for (;;) {
    const separator = query ? '&' : '?';
    const reply = await history(data.ann, `${query}${cursor ? `${separator}cursor=${cursor}` : ''}`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    pages.push(reply.body);
    cursor = reply.body.nextCursor;
    if (!cursor) break;
    expect(pages.length).toBeLessThan(100); // hang guard
  }
  return { pages, events: pages.flatMap((p) => p.events) };
}

async function invitationSent(attendeeInvitationId: string): Promise<void> {
  await eventually(
    async () => (await data.alice.call('GET', `/comms/v1/api/comms/invitations/${attendeeInvitationId}`)).body?.status === 'sent' || undefined,
    30_000,
    'invitation sent',
  );
}

beforeAll(async () => {
  data = await buildAuditDataset();
  await appendOpens(data.attendeeInvitationId, 400, 'a');
  await new Promise((resolve) => setTimeout(resolve, 5));
  asOf = new Date().toISOString();
  await new Promise((resolve) => setTimeout(resolve, 5));
  // A second invitation email and a change of the guest, between the reports.
  const sent = await data.alice.call('POST', '/comms/v1/api/comms/send', { templateId: data.templateId, attendeeIds: [data.ann] });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  secondInvitationId = sent.body.invitations[0].attendeeInvitationId;
  await invitationSent(secondInvitationId);
  await appendOpens(data.attendeeInvitationId, 400, 'b');
  expect((await data.alice.call('PUT', `/checkin/v1/api/guests/${data.eventId}/upsert`, [{ customId: 'C-1', lastName: 'Lee-Jones' }])).status).toBe(204);
  await appendOpens(secondInvitationId, 100, 'c');
  await appendOpens(data.attendeeInvitationId, 300, 'd');
}, 120_000);
afterAll(() => data?.service.close());

describe('guest history, a page at a time', () => {
  it('answers a caller who pages nothing with the first 500 events and a cursor; the pages walked to the end are the whole history, in order, once each', async () => {
    const want = await expected();
    expect(want.length).toBeGreaterThan(1200);
    expect(new Set(want.map((e) => e.split('@')[0])).size).toBe(3);

    const first = await history(data.ann);
    expect(first.status).toBe(200);
    expect(first.body.guestId).toBe(data.ann);
    expect(first.body.events).toHaveLength(500);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    expect(ids(first.body.events)).toEqual(want.slice(0, 500));

    const byDefault = await walk('');
    expect(byDefault.pages.map((p) => p.events.length)).toEqual([500, 500, want.length - 1000]);
    expect(ids(byDefault.events)).toEqual(want);
    expect(byDefault.pages.at(-1).nextCursor).toBeUndefined();
    // Other sizes cut the merge of the three streams elsewhere; by customId pages the same.
    for (const limit of [137, 1000]) {
      const walked = await walk(`?limit=${limit}`);
      expect(walked.pages.slice(0, -1).every((p) => p.events.length === limit)).toBe(true);
      expect(ids(walked.events)).toEqual(want);
    }
    const byCustomId = await data.alice.call('GET', historyPath('C-1', `?eventId=${data.eventId}&limit=1000`));
    expect(ids(byCustomId.body.events)).toEqual(want.slice(0, 1000));
    const rest = await data.alice.call('GET', historyPath('C-1', `?eventId=${data.eventId}&limit=1000&cursor=${byCustomId.body.nextCursor}`));
    expect(ids(rest.body.events)).toEqual(want.slice(1000));
    expect(rest.body.nextCursor).toBeUndefined();
    // The personal-data document still holds all of it.
    const personal = await data.alice.call('GET', `/checkin/v1/api/guest/${data.ann}/personal-data`);
    expect(personal.status).toBe(200);
    expect(ids(personal.body.history)).toEqual(want);
  });

  it('shows what is appended between two pages on a later page, skipping and repeating nothing', async () => {
    const first = await history(data.ann, '?limit=300');
    expect(first.body.events).toHaveLength(300);
    const before = await expected();
    // Between the pages: more reports of both emails, a change of the guest, and a third email.
    await appendOpens(data.attendeeInvitationId, 5, 'late');
    await appendOpens(secondInvitationId, 2, 'late');
    expect((await data.alice.call('PUT', `/checkin/v1/api/guests/${data.eventId}/upsert`, [{ customId: 'C-1', lastName: 'Lee-Late' }])).status).toBe(204);
    const third = await data.alice.call('POST', '/comms/v1/api/comms/send', { templateId: data.templateId, attendeeIds: [data.ann] });
    expect(third.status).toBe(200);
    await invitationSent(third.body.invitations[0].attendeeInvitationId);

    const rest = await walk('?limit=300', first.body.nextCursor);
    const walked = [...ids(first.body.events), ...ids(rest.events)];
    const want = await expected();
    expect(walked).toEqual(want);
    expect(new Set(walked).size).toBe(walked.length);
    const appended = want.filter((e) => !before.includes(e));
    expect(appended.length).toBeGreaterThanOrEqual(10);
    expect(ids(rest.events)).toEqual(expect.arrayContaining(appended));
    expect(rest.events.some((e: any) => e.type === 'GuestDetailsChanged' && e.data.changes?.lastName === 'Lee-Late')).toBe(true);
    expect(rest.events.filter((e: any) => e.stream === `invitation-${third.body.invitations[0].attendeeInvitationId}`).length).toBeGreaterThan(0);
  });

  it('with asOf, pages the events up to then, each page with the same state of the guest', async () => {
    const want = await expected((e) => e.metadata.occurredAt <= asOf);
    expect(want.length).toBeGreaterThan(400);
    expect(want.some((e) => e.startsWith(`invitation-${secondInvitationId}`))).toBe(false);
    const whole = await history(data.ann, `?asOf=${encodeURIComponent(asOf)}&limit=1000`);
    expect(ids(whole.body.events)).toEqual(want);
    expect(whole.body.nextCursor).toBeUndefined();
    expect(whole.body.state).toMatchObject({ id: data.ann, lastName: 'Lee-Smith', inside: false });

    // The same instant written with another offset is the same asOf: its cursors go on.
    const berlin = new Date(Date.parse(asOf) + 3_600_000).toISOString().replace('Z', '+01:00');
    const walked = await walk(`?asOf=${encodeURIComponent(berlin)}&limit=150`);
    expect(walked.pages.length).toBe(Math.ceil(want.length / 150));
    expect(ids(walked.events)).toEqual(want);
    for (const page of walked.pages) {
      expect(page.asOf).toBe(asOf);
      expect(page.state).toEqual(whole.body.state);
    }
    // A cursor belongs to its asOf: without it, or with another, it is refused.
    const cursor = walked.pages[0].nextCursor as string;
    expect((await history(data.ann, `?cursor=${cursor}`)).status).toBe(400);
    expect((await history(data.ann, `?asOf=${encodeURIComponent(new Date().toISOString())}&cursor=${cursor}`)).status).toBe(400);
  });

  it('refuses a cursor it did not make for this guest and asOf, and a limit outside 1-1000, with 400 validation_error', async () => {
    const boPage = await history(data.bo, '?limit=1');
    expect(boPage.body.nextCursor).toEqual(expect.any(String));
    const guestsPage = await data.alice.call('GET', `/checkin/v1/api/guests/${data.eventId}?limit=1`);
    expect(guestsPage.body.nextCursor).toEqual(expect.any(String));
    const forged = Buffer.from(JSON.stringify(['x', 1, 2])).toString('base64url');
    for (const cursor of [boPage.body.nextCursor, guestsPage.body.nextCursor, forged, 'bm90IGpzb24', 'not%20a%20cursor']) {
      const reply = await history(data.ann, `?cursor=${cursor}`);
      expect(reply.status, cursor).toBe(400);
      expect(reply.body).toMatchObject({ code: 'validation_error', message: expect.any(String) });
      expect(reply.body.errors.map((e: any) => e.path)).toContain('cursor');
    }
    for (const limit of ['1001', '0', '-5', 'ten', '2.5']) {
      const reply = await history(data.ann, `?limit=${limit}`);
      expect(reply.status, limit).toBe(400);
      expect(reply.body).toMatchObject({ code: 'validation_error' });
      expect(reply.body.errors.map((e: any) => e.path)).toContain('limit');
    }
    // Another client's guest stays 404, cursor or not.
    const cursor = (await history(data.ann, '?limit=2')).body.nextCursor;
    expect((await data.bob.call('GET', historyPath(data.ann, `?cursor=${cursor}`))).status).toBe(404);
  });

  it("pages an erased guest's history with its personal data marked erased", async () => {
    const first = await history(data.cy, '?limit=2');
    expect(first.body.events.map((e: any) => e.type)).toEqual(['GuestRegistered', 'TicketIssued']);
    expect(first.body.events[0].data).toMatchObject({ guestId: data.cy, personalDataErased: true });
    const second = await history(data.cy, `?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.events.map((e: any) => e.type)).toEqual(['GuestErased']);
    expect(second.body.nextCursor).toBeUndefined();
    expect(JSON.stringify([first.body, second.body])).not.toMatch(/"(Cy|Oz|cy@example\.com|C-3)"/);
  });

  it('reads from the event store about what a page holds, not the whole history', async () => {
    const big = `invitation-${data.attendeeInvitationId}`;
    expect((await store().readStream(big)).length).toBeGreaterThan(1100);
    const eventStore = store();
    const readStream = eventStore.readStream.bind(eventStore);
    let read = 0;
    const spy = vi.spyOn(eventStore, 'readStream').mockImplementation(async (stream, options) => {
      const events = await readStream(stream, options);
      if (stream === big) read += events.length;
      return events;
    });
    try {
      const first = await history(data.ann, '?limit=100');
      expect(first.body.events).toHaveLength(100);
      expect(read).toBeGreaterThan(0);
      expect(read).toBeLessThan(300);
      read = 0;
      const second = await history(data.ann, `?limit=100&cursor=${first.body.nextCursor}`);
      expect(second.body.events).toHaveLength(100);
      expect(read).toBeLessThan(300);
    } finally {
      spy.mockRestore();
    }
  });

  it('goes on from a cursor too long to carry where each stream stopped (hundreds of emails) by searching the streams', async () => {
    // White box: a cursor holds, per stream, the revision to read on from; past 2000 characters
    // it is written without them, and the next page finds them by binary search.
    for (const limit of [1, 250, 500]) {
      const first = await history(data.ann, `?limit=${limit}`);
      const values = JSON.parse(Buffer.from(first.body.nextCursor, 'base64url').toString('utf8')) as unknown[];
      expect(values.at(-1)).toEqual(expect.any(Array));
      const bare = Buffer.from(JSON.stringify([...values.slice(0, -1), []])).toString('base64url');
      const hinted = await history(data.ann, `?limit=${limit}&cursor=${first.body.nextCursor}`);
      const searched = await history(data.ann, `?limit=${limit}&cursor=${bare}`);
      expect(searched.status).toBe(200);
      expect(ids(searched.body.events)).toEqual(ids(hinted.body.events));
      expect(ids(searched.body.events)).toHaveLength(limit);
    }
  });

  it('documents limit, cursor and nextCursor in the OpenAPI document', async () => {
    const doc = (await request(data.service.url, 'GET', '/openapi.json')).body;
    const operation = doc.paths['/checkin/v1/api/guest/{id}/history'].get;
    const parameters = Object.fromEntries(operation.parameters.map((p: any) => [p.name, p]));
    expect(parameters.limit).toMatchObject({ in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 500 } });
    expect(parameters.cursor).toMatchObject({ in: 'query', schema: { type: 'string' } });
    const schema = operation.responses['200'].content['application/json'].schema;
    const ref = schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema;
    expect(ref.properties.nextCursor).toMatchObject({ type: 'string' });
    expect(ref.required ?? []).not.toContain('nextCursor');
  });
});
