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
