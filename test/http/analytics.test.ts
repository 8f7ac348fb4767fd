import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordProviderReports } from '../../src/commands/invitations.js';
import type { StoredEvent } from '../../src/adapters/eventstore/port.js';
import { median } from '../../src/commands/funnel.js';
import { createClient, passwordToken, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

let service: TestService;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  service = await startTestService({ INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  bob = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

async function eventOf(client: Client, timeZoneId = 'Europe/Berlin'): Promise<string> {
  const reply = await client.call('POST', '/checkin/v1/api/event', {
    title: 'Winter Gala',
    startTime: '2026-11-01T18:00:00Z',
    endTime: '2026-11-01T23:00:00Z',
    timeZoneId,
  });
  expect(reply.status).toBe(200);
  return reply.body.id;
}

async function guestOf(client: Client, eventId: string, fields: Record<string, unknown> = {}): Promise<string> {
  const reply = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', lastName: 'Lee', ...fields });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.id;
}

const scan = async (client: Client, eventId: string, direction: 'checkin' | 'checkout', body: Record<string, unknown>) => {
  const reply = await client.call('POST', `/checkin/v1/api/guests/${eventId}/${direction}`, body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
};

describe('GET /checkin/v1/api/event/{id}/timeline', () => {
  let eventId: string;

  beforeAll(async () => {
    // Berlin is UTC+1 in December: 18:01Z reads 19:01 on the event's clocks.
    eventId = await eventOf(alice);
    const group = await guestOf(alice, eventId, { plusOnes: 2, isGroup: true });
    const single = await guestOf(alice, eventId);
    const blocked = await guestOf(alice, eventId, { barcode: 'B-1' });
    const undone = await guestOf(alice, eventId);
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { ids: [blocked], reason: 'duplicate ticket' })).status).toBe(200);
    await scan(alice, eventId, 'checkin', { guestId: group, at: '2026-11-01T18:01:10Z', gate: 'A', device: 'phone-1' });
    await scan(alice, eventId, 'checkin', { guestId: single, at: '2026-11-01T18:03:00Z', gate: 'B', device: 'phone-2' });
    expect((await scan(alice, eventId, 'checkin', { barcode: 'B-1', at: '2026-11-01T18:04:59Z', gate: 'A' })).reason).toBe('blocked');
    expect((await scan(alice, eventId, 'checkin', { barcode: 'nobody', at: '2026-11-01T18:07:00Z', gate: 'B' })).reason).toBe('not_found');
    const annulled = await scan(alice, eventId, 'checkin', { guestId: undone, at: '2026-11-01T18:08:00Z', gate: 'A' });
    const undo = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin/undo`, { scanId: annulled.scanId });
    expect(undo.status, JSON.stringify(undo.body)).toBe(200);
    await scan(alice, eventId, 'checkout', { guestId: single, at: '2026-11-01T18:12:00Z', gate: 'B' });
  });

  it('counts people admitted (plus ones included), exits, rejections by reason and people inside per 5-minute bucket of the event’s clock', async () => {
    const reply = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=5`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ eventId, timeZone: 'Europe/Berlin', bucketMinutes: 5 });
    const summary = reply.body.buckets.map((b: Record<string, unknown>) => [b.localStart, b.admissions, b.admitted, b.exits, b.rejected, b.annulled, b.insideNow]);
    expect(summary).toEqual([
      ['2026-11-01T19:00', 2, 4, 0, { blocked: 1 }, 0, 4],
      // The undone check-in is taken off the minute it was admitted and counted as annulled.
      ['2026-11-01T19:05', 0, 0, 0, { not_found: 1 }, 1, 4],
      ['2026-11-01T19:10', 0, 0, 1, {}, 0, 3],
    ]);
    expect(reply.body.buckets[0]).toMatchObject({ start: '2026-11-01T18:00:00.000Z', end: '2026-11-01T18:05:00.000Z', rejectedTotal: 1 });
    expect(reply.body.totals).toEqual({ admissions: 2, admitted: 4, exits: 1, annulled: 1, rejected: { blocked: 1, not_found: 1 }, rejectedTotal: 2, importedAdmitted: 0, importedExits: 0, insideNow: 3 });
    // The same figure the event's stats give from the guests read model.
    const stats = await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`);
    expect(stats.body.insideNow.people).toBe(reply.body.totals.insideNow);
  });

  it('splits each bucket by gate or by device when asked', async () => {
    const byGate = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=5&by=gate`);
    expect(byGate.status).toBe(200);
    expect(byGate.body.by).toBe('gate');
    expect(byGate.body.buckets[0].groups).toEqual({
      A: { admissions: 1, admitted: 3, exits: 0, rejected: { blocked: 1 }, rejectedTotal: 1 },
      B: { admissions: 1, admitted: 1, exits: 0, rejected: {}, rejectedTotal: 0 },
    });
    expect(byGate.body.buckets[2].groups).toEqual({ B: { admissions: 0, admitted: 0, exits: 1, rejected: {}, rejectedTotal: 0 } });
    const byDevice = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=60&by=device`);
    expect(byDevice.body.buckets).toHaveLength(1);
    expect(Object.keys(byDevice.body.buckets[0].groups).sort()).toEqual(['(none)', 'phone-1', 'phone-2']);
  });

  it('fills a window given by from and to with empty buckets, inside-now carried over', async () => {
    const reply = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=15&from=2026-11-01T17:30:00Z&to=2026-11-01T18:45:00Z`);
    expect(reply.status).toBe(200);
    expect(reply.body.buckets.map((b: { localStart: string; insideNow: number }) => [b.localStart, b.insideNow])).toEqual([
      ['2026-11-01T18:30', 0],
      ['2026-11-01T18:45', 0],
      ['2026-11-01T19:00', 3],
      ['2026-11-01T19:15', 3],
      ['2026-11-01T19:30', 3],
    ]);
  });

  it('pulls an open end of a long window in (clipped), and refuses a long window given in full', async () => {
    // Two scans two years apart: 5-minute buckets from one to the other are ~210,000.
    const longRun = await eventOf(alice);
    await scan(alice, longRun, 'checkin', { guestId: await guestOf(alice, longRun), at: '2024-11-01T18:00:00Z' });
    await scan(alice, longRun, 'checkin', { guestId: await guestOf(alice, longRun), at: '2026-11-01T18:00:00Z' });

    const open = await alice.call('GET', `/checkin/v1/api/event/${longRun}/timeline`);
    expect(open.status, JSON.stringify(open.body)).toBe(200);
    expect(open.body.clipped).toBe(true);
    expect(open.body.buckets).toHaveLength(10_000);
    // Both ends open: the newest buckets, ending with the last activity; totals cover everything.
    expect(open.body.buckets.at(-1).admitted).toBe(1);
    expect(open.body.buckets.at(-1).insideNow).toBe(2);
    expect(open.body.totals.admitted).toBe(2);

    const fromOnly = await alice.call('GET', `/checkin/v1/api/event/${longRun}/timeline?from=2024-11-01T18:00:00Z`);
    expect(fromOnly.status).toBe(200);
    expect(fromOnly.body.clipped).toBe(true);
    expect(fromOnly.body.buckets).toHaveLength(10_000);
    expect(fromOnly.body.buckets[0].start).toBe('2024-11-01T18:00:00.000Z');
    expect(fromOnly.body.buckets[0].admitted).toBe(1);

    const daily = await alice.call('GET', `/checkin/v1/api/event/${longRun}/timeline?bucket=1440`);
    expect(daily.status).toBe(200);
    expect(daily.body.clipped).toBeUndefined();

    const full = await alice.call('GET', `/checkin/v1/api/event/${longRun}/timeline?from=2024-11-01T18:00:00Z&to=2026-11-01T19:00:00Z`);
    expect(full.status).toBe(400);
    expect(full.body.errors).toEqual([{ path: 'bucket', message: 'at most 10000 buckets per answer' }]);
  });

  it('keeps up as scans come in (an incremental read model, read-your-writes)', async () => {
    const other = await eventOf(alice);
    expect((await alice.call('GET', `/checkin/v1/api/event/${other}/timeline`)).body.buckets).toEqual([]);
    const guest = await guestOf(alice, other);
    await scan(alice, other, 'checkin', { guestId: guest, at: '2026-11-01T20:00:00Z' });
    const after = await alice.call('GET', `/checkin/v1/api/event/${other}/timeline`);
    expect(after.body.totals.insideNow).toBe(1);
  });

  it('lets a team member read the timeline (the door manager), but not export it', async () => {
    const userName = `door-${Date.now()}`;
    await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'door staff pass 1', email: `${userName}@example.com` });
    const asMember = { authorization: `Bearer ${await passwordToken(service.url, userName, 'door staff pass 1')}` };
    const read = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline`, undefined, asMember);
    expect(read.status).toBe(200);
    expect(read.body.totals.insideNow).toBe(3);
    const exported = await alice.call('POST', `/checkin/v1/api/event/${eventId}/timeline/export?type=CSV`, undefined, asMember);
    expect(exported.status).toBe(403);
  });

  it('follows the event’s clock across a change: the hour the clocks go back is one local bucket of two real hours', async () => {
    // Berlin, 25 October 2026: 03:00 CEST (01:00Z) becomes 02:00 CET.
    const dst = await eventOf(alice);
    for (const at of ['2026-10-24T23:30:00Z', '2026-10-25T00:30:00Z', '2026-10-25T01:30:00Z', '2026-10-25T02:30:00Z']) {
      await scan(alice, dst, 'checkin', { guestId: await guestOf(alice, dst), at });
    }
    const reply = await alice.call('GET', `/checkin/v1/api/event/${dst}/timeline?bucket=60`);
    expect(reply.body.buckets.map((b: Record<string, unknown>) => [b.localStart, b.start, b.end, b.admissions])).toEqual([
      ['2026-10-25T01:00', '2026-10-24T23:00:00.000Z', '2026-10-25T00:00:00.000Z', 1],
      ['2026-10-25T02:00', '2026-10-25T00:00:00.000Z', '2026-10-25T02:00:00.000Z', 2],
      ['2026-10-25T03:00', '2026-10-25T02:00:00.000Z', '2026-10-25T03:00:00.000Z', 1],
    ]);
  });

  it('answers another client’s event with 404 and bad parameters with 400', async () => {
    const foreign = await bob.call('GET', `/checkin/v1/api/event/${eventId}/timeline`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('not_found');
    for (const query of ['bucket=0', 'bucket=abc', 'by=floor', 'from=yesterday', 'from=2026-12-02T00:00:00Z&to=2026-11-01T00:00:00Z', 'bucket=1&from=2000-01-01T00:00:00Z&to=2026-11-01T00:00:00Z']) {
      const reply = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?${query}`);
      expect(reply.status, query).toBe(400);
      expect(reply.body.code, query).toBe('validation_error');
    }
  });

  it('exports the timeline as CSV and as Excel through the export machinery', async () => {
    const csv = await alice.call('POST', `/checkin/v1/api/event/${eventId}/timeline/export?type=CSV&bucket=5&by=gate`);
    expect(csv.status, JSON.stringify(csv.body)).toBe(200);
    expect(csv.body).toMatchObject({ type: 'CSV', eventId, fileName: expect.stringContaining('timeline') });
    const file = await fetch(`${service.url}${csv.body.url}`, { headers: auth(alice) });
    expect(file.status).toBe(200);
    const rows = parse(await file.text(), { columns: true, bom: true }) as Record<string, string>[];
    expect(rows[0]).toMatchObject({ start: '2026-11-01T19:00:00.000+01:00', gate: '(all)', admitted: '4', insideNow: '4', rejected_blocked: '1' });
    expect(rows.filter((r) => r.gate === 'A')[0]).toMatchObject({ admitted: '3', insideNow: '' });

    const excel = await fetch(`${service.url}/checkin/v1/api/event/${eventId}/timeline/export?type=EXCEL`, {
      method: 'POST',
      headers: { ...auth(alice), accept: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
    });
    expect(excel.status).toBe(200);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(await excel.arrayBuffer());
    const sheet = workbook.getWorksheet('Timeline')!;
    expect(sheet.getRow(1).values).toEqual(expect.arrayContaining(['start', 'admitted', 'insideNow']));
    expect(sheet.rowCount).toBe(4);
  });
});

