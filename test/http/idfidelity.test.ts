import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * Ids as an integrator reads the spec ("All identifiers are strings. Fields that are GUIDs are
 * noted."): an event id, team member id or customId is a plain string, kept and compared as sent,
 * a GUID-shaped one in upper or mixed case too (docs/identifiers.md, Case).
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

const api = '/checkin/v1/api';
const times = { startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' };
const path = encodeURIComponent;

describe('a GUID-shaped event id and team member id in upper case are plain strings', () => {
  it('are answered exactly as sent everywhere, and an id differing only in case is another event and another member', async () => {
    const upper = randomUUID().toUpperCase();
    const made = await alice.call('POST', `${api}/event`, { id: upper, title: 'Upper', ...times });
    expect([made.status, made.body.id]).toEqual([200, upper]);
    expect((await alice.call('GET', `${api}/event/${upper}`)).body.id).toBe(upper);
    expect((await alice.call('GET', `${api}/events`)).body.items.map((e: { id: string }) => e.id)).toContain(upper);

    // The same GUID in lowercase is another string, so another event.
    expect((await alice.call('GET', `${api}/event/${upper.toLowerCase()}`)).status).toBe(404);
    const lower = await alice.call('POST', `${api}/event`, { id: upper.toLowerCase(), title: 'Lower', ...times });
    expect([lower.status, lower.body.id, lower.body.title]).toEqual([200, upper.toLowerCase(), 'Lower']);
    expect((await alice.call('GET', `${api}/event/${upper}`)).body.title).toBe('Upper');

    const guest = await alice.call('POST', `${api}/guest`, { eventId: upper, firstName: 'Ada', barcode: 'UP-1' });
    expect([guest.status, guest.body.eventId]).toEqual([200, upper]);
    expect((await alice.call('GET', `${api}/guests/${upper}`)).body.items.map((g: { eventId: string }) => g.eventId)).toEqual([upper]);
    expect((await alice.call('GET', `${api}/guests/${upper.toLowerCase()}`)).body.items).toEqual([]);

    const memberId = randomUUID().toUpperCase();
    const userName = `idf-door-${Date.now()}`;
    const member = await alice.call('POST', `${api}/teammember`, { userName, password: 'door staff pass 1', email: 'door@example.com', id: memberId });
    expect([member.status, member.body.id]).toEqual([200, memberId]);
    const other = await alice.call('POST', `${api}/teammember`, { userName: `${userName}-b`, password: 'door staff pass 1', email: 'door@example.com', id: memberId.toLowerCase() });
    expect([other.status, other.body.id]).toEqual([200, memberId.toLowerCase()]);

    const token = await passwordToken(service.url, userName, 'door staff pass 1');
    const scan = await alice.call('POST', `${api}/guests/${upper}/checkin`, { barcode: 'UP-1' }, { authorization: `Bearer ${token}` });
    expect(scan.body.result).toBe('admitted');
    const team = await alice.call('GET', `${api}/team/event/${upper}`);
    // Every team member of the client is listed; the two ids are two members, only one scanned.
    const counts = (body: { eventId: string; teamMemberId: string; checkedIn: number }[]) =>
      body.filter((m) => m.teamMemberId.toLowerCase() === memberId.toLowerCase()).map((m) => [m.eventId, m.teamMemberId, m.checkedIn]).sort();
    expect(counts(team.body)).toEqual([[upper, memberId, 1], [upper, memberId.toLowerCase(), 0]].sort());
    const lowerTeam = (await alice.call('GET', `${api}/team/event/${upper.toLowerCase()}`)).body;
    expect(counts(lowerTeam)).toEqual([[upper.toLowerCase(), memberId, 0], [upper.toLowerCase(), memberId.toLowerCase(), 0]].sort());

    const exported = await alice.call('POST', `${api}/event/export?type=csv`, { id: upper, title: 'Upper', ...times });
    expect([exported.status, exported.body.rowCount]).toEqual([200, 1]);
    const csv = await (await fetch(`${service.url}${exported.body.url}`, { headers: { authorization: `Bearer ${alice.token}`, 'ocp-apim-subscription-key': alice.subscriptionKey } })).text();
    expect(csv).toContain(upper);
    expect(csv).not.toContain(upper.toLowerCase());

    const stats = await alice.call('GET', `${api}/event/${upper}/stats`);
    expect(stats.status).toBe(200);
    const timeline = await alice.call('GET', `${api}/event/${upper}/timeline`);
    expect([timeline.status, timeline.body.eventId ?? upper]).toEqual([200, upper]);
  });
});

describe('events and team members stored before plain ids kept their case (GUID-shaped ids were lowercased)', () => {
  const stored = async (stream: string, type: string, data: Record<string, unknown>) => {
    const appended = await service.platform.eventStore.append(stream, [{
      id: randomUUID(),
      type,
      data,
      metadata: { tenantId: alice.id, actor: { type: 'client', id: alice.id }, correlationId: randomUUID(), occurredAt: new Date().toISOString() },
    }], 'no_stream');
    await service.runner!.waitFor(appended.position);
  };

  it('an old event is still found by the upper-case id it was created with, and keeps its one stream', async () => {
    const upper = randomUUID().toUpperCase();
    const lower = upper.toLowerCase();
    const stream = `event-${encodeURIComponent(alice.id)}:${lower}`;
    await stored(stream, 'EventCreated', { eventId: lower, clientId: alice.id, title: 'Old', ...times });

    expect((await alice.call('GET', `${api}/event/${upper}`)).body).toMatchObject({ id: lower, title: 'Old' });
    const guest = await alice.call('POST', `${api}/guest`, { eventId: upper, firstName: 'Ada', barcode: 'OLD-1' });
    expect([guest.status, guest.body.eventId]).toEqual([200, lower]);
    expect((await alice.call('GET', `${api}/guests/${upper}`)).body.items.map((g: { id: string }) => g.id)).toEqual([guest.body.id]);
    expect((await alice.call('POST', `${api}/guests/${upper}/checkin`, { barcode: 'OLD-1' })).body.result).toBe('admitted');
    expect((await alice.call('GET', `${api}/event/${upper}/stats`)).status).toBe(200);
    const batch = await alice.call('POST', `${api}/guests/${upper}`, [{ eventId: upper, firstName: 'Bo' }]);
    expect([batch.status, batch.body[0]?.eventId], JSON.stringify(batch.body)).toEqual([200, lower]);

    const again = await alice.call('POST', `${api}/event`, { id: upper, title: 'Old, updated', ...times });
    expect(again.body).toMatchObject({ id: lower, title: 'Old, updated' });
    expect((await service.platform.eventStore.readStream(stream)).map((e) => e.type)).toEqual(['EventCreated', 'EventUpdated']);
    expect(await service.platform.eventStore.readStream(`event-${encodeURIComponent(alice.id)}:${upper}`)).toEqual([]);
  });

  it('an old team member is removed by the upper-case id it was registered with', async () => {
    const upper = randomUUID().toUpperCase();
    const lower = upper.toLowerCase();
    const userName = `idf-old-${Date.now()}`;
    await stored(`teammember-${encodeURIComponent(alice.id)}:${lower}`, 'TeamMemberRegistered', {
      teamMemberId: lower, clientId: alice.id, userName, email: 'old@example.com', passwordHash: 'x',
    });
    expect((await alice.call('DELETE', `${api}/teammember/${upper}`)).status).toBe(204);
    expect((await service.platform.eventStore.readStream(`teammember-${encodeURIComponent(alice.id)}:${lower}`)).map((e) => e.type)).toEqual([
      'TeamMemberRegistered',
      'TeamMemberRemoved',
    ]);
  });
});

describe('customId usable instead of id on every route that names one guest', () => {
  it('a GUID-shaped customId in upper case (no guest’s id) finds its guest on each route', async () => {
    const comms = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const eventId = `idf-${randomUUID()}`;
    expect((await comms.call('POST', `${api}/event`, { id: eventId, title: 'Routes', ...times })).status).toBe(200);
    const template = await comms.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hi {{firstName}}</p>' });
    expect(template.status).toBe(200);
    const [keep, gone] = [randomUUID().toUpperCase(), randomUUID().toUpperCase()];
    const made = await comms.call('POST', `${api}/guests/${eventId}`, [
      { firstName: 'Keep', email: 'keep@example.com', customId: keep },
      { firstName: 'Gone', email: 'gone@example.com', customId: gone },
    ]);
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const [keepId, goneId] = made.body.map((g: { id: string }) => g.id);
    expect(made.body.map((g: { customId: string }) => g.customId)).toEqual([keep, gone]);

    const checked: [string, number, unknown][] = [];
    const call = async (method: string, route: string, body?: unknown) => {
      const reply = await comms.call(method, route, body);
      checked.push([`${method} ${route}`, reply.status, reply.body?.code]);
      return reply;
    };
    expect((await call('GET', `${api}/guest/${keep}`)).body.id).toBe(keepId);
    expect((await call('GET', `${api}/guest/${keep.toLowerCase()}?eventId=${eventId}`)).body.id).toBe(keepId);
    expect((await call('GET', `${api}/guest/${keep}/history`)).status).toBe(200);
    expect((await call('GET', `${api}/guest/${keep}/personal-data`)).status).toBe(200);
    expect((await call('GET', `${api}/guest/${keep}/ticket`)).status).toBe(200);
    expect((await call('POST', `${api}/guest/${keep}/ticket/reissue`, {})).status).toBe(200);
    expect((await call('POST', `${api}/guest/${keep}/ticket/revoke`, {})).status).toBe(204);
    expect((await call('PUT', `${api}/guests/${eventId}/upsert`, [{ customId: keep, lastName: 'Upserted' }])).status).toBe(204);
    expect((await call('POST', `${api}/guests/${eventId}/checkin`, { customId: keep })).body.result).toBe('admitted');
    expect((await call('POST', `${api}/guests/${eventId}/checkin/undo`, { customId: keep })).status).toBe(200);
    expect((await call('POST', `${api}/guests/${eventId}/checkin`, { guestId: keep })).body.result).toBe('admitted');
    expect((await call('POST', `${api}/guests/${eventId}/checkout`, { customId: keep })).status).toBe(200);
    expect((await call('POST', `${api}/guests/${eventId}/block`, { ids: [keep], reason: 'test' })).status).toBe(200);
    expect((await call('POST', `${api}/guests/${eventId}/unblock`, { customIds: [keep] })).status).toBe(200);
    const send = await call('POST', '/comms/v1/api/comms/send', { templateId: template.body.id, attendeeIds: [keep] });
    expect(send.status, JSON.stringify(send.body)).toBe(200);
    expect(JSON.stringify(send.body)).toContain(keepId);
    const invitations = await call('GET', `/comms/v1/api/comms/invitations?attendeeId=${keep}`);
    expect(invitations.body.items.map((i: { attendeeId: string }) => i.attendeeId)).toEqual([keepId]);
    expect((await call('POST', `${api}/guests/${eventId}/erase`, { ids: [gone], reason: 'test' })).status).toBe(200);
    expect((await call('POST', `${api}/guest/${keep}/erase`, { reason: 'test' })).status).toBe(200);
    expect((await comms.call('GET', `${api}/guest/${goneId}`)).body.erased).toBe(true);
    expect((await comms.call('GET', `${api}/guest/${keepId}`)).body).toMatchObject({ erased: true, lastName: null });
    expect(checked.filter(([, status]) => status >= 400)).toEqual([]);
  });
});

describe('unset date-times, changedSince ties and padded barcodes', () => {
  it('admitted, blockedDate and discharged given as "" (an unset cell) are not set: the guest is created, not admitted or blocked', async () => {
    const eventId = `idf-${randomUUID()}`;
    await alice.call('POST', `${api}/event`, { id: eventId, title: 'Unset', ...times });
    const one = await alice.call('POST', `${api}/guest`, { eventId, firstName: 'Ada', admitted: '', blockedDate: '', discharged: '' });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body).toMatchObject({ admitted: null, blockedDate: null, discharged: null });
    const batch = await alice.call('POST', `${api}/guests/${eventId}`, [{ firstName: 'Bo', admitted: '', blockedDate: null, discharged: '' }]);
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body[0]).toMatchObject({ admitted: null, blockedDate: null });
    const upsert = await alice.call('PUT', `${api}/guests/${eventId}/upsert`, [{ id: one.body.id, lastName: 'L', admitted: '', blockedDate: '' }]);
    expect(upsert.status, JSON.stringify(upsert.body)).toBe(204);
    expect((await alice.call('POST', `${api}/guests/${eventId}/checkin`, { guestId: one.body.id })).body.result).toBe('admitted');
    // An upsert never changes the admission: "" there does not undo it.
    expect((await alice.call('PUT', `${api}/guests/${eventId}/upsert`, [{ id: one.body.id, admitted: '' }])).status).toBe(204);
    expect((await alice.call('GET', `${api}/guest/${one.body.id}`)).body.admitted).not.toBeNull();
    expect((await alice.call('POST', `${api}/guest`, { eventId, admitted: 'soon' })).status).toBe(400);
  });

  it('a changedSince walk page by page (nextCursor) loses no guest changed in the same millisecond as another', async () => {
    const eventId = `idf-${randomUUID()}`;
    await alice.call('POST', `${api}/event`, { id: eventId, title: 'Ties', ...times });
    const made = await alice.call('POST', `${api}/guests/${eventId}`, Array.from({ length: 5 }, (_, i) => ({ firstName: `T${i}` })));
    expect(new Set(made.body.map((g: { updated: string }) => g.updated)).size).toBe(1);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await alice.call('GET', `${api}/guests/${eventId}?changedSince=2000-01-01T00:00:00Z&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      seen.push(...page.body.items.map((g: { id: string }) => g.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen.sort()).toEqual(made.body.map((g: { id: string }) => g.id).sort());
  });

  it('a barcode with spaces around it is kept as given and matched at the door as scanned or trimmed', async () => {
    const eventId = `idf-${randomUUID()}`;
    await alice.call('POST', `${api}/event`, { id: eventId, title: 'Pads', ...times });
    const guest = await alice.call('POST', `${api}/guest`, { eventId, firstName: 'Pad', barcode: ' PAD-1 ' });
    expect(guest.body.barcode).toBe(' PAD-1 ');
    const scan = await alice.call('POST', `${api}/guests/${eventId}/checkin`, { barcode: 'PAD-1' });
    expect([scan.status, scan.body.result, scan.body.guest?.id]).toEqual([200, 'admitted', guest.body.id]);
  });
});
