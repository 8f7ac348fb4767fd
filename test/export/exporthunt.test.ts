/**
 * What an organizer opening an export, and an analyst setting the door figures side by side,
 * expect (docs/export.md, docs/analytics.md): dates every spreadsheet reads alike, CSV times that
 * name their exact instant, a file name saved as the title reads, and team activity in the same
 * buckets as the timeline.
 */
import ExcelJS from 'exceljs';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

async function newEventWith(fields: Record<string, unknown>, guests: Record<string, unknown>[] = []) {
  const event = await alice.call('POST', '/checkin/v1/api/event', { title: 'Ball', startTime: '2026-10-24T18:00:00Z', endTime: '2026-10-25T06:00:00Z', ...fields });
  expect(event.status).toBe(200);
  if (guests.length > 0) expect((await alice.call('POST', `/checkin/v1/api/guests/${event.body.id}`, guests)).status).toBe(200);
  return event.body as { id: string; title: string; startTime: string; endTime: string };
}

async function exported(event: { id: string; title: string; startTime: string; endTime: string }, type: 'CSV' | 'EXCEL') {
  const reply = await alice.call('POST', `/checkin/v1/api/event/export?type=${type}`, event);
  expect(reply.status).toBe(200);
  const response = await fetch(`${service.url}${reply.body.url}`, {
    headers: { authorization: `Bearer ${alice.token}`, 'ocp-apim-subscription-key': alice.subscriptionKey },
  });
  expect(response.status).toBe(200);
  return { reply, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

describe('dates in the files', () => {
  it('a time before 1 March 1900 is ISO text in the Excel file, not a date Excel shows a day late', async () => {
    // Excel counts 1900 as a leap year: serial 2 (1900-01-01 for every other reader) is 2 January
    // there, and 60 is a 29 February 1900 that never was. 1900-01-01 is a common "no start" (SQL Server's zero).
    const event = await newEventWith({ startTime: '1900-01-01T00:00:00Z', endTime: '2026-10-25T06:00:00Z', timeZoneId: 'UTC' }, [
      { firstName: 'Early', lastName: 'A', validFrom: '1900-01-01T00:00:00Z', validTo: '1900-02-28T12:00:00Z' },
      { firstName: 'March', lastName: 'B', validFrom: '1900-03-01T00:00:00Z' },
    ]);
    const { bytes } = await exported(event, 'EXCEL');
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(bytes as unknown as ArrayBuffer);
    const sheet = workbook.getWorksheet('Guests')!;
    const header = (sheet.getRow(1).values as string[]).slice(1);
    const cell = (row: number, name: string) => sheet.getRow(row).getCell(header.indexOf(name) + 1).value;
    expect(cell(2, 'validFrom')).toBe('1900-01-01T00:00:00.000Z');
    expect(cell(2, 'validTo')).toBe('1900-02-28T12:00:00.000Z');
    // From 1 March 1900 every reader agrees: a real date cell.
    expect(cell(3, 'validFrom')).toEqual(new Date('1900-03-01T00:00:00Z'));
    const summary = new Map<string, unknown>();
    workbook.getWorksheet('Summary')!.eachRow((row) => summary.set(row.getCell(1).value as string, row.getCell(2).value));
    expect(summary.get('Starts')).toBe('1900-01-01T00:00:00.000Z');
    expect(summary.get('Ends')).toEqual(new Date('2026-10-25T06:00:00Z'));
  });

  it('a CSV time in a zone whose offset then had seconds names its exact instant', async () => {
    // Kolkata kept local mean time (+05:21:10) until 1941: "+05:21" would be ten seconds off.
    const event = await newEventWith({ timeZoneId: 'Asia/Kolkata' }, [
      { firstName: 'Old', lastName: 'A', validFrom: '1900-01-01T00:00:00Z', validTo: '2026-10-25T06:00:00Z' },
    ]);
    const { bytes } = await exported(event, 'CSV');
    const [record] = parse(bytes, { bom: true, columns: true }) as Record<string, string>[];
    expect(new Date(record!.validFrom!).toISOString()).toBe('1900-01-01T00:00:00.000Z');
    expect(record!.validTo).toBe('2026-10-25T11:30:00.000+05:30');
  });
});

describe('the file name', () => {
  it('has no % in the ASCII fallback, which some clients percent-decode (RFC 6266, appendix D)', async () => {
    const event = await newEventWith({ title: 'Gala 100%Fab' });
    const { reply, headers } = await exported(event, 'CSV');
    expect(reply.body.fileName).toMatch(/^Gala 100%Fab guests \d{8}T\d{6}Z\.csv$/);
    const disposition = headers.get('content-disposition')!;
    expect(disposition).toMatch(/^attachment; filename="Gala 100_Fab guests \d{8}T\d{6}Z\.csv"; /);
    expect(disposition).toContain("filename*=UTF-8''Gala%20100%25Fab%20guests%20");
  });

  it('does not start with a dot, which would hide the saved file', async () => {
    const event = await newEventWith({ title: '. ..Gala' });
    const { reply, headers } = await exported(event, 'EXCEL');
    expect(reply.body.fileName).toMatch(/^Gala guests \d{8}T\d{6}Z\.xlsx$/);
    expect(headers.get('content-disposition')).toContain("filename*=UTF-8''Gala%20guests%20");
  });
});

describe('team activity and the timeline', () => {
  it('put the same check-ins in the same buckets: on the event clock, across a clock change', async () => {
    const userName = `hunt-${Date.now()}`;
    await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'door staff pass 1', email: `${userName}@example.com` });
    const member = { authorization: `Bearer ${await passwordToken(service.url, userName, 'door staff pass 1')}` };
    const guests = ['H1', 'H2', 'H3', 'H4'].map((barcode, i) => ({ firstName: barcode, lastName: 'Door', barcode, plusOnes: i }));
    // Scans at 00:30 Berlin (the day before in UTC), in both real hours of 02:00-03:00 on the
    // night the clocks go back, and at 18:35 / 20:40 UTC (half past in Kolkata, +05:30).
    const scans = ['2026-10-24T22:30:00Z', '2026-10-25T00:30:00Z', '2026-10-25T01:30:00Z', '2026-10-25T04:40:00Z'];
    for (const [timeZoneId, bucket] of [['Europe/Berlin', 60], ['Europe/Berlin', 1440], ['Asia/Kolkata', 60], ['Asia/Kolkata', 1440]] as const) {
      const event = await newEventWith({ timeZoneId }, guests);
      for (const [i, at] of scans.entries()) {
        const scan = await alice.call('POST', `/checkin/v1/api/guests/${event.id}/checkin`, { barcode: guests[i]!.barcode, at, plusOnes: i }, member);
        expect(scan.body.result).toBe('admitted');
      }
      const timeline = (await alice.call('GET', `/checkin/v1/api/event/${event.id}/timeline?bucket=${bucket}`)).body;
      const team = (await alice.call('GET', `/checkin/v1/api/team/event/${event.id}?bucket=${bucket}`)).body;
      const row = team.find((r: { username: string }) => r.username === userName);
      const fromTimeline = timeline.buckets
        .filter((b: { admitted: number }) => b.admitted > 0)
        .map((b: { start: string; admitted: number }) => ({ admitted: b.start, admittedCount: b.admitted }));
      expect({ timeZoneId, bucket, activity: row.checkedInActivity }).toEqual({ timeZoneId, bucket, activity: fromTimeline });
      expect(row.checkedIn).toBe(timeline.totals.admitted);
    }
  });
});
