import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, request, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The interface spec's Check-in part (guests, events, team members, the door, byinfo, guest
 * lists and exports) read as an integrator with a typed client reads it, eighth pass: the
 * places where the service still differed from the spec and was mended.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

describe('Date-times: a leap second is a valid RFC 3339 date-time', () => {
  it('23:59:60 in UTC (with Z or an offset) is taken as the last millisecond of its minute, in bodies and queries; :60 at another minute is still 400', async () => {
    const eventId = await newEvent(alice);
    const created = await alice.call('POST', '/checkin/v1/api/guest', {
      eventId,
      validFrom: '2016-12-31T18:59:60-05:00',
      validTo: '2016-12-31T23:59:60.5Z',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.validFrom).toBe('2016-12-31T23:59:59.999Z');
    expect(created.body.validTo).toBe('2016-12-31T23:59:59.999Z');

    const upserted = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'leap-1', validTo: '2015-06-30T23:59:60Z' }]);
    expect(upserted.status, JSON.stringify(upserted.body)).toBe(204);
    expect((await alice.call('GET', '/checkin/v1/api/guest/leap-1')).body.validTo).toBe('2015-06-30T23:59:59.999Z');

    const listed = await alice.call('GET', `/checkin/v1/api/guests/${eventId}?changedSince=2016-12-31T23:59:60Z`);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.items).toHaveLength(2);

    for (const notLeap of ['2016-12-31T12:00:60Z', '2016-12-31T23:59:60+01:00', '2016-12-31T23:59:61Z']) {
      const refused = await alice.call('POST', '/checkin/v1/api/guest', { eventId, validTo: notLeap });
      expect(refused.status, notLeap).toBe(400);
      expect(refused.body.errors[0].path).toBe('validTo');
    }
  });
});

