import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminKey, createClient, newEvent, request, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The interface spec read line by line as an integrator from a ticketing/CRM system reads it:
 * the places where the service differed from the spec (or from docs/api.md) and was mended.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

describe('Authentication rule 1: without a valid token the answer is 401, whatever the body holds', () => {
  const cases: Array<[string, string, string, string]> = [
    ['malformed JSON', 'POST', '/checkin/v1/api/guest', '{"eventId":'],
    ['malformed JSON on an upsert', 'PUT', '/checkin/v1/api/guests/gala/upsert', '[{'],
    ['malformed JSON on a comms route', 'POST', '/comms/v1/api/comms/template', '{'],
    ['malformed JSON on a users route', 'PUT', '/users/v1/api/user', '{'],
  ];

  it.each(cases)('%s without headers is 401, not 400', async (_name, method, path, body) => {
    const reply = await request(service.url, method, path, body);
    expect(reply.status).toBe(401);
    expect(reply.body).toMatchObject({ code: 'unauthorized' });
  });

  it('a body of another media type without a token is 401, not 415', async () => {
    const reply = await request(service.url, 'POST', '/checkin/v1/api/event', 'title=Gala', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(reply.status).toBe(401);
  });

  it('malformed JSON with a token but no subscription key is 401 (both headers are required)', async () => {
    const reply = await request(service.url, 'POST', '/checkin/v1/api/guest', '{', { authorization: `Bearer ${alice.token}` });
    expect(reply.status).toBe(401);
    expect(reply.body.message).toContain('Ocp-Apim-Subscription-Key');
  });

  it('malformed JSON with an invalid token is 401', async () => {
    const reply = await request(service.url, 'POST', '/checkin/v1/api/guest', '{', {
      authorization: 'Bearer not.a.token',
      'ocp-apim-subscription-key': alice.subscriptionKey,
    });
    expect(reply.status).toBe(401);
  });

  it('the admin API refuses a caller without its key with 401 before reading the body', async () => {
    expect((await request(service.url, 'POST', '/admin/v1/accounts', '{')).status).toBe(401);
    // With the key, the same body is the validation error it always was.
    const withKey = await request(service.url, 'POST', '/admin/v1/accounts', '{', { authorization: `Bearer ${adminKey}` });
    expect(withKey.status).toBe(400);
  });

  it('an authenticated caller still gets 400 for malformed JSON and 415 for another media type, and nothing is created', async () => {
    const eventId = await newEvent(alice);
    const bad = await alice.call('POST', '/checkin/v1/api/guest', `{"eventId":"${eventId}",`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'validation_error', errors: [{ path: '(body)' }] });
    const form = await alice.call('POST', '/checkin/v1/api/guest', `eventId=${eventId}`, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(415);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${eventId}`)).body.items).toEqual([]);
  });
});

describe('Errors: a malformed GUID is 400, on every route whose id the spec marks GUID', () => {
  it('GET /comms/template/{id} with an id that is not a GUID is 400 naming id; an unknown GUID stays 404', async () => {
    const malformed = await alice.call('GET', '/comms/v1/api/comms/template/not-a-guid');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ code: 'validation_error', errors: [{ path: 'id', message: 'must be a GUID' }] });
    const unknown = await alice.call('GET', '/comms/v1/api/comms/template/3f2b8c1e-5d4a-4e7b-9c1d-2a3b4c5d6e7f');
    expect(unknown.status).toBe(404);
  });

  it('a template is still read by its GUID in upper case', async () => {
    const eventId = await newEvent(alice);
    const created = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hi</p>' });
    expect(created.status).toBe(200);
    const read = await alice.call('GET', `/comms/v1/api/comms/template/${created.body.id.toUpperCase()}`);
    expect(read.status).toBe(200);
    expect(read.body.id).toBe(created.body.id);
  });

  it('GET /comms/invitations/{id} with an attendeeInvitationId that is not a GUID is 400 naming id', async () => {
    const reply = await alice.call('GET', '/comms/v1/api/comms/invitations/xyz');
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ code: 'validation_error', errors: [{ path: 'id', message: 'must be a GUID' }] });
  });

  it('a guest commsTemplateId that is not a GUID is 400 saying so; empty and null still mean no send', async () => {
    const eventId = await newEvent(alice);
    const bad = await alice.call('POST', '/checkin/v1/api/guest', { eventId, email: 'ada@example.com', commsTemplateId: 'welcome-mail' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ path: 'commsTemplateId', message: expect.stringContaining('must be a GUID') }]);
    const batch = await alice.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert`, [{ email: 'b@example.com', commsTemplateId: 'x' }]);
    expect(batch.status).toBe(400);
    expect(batch.body.errors).toEqual([{ path: '0.commsTemplateId', message: expect.stringContaining('must be a GUID') }]);
    for (const none of ['', null]) {
      const ok = await alice.call('POST', '/checkin/v1/api/guest', { eventId, email: 'c@example.com', commsTemplateId: none });
      expect(ok.status).toBe(200);
      expect(ok.body.commsTemplateId).toBeNull();
    }
  });
});

