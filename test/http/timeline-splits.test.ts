/**
 * The timeline's gate and device splits (issue 15, docs/analytics.md) against a recount from the
 * event's scans list, after admissions (plus ones, a re-entry), rejections, undone check-ins and
 * exits over several gates and devices; and the answers kept between requests (timeline_heads)
 * never outliving a new scan or a rebuild. On the embedded read store, and on MongoDB when one
 * is reachable (MONGO_URL).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realServer } from '../support/real-servers.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

interface Counts {
  admissions: number;
  admitted: number;
  exits: number;
  rejected: Record<string, number>;
  rejectedTotal: number;
}

interface Bucket extends Counts {
  start: string;
  annulled: number;
  insideNow: number;
  groups?: Record<string, Counts>;
}

interface Scan {
  at: string;
  result: 'admitted' | 'discharged' | 'rejected';
  reason?: string;
  gate?: string;
  device?: string;
  people: number;
  annulled?: boolean;
}

const mongo = await realServer('mongo');
const stores: [string, Record<string, string>][] = [['embedded read store', {}]];
if (mongo.url) stores.push(['MongoDB read store', { MONGO_URL: mongo.url, MONGO_DB: `splits_${randomUUID().replaceAll('-', '').slice(0, 12)}` }]);
else describe.skip(`timeline splits on MongoDB (skipped: ${mongo.skipReason})`, () => it('runs when MONGO_URL or a container runtime is available', () => {}));
afterAll(() => mongo.stop());

const emptyCounts = (): Counts => ({ admissions: 0, admitted: 0, exits: 0, rejected: {}, rejectedTotal: 0 });

function add(target: Counts, scan: Scan): void {
  if (scan.result === 'admitted') {
    target.admissions += 1;
    target.admitted += scan.people;
  } else if (scan.result === 'discharged') {
    target.exits += scan.people;
  } else {
    target.rejected[scan.reason!] = (target.rejected[scan.reason!] ?? 0) + 1;
    target.rejectedTotal += 1;
  }
}

/**
 * The buckets folded straight from the scans list: a scan counts in the bucket of its `at`; an
 * undone check-in counts only as `annulled`. The event's zone (Berlin) is a whole hour off UTC,
 * so its local 1- and 5-minute buckets start where the UTC ones do.
 */
function recount(scans: Scan[], bucketMinutes: number, by: 'gate' | 'device') {
  const buckets = new Map<string, { counts: Counts; annulled: number; groups: Record<string, Counts> }>();
  for (const scan of scans) {
    const size = bucketMinutes * 60_000;
    const start = new Date(Math.floor(Date.parse(scan.at) / size) * size).toISOString();
    let bucket = buckets.get(start);
    if (!bucket) buckets.set(start, (bucket = { counts: emptyCounts(), annulled: 0, groups: {} }));
    if (scan.annulled) {
      bucket.annulled += 1;
      continue;
    }
    add(bucket.counts, scan);
    const name = scan[by] ?? '(none)';
    add((bucket.groups[name] ??= emptyCounts()), scan);
  }
  return buckets;
}

