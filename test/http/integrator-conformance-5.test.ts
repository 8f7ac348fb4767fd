import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver } from '../webhooks/receiver.js';

/**
 * The interface spec read line by line as an integrator reads it, fifth pass: the places where
 * the service still differed from the spec and was mended.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

const exportCall = (client: Client, body: unknown, query = '?type=CSV') => client.call('POST', `/checkin/v1/api/event/export${query}`, body);

describe('Check-in: the export body is an Event object (title, startTime, endTime required; id optional)', () => {
  it('without id, exports the caller’s one event with that title and those instants (the same instants written with another offset too)', async () => {
    const title = `Export by details ${Date.now()}`;
    const created = await alice.call('POST', '/checkin/v1/api/event', { title, startTime: '2026-06-01T18:00:00Z', endTime: '2026-06-01T23:00:00Z' });
    expect(created.status).toBe(200);
    await alice.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(created.body.id)}`, [{ firstName: 'Ada' }, { firstName: 'Grace' }]);

    const reply = await exportCall(alice, { title, startTime: '2026-06-01T18:00:00Z', endTime: '2026-06-01T23:00:00Z' });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ eventId: created.body.id, type: 'CSV', rowCount: 2 });

    const sameInstants = await exportCall(alice, { title, startTime: '2026-06-01T20:00:00+02:00', endTime: '2026-06-02T01:00:00+02:00', id: null });
    expect(sameInstants.status, JSON.stringify(sameInstants.body)).toBe(200);
    expect(sameInstants.body.eventId).toBe(created.body.id);
  });

  it('without id, no matching event is 404 not_found, and another client’s event is not matched', async () => {
    const title = `Export nobody ${Date.now()}`;
    const times = { startTime: '2026-07-01T18:00:00Z', endTime: '2026-07-01T23:00:00Z' };
    const bob = await createClient(service);
    expect((await bob.call('POST', '/checkin/v1/api/event', { title, ...times })).status).toBe(200);
    const reply = await exportCall(alice, { title, ...times });
    expect(reply.status).toBe(404);
    expect(reply.body.code).toBe('not_found');
    // Another title, or other instants, is another event.
    await alice.call('POST', '/checkin/v1/api/event', { title, ...times });
    expect((await exportCall(alice, { title: title.toUpperCase(), ...times })).status).toBe(404);
    expect((await exportCall(alice, { title, ...times, endTime: '2026-07-01T23:00:01Z' })).status).toBe(404);
  });

  it('without id, several matching events are 409 ambiguous_event naming id; with the id each is exported', async () => {
    const title = `Export twice ${Date.now()}`;
    const times = { startTime: '2026-08-01T18:00:00Z', endTime: '2026-08-01T23:00:00Z' };
    const first = await alice.call('POST', '/checkin/v1/api/event', { title, ...times });
    const second = await alice.call('POST', '/checkin/v1/api/event', { title, ...times });
    const reply = await exportCall(alice, { title, ...times });
    expect(reply.status).toBe(409);
    expect(reply.body).toMatchObject({ code: 'ambiguous_event', errors: [{ path: 'id' }] });
    for (const event of [first.body, second.body]) {
      const chosen = await exportCall(alice, { id: event.id, title, ...times });
      expect(chosen.status).toBe(200);
      expect(chosen.body.eventId).toBe(event.id);
    }
  });

  it('without id, times without an offset are read on each event’s own clocks, as its create read them', async () => {
    const erin = await createClient(service);
    const title = 'Wall-clock gala';
    const wall = { title, startTime: '2026-12-12T20:00:00', endTime: '2026-12-12T23:00:00' };
    const berlin = await erin.call('POST', '/checkin/v1/api/event', { ...wall, timeZoneId: 'Europe/Berlin' });
    expect(berlin.body.startTime).toBe('2026-12-12T19:00:00.000Z');
    // The same body the event was made from, without its zone (the account is on UTC): this event.
    const minimal = await exportCall(erin, wall);
    expect(minimal.status, JSON.stringify(minimal.body)).toBe(200);
    expect(minimal.body.eventId).toBe(berlin.body.id);
    expect((await exportCall(erin, { ...wall, timeZoneId: null })).body.eventId).toBe(berlin.body.id);
    // Another event of the same title and wall times on the account's clocks: the body fits both.
    const utc = await erin.call('POST', '/checkin/v1/api/event', wall);
    const both = await exportCall(erin, wall);
    expect(both.status).toBe(409);
    expect(both.body.code).toBe('ambiguous_event');
    // A zone in the body, or an offset, names one.
    expect((await exportCall(erin, { ...wall, timeZoneId: 'Europe/Berlin' })).body.eventId).toBe(berlin.body.id);
    expect((await exportCall(erin, { title, startTime: '2026-12-12T20:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.eventId).toBe(utc.body.id);
  });

  it('the document makes only title, startTime and endTime required, as the spec’s Event does', async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as any;
    expect([...doc.components.schemas.ExportRequest.required].sort()).toEqual(['endTime', 'startTime', 'title']);
    expect(doc.paths['/checkin/v1/api/event/export'].post.responses['409']).toBeDefined();
  });
});

describe('Guest.commsTemplateId: the send is asynchronous and its result arrives through the webhook', () => {
  it('a guest without an email is created, and its invitation fails as comms.failed no_email (the rest of the batch is sent)', async () => {
    const carol = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const receiver = await startReceiver();
    try {
      const configured = await carol.call('POST', '/comms/v1/api/comms/webhook', { url: receiver.url });
      receiver.secret = configured.body.secret;
      const eventId = await newEvent(carol);
      const template = await carol.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hello {{firstName}}</p>' });
      const single = await carol.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Nomail', commsTemplateId: template.body.id });
      expect(single.status, JSON.stringify(single.body)).toBe(200);
      expect(single.body).toMatchObject({ firstName: 'Nomail', email: null, commsTemplateId: template.body.id });
      const batch = await carol.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}`, [
        { firstName: 'Mailed', email: 'mailed@example.com', commsTemplateId: template.body.id },
        { firstName: 'Blank', email: '', commsTemplateId: template.body.id },
      ]);
      expect(batch.status, JSON.stringify(batch.body)).toBe(200);
      expect(batch.body).toHaveLength(2);

      const deliveries = await receiver.waitFor(3, 30_000);
      const outcome = (guestId: string) => deliveries.find((d) => d.body.data.attendeeId === guestId)!.body;
      for (const guestId of [single.body.id, batch.body[1].id]) {
        expect(outcome(guestId)).toMatchObject({ type: 'comms.failed', data: { status: 'failed', templateId: template.body.id, error: expect.stringMatching(/^no_email/) } });
      }
      expect(outcome(batch.body[0].id)).toMatchObject({ type: 'comms.sent', data: { status: 'sent' } });
      const [invitation] = await eventually(async () => {
        const items = (await carol.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${single.body.id}`)).body.items as { status: string }[];
        return items.length === 1 && items[0]!.status === 'failed' ? items : undefined;
      }, 60_000, 'the invitation to be failed');
      expect(invitation).toMatchObject({ status: 'failed' });

      // The CRM's next sync brings the email with the same template: that record sends it.
      const synced = await carol.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert`, [
        { id: single.body.id, firstName: 'Nomail', email: 'found@example.com', commsTemplateId: template.body.id },
      ]);
      expect(synced.status, JSON.stringify(synced.body)).toBe(204);
      const [, sent] = await receiver.waitFor(4, 30_000).then((all) => all.filter((d) => d.body.data.attendeeId === single.body.id));
      expect(sent?.body).toMatchObject({ type: 'comms.sent', data: { status: 'sent', templateId: template.body.id } });
      // A repeat of the same record does not send again.
      await carol.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert`, [
        { id: single.body.id, firstName: 'Nomail', email: 'found@example.com', commsTemplateId: template.body.id },
      ]);
      // The upsert answers once the read models hold its events: a third invitation would be listed now.
      const sends = (await carol.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${single.body.id}`)).body.items as { status: string }[];
      expect(sends).toHaveLength(2);
    } finally {
      await receiver.close();
    }
  });
});

describe('Guest.commsTemplateId without an email, then the email: one invitation is sent, never two', () => {
  it('the sync that brings the email right after the create sends it once, whenever the first request is handled', async () => {
    const dora = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const eventId = await newEvent(dora);
    const template = await dora.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hello {{firstName}}</p>' });
    // The upsert follows the create at once: the first request is often not handled yet when the email arrives.
    const guests = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const created = await dora.call('POST', '/checkin/v1/api/guest', { eventId, firstName: `Race${i}`, commsTemplateId: template.body.id });
        const synced = await dora.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert`, [
          { id: created.body.id, email: `race${i}@example.com`, commsTemplateId: template.body.id },
        ]);
        expect(synced.status).toBe(204);
        return created.body.id as string;
      }),
    );
    for (const guestId of guests) {
      const statuses = await eventually(async () => {
        const items = (await dora.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${guestId}`)).body.items as { status: string }[];
        return items.length === 2 && items.every((i) => i.status === 'sent' || i.status === 'failed') ? items.map((i) => i.status).sort() : undefined;
      }, 30_000, 'both invitations of the guest settled');
      expect(statuses).toEqual(['failed', 'sent']);
    }
  });
});

describe('Guest.commsTemplateId with an email that is not an address, then the corrected email: one invitation is sent, never two', () => {
  it('the record that corrects the email sends it once, whenever the first request is handled; repeating the wrong one sends nothing', async () => {
    const erin = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const eventId = await newEvent(erin);
    const template = await erin.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hello {{firstName}}</p>' });
    const upsert = (records: unknown[]) => erin.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert`, records);
    const guests = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const created = await erin.call('POST', '/checkin/v1/api/guest', { eventId, firstName: `Typo${i}`, email: `typo${i}@`, commsTemplateId: template.body.id });
        expect(created.status).toBe(200);
        // A sync repeating the wrong email, then the corrected one, right after the create.
        expect((await upsert([{ id: created.body.id, email: `typo${i}@`, commsTemplateId: template.body.id }])).status).toBe(204);
        expect((await upsert([{ id: created.body.id, email: `typo${i}@example.com`, commsTemplateId: template.body.id }])).status).toBe(204);
        return created.body.id as string;
      }),
    );
    for (const guestId of guests) {
      const settled = await eventually(async () => {
        const items = (await erin.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${guestId}`)).body.items as { status: string; error?: string }[];
        return items.length === 2 && items.every((i) => i.status === 'sent' || i.status === 'failed') ? items : undefined;
      }, 30_000, 'both invitations of the guest settled');
      expect(settled.map((i) => i.status).sort()).toEqual(['failed', 'sent']);
      expect(settled.find((i) => i.status === 'failed')?.error).toMatch(/^invalid_email/);
    }
  });
});

describe('Date-times: an ISO 8601 date-time of the years 1-99 is read as written', () => {
  it('.NET’s DateTime.MinValue (0001-01-01T00:00:00, no offset) is year 1 on the event’s clocks, answered as such', async () => {
    const eventId = await newEvent(alice, { timeZoneId: 'UTC' });
    const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId, validFrom: '0001-01-01T00:00:00', validTo: '9999-12-31T23:59:59.999' });
    expect(guest.status, JSON.stringify(guest.body)).toBe(200);
    expect(guest.body).toMatchObject({ validFrom: '0001-01-01T00:00:00.000Z', validTo: '9999-12-31T23:59:59.999Z' });
    // A wall time of year 1 in a zone: the zone's offset then (Berlin's local mean time, +00:53:28).
    const berlin = await newEvent(alice, { timeZoneId: 'Europe/Berlin' });
    const early = await alice.call('POST', '/checkin/v1/api/guest', { eventId: berlin, validFrom: '0050-06-01T12:00:00' });
    expect(early.body.validFrom).toBe('0050-06-01T11:06:32.000Z');
    // An instant before the year 0 or after 9999 has no four-digit form to answer with: 400 on the field.
    const before0 = await alice.call('POST', '/checkin/v1/api/guest', { eventId: berlin, validFrom: '0000-01-01T00:30:00' });
    expect(before0.status).toBe(400);
    expect(before0.body.errors).toEqual([expect.objectContaining({ path: 'validFrom' })]);
    expect((await alice.call('POST', '/checkin/v1/api/guest', { eventId, validTo: '9999-12-31T23:30:00-01:00' })).status).toBe(400);
    const year0 = await alice.call('POST', '/checkin/v1/api/guest', { eventId, validFrom: '0000-01-01T01:00:00+01:00' });
    expect(year0.body.validFrom).toBe('0000-01-01T00:00:00.000Z');
    // The guest is admitted as any guest whose validity began long ago.
    const scan = await alice.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/checkin`, { guestId: guest.body.id });
    expect(scan.body.result).toBe('admitted');
  });
});

describe('Event create and update: null in an optional field is not given (docs/api.md, Bodies)', () => {
  it('retentionDays: null creates an event without retention, and keeps the retention an update does not give', async () => {
    const body = { title: 'Retention null', startTime: '2026-06-01T18:00:00Z', endTime: '2026-06-01T23:00:00Z' };
    const created = await alice.call('POST', '/checkin/v1/api/event', { ...body, retentionDays: null });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id as string;
    expect((await alice.call('POST', '/checkin/v1/api/event', { ...body, id, retentionDays: 30 })).status).toBe(200);
    // A client that writes every property (null for the ones it did not set) changes only the ones it set.
    const renamed = await alice.call('POST', '/checkin/v1/api/event', { ...body, id, title: 'Retention kept', retentionDays: null, tags: null });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    const read = await alice.call('GET', `/checkin/v1/api/event/${encodeURIComponent(id)}`);
    expect(read.body).toMatchObject({ title: 'Retention kept', retentionDays: 30 });
    // "" removes the event's own retention (the client's default then applies), as "" empties a text.
    expect((await alice.call('POST', '/checkin/v1/api/event', { ...body, id, title: 'Retention kept', retentionDays: '' })).status).toBe(200);
    const removed = await alice.call('GET', `/checkin/v1/api/event/${encodeURIComponent(id)}`);
    expect(removed.body.title).toBe('Retention kept');
    expect(removed.body.retentionDays ?? null).toBeNull();
    const docs = service.platform.readStore.collection<{ _id: string } & Record<string, unknown>>('events');
    expect((await docs.find({ eventId: id })).items[0]).not.toHaveProperty('retentionDays');
  });
});
