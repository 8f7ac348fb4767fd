import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  service = await startTestService({ EXPORT_TTL_MINUTES: '5' });
  alice = await createClient(service);
  bob = await createClient(service);
});
afterAll(() => service.close());

const event = (fields: Record<string, unknown>) => alice.call('POST', '/checkin/v1/api/event', { title: 'Gala', ...fields });

describe('date-times without an offset (issue 10 item 3)', () => {
  it('reads them in the event’s time zone, IANA or Windows name, and answers UTC with milliseconds', async () => {
    for (const timeZoneId of ['Europe/Berlin', 'W. Europe Standard Time']) {
      const reply = await event({ timeZoneId, startTime: '2026-12-12T18:00:00', endTime: '2026-07-12T23:30:00.5' });
      expect(reply.status, timeZoneId).toBe(400); // endTime (summer, +02:00) is before startTime
      const ok = await event({ timeZoneId, startTime: '2026-12-12T18:00:00', endTime: '2026-12-12T23:30:00.5' });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ timeZoneId, startTime: '2026-12-12T17:00:00.000Z', endTime: '2026-12-12T22:30:00.500Z' });
    }
    const summer = await event({ timeZoneId: 'Europe/Berlin', startTime: '2026-07-01T18:00', endTime: '2026-07-01T20:00' });
    expect(summer.body.startTime).toBe('2026-07-01T16:00:00.000Z');
  });

  it('keeps an explicit offset as given, in any of ISO 8601’s forms', async () => {
    const reply = await event({ timeZoneId: 'Europe/Berlin', startTime: '2026-12-12T18:00:00-0500', endTime: '2026-12-13T01:00:00+01' });
    expect(reply.body).toMatchObject({ startTime: '2026-12-12T23:00:00.000Z', endTime: '2026-12-13T00:00:00.000Z' });
  });

  it('uses the stored event’s zone for guest times, the client’s for an event without one, else UTC', async () => {
    const berlin = await event({ timeZoneId: 'Europe/Berlin', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-13T18:00:00Z' });
    const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId: berlin.body.id, validFrom: '2026-12-12T18:00:00', validTo: '2026-12-12T20:00:00Z' });
    expect(guest.body).toMatchObject({ validFrom: '2026-12-12T17:00:00.000Z', validTo: '2026-12-12T20:00:00.000Z' });
    const upsert = await alice.call('POST', `/checkin/v1/api/guests/${berlin.body.id}`, [{ customId: 'T-1', validFrom: '2026-12-12T19:00:00' }]);
    expect(upsert.body[0].validFrom).toBe('2026-12-12T18:00:00.000Z');

    expect((await alice.call('PUT', '/users/v1/api/user', { id: alice.id, timeZoneId: 'Eastern Standard Time' })).status).toBe(204);
    const clientZone = await event({ startTime: '2026-07-01T12:00:00', endTime: '2026-07-01T13:00:00' });
    expect(clientZone.body.startTime).toBe('2026-07-01T16:00:00.000Z');

    const utc = await bob.call('POST', '/checkin/v1/api/event', { title: 'UTC', startTime: '2026-07-01T12:00:00', endTime: '2026-07-01T13:00:00' });
    expect(utc.body.startTime).toBe('2026-07-01T12:00:00.000Z');
  });

  it('refuses impossible dates and times with 400 instead of rolling them over', async () => {
    for (const startTime of ['2026-02-30T00:00:00Z', '2026-02-29T10:00:00', '2026-13-01T00:00:00Z', '2026-12-01T24:00:00Z', '2026-12-01T10:60:00Z', '2026-12-01T10:00:00+25:00', 'tomorrow']) {
      const reply = await event({ startTime, endTime: '2027-01-01T00:00:00Z' });
      expect(reply.status, startTime).toBe(400);
      expect(reply.body.errors.map((e: { path: string }) => e.path)).toContain('startTime');
    }
    expect((await event({ startTime: '2028-02-29T10:00:00Z', endTime: '2028-03-01T00:00:00Z' })).status).toBe(200);
  });
});

describe('time zone names (issue 10 item 3)', () => {
  it('accepts IANA and Windows names on events and users alike, and keeps other names as given (spec: timeZoneId is a string)', async () => {
    expect((await bob.call('PUT', '/users/v1/api/user', { id: bob.id, timeZoneId: 'W. Europe Standard Time' })).status).toBe(204);
    expect((await bob.call('PUT', '/users/v1/api/user', { id: bob.id, timeZoneId: 'Europe/Berlin' })).status).toBe(204);
    // Not a zone, yet a string: kept, and skipped where a zone is needed (test/http/integrator-conformance-3.test.ts).
    expect((await bob.call('PUT', '/users/v1/api/user', { id: bob.id, timeZoneId: 'Mars/Olympus' })).status).toBe(204);
    const otherEvent = await event({ timeZoneId: 'Mars/Olympus', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T20:00:00Z' });
    expect(otherEvent.status).toBe(200);
    expect(otherEvent.body.timeZoneId).toBe('Mars/Olympus');
  });

  it('shows export times in a Windows-named zone of the client (the event has none)', async () => {
    expect((await bob.call('PUT', '/users/v1/api/user', { id: bob.id, timeZoneId: 'W. Europe Standard Time' })).status).toBe(204);
    const created = await bob.call('POST', '/checkin/v1/api/event', { title: 'Ball', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T20:00:00Z' });
    const exported = await bob.call('POST', '/checkin/v1/api/event/export?type=EXCEL', { id: created.body.id, title: 'Ball', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T20:00:00Z' });
    expect(exported.status).toBe(200);
    const file = await fetch(`${service.url}${exported.body.url}`, {
      headers: { authorization: `Bearer ${bob.token}`, 'ocp-apim-subscription-key': bob.subscriptionKey },
    });
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(await file.arrayBuffer());
    const values = new Map<string, unknown>();
    workbook.getWorksheet('Summary')!.eachRow((row) => values.set(String(row.getCell(1).value), row.getCell(2).value));
    expect(values.get('Times shown in')).toBe('Europe/Berlin, from the account');
  });
});