describe.each(stores)('timeline split by gate and by device (%s)', (_name, env) => {
  let service: TestService;
  let client: Client;
  let eventId: string;

  const checkin = async (body: Record<string, unknown>) => {
    const reply = await client.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, body);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body as { result: string; reason?: string; scanId: string };
  };
  const checkout = async (body: Record<string, unknown>) => {
    const reply = await client.call('POST', `/checkin/v1/api/guests/${eventId}/checkout`, body);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  };
  const undo = async (scanId: string) => {
    const reply = await client.call('POST', `/checkin/v1/api/guests/${eventId}/checkin/undo`, { scanId });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  };
  const guest = async (fields: Record<string, unknown>) => {
    const reply = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', lastName: 'Lee', ...fields });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body.id as string;
  };
  const timeline = async (query: string): Promise<{ totals: Counts & { annulled: number; insideNow: number }; buckets: Bucket[] }> => {
    const reply = await client.call('GET', `/checkin/v1/api/event/${eventId}/timeline?${query}`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body;
  };
  const scansList = async (): Promise<Scan[]> => {
    const reply = await client.call('GET', `/checkin/v1/api/event/${eventId}/scans?limit=1000`);
    expect(reply.status).toBe(200);
    expect(reply.body.nextCursor).toBeUndefined();
    return reply.body.items;
  };

  beforeAll(async () => {
    service = await startTestService(env);
    client = await createClient(service);
    const event = await client.call('POST', '/checkin/v1/api/event', {
      title: 'Splits',
      startTime: '2026-11-01T17:00:00Z',
      endTime: '2026-11-01T23:00:00Z',
      timeZoneId: 'Europe/Berlin',
    });
    eventId = event.body.id;
    const group = await guest({ plusOnes: 2, isGroup: true });
    const single = await guest({});
    const late = await guest({});
    const withFriend = await guest({ plusOnes: 1, barcode: 'F-1' });
    const undone = await guest({});
    const twice = await guest({});
    const blocked = await guest({ barcode: 'B-1' });
    expect((await client.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { ids: [blocked], reason: 'duplicate ticket' })).status).toBe(200);

    expect((await checkin({ guestId: group, at: '2026-11-01T18:01:10Z', gate: 'A', device: 'd1' })).result).toBe('admitted');
    await checkin({ guestId: single, at: '2026-11-01T18:02:00Z', gate: 'B', device: 'd2' });
    expect((await checkin({ barcode: 'B-1', at: '2026-11-01T18:03:00Z', gate: 'A', device: 'd2' })).reason).toBe('blocked');
    expect((await checkin({ barcode: 'nobody', at: '2026-11-01T18:04:00Z', gate: 'C' })).reason).toBe('not_found');
    // Undone at once: its gate C and device d3 hold nothing else in that minute.
    await undo((await checkin({ guestId: undone, at: '2026-11-01T18:06:00Z', gate: 'C', device: 'd3' })).scanId);
    expect((await checkin({ guestId: single, at: '2026-11-01T18:07:00Z', gate: 'A', device: 'd1' })).reason).toBe('already_admitted');
    await checkout({ guestId: single, at: '2026-11-01T18:09:00Z', gate: 'B', device: 'd1' });
    await checkin({ guestId: single, at: '2026-11-01T18:11:00Z', gate: 'C', device: 'd3' });
    await checkin({ guestId: late, at: '2026-11-01T18:12:00Z', device: 'd2' });
    await undo((await checkin({ guestId: twice, at: '2026-11-01T18:13:00Z', gate: 'B', device: 'd1' })).scanId);
    await checkin({ guestId: twice, at: '2026-11-01T18:14:00Z', gate: 'A', device: 'd2' });
    await checkin({ barcode: 'F-1', plusOnes: 1, at: '2026-11-01T18:16:00Z', gate: 'B' });
    await checkout({ guestId: group, at: '2026-11-01T18:20:00Z', gate: 'C', device: 'd3' });
  }, 60_000);
  afterAll(() => service?.close());

  it.each([
    [5, 'gate'],
    [1, 'device'],
  ] as const)('%i-minute buckets by %s equal a recount from the scans list', async (bucket, by) => {
    const scans = await scansList();
    expect(scans.filter((s) => s.annulled)).toHaveLength(2);
    const expected = recount(scans, bucket, by);
    const answer = await timeline(`bucket=${bucket}&by=${by}`);
    const active = answer.buckets.filter((b) => b.admissions + b.exits + b.rejectedTotal + b.annulled > 0);
    expect(active.map((b) => b.start)).toEqual([...expected.keys()].sort());
    for (const b of answer.buckets) {
      const want = expected.get(b.start);
      expect({ start: b.start, admissions: b.admissions, admitted: b.admitted, exits: b.exits, rejected: b.rejected, rejectedTotal: b.rejectedTotal, annulled: b.annulled }).toEqual({
        start: b.start,
        ...(want?.counts ?? emptyCounts()),
        annulled: want?.annulled ?? 0,
      });
      expect({ start: b.start, groups: b.groups }).toEqual({ start: b.start, groups: want?.groups ?? {} });
      // Names in the default collation order, as documented.
      const names = Object.keys(b.groups!);
      expect(names).toEqual([...names].sort((x, y) => x.localeCompare(y)));
    }
    // Every annulment named its gate and device, so each bucket's groups add up to its totals.
    for (const b of answer.buckets) {
      const sum = emptyCounts();
      for (const counts of Object.values(b.groups!)) {
        sum.admissions += counts.admissions;
        sum.admitted += counts.admitted;
        sum.exits += counts.exits;
        sum.rejectedTotal += counts.rejectedTotal;
      }
      expect([sum.admissions, sum.admitted, sum.exits, sum.rejectedTotal]).toEqual([b.admissions, b.admitted, b.exits, b.rejectedTotal]);
    }
    const people = scans.filter((s) => !s.annulled).reduce((inside, s) => inside + (s.result === 'admitted' ? s.people : s.result === 'discharged' ? -s.people : 0), 0);
    expect(answer.totals.insideNow).toBe(people);
    expect(answer.buckets.at(-1)!.insideNow).toBe(people);
  });

  it('answers a repeated request from its kept copy, and a new scan at once', async () => {
    const before = await timeline('bucket=5&by=gate');
    expect(await timeline('bucket=5&by=gate')).toEqual(before);
    await checkin({ barcode: 'nobody', at: '2026-11-01T18:21:00Z', gate: 'D', device: 'd4' });
    const after = await timeline('bucket=5&by=gate');
    expect(after.totals.rejected.not_found).toBe(before.totals.rejected.not_found! + 1);
    expect(after.buckets.at(-1)!.groups!.D).toEqual({ admissions: 0, admitted: 0, exits: 0, rejected: { not_found: 1 }, rejectedTotal: 1 });
    // Kept answers are per query: another bucket size or split sees the scan too.
    expect((await timeline('bucket=1&by=device')).buckets.at(-1)!.groups!.d4!.rejectedTotal).toBe(1);
    expect((await timeline('bucket=5')).totals.rejectedTotal).toBe(after.totals.rejectedTotal);
  });

  it('gives the same answers after the timeline read model is rebuilt', async () => {
    const queries = ['bucket=5', 'bucket=5&by=gate', 'bucket=1&by=device', 'bucket=15&by=gate&from=2026-11-01T17:30:00Z&to=2026-11-01T18:45:00Z'];
    const before = await Promise.all(queries.map(timeline));
    await service.runner!.rebuild(['timeline']);
    expect(await Promise.all(queries.map(timeline))).toEqual(before);
  });

  it('sends the answer as JSON like any other route', async () => {
    // identity: fetch asks for gzip itself, and a compressed answer has no Content-Length (docs/operations.md, Compression).
    const reply = await fetch(`${service.url}/checkin/v1/api/event/${eventId}/timeline?bucket=5&by=gate`, {
      headers: { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey, 'accept-encoding': 'identity' },
    });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const text = await reply.text();
    expect(Number(reply.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(JSON.parse(text)).toMatchObject({ eventId, by: 'gate', bucketMinutes: 5 });
  });
});
