import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The interface spec read line by line as an integrator reads it, second pass: the places where
 * the service still differed from the spec (or from what its docs promise) and was mended.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

/** A raw request with alice's headers: the body as bytes, the headers as given. */
async function raw(method: string, pathname: string, body: string | Buffer, headers: Record<string, string>) {
  const response = await fetch(`${service.url}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${alice.token}`, 'ocp-apim-subscription-key': alice.subscriptionKey, ...headers },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  return { status: response.status, body: (await response.json()) as { code: string; message: string; errors?: unknown[] } };
}

describe('Guest.customId is "usable instead of id": a create retried by customId is as safe as one retried by id', () => {
  it('the same content answers 200 with the stored guest and creates nobody; other content is 409 naming customId', async () => {
    const eventId = await newEvent(alice);
    const record = { eventId, customId: 'CRM-1001', firstName: 'Ada', email: 'ada@example.com', tags: 'vip' };
    const first = await alice.call('POST', '/checkin/v1/api/guest', record);
    expect(first.status).toBe(200);
    const again = await alice.call('POST', '/checkin/v1/api/guest', record);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toEqual(first.body);
    const other = await alice.call('POST', '/checkin/v1/api/guest', { ...record, firstName: 'Grace' });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: 'custom_id_taken', errors: [{ path: 'customId' }] });
    const listed = await alice.call('GET', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}`);
    expect(listed.body.items).toEqual([expect.objectContaining({ id: first.body.id, firstName: 'Ada' })]);
  });

  it('a retried create that names a template sends one invitation, not two', async () => {
    const eventId = await newEvent(alice);
    const template = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hi</p>' });
    const record = { eventId, customId: 'CRM-2002', email: 'grace@example.com', commsTemplateId: template.body.id };
    const first = await alice.call('POST', '/checkin/v1/api/guest', record);
    expect(first.status).toBe(200);
    expect((await alice.call('POST', '/checkin/v1/api/guest', record)).status).toBe(200);
    const invitations = await alice.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${first.body.id}`);
    expect(invitations.body.items).toHaveLength(1);
  });
});

describe('Check-in: removeObsoleteTags is a boolean, written as a .NET or Java client writes one', () => {
  it.each(['TRUE', 'True', 'true', '1'])('removeObsoleteTags=%s replaces the tags', async (value) => {
    const eventId = await newEvent(alice);
    const path = `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert`;
    expect((await alice.call('PUT', path, [{ customId: 'g1', tags: 'a,b' }])).status).toBe(204);
    expect((await alice.call('PUT', `${path}?removeObsoleteTags=${value}`, [{ customId: 'g1', tags: 'c' }])).status).toBe(204);
    expect((await alice.call('GET', `/checkin/v1/api/guest/g1?eventId=${encodeURIComponent(eventId)}`)).body.tags).toBe('c');
  });

  it.each(['FALSE', 'False', 'false', '0'])('removeObsoleteTags=%s merges them', async (value) => {
    const eventId = await newEvent(alice);
    const path = `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert`;
    expect((await alice.call('PUT', path, [{ customId: 'g1', tags: 'a' }])).status).toBe(204);
    expect((await alice.call('PUT', `${path}?removeObsoleteTags=${value}`, [{ customId: 'g1', tags: 'c' }])).status).toBe(204);
    expect((await alice.call('GET', `/checkin/v1/api/guest/g1?eventId=${encodeURIComponent(eventId)}`)).body.tags).toBe('a,c');
  });

  it('the document types it boolean, as the spec does, so a generated client has a boolean parameter (its true and false are taken)', async () => {
    const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as any;
    const parameter = document.paths['/checkin/v1/api/guests/{eventId}/upsert'].put.parameters.find((p: { name: string }) => p.name === 'removeObsoleteTags');
    expect(parameter.schema.type).toBe('boolean');
    expect(parameter.schema.description).toMatch(/any case, 1 or 0/);
    const eventId = await newEvent(alice);
    for (const written of ['true', 'false']) {
      expect((await alice.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert?removeObsoleteTags=${written}`, [])).status).toBe(204);
    }
  });

  it.each(['yes', '', 'on'])('removeObsoleteTags=%s is 400 naming it: nothing is guessed', async (value) => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert?removeObsoleteTags=${value}`, []);
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([{ path: 'removeObsoleteTags', message: 'must be true or false (any case), 1 or 0' }]);
  });
});

describe('Date-times are ISO 8601: a decimal comma is a fraction of a second too', () => {
  it('takes 10:00:00,5Z as 10:00:00.500Z', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('POST', '/checkin/v1/api/guest', { eventId, validFrom: '2026-12-12T10:00:00,5Z', validTo: '2026-12-12T14:00:00,250+02:00' });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ validFrom: '2026-12-12T10:00:00.500Z', validTo: '2026-12-12T12:00:00.250Z' });
  });

  it('takes a fraction of any length (ISO 8601 sets none), cut to milliseconds', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('POST', '/checkin/v1/api/guest', { eventId, validFrom: '2026-12-12T10:00:00.1234567891Z' });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.validFrom).toBe('2026-12-12T10:00:00.123Z');
  });
});