const auth = (client: Client) => ({ authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey });

describe('GET /comms/v1/api/comms/funnel', () => {
  let eventId: string;
  let templateA: string;
  let templateB: string;
  const guests: string[] = [];

  beforeAll(async () => {
    eventId = await eventOf(alice);
    const template = async (name: string) => {
      const reply = await alice.call('POST', '/comms/v1/api/comms/template', {
        eventId,
        name,
        subject: 'Welcome {{firstName}}',
        html: '<p>Dear {{firstName}}, see you there.</p>',
      });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      return reply.body.id as string;
    };
    templateA = await template('Save the date');
    templateB = await template('=HYPERLINK("http://evil.test","reminder")');
    for (let i = 0; i < 4; i += 1) {
      guests.push(await guestOf(alice, eventId, { email: `guest${i}@example.com`, firstName: `G${i}`, commsTemplateId: templateA }));
    }
    const invitations = await eventually(async () => {
      const page = await alice.call('GET', `/comms/v1/api/comms/invitations?eventId=${eventId}`);
      const items = page.body.items as { attendeeInvitationId: string; attendeeId: string; status: string }[];
      return items.length === 4 && items.every((i) => i.status === 'sent' || i.status === 'failed') ? items : undefined;
    }, 60_000, 'the four sends');
    // A second invitation of another template to guest 0.
    const resend = await alice.call('POST', '/comms/v1/api/comms/send', { attendeeIds: [guests[0]], templateId: templateB });
    expect(resend.status, JSON.stringify(resend.body)).toBeLessThan(300);
    const byGuest = new Map(invitations.map((i) => [i.attendeeId, i.attendeeInvitationId]));
    const report = (guest: number, event: 'delivered' | 'opened' | 'bounced', id: string) => ({
      attendeeInvitationId: byGuest.get(guests[guest]!)!,
      event,
      providerEventId: id,
      email: `guest${guest}@example.com`,
      at: '2026-11-01T12:00:00.000Z',
    });
    await recordProviderReports(service.services, [
      report(0, 'delivered', 'p1'),
      report(0, 'opened', 'p2'),
      report(0, 'opened', 'p3'),
      report(1, 'delivered', 'p4'),
      report(1, 'opened', 'p5'),
      report(2, 'bounced', 'p6'),
      // A privacy proxy's fetch (Apple Mail Privacy Protection): not an open by the guest.
      { ...report(3, 'opened', 'p7'), machineOpen: true },
    ]);
    await scan(alice, eventId, 'checkin', { guestId: guests[0], at: new Date(Date.now() + 120_000).toISOString() });
    await scan(alice, eventId, 'checkin', { guestId: guests[3], at: new Date(Date.now() + 240_000).toISOString() });
    await eventually(async () => {
      const page = await alice.call('GET', `/comms/v1/api/comms/invitations?eventId=${eventId}`);
      return page.body.items.length === 5 && page.body.items.every((i: { status: string }) => i.status === 'sent' || i.status === 'failed');
    }, 60_000, 'the resend');
    await service.services.readYourWrites(await service.platform.eventStore.headPosition());
  });

  it('counts distinct guests at each step, with rates and the median time from send to arrival, by template', async () => {
    const reply = await alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.totals).toMatchObject({ invited: 4, sent: 4, failed: 0, delivered: 2, opened: 2, bounced: 1, checkedIn: 2 });
    expect(reply.body.totals.rates).toMatchObject({ sent: 1, delivered: 0.5, opened: 1, bounced: 0.25, checkedIn: 0.5, checkedInAfterOpen: 0.5 });
    expect(reply.body.totals.medianSendToArrivalSeconds).toBeGreaterThan(60);
    const names = reply.body.byTemplate.map((row: { templateName: string; invited: number }) => [row.templateName, row.invited]);
    expect(names).toEqual(expect.arrayContaining([['Save the date', 4], ['=HYPERLINK("http://evil.test","reminder")', 1]]));
    const one = await alice.call('GET', `/comms/v1/api/comms/funnel?templateId=${templateB}`);
    expect(one.body).toMatchObject({ eventId, templateId: templateB, totals: { invited: 1, sent: 1, checkedIn: 1 } });
  });

  it('equals a recount from the events in the store', async () => {
    const reply = await alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`);
    const events: StoredEvent[] = [];
    for await (const batch of service.platform.eventStore.subscribeToAll({ fromPosition: -1, batchSize: 5000 })) {
      events.push(...batch.events);
      if (batch.position >= (await service.platform.eventStore.headPosition())) break;
    }
    const recount = recountFunnel(events, eventId);
    expect(reply.body.totals).toEqual(recount.totals);
    for (const row of reply.body.byTemplate) {
      const { templateId, templateName: _n, ...figures } = row;
      expect(figures, templateId).toEqual(recount.byTemplate.get(templateId));
    }
  });

  it('is 404 for another client’s event or template, 400 without an event or template, 403 without comms access', async () => {
    expect((await bob.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`)).status).toBe(404);
    expect((await bob.call('GET', `/comms/v1/api/comms/funnel?templateId=${templateA}`)).status).toBe(404);
    const none = await alice.call('GET', '/comms/v1/api/comms/funnel');
    expect(none.status).toBe(400);
    expect(none.body.code).toBe('validation_error');
    const plain = await createClient(service);
    expect((await plain.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`)).body.code).toBe('comms_api_not_enabled');
  });

  it('exports the funnel as CSV with formula-looking text neutralised, and as Excel', async () => {
    const csv = await fetch(`${service.url}/comms/v1/api/comms/funnel/export?type=CSV&eventId=${eventId}`, {
      method: 'POST',
      headers: { ...auth(alice), accept: 'text/csv' },
    });
    expect(csv.status).toBe(200);
    const rows = parse(await csv.text(), { columns: true, bom: true }) as Record<string, string>[];
    expect(rows.map((r) => r.templateName)).toContain(`'=HYPERLINK("http://evil.test","reminder")`);
    expect(rows.find((r) => r.templateId === '(all)')).toMatchObject({ invited: '4', checkedIn: '2', checkedInRate: '0.5' });
    const excel = await alice.call('POST', `/comms/v1/api/comms/funnel/export?type=EXCEL&eventId=${eventId}`);
    expect(excel.status).toBe(200);
    expect(excel.body).toMatchObject({ type: 'EXCEL', rowCount: 3, fileName: expect.stringContaining('funnel') });
  });
});

