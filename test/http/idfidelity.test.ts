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
