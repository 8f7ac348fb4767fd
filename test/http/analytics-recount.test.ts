import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/adapters/eventstore/port.js';
import { allEvents, buildAuditDataset, type AuditDataset } from '../projections/audit-dataset.js';

/**
 * An analyst's check: the door figures of the stats, timeline and team endpoints equal a recount
 * folded straight from the events in the store (docs/analytics.md), on an evening with a group
 * arrival, an exit, an unknown barcode, an undone check-in and a blocked guest's scan.
 */
let data: AuditDataset;
let events: StoredEvent[];

beforeAll(async () => {
  data = await buildAuditDataset();
  events = await allEvents(data.service);
}, 120_000);
afterAll(() => data?.service.close());

interface Recount {
  admissions: number;
  admitted: number;
  exits: number;
  annulled: number;
  importedAdmitted: number;
  importedExits: number;
  rejected: Record<string, number>;
  byMember: Map<string, { checkedIn: number; checkedOut: number }>;
}

function recount(eventId: string): Recount {
  const r: Recount = { admissions: 0, admitted: 0, exits: 0, annulled: 0, importedAdmitted: 0, importedExits: 0, rejected: {}, byMember: new Map() };
  const member = (id: string) => r.byMember.get(id) ?? r.byMember.set(id, { checkedIn: 0, checkedOut: 0 }).get(id)!;
  const admittedBy = new Map<string, { people: number; by: string }>();
  for (const e of events) {
    const d = e.data as any;
    if (d.eventId !== eventId) continue;
    if (e.type === 'GuestAdmitted') {
      r.admissions += 1;
      r.admitted += d.people;
      member(d.scannedBy.id).checkedIn += d.people;
      admittedBy.set(d.scanId, { people: d.people, by: d.scannedBy.id });
    } else if (e.type === 'GuestAdmissionAnnulled') {
      const admission = admittedBy.get(d.scanId)!;
      r.annulled += 1;
      r.admissions -= 1;
      r.admitted -= admission.people;
      member(admission.by).checkedIn -= admission.people;
    } else if (e.type === 'GuestDischarged') {
      r.exits += d.people;
      member(d.scannedBy.id).checkedOut += d.people;
    } else if (e.type === 'GuestAdmissionImported') {
      // No scan: inside from `admitted`, out at `discharged` when the import says the guest left.
      r.importedAdmitted += 1 + d.admittedPlusOnes;
      if (!d.inside && d.discharged) r.importedExits += 1 + d.admittedPlusOnes;
    } else if (e.type === 'GuestScanRejected' || e.type === 'UnmatchedScanRejected') {
      r.rejected[d.reason] = (r.rejected[d.reason] ?? 0) + 1;
    }
  }
  return r;
}

describe('door figures against a recount from the events', () => {
  it('timeline totals, event stats and team figures', async () => {
    const { alice, eventId, teamMemberId } = data;
    const want = recount(eventId);
    expect(want).toMatchObject({ admissions: 1, admitted: 2, exits: 2, annulled: 1, rejected: { not_found: 1, blocked: 1 } });

    const timeline = (await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=60&by=gate`)).body;
    expect(timeline.totals).toEqual({
      admissions: want.admissions,
      admitted: want.admitted,
      exits: want.exits,
      annulled: want.annulled,
      importedAdmitted: want.importedAdmitted,
      importedExits: want.importedExits,
      rejected: want.rejected,
      rejectedTotal: Object.values(want.rejected).reduce((a, b) => a + b, 0),
      insideNow: want.admitted + want.importedAdmitted - want.exits - want.importedExits,
    });
    const sum = (key: 'admissions' | 'admitted' | 'exits') =>
      (timeline.buckets as any[]).reduce((n, b) => n + Object.values(b.groups as Record<string, any>).reduce((m, g) => m + g[key], 0), 0);
    expect([sum('admissions'), sum('admitted'), sum('exits')]).toEqual([want.admissions, want.admitted, want.exits]);

    const stats = (await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`)).body;
    expect(stats).toMatchObject({
      admitted: 1,
      insideNow: { guests: 0, people: want.admitted - want.exits },
      rejectedScans: want.rejected,
      annulledCheckIns: want.annulled,
      blocked: 1,
      admissionsByGate: { A: { admissions: 1, people: 2 } },
    });

    const team = (await alice.call('GET', `/checkin/v1/api/team/event/${eventId}`)).body as any[];
    expect(team.map((t) => ({ id: t.teamMemberId, checkedIn: t.checkedIn, checkedOut: t.checkedOut }))).toEqual(
      [...want.byMember].map(([id, figures]) => ({ id, ...figures })),
    );
    expect(team[0].teamMemberId).toBe(teamMemberId);
  });

  it('the funnel', async () => {
    const funnel = (await data.alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${data.eventId}`)).body;
    const requested = events.filter((e) => e.type === 'SendRequested' && (e.data as any).eventId === data.eventId);
    expect(funnel.totals).toMatchObject({ invited: requested.length, sent: 1, delivered: 1, opened: 1, checkedIn: 1, failed: 0 });
    expect(funnel.byTemplate).toEqual([expect.objectContaining({ templateId: data.templateId, templateName: 'Invitation', invited: 1 })]);
  });
});
