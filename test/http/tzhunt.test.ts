import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  // The client names no zone: a time the service reads in the client's zone would be read in UTC.
  alice = await createClient(service);
});
afterAll(() => service.close());

async function eventIn(timeZoneId: string, startTime: string, endTime: string): Promise<string> {
  const reply = await alice.call('POST', '/checkin/v1/api/event', { title: 'Gala', timeZoneId, startTime, endTime });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.id;
}

async function admit(eventId: string, at: string): Promise<void> {
  const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', lastName: 'Lee' });
  expect(guest.status, JSON.stringify(guest.body)).toBe(200);
  const scan = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: guest.body.id, at });
  expect(scan.status, JSON.stringify(scan.body)).toBe(200);
  expect(scan.body.result ?? scan.body.status, JSON.stringify(scan.body)).not.toBe('rejected');
}

describe('timeline from/to without an offset are wall times of the event’s zone (docs/identifiers.md, Date-times)', () => {
  it('reads from=2026-07-12T18:00 on a Sydney event’s clocks, as the buckets’ localStart shows them', async () => {
    // Sydney is UTC+10 in July: 18:00 local is 08:00Z.
    const eventId = await eventIn('Australia/Sydney', '2026-07-12T17:00:00', '2026-07-12T23:00:00');
    await admit(eventId, '2026-07-12T18:10:00+10:00');
    const reply = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=60&from=2026-07-12T18:00:00&to=2026-07-12T20:00:00`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.buckets.map((b: { localStart: string; start: string; admitted: number }) => [b.localStart, b.start, b.admitted])).toEqual([
      ['2026-07-12T18:00', '2026-07-12T08:00:00.000Z', 1],
      ['2026-07-12T19:00', '2026-07-12T09:00:00.000Z', 0],
    ]);
  });

  it('reads them in Kathmandu (UTC+05:45) too, also in the timeline export', async () => {
    const eventId = await eventIn('Nepal Standard Time', '2026-07-12T17:00:00', '2026-07-12T23:00:00');
    await admit(eventId, '2026-07-12T18:05:00+05:45');
    const reply = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=60&from=2026-07-12T18:00:00&to=2026-07-12T19:00:00`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.buckets).toHaveLength(1);
    expect(reply.body.buckets[0]).toMatchObject({ localStart: '2026-07-12T18:00', start: '2026-07-12T12:15:00.000Z', admitted: 1 });
    const exported = await alice.call('POST', `/checkin/v1/api/event/${eventId}/timeline/export?type=CSV&bucket=60&from=2026-07-12T18:00:00&to=2026-07-12T19:00:00`, undefined, {
      accept: 'text/csv',
    });
    expect(exported.status).toBe(200);
    const lines = String(exported.body).trim().split(/\r?\n/);
    // The header and one bucket: 18:00 on the event's clocks.
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^2026-07-12T18:00:00.000\+05:45,/);
  });
});

describe('buckets that start or end across a clock change the activity does not reach (docs/analytics.md, Which clock)', () => {
  // Sydney, 2026-04-05: 03:00 AEDT (UTC+11) -> 02:00 AEST (UTC+10) at 16:00Z. A local day that day is 25 hours.
  it('a day bucket of the 25-hour day starts at local midnight (+11) when every scan came after the change', async () => {
    const eventId = await eventIn('Australia/Sydney', '2026-04-05T09:00:00', '2026-04-05T12:00:00');
    await admit(eventId, '2026-04-05T10:00:00+10:00');
    const reply = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=1440`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.buckets).toEqual([
      expect.objectContaining({ localStart: '2026-04-05T00:00', start: '2026-04-04T13:00:00.000Z', end: '2026-04-05T14:00:00.000Z', admitted: 1 }),
    ]);
    const team = await alice.call('GET', `/checkin/v1/api/team/event/${eventId}?bucket=1440`);
    expect(team.status, JSON.stringify(team.body)).toBe(200);
    const activity = team.body.flatMap((row: { checkedInActivity: unknown[] }) => row.checkedInActivity);
    expect(activity).toEqual([{ admitted: '2026-04-04T13:00:00.000Z', admittedCount: 1 }]);
  });

  it('a day bucket of that day ends at the next local midnight (+10) when every scan came before the change', async () => {
    const eventId = await eventIn('Australia/Sydney', '2026-04-05T00:30:00', '2026-04-05T12:00:00');
    await admit(eventId, '2026-04-05T01:00:00+11:00');
    const reply = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=1440`);
    expect(reply.body.buckets).toEqual([
      expect.objectContaining({ localStart: '2026-04-05T00:00', start: '2026-04-04T13:00:00.000Z', end: '2026-04-05T14:00:00.000Z', admitted: 1 }),
    ]);
  });

  it('Chatham (UTC+12:45/+13:45): an hour bucket holding a scan of the second 02:50 starts at the first 02:00', async () => {
    // Chatham, 2026-04-05: 03:45 CHADT -> 02:45 CHAST at 14:00Z; 02:50 CHAST is 14:05Z, 02:00 CHADT 12:15Z.
    const eventId = await eventIn('Pacific/Chatham', '2026-04-05T01:00:00', '2026-04-05T06:00:00');
    await admit(eventId, '2026-04-04T14:05:00Z');
    const reply = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=60`);
    expect(reply.body.buckets).toEqual([expect.objectContaining({ localStart: '2026-04-05T02:00', start: '2026-04-04T12:15:00.000Z', admitted: 1 })]);
  });
});
