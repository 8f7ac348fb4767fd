/**
 * The views auditors and analysts rely on (docs/analytics.md, docs/read-models.md, docs/guests.md
 * "History for auditors", docs/personal-data.md), in the cases the other suites leave out: an
 * erasure of a guest whose values are short numbers, a rebuild after an erasure of a guest whose
 * email bounced, and the arrivals timeline in small buckets on the day the clocks go forward.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordProviderReports } from '../../src/commands/invitations.js';
import type { ProviderReport } from '../../src/domain/invitation.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService({ INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

const ok = (reply: { status: number; body: any }) => {
  if (reply.status >= 300) throw new Error(`${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
};

async function documents(collection: string, filter: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const docs: Record<string, unknown>[] = [];
  for await (const doc of service.platform.readStore.collection(collection).stream(filter, { sort: { _id: 1 } })) docs.push(doc as Record<string, unknown>);
  return docs;
}

/** An event with a template, `guests` invited with it, every invitation sent; answers the guests' invitation ids. */
async function invitedEvening(eventId: string, guests: Record<string, unknown>[]) {
  ok(await alice.call('POST', '/checkin/v1/api/event', { id: eventId, title: 'Gala', startTime: '2026-11-01T18:00:00Z', endTime: '2026-11-01T23:00:00Z', timeZoneId: 'Europe/Berlin' }));
  const templateId = ok(await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invitation', subject: 'Hi', html: '<p>Hi</p>' })).id as string;
  const ids: string[] = [];
  for (const guest of guests) ids.push(ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, ...guest, commsTemplateId: templateId })).id);
  const invitations = await eventually(async () => {
    const items = ok(await alice.call('GET', `/comms/v1/api/comms/invitations?eventId=${encodeURIComponent(eventId)}`)).items as any[];
    return items.length === ids.length && items.every((i) => i.status === 'sent') ? items : undefined;
  }, 60_000, 'invitations sent');
  const invitationOf = new Map<string, string>(invitations.map((i) => [i.attendeeId, i.attendeeInvitationId]));
  return { ids, invitationOf };
}

const report = (attendeeInvitationId: string, event: ProviderReport['event'], email: string): ProviderReport => ({
  attendeeInvitationId,
  event,
  providerEventId: randomUUID(),
  email,
  at: new Date().toISOString(),
});

describe('erasure keeps the analysts’ and auditors’ times and ids', () => {
  it('erasing guests whose customId and barcode are short numbers leaves the funnel, the invitations and their times as they were', async () => {
    // A CRM's numeric customId and a short barcode: values of three characters or more are searched for in the read models.
    const eventId = `gala-2026-${randomUUID().slice(0, 8)}`;
    const { ids, invitationOf } = await invitedEvening(eventId, [
      { firstName: 'Ann', email: 'ann@example.com', customId: '2026' },
      { firstName: 'Bo', email: 'bo@example.com', barcode: '100' },
    ]);
    await recordProviderReports(service.services, [report(invitationOf.get(ids[0]!)!, 'delivered', 'ann@example.com'), report(invitationOf.get(ids[0]!)!, 'opened', 'ann@example.com')]);
    for (const [i, guestId] of ids.entries()) {
      ok(await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId, at: new Date(Date.now() + (i + 1) * 60_000).toISOString() }));
    }
    await service.services.readYourWrites(await service.platform.eventStore.headPosition());
    const funnel = () => alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`).then(ok);
    const invitations = () => alice.call('GET', `/comms/v1/api/comms/invitations?eventId=${eventId}`).then(ok);
    const before = { funnel: await funnel(), invitations: await invitations(), docs: await documents('funnel_invitations', { clientId: alice.id }) };
    expect(before.funnel.totals).toMatchObject({ invited: 2, sent: 2, delivered: 1, opened: 1, checkedIn: 2 });
    expect(before.funnel.totals.medianSendToArrivalSeconds).toBeGreaterThan(0);

    ok(await alice.call('POST', `/checkin/v1/api/guests/${eventId}/erase`, { reason: 'retention', all: true }));

    // Erasure takes personal data away, not counts, times or ids (docs/personal-data.md, docs/read-models.md).
    expect((await funnel()).totals).toEqual(before.funnel.totals);
    expect(await documents('funnel_invitations', { clientId: alice.id })).toEqual(before.docs);
    const after = (await invitations()).items as any[];
    for (const invitation of before.invitations.items as any[]) {
      const now = after.find((i) => i.attendeeInvitationId === invitation.attendeeInvitationId);
      expect(now, 'the invitation is still listed for its event').toBeDefined();
      expect(now).toMatchObject({ eventId, requestedAt: invitation.requestedAt, sentAt: invitation.sentAt, updatedAt: invitation.updatedAt });
      expect(now.history.map((step: any) => step.at)).toEqual(invitation.history.map((step: any) => step.at));
    }
    // The auditor's access document: the invitations keep their times too.
    const access = ok(await alice.call('GET', `/checkin/v1/api/guest/${ids[0]}/personal-data`));
    expect(access.invitations[0]).toMatchObject({ eventId, requestedAt: before.invitations.items.find((i: any) => i.attendeeId === ids[0]).requestedAt });
    expect(JSON.stringify(access)).not.toContain('[erased]');
  });
});

describe('the arrivals timeline on the day the clocks go forward', () => {
  it('gives every bucket of the skipped local hour the same instant as start and end, in buckets smaller than an hour', async () => {
    // Berlin, 29 March 2026: at 01:00Z the clocks go from 02:00 (CET) to 03:00 (CEST).
    const eventId = ok(await alice.call('POST', '/checkin/v1/api/event', { title: 'Spring', startTime: '2026-03-28T20:00:00Z', endTime: '2026-03-29T06:00:00Z', timeZoneId: 'Europe/Berlin' })).id;
    for (const at of ['2026-03-29T00:50:00Z', '2026-03-29T01:10:00Z']) {
      const guestId = ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ed' })).id;
      ok(await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId, at }));
    }
    const timeline = ok(await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=15`));
    expect(timeline.buckets.map((b: any) => [b.localStart, b.start, b.end, b.admissions])).toEqual([
      ['2026-03-29T01:45', '2026-03-29T00:45:00.000Z', '2026-03-29T01:00:00.000Z', 1],
      // The local hour 02:00-03:00 never happened: its buckets are empty and take no time.
      ['2026-03-29T02:00', '2026-03-29T01:00:00.000Z', '2026-03-29T01:00:00.000Z', 0],
      ['2026-03-29T02:15', '2026-03-29T01:00:00.000Z', '2026-03-29T01:00:00.000Z', 0],
      ['2026-03-29T02:30', '2026-03-29T01:00:00.000Z', '2026-03-29T01:00:00.000Z', 0],
      ['2026-03-29T02:45', '2026-03-29T01:00:00.000Z', '2026-03-29T01:00:00.000Z', 0],
      ['2026-03-29T03:00', '2026-03-29T01:00:00.000Z', '2026-03-29T01:15:00.000Z', 1],
    ]);
  });
});

