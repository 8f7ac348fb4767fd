import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, passwordToken, request, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The interface spec read line by line as an integrator reads it, fourth pass: the places where
 * the service still differed from the spec and was mended.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

/** The spec's Guest table, in its order. */
const guestFields = [
  'id', 'firstName', 'otherNames', 'lastName', 'email', 'plusOnes', 'admittedPlusOnes', 'additionalInfo', 'barcode', 'tags',
  'createdBy', 'admitted', 'blockedDate', 'blockedReason', 'eventId', 'validFrom', 'validTo', 'isGroup', 'discharged', 'image',
  'customId', 'commsTemplateId', 'correlationId',
];
/** The spec's fields, then ours: `updated` (the guest's last change, a sync's next changedSince). */
const answerFields = [...guestFields, 'updated'];
/** A guest created with nothing but its event, as every guest answer shows it. */
const bareGuest = (id: string, eventId: string) => ({
  updated: expect.any(String),
  id,
  firstName: null,
  otherNames: null,
  lastName: null,
  email: null,
  plusOnes: 0,
  admittedPlusOnes: 0,
  additionalInfo: null,
  barcode: null,
  tags: null,
  createdBy: alice.id,
  admitted: null,
  blockedDate: null,
  blockedReason: null,
  eventId,
  validFrom: null,
  validTo: null,
  isGroup: false,
  discharged: null,
  image: null,
  customId: null,
  commsTemplateId: null,
  correlationId: null,
});

describe('Resources and their fields: every answer carries every field of the spec’s object (null when not set)', () => {
  it('a Guest answer holds all 23 fields of the Guest table (then `updated`, ours) on create, read, batch, list, byinfo, scan and block', async () => {
    const eventId = await newEvent(alice);
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    expect(created.body).toEqual(bareGuest(id, eventId));
    expect(Object.keys(created.body)).toEqual(answerFields);

    expect((await alice.call('GET', `/checkin/v1/api/guest/${id}`)).body).toEqual(bareGuest(id, eventId));
    const batch = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ id, additionalInfo: 'table 9' }]);
    expect(batch.body).toEqual([{ ...bareGuest(id, eventId), additionalInfo: 'table 9' }]);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${eventId}`)).body.items).toEqual([{ ...bareGuest(id, eventId), additionalInfo: 'table 9' }]);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${eventId}/byinfo?additionalInfo=table`)).body).toEqual([
      { ...bareGuest(id, eventId), additionalInfo: 'table 9' },
    ]);
    const paged = await alice.call('GET', `/checkin/v1/api/guests/${eventId}/byinfo?additionalInfo=table&limit=5`);
    expect(Object.keys(paged.body[0])).toEqual(answerFields);

    const scan = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: id });
    expect(scan.body.result).toBe('admitted');
    expect(Object.keys(scan.body.guest)).toEqual(answerFields);
    expect(scan.body.guest).toMatchObject({ admitted: expect.any(String), blockedDate: null, discharged: null });
    const blocked = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { ids: [id] });
    expect(Object.keys(blocked.body[0])).toEqual(answerFields);
  });

  it('a User answer holds every field of the User table but the password, null when not set', async () => {
    const user = await alice.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(alice.email)}`);
    expect(user.status).toBe(200);
    expect(user.body).toEqual({
      id: alice.id,
      firstName: null,
      lastName: null,
      userName: alice.email,
      email: alice.email,
      timeZoneId: null,
      companyName: null,
      customData: null,
    });
  });

  it('a Team member answer holds every field of the Team member table but the password, on create and on the list', async () => {
    const userName = `door-${Date.now()}`;
    const created = await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'door staff pass 1', email: 'door@example.com' });
    expect(created.status).toBe(200);
    const member = { userName, email: 'door@example.com', id: created.body.id, firstName: null, lastName: null, canForce: false };
    expect(created.body).toEqual(member);
    const listed = await alice.call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(alice.email)}/events`);
    expect(listed.body).toContainEqual(member);
    const asItself = await request(service.url, 'GET', `/checkin/v1/api/teammembers/user/${userName}/events`, undefined, {
      authorization: `Bearer ${await passwordToken(service.url, userName, 'door staff pass 1')}`,
      'ocp-apim-subscription-key': alice.subscriptionKey,
    });
    expect(asItself.body).toEqual([member]);
  });

  it('an Event answer holds every field of the Event table, null when not set', async () => {
    const times = { startTime: '2026-01-01T18:00:00.000Z', endTime: '2027-12-31T23:00:00.000Z' };
    const created = await alice.call('POST', '/checkin/v1/api/event', { title: 'Bare', ...times });
    const event = { title: 'Bare', ...times, id: created.body.id, active: null, timeZoneId: null, tags: null, customData: null };
    expect(created.body).toMatchObject(event);
    expect((await alice.call('GET', `/checkin/v1/api/event/${created.body.id}`)).body).toMatchObject(event);
    expect((await alice.call('GET', '/checkin/v1/api/events?limit=1000')).body.items).toContainEqual(expect.objectContaining(event));
  });
});