describe('Team member: email is a string, so any string, and no answer holds a password', () => {
  it('takes an empty email (required, typed string) and answers it as given, without the password', async () => {
    const userName = `pin1-door-${Date.now()}`;
    const created = await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'north gate scanner 7', email: '' });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ userName, email: '' });
    expect(created.body).not.toHaveProperty('password');
    const listed = await alice.call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(userName)}/events`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([expect.objectContaining({ userName, email: '' })]);
    expect(listed.body[0]).not.toHaveProperty('password');
  });

  it('still requires email to be present', async () => {
    const reply = await alice.call('POST', '/checkin/v1/api/teammember', { userName: `pin1-nomail-${Date.now()}`, password: 'north gate scanner 7' });
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([{ path: 'email', message: 'required' }]);
  });
});

describe('Strings the spec types string: any string, kept as given', () => {
  it('takes an empty or blank template name, subject and fromName, and an event title of white space, each answered as sent', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: '', subject: '', fromName: ' ', html: '<p>Hi</p>' });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ name: '', subject: '', fromName: ' ' });
    const read = await alice.call('GET', `/comms/v1/api/comms/template/${reply.body.id}`);
    expect(read.body).toMatchObject({ name: '', subject: '', fromName: ' ' });
    const padded = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: '  Gala invitation\t', html: '<p>Hi</p>' });
    expect(padded.body.name).toBe('  Gala invitation\t');
    const event = await alice.call('POST', '/checkin/v1/api/event', { title: '\t ', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' });
    expect(event.status).toBe(200);
    expect((await alice.call('GET', `/checkin/v1/api/event/${event.body.id}`)).body.title).toBe('\t ');
  });

  it('still requires them to be present and strings', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, html: '<p>Hi</p>', subject: 5 });
    expect(reply.status).toBe(400);
    expect(reply.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['name', 'subject']);
    const event = await alice.call('POST', '/checkin/v1/api/event', { startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' });
    expect(event.body.errors).toEqual([{ path: 'title', message: 'required' }]);
  });
});

describe('Guest image: typed string, so kept as sent', () => {
  it('takes a data URI, base64url and line-wrapped base64 and answers each unchanged', async () => {
    const eventId = await newEvent(alice);
    const images = ['data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk-_9_PQAI8wNP_3Lh2AAAAABJRU5ErkJggg==', 'iVBORw0KGgo_-AAA', 'iVBORw0KGgo\r\nAAAANSUhEUg=='];
    for (const image of images) {
      const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', image });
      expect(created.status).toBe(200);
      expect(created.body.image).toBe(image);
      const read = await alice.call('GET', `/checkin/v1/api/guest/${created.body.id}`);
      expect(read.body.image).toBe(image);
    }
  });
});