describe('a projections rebuild after an erasure', () => {
  it('replays the bounce of an erased guest’s invitation, and a provider report that comes after the erasure, without stopping', async () => {
    const eventId = `bounce-${randomUUID().slice(0, 8)}`;
    const { ids, invitationOf } = await invitedEvening(eventId, [
      { firstName: 'Cy', email: 'cy@example.com' },
      { firstName: 'Di', email: 'di@example.com' },
    ]);
    const [cy, di] = [invitationOf.get(ids[0]!)!, invitationOf.get(ids[1]!)!];
    await recordProviderReports(service.services, [report(cy, 'bounced', 'cy@example.com'), report(di, 'delivered', 'di@example.com')]);
    ok(await alice.call('POST', `/checkin/v1/api/guest/${ids[0]}/erase`, { reason: 'the guest asked' }));
    // A report SendGrid sends after the erasure: its address can no longer be stored (the guest's key is gone).
    await recordProviderReports(service.services, [report(di, 'dropped', 'di@example.com')]);
    ok(await alice.call('POST', `/checkin/v1/api/guest/${ids[1]}/erase`, { reason: 'the guest asked' }));
    await recordProviderReports(service.services, [report(di, 'spam_reported', 'di@example.com')]);
    await service.services.readYourWrites(await service.platform.eventStore.headPosition());
    expect(service.runner!.position()).toBe(await service.platform.eventStore.headPosition());

    const funnel = () => alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`).then(ok);
    const live = await funnel();
    expect(live.totals).toMatchObject({ invited: 2, sent: 2, bounced: 1, delivered: 1, dropped: 1, spamReported: 1 });
    const invitationsBefore = await documents('invitations', { clientId: alice.id, eventId });
    const commsEventsBefore = await documents('comms_events', { clientId: alice.id });
    expect(invitationsBefore.map((i) => i.providerStatus).sort()).toEqual(['bounced', 'spam_reported']);

    await service.runner!.rebuild([]);
    expect(await funnel()).toEqual(live);
    expect(await documents('invitations', { clientId: alice.id, eventId })).toEqual(invitationsBefore);
    expect(await documents('comms_events', { clientId: alice.id })).toEqual(commsEventsBefore);
    // The addresses stay suppressed (docs/personal-data.md), by their keyed hash only: no entry holds an erased address.
    const suppressions = await documents('comms_suppressions', { clientId: alice.id });
    expect(suppressions.map((s) => s.reason).sort()).toEqual(['bounced', 'spam_reported']);
    expect(JSON.stringify(suppressions)).not.toMatch(/cy@example\.com|di@example\.com/);
  });
});