describe('Errors: a body the service cannot take is answered in its own error codes', () => {
  it('JSON in a charset other than UTF-8 is 415 unsupported_media_type saying to send UTF-8', async () => {
    const reply = await raw('POST', '/checkin/v1/api/guest', '{"eventId":"x"}', { 'content-type': 'application/json; charset=iso-8859-1' });
    expect(reply.status).toBe(415);
    expect(reply.body.code).toBe('unsupported_media_type');
    expect(reply.body.message).toContain('UTF-8');
  });

  it('a Content-Encoding the service does not decode is 415 unsupported_media_type naming it', async () => {
    const reply = await raw('POST', '/checkin/v1/api/guest', '{"eventId":"x"}', { 'content-type': 'application/json', 'content-encoding': 'compress' });
    expect(reply.status).toBe(415);
    expect(reply.body).toMatchObject({ code: 'unsupported_media_type', message: expect.stringContaining('compress') });
  });

  it('a compressed body that does not decompress is 400 validation_error naming (body), like malformed JSON', async () => {
    const reply = await raw('POST', '/checkin/v1/api/guest', gzipSync('{"eventId":"x"}'), { 'content-type': 'application/json', 'content-encoding': 'br' });
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ code: 'validation_error', errors: [{ path: '(body)' }] });
  });

  it('a gzip body that does decompress is taken', async () => {
    const eventId = await newEvent(alice);
    const reply = await raw('POST', '/checkin/v1/api/guest', gzipSync(JSON.stringify({ eventId, firstName: 'Zip' })), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ firstName: 'Zip' });
  });
});

describe('The nil GUID (.NET Guid.Empty) in an optional GUID field of a request means "not given"', () => {
  const nil = '00000000-0000-0000-0000-000000000000';

  it('Guest.commsTemplateId: "Empty or null means no send", the nil GUID too', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('POST', '/checkin/v1/api/guest', { eventId, email: 'ada@example.com', commsTemplateId: nil });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.commsTemplateId).toBeNull();
    const batch = await alice.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert`, [{ customId: 'n1', email: 'b@example.com', commsTemplateId: nil }]);
    expect(batch.status).toBe(204);
    expect((await alice.call('GET', `/comms/v1/api/comms/invitations?eventId=${encodeURIComponent(eventId)}`)).body.items).toEqual([]);
  });

  it('Guest.id: each record gets an id of its own, in a single create and in a batch', async () => {
    const eventId = await newEvent(alice);
    const one = await alice.call('POST', '/checkin/v1/api/guest', { eventId, id: nil, firstName: 'Ada' });
    const two = await alice.call('POST', '/checkin/v1/api/guest', { eventId, id: nil, firstName: 'Grace' });
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(new Set([one.body.id, two.body.id, nil]).size).toBe(3);
    const batch = await alice.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}`, [
      { id: nil, firstName: 'Alan' },
      { id: nil, firstName: 'Edsger' },
    ]);
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(new Set(batch.body.map((g: { id: string }) => g.id)).size).toBe(2);
    expect(batch.body.map((g: { id: string }) => g.id)).not.toContain(nil);
  });

  it('Comms template id: "if absent the server generates one", and the nil GUID is absent', async () => {
    const eventId = await newEvent(alice);
    const first = await alice.call('POST', '/comms/v1/api/comms/template', { id: nil, eventId, name: 'One', html: '<p>1</p>' });
    const second = await alice.call('POST', '/comms/v1/api/comms/template', { id: nil, eventId, name: 'Two', html: '<p>2</p>' });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(first.body.id).not.toBe(nil);
    expect(second.body).toMatchObject({ name: 'Two' });
    expect(second.body.id).not.toBe(first.body.id);
  });

  it('a GUID that is not nil is still an id, and "" is still a malformed one', async () => {
    const eventId = await newEvent(alice);
    const id = '3f2b8c1e-5d4a-4e7b-9c1d-2a3b4c5d6e7f';
    expect((await alice.call('POST', '/checkin/v1/api/guest', { eventId, id })).body.id).toBe(id);
    const empty = await alice.call('POST', '/checkin/v1/api/guest', { eventId, id: '' });
    expect(empty.status).toBe(400);
    expect(empty.body.errors).toEqual([{ path: 'id', message: 'must be a GUID' }]);
  });
});