describe('Check-in: the export answers the spec’s JSON object whatever else Accept names', () => {
  const body = { title: 'Ball', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' };

  it('Accept: text/plain or text/json (a .NET client’s JSON type) gets 200 and the JSON object, with or without type; asking for the other format’s file is still 406', async () => {
    const eventId = await newEvent(alice);
    for (const [query, accept, type] of [
      ['', 'text/plain', 'CSV'],
      ['', 'text/json', 'CSV'],
      ['?type=CSV', 'text/plain', 'CSV'],
      ['?type=EXCEL', 'text/json', 'EXCEL'],
      ['?type=EXCEL', 'application/xml', 'EXCEL'],
    ] as const) {
      const reply = await alice.call('POST', `/checkin/v1/api/event/export${query}`, { ...body, id: eventId }, { accept });
      expect(reply.status, `${query} ${accept}: ${JSON.stringify(reply.body)}`).toBe(200);
      expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
      expect(reply.body).toMatchObject({ eventId, type, exportId: expect.any(String), url: expect.any(String) });
    }
    const clash = await alice.call('POST', '/checkin/v1/api/event/export?type=EXCEL', { ...body, id: eventId }, { accept: 'text/csv' });
    expect(clash.status).toBe(406);
    expect(clash.body.code).toBe('not_acceptable');
  });
});

describe('Resources and their fields: the OpenAPI document types the answers’ date-times and GUIDs as the spec types them', () => {
  it('GuestResponse admitted, blockedDate, validFrom, validTo, discharged are date-time and id, commsTemplateId uuid; EventResponse startTime and endTime date-time, as in the requests', async () => {
    const schemas = (await request(service.url, 'GET', '/openapi.json')).body.components.schemas;
    const expected: Array<[string, string, string]> = [
      ['GuestResponse', 'admitted', 'date-time'],
      ['GuestResponse', 'blockedDate', 'date-time'],
      ['GuestResponse', 'validFrom', 'date-time'],
      ['GuestResponse', 'validTo', 'date-time'],
      ['GuestResponse', 'discharged', 'date-time'],
      ['GuestResponse', 'id', 'uuid'],
      ['GuestResponse', 'commsTemplateId', 'uuid'],
      ['EventResponse', 'startTime', 'date-time'],
      ['EventResponse', 'endTime', 'date-time'],
    ];
    for (const [schema, field, format] of expected) {
      expect(schemas[schema].properties[field]?.format, `${schema}.${field}`).toBe(format);
      // The request schema of the same resource says the same (its commsTemplateId, validFrom and validTo also take "").
      const requestSchema = schema === 'GuestResponse' ? schemas.Guest : schemas.Event;
      const requested = requestSchema.properties[field] as { format?: string; anyOf?: { format?: string }[] };
      if (field !== 'commsTemplateId') expect([requested.format, ...(requested.anyOf ?? []).map((s) => s.format)], `${schema}.${field} in the request`).toContain(format);
    }
  });

  it('CommsTemplateResponse created (the spec: date-time) and the sending domain record\'s times are date-time', async () => {
    const schemas = (await request(service.url, 'GET', '/openapi.json')).body.components.schemas;
    expect(schemas.CommsTemplateResponse.properties.created.format).toBe('date-time');
    expect(schemas.SendingDomain.properties.createdAt.format).toBe('date-time');
    expect(schemas.SendingDomain.properties.lastVerifiedAt.format).toBe('date-time');
  });
});

describe('Guest validity: a validFrom or validTo once set can be removed, and a blank date-time cell is none', () => {
  it('validTo "" on an existing guest (upsert, batch) removes the bound, so the guest is admitted after it; null still keeps it', async () => {
    const eventId = await newEvent(alice);
    const past = new Date(Date.now() - 60 * 60_000).toISOString();
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, customId: 'V-1', validFrom: '2026-01-01T00:00:00Z', validTo: past });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { customId: 'V-1' })).body.reason).toBe('expired');

    // null is "not given": the bound stays.
    expect((await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'V-1', validTo: null }])).status).toBe(204);
    expect((await alice.call('GET', '/checkin/v1/api/guest/V-1')).body.validTo).toBe(created.body.validTo);

    const cleared = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'V-1', validTo: '' }]);
    expect(cleared.status, JSON.stringify(cleared.body)).toBe(204);
    const read = (await alice.call('GET', '/checkin/v1/api/guest/V-1')).body;
    expect(read.validTo).toBeNull();
    expect(read.validFrom).toBe('2026-01-01T00:00:00.000Z');
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { customId: 'V-1' })).body.result).toBe('admitted');

    // The batch route the same, for validFrom; repeating it changes nothing more.
    for (let i = 0; i < 2; i++) {
      const batch = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ customId: 'V-1', validFrom: '' }]);
      expect(batch.status, JSON.stringify(batch.body)).toBe(200);
      expect(batch.body[0]).toMatchObject({ validFrom: null, validTo: null });
    }
    const history = (await alice.call('GET', '/checkin/v1/api/guest/V-1/history')).body.events.map((e: { type: string }) => e.type);
    expect(history.filter((t: string) => t === 'GuestDetailsChanged')).toHaveLength(2);
  });

  it('a record that creates a guest takes "" in validFrom and validTo as none (a spreadsheet’s blank cells), on every create route', async () => {
    const eventId = await newEvent(alice);
    const blank = { validFrom: '', validTo: '' };
    const single = await alice.call('POST', '/checkin/v1/api/guest', { eventId, customId: 'B-1', ...blank });
    const batch = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ customId: 'B-2', ...blank }]);
    const upsert = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'B-3', ...blank }]);
    expect([single.status, batch.status, upsert.status], JSON.stringify([single.body, batch.body, upsert.body])).toEqual([200, 200, 204]);
    for (const customId of ['B-1', 'B-2', 'B-3']) {
      const guest = (await alice.call('GET', `/checkin/v1/api/guest/${customId}`)).body;
      expect(guest).toMatchObject({ validFrom: null, validTo: null });
      expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { customId })).body.result).toBe('admitted');
    }
    // The create retried as it was sent is the same create.
    expect((await alice.call('POST', '/checkin/v1/api/guest', { eventId, customId: 'B-1', ...blank })).status).toBe(200);
    // Text that is no date-time is still 400 naming the field.
    const wrong = await alice.call('POST', '/checkin/v1/api/guest', { eventId, validTo: 'soon' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toEqual([{ path: 'validTo', message: expect.stringMatching(/ISO 8601 date-time/) }]);
  });
});
