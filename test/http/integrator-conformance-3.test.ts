import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, passwordToken, request, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The interface spec read line by line as an integrator reads it, third pass: the places where
 * the service still differed from the spec and was mended.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

const int32Max = 2_147_483_647;

describe('Resources and their fields: the OpenAPI document types as int32 what the spec types integer (int32)', () => {
  it('Guest plusOnes and admittedPlusOnes (the Guest request, which GuestCreate extends, and the answer), and the team member event statistics counts', async () => {
    const schemas = (await request(service.url, 'GET', '/openapi.json')).body.components.schemas;
    const fields: Array<[string, Record<string, { format?: string }>]> = [
      ['Guest.plusOnes', schemas.Guest.properties],
      ['Guest.admittedPlusOnes', schemas.Guest.properties],
      ['GuestResponse.plusOnes', schemas.GuestResponse.properties],
      ['GuestResponse.admittedPlusOnes', schemas.GuestResponse.properties],
      ['TeamMemberEventStats.checkedIn', schemas.TeamMemberEventStats.items.properties],
      ['TeamMemberEventStats.checkedOut', schemas.TeamMemberEventStats.items.properties],
      ['TeamMemberEventStats.checkedInActivity.admittedCount', schemas.TeamMemberEventStats.items.properties.checkedInActivity.items.properties],
    ];
    for (const [name, properties] of fields) {
      const field = name.split('.').at(-1)!;
      expect(properties[field]?.format, name).toBe('int32');
    }
  });
});

describe('Team member event statistics: checkedIn, checkedOut and admittedCount are integer (int32)', () => {
  it('a group of int32-max plus ones checked in keeps every count within int32 (saturated, not overflowing)', async () => {
    const eventId = await newEvent(alice);
    const userName = `pin1-door-int32-${Date.now()}`;
    const password = 'north gate scanner 7';
    expect((await alice.call('POST', '/checkin/v1/api/teammember', { userName, password, email: 'door@example.com' })).status).toBe(200);
    const door = { authorization: `Bearer ${await passwordToken(service.url, userName, password)}` };
    for (const firstName of ['Ada', 'Grace']) {
      const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName, isGroup: true, plusOnes: int32Max });
      const scan = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: guest.body.id }, door);
      expect(scan.body.result).toBe('admitted');
      expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkout`, { guestId: guest.body.id }, door)).body.result).toBe('discharged');
    }
    const stats = await alice.call('GET', `/checkin/v1/api/team/event/${eventId}`);
    expect(stats.status).toBe(200);
    const member = stats.body.find((s: { username: string }) => s.username === userName);
    expect(member).toMatchObject({ checkedIn: int32Max, checkedOut: int32Max, checkedInActivity: [{ admittedCount: int32Max }] });
  });
});

describe('Resources and their fields: Event.timeZoneId and User.timeZoneId are typed string, so any string, kept as given', () => {
  const zones = ['(UTC+01:00) Amsterdam, Berlin, Bern, Rome, Stockholm, Vienna', 'Mars/Olympus', 'CET-1CEST', ''];

  it.each(zones)('a user update and an event create take %j and answer it unchanged', async (timeZoneId) => {
    const carol = await createClient(service);
    expect((await carol.call('PUT', '/users/v1/api/user', { id: carol.id, timeZoneId })).status).toBe(204);
    expect((await carol.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(carol.email)}`)).body.timeZoneId).toBe(timeZoneId);
    const created = await carol.call('POST', '/checkin/v1/api/event', { title: 'Ball', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z', timeZoneId });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect((await carol.call('GET', `/checkin/v1/api/event/${created.body.id}`)).body.timeZoneId).toBe(timeZoneId);
  });

  it('a name that is no time zone is skipped where a zone is needed: an offset-less time is read on the account’s clocks', async () => {
    const carol = await createClient(service);
    await carol.call('PUT', '/users/v1/api/user', { id: carol.id, timeZoneId: 'Europe/Berlin' });
    const created = await carol.call('POST', '/checkin/v1/api/event', { title: 'Ball', startTime: '2026-12-12T18:00:00', endTime: '2026-12-12T23:00:00', timeZoneId: 'Mars/Olympus' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ timeZoneId: 'Mars/Olympus', startTime: '2026-12-12T17:00:00.000Z', endTime: '2026-12-12T22:00:00.000Z' });
    const exported = await carol.call('POST', '/checkin/v1/api/event/export?type=CSV', { id: created.body.id, title: 'Ball', startTime: '2026-12-12T17:00:00Z', endTime: '2026-12-12T22:00:00Z', timeZoneId: 'Mars/Olympus' });
    expect(exported.status, JSON.stringify(exported.body)).toBe(200);
  });

  it('the document states it as a string, without a list of names', async () => {
    const schemas = (await request(service.url, 'GET', '/openapi.json')).body.components.schemas;
    expect(schemas.TimeZoneId.type).toBe('string');
    expect(schemas.TimeZoneId).not.toHaveProperty('enum');
    expect(schemas.ExportRequest.properties.timeZoneId).not.toHaveProperty('enum');
  });
});

describe('Errors: a 400 in our error shape says what is wrong, in plain words', () => {
  it('a null batch record is "must be an object, not null", and nothing of the batch is applied', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Ada' }, null]);
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([{ path: '1', message: expect.stringMatching(/^must be an object, not null/) }]);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${eventId}`)).body.items).toEqual([]);
  });
});

describe('Limits: more than 200 records is 400, said the same way on every bulk route', () => {
  it('the bulk erase names ids with "at most 200 ... per call", like the batch, block and send routes', async () => {
    const eventId = await newEvent(alice);
    const ids = Array.from({ length: 201 }, (_, n) => `g-${n}`);
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/erase`, { reason: 'retention', ids });
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ code: 'validation_error', errors: [{ path: 'ids', message: 'at most 200 guest ids or customIds per call' }] });
  });
});