describe('400 says what is wrong', () => {
  it('an upsert without a body is "(body) required", not "expected array, received object"', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert`);
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([{ path: '(body)', message: 'required' }]);
    const batch = await alice.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}`);
    expect(batch.body.errors).toEqual([{ path: '(body)', message: 'required' }]);
  });

  it('an empty required text is "must not be empty", a null is named as null', async () => {
    const empty = await alice.call('POST', '/comms/v1/api/comms/webhook', { url: '' });
    expect(empty.status).toBe(400);
    expect(empty.body.errors).toEqual([{ path: 'url', message: 'must not be empty' }]);
    const nullUrl = await alice.call('POST', '/comms/v1/api/comms/webhook', { url: null });
    expect(nullUrl.body.errors).toEqual([{ path: 'url', message: expect.stringMatching(/^must be a string, not null/) }]);
    const event = await alice.call('POST', '/checkin/v1/api/event', { title: null, startTime: '2026-01-01T18:00:00Z', endTime: '2026-01-02T18:00:00Z' });
    expect(event.body.errors).toEqual([{ path: 'title', message: expect.stringMatching(/^must be a string, not null/) }]);
  });

  it('a date-time offset whose + was not percent-encoded in a query (a space) is named as such', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('GET', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}?changedSince=2026-12-12T10:00:00+02:00`);
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([{ path: 'changedSince', message: expect.stringContaining('write + as %2B') }]);
    const encoded = await alice.call('GET', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}?changedSince=2026-12-12T10:00:00%2B02:00`);
    expect(encoded.status).toBe(200);
    // Any other malformed date-time keeps the plain message.
    const other = await alice.call('GET', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}?changedSince=yesterday`);
    expect(other.body.errors[0].message).toMatch(/^must be an existing ISO 8601 date-time/);
  });
});

describe('Paging: limit is a whole number in decimal digits, and a wrong one says so', () => {
  it.each(['0', '1001', 'abc', '', '0x10', '1e2', '1.5', '+5'])('limit=%s is 400 "must be a whole number from 1 to 1000"', async (limit) => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('GET', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}?limit=${encodeURIComponent(limit)}`);
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([{ path: 'limit', message: 'must be a whole number from 1 to 1000' }]);
  });

  it('limit=2 pages by 2, on lists and on byinfo', async () => {
    const eventId = await newEvent(alice);
    const path = `/checkin/v1/api/guests/${encodeURIComponent(eventId)}`;
    await alice.call('POST', path, [1, 2, 3].map((n) => ({ firstName: `G${n}`, additionalInfo: 'table 1' })));
    const page = await alice.call('GET', `${path}?limit=2`);
    expect(page.body.items).toHaveLength(2);
    expect(page.body.nextCursor).toEqual(expect.any(String));
    const byInfo = await alice.call('GET', `${path}/byinfo?additionalInfo=table&limit=2`);
    expect(byInfo.body).toHaveLength(2);
    expect(byInfo.headers.get('x-next-cursor')).toEqual(expect.any(String));
  });
});