describe('Bodies: an answer read back is taken as an update (its nulls are "not given")', () => {
  it('PUT user with the User answer read back, nulls and all, changes what was changed and keeps the rest', async () => {
    const read = await alice.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(alice.email)}`);
    expect(read.body.companyName).toBeNull();
    const update = await alice.call('PUT', '/users/v1/api/user', { ...read.body, firstName: 'Olive', password: null });
    expect(update.status, JSON.stringify(update.body)).toBe(204);
    const after = await alice.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(alice.email)}`);
    expect(after.body).toEqual({ ...read.body, firstName: 'Olive' });
    // A .NET client sends every property; null leaves a field as it is, "" empties a text.
    expect((await alice.call('PUT', '/users/v1/api/user', { id: alice.id, firstName: null, lastName: null, companyName: 'Acme' })).status).toBe(204);
    const kept = await alice.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(alice.email)}`);
    expect(kept.body).toMatchObject({ firstName: 'Olive', lastName: null, companyName: 'Acme' });
    expect((await alice.call('PUT', '/users/v1/api/user', { id: alice.id, firstName: '' })).status).toBe(204);
    expect((await alice.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(alice.email)}`)).body.firstName).toBe('');
  });

  it('an Event answer read back is taken as its update; null in an optional field keeps the event’s value', async () => {
    const created = await alice.call('POST', '/checkin/v1/api/event', {
      title: 'Gala', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z', tags: 'vip',
    });
    const { created: _c, updated: _u, ...event } = created.body;
    expect(event).toMatchObject({ tags: 'vip', active: null, customData: null });
    const update = await alice.call('POST', '/checkin/v1/api/event', { ...event, title: 'Winter gala', tags: null });
    expect(update.status, JSON.stringify(update.body)).toBe(200);
    expect(update.body).toMatchObject({ ...event, title: 'Winter gala', tags: 'vip' });
  });
});

describe('Comms: webhook create answers an object with url and secret', () => {
  it('a create on a configured webhook changes the URL only and answers secret null (rule 2), not an object without it', async () => {
    const carol = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const first = await carol.call('POST', '/comms/v1/api/comms/webhook', { url: 'https://example.com/hook' });
    expect(first.body).toEqual({ url: 'https://example.com/hook', secret: expect.stringMatching(/^whsec_/) });
    const again = await carol.call('POST', '/comms/v1/api/comms/webhook', { url: 'https://example.com/other' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ url: 'https://example.com/other', secret: null });
  });
});

describe('Guest.customId: "usable instead of id" on the door routes that take a guestId in the body', () => {
  it('check-in, undo and check-out take a customId in guestId, within the path’s event only', async () => {
    const eventId = await newEvent(alice);
    const otherEvent = await newEvent(alice);
    const [guest] = (await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'Ada', customId: 'CRM-7' }])).body;
    await alice.call('POST', `/checkin/v1/api/guests/${otherEvent}`, [{ firstName: 'Other', customId: 'CRM-8' }]);
    const base = `/checkin/v1/api/guests/${eventId}`;

    const admitted = await alice.call('POST', `${base}/checkin`, { guestId: 'crm-7' });
    expect(admitted.status, JSON.stringify(admitted.body)).toBe(200);
    expect(admitted.body).toMatchObject({ result: 'admitted', guest: { id: guest.id, customId: 'CRM-7' } });
    const undone = await alice.call('POST', `${base}/checkin/undo`, { guestId: 'CRM-7' });
    expect(undone.status, JSON.stringify(undone.body)).toBe(200);
    expect(undone.body).toMatchObject({ annulled: admitted.body.scanId, guest: { id: guest.id, admitted: null } });
    expect((await alice.call('POST', `${base}/checkin`, { guestId: 'CRM-7' })).body.result).toBe('admitted');
    expect((await alice.call('POST', `${base}/checkout`, { guestId: 'CRM-7' })).body).toMatchObject({ result: 'discharged', guest: { id: guest.id } });

    // A customId of another event is no guest of this one: rejected not_found (recorded), and undo is 404.
    expect((await alice.call('POST', `${base}/checkin`, { guestId: 'CRM-8' })).body).toMatchObject({ result: 'rejected', reason: 'not_found' });
    expect((await alice.call('POST', `${base}/checkin/undo`, { guestId: 'CRM-8' })).status).toBe(404);
    // The guest id itself still works.
    expect((await alice.call('POST', `${base}/checkin`, { guestId: guest.id })).body.result).toBe('admitted');
  });
});
