import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  service = await startTestService({ EXPORT_TTL_MINUTES: '5' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  bob = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

const times = { startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' };
const path = (id: string) => encodeURIComponent(id);
const member = (userName: string, id?: string) => ({
  ...(id !== undefined ? { id } : {}),
  userName,
  password: 'door staff pass 1',
  email: `${userName}@example.com`,
});

describe('plain-string ids (issue 10 item 1)', () => {
  const awkward = ['my-event-1', 'a/b', '100%', 'two words', 'Ünïcødé-🎉', 'event-x:y', '...', '?#&=', 'x'.repeat(128), '🎉'.repeat(128)];

  it.each(awkward)('takes %j as an event id: create, read, guests, byinfo, scans, stats and export', async (id) => {
    const created = await alice.call('POST', '/checkin/v1/api/event', { id, title: `Event ${id}`, ...times });
    expect(created.status).toBe(200);
    expect(created.body.id).toBe(id);
    const read = await alice.call('GET', `/checkin/v1/api/event/${path(id)}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id, title: `Event ${id}` });

    const customId = `c/${id}`.slice(0, 128);
    const guests = await alice.call('POST', `/checkin/v1/api/guests/${path(id)}`, [
      { firstName: 'Ada', customId, barcode: `b-${id}`, additionalInfo: 'table 1' },
    ]);
    expect(guests.status).toBe(200);
    expect(guests.body[0]).toMatchObject({ eventId: id, customId });
    const single = await alice.call('POST', '/checkin/v1/api/guest', { eventId: id, firstName: 'Bo' });
    expect(single.status).toBe(200);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${path(id)}`)).body.items).toHaveLength(2);
    const byInfo = await alice.call('GET', `/checkin/v1/api/guests/${path(id)}/byinfo?additionalInfo=table`);
    expect(byInfo.body.map((g: { firstName: string }) => g.firstName)).toEqual(['Ada']);
    const scan = await alice.call('POST', `/checkin/v1/api/guests/${path(id)}/checkin`, { barcode: `b-${id}` });
    expect(scan.body.result).toBe('admitted');
    expect((await alice.call('GET', `/checkin/v1/api/event/${path(id)}/scans`)).body.items).toHaveLength(1);
    expect((await alice.call('GET', `/checkin/v1/api/event/${path(id)}/stats`)).body).toMatchObject({ eventId: id, invited: 2, admitted: 1 });

    const exported = await alice.call('POST', '/checkin/v1/api/event/export', { id, title: 'x', ...times });
    expect(exported.status).toBe(200);
    expect(exported.body.eventId).toBe(id);
    const file = await alice.call('GET', exported.body.url);
    expect(file.status).toBe(200);
    expect(String(file.body)).toContain(customId);
  });

  it('refuses an empty id, one over 128 characters, one with a control character, and . or .. (no URL can name them) with 400', async () => {
    for (const id of ['', 'x'.repeat(129), '🎉'.repeat(129), 'line\nbreak', 'nul\u0000', 'del\u007f', '.', '..']) {
      const reply = await alice.call('POST', '/checkin/v1/api/event', { id, title: 'Bad', ...times });
      expect(reply.status, JSON.stringify(id)).toBe(400);
      expect(reply.body.errors.map((e: { path: string }) => e.path)).toContain('id');
    }
    const longPath = await alice.call('GET', `/checkin/v1/api/event/${'x'.repeat(129)}`);
    expect(longPath.status).toBe(400);
    expect(longPath.body.errors[0].path).toBe('id');
    const badGuestEvent = await alice.call('POST', '/checkin/v1/api/guest', { eventId: 'tab\there' });
    expect(badGuestEvent.status).toBe(400);
  });

  it('keeps ids case-sensitive, a GUID-shaped one too (an event id is a plain string: docs/identifiers.md, Case)', async () => {
    await alice.call('POST', '/checkin/v1/api/event', { id: 'Case-1', title: 'Upper', ...times });
    expect((await alice.call('GET', '/checkin/v1/api/event/case-1')).status).toBe(404);
    const guid = randomUUID();
    await alice.call('POST', '/checkin/v1/api/event', { id: guid.toUpperCase(), title: 'Guid', ...times });
    expect((await alice.call('GET', `/checkin/v1/api/event/${guid}`)).status).toBe(404);
    const read = await alice.call('GET', `/checkin/v1/api/event/${guid.toUpperCase()}`);
    expect(read.status).toBe(200);
    expect(read.body.id).toBe(guid.toUpperCase());
  });

  it('takes a plain-string team member id and event id in a template', async () => {
    const reply = await alice.call('POST', '/checkin/v1/api/teammember', member(`door3-${Date.now()}`, 'door-three'));
    expect(reply.status).toBe(200);
    expect(reply.body.id).toBe('door-three');
    await alice.call('POST', '/checkin/v1/api/event', { id: 'gala/2026', title: 'Gala', ...times });
    const template = await alice.call('POST', '/comms/v1/api/comms/template', { eventId: 'gala/2026', name: 'Invite', html: '<p>Hi</p>' });
    expect(template.status).toBe(200);
    expect(template.body.eventId).toBe('gala/2026');
    const list = await alice.call('GET', `/comms/v1/api/comms/templates?eventId=${path('gala/2026')}`);
    expect(list.body.items.map((t: { id: string }) => t.id)).toEqual([template.body.id]);
  });
});

describe('ids are scoped per client (issue 10 item 12)', () => {
  it('lets two clients use the same event id without 409 or seeing each other’s event, guests or stats', async () => {
    const a = await alice.call('POST', '/checkin/v1/api/event', { id: 'shared-event', title: 'Alice’s', ...times });
    const b = await bob.call('POST', '/checkin/v1/api/event', { id: 'shared-event', title: 'Bob’s', ...times });
    expect([a.status, b.status]).toEqual([200, 200]);
    await alice.call('POST', '/checkin/v1/api/guests/shared-event', [{ firstName: 'Ann', customId: 'C-1', barcode: 'X' }]);
    await bob.call('POST', '/checkin/v1/api/guests/shared-event', [{ firstName: 'Ben', customId: 'C-1', barcode: 'X' }]);
    expect((await alice.call('GET', '/checkin/v1/api/event/shared-event')).body.title).toBe('Alice’s');
    expect((await bob.call('GET', '/checkin/v1/api/event/shared-event')).body.title).toBe('Bob’s');
    const aliceGuests = (await alice.call('GET', '/checkin/v1/api/guests/shared-event')).body.items;
    expect(aliceGuests.map((g: { firstName: string }) => g.firstName)).toEqual(['Ann']);
    const scan = await bob.call('POST', '/checkin/v1/api/guests/shared-event/checkin', { barcode: 'X' });
    expect(scan.body).toMatchObject({ result: 'admitted', guest: { firstName: 'Ben' } });
    expect((await alice.call('GET', '/checkin/v1/api/event/shared-event/stats')).body.admitted).toBe(0);
    expect((await bob.call('GET', '/checkin/v1/api/event/shared-event/stats')).body.admitted).toBe(1);
    expect((await alice.call('GET', '/checkin/v1/api/event/shared-event/scans')).body.items).toEqual([]);
    expect((await alice.call('GET', '/checkin/v1/api/event/shared-event/timeline')).body.totals.admissions).toBe(0);
    expect((await bob.call('GET', '/checkin/v1/api/event/shared-event/timeline')).body.totals.admissions).toBe(1);
  });

  it('lets two clients use the same team member id; each logs in as their own', async () => {
    const stamp = Date.now();
    const a = await alice.call('POST', '/checkin/v1/api/teammember', member(`a-door-${stamp}`, 'door-1'));
    const b = await bob.call('POST', '/checkin/v1/api/teammember', member(`b-door-${stamp}`, 'door-1'));
    expect([a.status, b.status]).toEqual([200, 200]);
    const again = await alice.call('POST', '/checkin/v1/api/teammember', member(`a2-door-${stamp}`, 'door-1'));
    expect(again.status).toBe(409);

    await bob.call('POST', '/checkin/v1/api/event', { id: 'door-test', title: 'Door', ...times });
    await bob.call('POST', '/checkin/v1/api/guests/door-test', [{ firstName: 'Ben', barcode: 'D-1' }]);
    const token = await passwordToken(service.url, `b-door-${stamp}`, 'door staff pass 1');
    const scan = await bob.call('POST', '/checkin/v1/api/guests/door-test/checkin', { barcode: 'D-1' }, { authorization: `Bearer ${token}` });
    expect(scan.body.result).toBe('admitted');
    const team = await bob.call('GET', '/checkin/v1/api/team/event/door-test');
    expect(team.body).toEqual([expect.objectContaining({ teamMemberId: 'door-1', username: `b-door-${stamp}`, checkedIn: 1 })]);
  });
});

describe('data from before ids were scoped', () => {
  it('keeps using an event’s old `event-<guid>` stream, and another client’s same id is still their own event', async () => {
    const id = randomUUID();
    const appended = await service.platform.eventStore.append(`event-${id}`, [{
      id: randomUUID(),
      type: 'EventCreated',
      data: { eventId: id, clientId: alice.id, title: 'Old', ...times },
      metadata: { tenantId: alice.id, actor: { type: 'client', id: alice.id }, correlationId: randomUUID(), occurredAt: new Date().toISOString() },
    }], 'no_stream');
    await service.runner!.waitFor(appended.position);
    expect((await alice.call('GET', `/checkin/v1/api/event/${id}`)).body.title).toBe('Old');
    const updated = await alice.call('POST', '/checkin/v1/api/event', { id: id.toUpperCase(), title: 'Old, updated', ...times });
    expect(updated.body).toMatchObject({ id, title: 'Old, updated' });
    expect((await service.platform.eventStore.readStream(`event-${id}`)).map((e) => e.type)).toEqual(['EventCreated', 'EventUpdated']);
    expect(await service.platform.eventStore.readStream(`event-${alice.id}:${id}`)).toEqual([]);
    const bobs = await bob.call('POST', '/checkin/v1/api/event', { id, title: 'Bob’s', ...times });
    expect(bobs.body.title).toBe('Bob’s');
    expect((await alice.call('GET', `/checkin/v1/api/event/${id}`)).body.title).toBe('Old, updated');
  });
});

describe('customId usable instead of id (issue 10 item 2)', () => {
  let first: { id: string };

  beforeAll(async () => {
    await alice.call('POST', '/checkin/v1/api/event', { id: 'cid-1', title: 'One', ...times });
    await alice.call('POST', '/checkin/v1/api/event', { id: 'cid-2', title: 'Two', ...times });
    first = (await alice.call('POST', '/checkin/v1/api/guest', { eventId: 'cid-1', firstName: 'Cy', customId: 'C-1' })).body;
    await alice.call('POST', '/checkin/v1/api/guest', { eventId: 'cid-1', firstName: 'Unique', customId: 'only-here' });
    await alice.call('POST', '/checkin/v1/api/guest', { eventId: 'cid-2', firstName: 'Cy two', customId: 'c-1' });
  });

  it('reads a guest and its history by customId (any case)', async () => {
    const read = await alice.call('GET', '/checkin/v1/api/guest/ONLY-HERE');
    expect(read.status).toBe(200);
    expect(read.body.firstName).toBe('Unique');
    const history = await alice.call('GET', '/checkin/v1/api/guest/only-here/history');
    expect(history.status).toBe(200);
    expect(history.body.events[0].type).toBe('GuestRegistered');
  });

  it('answers 409 ambiguous_custom_id when the customId is used in several events, and eventId resolves it', async () => {
    const ambiguous = await alice.call('GET', '/checkin/v1/api/guest/C-1');
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.body).toMatchObject({ code: 'ambiguous_custom_id', errors: [{ path: 'eventId' }] });
    expect((await alice.call('GET', '/checkin/v1/api/guest/C-1/history')).status).toBe(409);
    const one = await alice.call('GET', '/checkin/v1/api/guest/C-1?eventId=cid-1');
    expect(one.body).toMatchObject({ id: first.id, firstName: 'Cy' });
    const two = await alice.call('GET', '/checkin/v1/api/guest/C-1?eventId=cid-2');
    expect(two.body.firstName).toBe('Cy two');
  });

  it('prefers a GUID that is one of the caller’s guest ids; another client’s guest or customId is 404', async () => {
    expect((await alice.call('GET', `/checkin/v1/api/guest/${first.id.toUpperCase()}`)).body.firstName).toBe('Cy');
    expect((await bob.call('GET', `/checkin/v1/api/guest/${first.id}`)).status).toBe(404);
    expect((await bob.call('GET', '/checkin/v1/api/guest/only-here')).status).toBe(404);
  });

  it('checks in, undoes, checks out, blocks and unblocks by customId', async () => {
    const base = '/checkin/v1/api/guests/cid-1';
    expect((await alice.call('POST', `${base}/checkin`, { customId: 'c-1' })).body).toMatchObject({ result: 'admitted', guest: { id: first.id } });
    const undo = await alice.call('POST', `${base}/checkin/undo`, { customId: 'C-1' });
    expect(undo.status).toBe(200);
    expect(undo.body.guest.admitted).toBeNull();
    expect((await alice.call('POST', `${base}/checkin`, { customId: 'C-1' })).body.result).toBe('admitted');
    expect((await alice.call('POST', `${base}/checkout`, { customId: 'C-1' })).body.result).toBe('discharged');
    const blocked = await alice.call('POST', `${base}/block`, { customIds: ['C-1'], reason: 'lost ticket' });
    expect(blocked.status).toBe(200);
    expect(blocked.body[0]).toMatchObject({ id: first.id, blockedReason: 'lost ticket' });
    const unblocked = await alice.call('POST', `${base}/unblock`, { customIds: ['C-1'] });
    expect(unblocked.body[0].blockedDate).toBeNull();
    const unknown = await alice.call('POST', `${base}/block`, { customIds: ['nobody'] });
    // Spec, Errors: a guest not found is 404.
    expect(unknown.status).toBe(404);
    expect(unknown.body.errors[0].path).toBe('customIds.0');
  });

  it('block and unblock take a customId in ids as well (usable instead of id), each checked within the event', async () => {
    const base = '/checkin/v1/api/guests/cid-1';
    const blocked = await alice.call('POST', `${base}/block`, { ids: ['c-1'], reason: 'chargeback' });
    expect(blocked.status).toBe(200);
    expect(blocked.body).toHaveLength(1);
    expect(blocked.body[0]).toMatchObject({ id: first.id, blockedReason: 'chargeback' });
    // The same guest by id and by customId is one guest, blocked once.
    const both = await alice.call('POST', `${base}/unblock`, { ids: [first.id, 'C-1'] });
    expect(both.body).toHaveLength(1);
    expect(both.body[0].blockedDate).toBeNull();
    // Nothing changes when one of them names no guest of this event: the id of a guest of another event, or nobody.
    const elsewhere = (await alice.call('GET', '/checkin/v1/api/guest/C-1?eventId=cid-2')).body.id as string;
    const mixed = await alice.call('POST', `${base}/block`, { ids: ['C-1', elsewhere, 'nobody'], reason: 'x' });
    expect(mixed.status).toBe(404);
    expect(mixed.body.errors.map((e: { path: string }) => e.path)).toEqual(['ids.1', 'ids.2']);
    expect((await alice.call('GET', `/checkin/v1/api/guest/${first.id}`)).body.blockedDate).toBeNull();
    // Another client's customId is no guest of the caller's.
    expect((await bob.call('POST', `${base}/block`, { ids: ['C-1'] })).status).toBe(404);
  });

  it('undo by guest id answers 404 when the guest has no check-in to undo', async () => {
    const reply = await alice.call('POST', '/checkin/v1/api/guests/cid-1/checkin/undo', { customId: 'only-here' });
    expect(reply.status).toBe(404);
  });
});