/** The funnel's definitions (docs/analytics.md), folded straight from the stored events. */
function recountFunnel(events: StoredEvent[], eventId: string) {
  type Path = { sentAt?: string; failed: boolean; provider: Set<string> };
  const perTemplate = new Map<string, Map<string, Path>>();
  const entries = new Map<string, Map<string, string>>();
  for (const event of events) {
    const d = event.data as Record<string, any>;
    if (d.eventId !== undefined && d.eventId !== eventId) continue;
    if (event.type === 'SendRequested') {
      const guests = perTemplate.get(d.templateId) ?? new Map<string, Path>();
      perTemplate.set(d.templateId, guests);
      if (!guests.has(d.attendeeId)) guests.set(d.attendeeId, { failed: false, provider: new Set() });
    }
    const pathOf = () => perTemplate.get(d.templateId)?.get(d.attendeeId);
    if (event.type === 'SendSucceeded') {
      const path = pathOf()!;
      if (!path.sentAt || d.sentAt < path.sentAt) path.sentAt = d.sentAt;
    }
    if (event.type === 'SendFailed') pathOf()!.failed = true;
    // A privacy proxy's open is no open by the guest (docs/analytics.md).
    if (event.type === 'ProviderEventReceived' && d.machineOpen !== true) pathOf()!.provider.add(d.event);
    if (event.type === 'GuestAdmitted' && d.guestEntered) {
      const scans = entries.get(d.guestId) ?? new Map<string, string>();
      entries.set(d.guestId, scans.set(d.scanId, d.at));
    }
    if (event.type === 'GuestAdmissionAnnulled') entries.get(d.guestId)?.delete(d.scanId);
    // An admission a create imported: the guest came, without a scan.
    if (event.type === 'GuestAdmissionImported') entries.set(d.guestId, (entries.get(d.guestId) ?? new Map<string, string>()).set('(imported)', d.admitted));
  }
  const firstArrival = (guest: string) => [...(entries.get(guest)?.values() ?? [])].sort()[0];
  const figures = (guests: Map<string, Path>) => {
    const count = (test: (path: Path, guest: string) => boolean) => [...guests].filter(([guest, path]) => test(path, guest)).length;
    const has = (event: string) => count((path) => path.provider.has(event));
    const invited = guests.size;
    const sent = count((path) => path.sentAt !== undefined);
    const checkedIn = count((_path, guest) => firstArrival(guest) !== undefined);
    const opened = has('opened');
    const rate = (part: number, whole: number) => (whole === 0 ? null : Math.round((part / whole) * 10_000) / 10_000);
    const delays = [...guests]
      .filter(([guest, path]) => path.sentAt && firstArrival(guest) && firstArrival(guest)! >= path.sentAt)
      .map(([guest, path]) => (Date.parse(firstArrival(guest)!) - Date.parse(path.sentAt!)) / 1000);
    return {
      invited,
      sent,
      failed: count((path) => !path.sentAt && path.failed),
      delivered: has('delivered'),
      opened,
      bounced: has('bounced'),
      dropped: has('dropped'),
      spamReported: has('spam_reported'),
      unsubscribed: has('unsubscribed'),
      checkedIn,
      rates: {
        sent: rate(sent, invited),
        delivered: rate(has('delivered'), sent),
        opened: rate(opened, has('delivered')),
        bounced: rate(has('bounced'), sent),
        checkedIn: rate(checkedIn, invited),
        checkedInAfterOpen: rate(count((path, guest) => path.provider.has('opened') && firstArrival(guest) !== undefined), opened),
      },
      medianSendToArrivalSeconds: median(delays),
    };
  };
  const all = new Map<string, Path>();
  for (const guests of perTemplate.values()) {
    for (const [guest, path] of guests) {
      const merged = all.get(guest) ?? { failed: false, provider: new Set<string>() };
      if (path.sentAt && (!merged.sentAt || path.sentAt < merged.sentAt)) merged.sentAt = path.sentAt;
      merged.failed ||= path.failed;
      path.provider.forEach((p) => merged.provider.add(p));
      all.set(guest, merged);
    }
  }
  return { totals: figures(all), byTemplate: new Map([...perTemplate].map(([id, guests]) => [id, figures(guests)])) };
}