describe('null in an optional field of a body that only creates is "not given" (as .NET and Java serializers write unset properties)', () => {
  it('a template read back (its unset fields are null) is taken as a create body for another event', async () => {
    const eventId = await newEvent(alice);
    const created = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hi</p>' });
    const read = await alice.call('GET', `/comms/v1/api/comms/template/${created.body.id}`);
    expect(read.body).toMatchObject({ fromAddress: null, fromName: null, replyTo: null });
    const otherEvent = await newEvent(alice);
    const { id: _id, created: _created, ...copy } = read.body;
    const reply = await alice.call('POST', '/comms/v1/api/comms/template', { ...copy, eventId: otherEvent, id: null, subject: null, attachPdf: null });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ eventId: otherEvent, name: 'Invite', subject: 'Your invitation to {{eventTitle}}', fromAddress: null, attachPdf: false });
    expect(reply.body.id).not.toBe(created.body.id);
  });

  it('a team member with null id, firstName, lastName and canForce is created without them', async () => {
    const userName = `pin1-null-${Date.now()}`;
    const reply = await alice.call('POST', '/checkin/v1/api/teammember', {
      userName,
      password: 'north gate scanner 7',
      email: 'door@example.com',
      id: null,
      firstName: null,
      lastName: null,
      canForce: null,
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual({ id: expect.any(String), userName, email: 'door@example.com', firstName: null, lastName: null, canForce: false });
  });

  it('signOutAllSessions: null is "absent": the change is made and other sessions stay', async () => {
    const carol = await createClient(service);
    const reply = await carol.call('PUT', '/users/v1/api/user/changepassword', {
      id: carol.id,
      oldPassword: carol.password,
      newPassword: 'a new and longer passphrase',
      signOutAllSessions: null,
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(204);
    expect((await carol.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(carol.email)}`)).status).toBe(200);
  });

  it('the export body, an Event object the export only reads, takes null in its optional fields', async () => {
    const eventId = await newEvent(alice);
    const reply = await alice.call('POST', '/checkin/v1/api/event/export?type=CSV', {
      id: eventId,
      title: 'Ball',
      startTime: '2026-01-01T18:00:00Z',
      endTime: '2027-12-31T23:00:00Z',
      active: null,
      timeZoneId: null,
      tags: null,
      customData: null,
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ eventId, type: 'CSV' });
  });


});

describe('Limits: a batch the spec allows fits in one request', () => {
  it('200 records (the most per call), each with an image of 50 kB (the recommended most) as base64, are taken', async () => {
    const eventId = await newEvent(alice);
    const image = Buffer.alloc(50 * 1024, 7).toString('base64');
    const records = Array.from({ length: 200 }, (_, n) => ({ customId: `img-${n}`, firstName: `Guest ${n}`, email: `g${n}@example.com`, image }));
    const reply = await alice.call('PUT', `/checkin/v1/api/guests/${encodeURIComponent(eventId)}/upsert`, records);
    expect(reply.status, JSON.stringify(reply.body)).toBe(204);
    const one = await alice.call('GET', `/checkin/v1/api/guest/img-199?eventId=${encodeURIComponent(eventId)}`);
    expect(one.body.image).toBe(image);
  }, 120_000);
});

describe('Users: GET /users/email with a plus address', () => {
  it('finds the caller by ops+checkin@… whether its + is percent-encoded or arrives as a space', async () => {
    const dana = await createClient(service);
    const email = `ops+checkin-${Date.now()}@example.com`;
    expect((await dana.call('PUT', '/users/v1/api/user', { id: dana.id, email })).status).toBe(204);
    const encoded = await dana.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(email)}`);
    expect(encoded.status).toBe(200);
    const bare = await dana.call('GET', `/users/v1/api/users/email?email=${email}`);
    expect(bare.status, JSON.stringify(bare.body)).toBe(200);
    expect(bare.body).toMatchObject({ id: dana.id, email });
    // Another address is still not found.
    expect((await dana.call('GET', `/users/v1/api/users/email?email=ops@example.com`)).status).toBe(404);
  });
});

describe('A batch record names its event exactly, as ids compare everywhere', () => {
  it('a record whose eventId differs from the path only in case is 400 (Gala and gala are two events), and nothing is applied', async () => {
    const eventId = `case-${Date.now()}`;
    await newEvent(alice, { id: eventId });
    await newEvent(alice, { id: eventId.toUpperCase() });
    const reply = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ eventId: eventId.toUpperCase(), customId: 'c1', firstName: 'X' }]);
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([{ path: '0.eventId', message: 'must be the event of the path (or left out)' }]);
    expect((await alice.call('GET', `/checkin/v1/api/guests/${eventId}`)).body.items).toEqual([]);
    // The same id is the path's event. An event id is a plain string (the spec marks no GUID), so
    // a GUID-shaped one in another case is another event too (docs/identifiers.md, Case).
    expect((await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ eventId, customId: 'c1' }])).status).toBe(204);
    const guidEvent = `5e1f0c2a-7b3d-4c8e-9f1a-${Date.now().toString(16).padStart(12, '0').slice(-12)}`;
    await newEvent(alice, { id: guidEvent });
    expect((await alice.call('PUT', `/checkin/v1/api/guests/${guidEvent}/upsert`, [{ eventId: guidEvent, customId: 'c1' }])).status).toBe(204);
    const otherCase = await alice.call('PUT', `/checkin/v1/api/guests/${guidEvent}/upsert`, [{ eventId: guidEvent.toUpperCase(), customId: 'c2' }]);
    expect(otherCase.status).toBe(400);
    expect(otherCase.body.errors).toEqual([{ path: '0.eventId', message: 'must be the event of the path (or left out)' }]);
  });
});