describe('ids the service makes', () => {
  const version = (id: string) => id[14];

  it('gives guests, their invitations and their stored events time-ordered v7 GUIDs, in the order they were made; a caller’s GUID is kept', async () => {
    const eventId = `ordered-${randomUUID()}`;
    expect((await alice.call('POST', '/checkin/v1/api/event', { id: eventId, title: 'Ordered ids', ...times })).status).toBe(200);
    const made: string[] = [];
    for (const batch of [0, 1, 2]) {
      const created = await alice.call('POST', `/checkin/v1/api/guests/${path(eventId)}`, [
        { firstName: `A${batch}`, lastName: 'First' },
        { firstName: `B${batch}`, lastName: 'Second' },
      ]);
      expect(created.status).toBe(200);
      made.push(...(created.body as { id: string }[]).map((g) => g.id));
    }
    expect(made).toHaveLength(6);
    for (const id of made) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      // The first 48 bits are the time it was made, in milliseconds: now, not some other day.
      expect(Math.abs(parseInt(id.replace(/-/g, '').slice(0, 12), 16) - Date.now())).toBeLessThan(10 * 60_000);
    }
    // Made one after another: they sort one after another.
    expect([...made].sort()).toEqual(made);

    const own = randomUUID();
    const given = await alice.call('POST', `/checkin/v1/api/guests/${path(eventId)}`, [{ id: own.toUpperCase(), firstName: 'Own' }]);
    expect(given.status).toBe(200);
    // Kept as sent (docs/identifiers.md, Which ids are GUIDs); matched in any case.
    expect(given.body[0].id).toBe(own.toUpperCase());
    expect(version(own)).toBe('4');

    // The stored events of those guests (registrations, reservations, invitations) carry v7 ids too.
    const stored = await service.services.eventStore.readStream(`guest-${encodeURIComponent(alice.id)}:${made[0]}`);
    expect(stored.length).toBeGreaterThan(0);
    for (const event of stored) expect(version(event.id)).toBe('7');
  });
});
