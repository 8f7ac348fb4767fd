import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/adapters/eventstore/port.js';
import { allEvents, buildAuditDataset, type AuditDataset } from '../projections/audit-dataset.js';

/**
 * An auditor's walk through GET /guest/{id}/history and /personal-data (docs/guests.md, "History
 * for auditors"), compared with the events actually in the store.
 */
let data: AuditDataset;
let events: StoredEvent[];

beforeAll(async () => {
  data = await buildAuditDataset();
  events = await allEvents(data.service);
}, 120_000);
afterAll(() => data?.service.close());

const history = (id: string, query = '') => data.alice.call('GET', `/checkin/v1/api/guest/${encodeURIComponent(id)}/history${query}`);

/** What the history must hold: the guest's stream and the streams of its invitations, in store order. */
function expected(guestId: string): StoredEvent[] {
  const guestStream = `guest-${data.alice.id}:${guestId}`;
  const invitations = new Set(
    events.filter((e) => e.streamName === guestStream && e.type === 'InvitationRequested').map((e) => `invitation-${(e.data as { attendeeInvitationId: string }).attendeeInvitationId}`),
  );
  return events.filter((e) => e.streamName === guestStream || invitations.has(e.streamName));
}

describe('guest history for auditors', () => {
  it('holds every event of the guest and of its invitations, in store order, with who, when and what', async () => {
    for (const id of [data.ann, data.bo, data.cy]) {
      const reply = await history(id);
      expect(reply.status).toBe(200);
      const want = expected(id);
      expect(want.length).toBeGreaterThan(2);
      expect(reply.body.events.map((e: any) => [e.stream, e.revision, e.type])).toEqual(want.map((e) => [e.streamName, e.revision, e.type]));
      for (const [i, e] of (reply.body.events as any[]).entries()) {
        expect(e.actor).toEqual(want[i]!.metadata.actor);
        expect(e.at).toBe(want[i]!.metadata.occurredAt);
        expect(e.recordedAt).toBe(want[i]!.recordedAt);
        expect(e.correlationId).toBe(want[i]!.metadata.correlationId);
      }
    }
  });

  it('names the actor of each change: the client, its team member at the door, the system for the mailer and the provider', async () => {
    const { alice, teamMemberId } = data;
    const byType = (body: any) => (body.events as any[]).map((e) => `${e.type}<-${e.actor.type}:${e.actor.id}`);
    const ann = byType((await history(data.ann)).body);
    expect(ann).toEqual([
      `GuestRegistered<-client:${alice.id}`,
      `TicketIssued<-client:${alice.id}`,
      `InvitationRequested<-client:${alice.id}`,
      ...ann.slice(3, -4),
      `GuestAdmitted<-team_member:${teamMemberId}`,
      `GuestDischarged<-team_member:${teamMemberId}`,
      `TicketRevoked<-client:${alice.id}`,
      `TicketIssued<-client:${alice.id}`,
    ]);
    // The upsert's change and the mailer's and provider's steps, between invitation and arrival.
    expect(ann.slice(3, -4).sort()).toEqual([
      `GuestDetailsChanged<-client:${alice.id}`,
      'ProviderEventReceived<-system:provider-events',
      'ProviderEventReceived<-system:provider-events',
      'SendRequested<-system:send-worker',
      'SendStarted<-system:send-worker',
      'SendSucceeded<-system:send-worker',
    ]);
    // The mailer's steps are tied to the client's request by its requestId.
    const annEvents = (await history(data.ann)).body.events as any[];
    const asked = annEvents.find((e) => e.type === 'InvitationRequested');
    expect(annEvents.filter((e) => e.type.startsWith('Send')).map((e) => e.requestId)).toEqual([asked.requestId, asked.requestId, asked.requestId]);
    const changed = annEvents.find((e: any) => e.type === 'GuestDetailsChanged');
    expect(changed.data.changes).toEqual({ lastName: 'Lee-Smith' });
    // Bo was created by the account's user signed in with a password: the actor is the client (docs/guests.md).
    expect(byType((await history(data.bo)).body)).toEqual([
      `GuestRegistered<-client:${alice.id}`,
      `GuestAdmitted<-team_member:${teamMemberId}`,
      `GuestAdmissionAnnulled<-team_member:${teamMemberId}`,
      `GuestBlocked<-client:${alice.id}`,
      `GuestScanRejected<-team_member:${teamMemberId}`,
    ]);
  });

  it('asOf gives the guest as it was, whatever the offset the instant is written with', async () => {
    const utc = await history(data.ann, `?asOf=${encodeURIComponent(data.beforeReissue)}`);
    expect(utc.status).toBe(200);
    expect(utc.body.events.map((e: any) => e.type)).not.toContain('TicketRevoked');
    expect(utc.body.state).toMatchObject({ id: data.ann, lastName: 'Lee-Smith', tags: 'VIP,press', admittedPlusOnes: 1, inside: false, admitted: expect.any(String), discharged: expect.any(String) });
    const berlin = new Date(Date.parse(data.beforeReissue) + 3_600_000).toISOString().replace('Z', '+01:00');
    const offset = await history(data.ann, `?asOf=${encodeURIComponent(berlin)}`);
    expect(offset.body.events).toEqual(utc.body.events);
    expect(offset.body.state).toEqual(utc.body.state);

    const created = (await history(data.ann)).body.events[0].at as string;
    const before = await history(data.ann, `?asOf=${encodeURIComponent(new Date(Date.parse(created) - 1).toISOString())}`);
    expect(before.body).toMatchObject({ events: [], state: null });
  });

  it('finds the guest by customId (with its event) and shows nothing of another client', async () => {
    const byCustomId = await history('C-1', `?eventId=${data.eventId}`);
    expect(byCustomId.status).toBe(200);
    expect(byCustomId.body.guestId).toBe(data.ann);
    for (const path of [`/checkin/v1/api/guest/${data.ann}/history`, `/checkin/v1/api/guest/C-1/history?eventId=${data.eventId}`, `/checkin/v1/api/guest/${data.ann}/personal-data`]) {
      const reply = await data.bob.call('GET', path);
      expect(reply.status, path).toBe(404);
      expect(JSON.stringify(reply.body)).not.toContain('Lee');
    }
  });

  it("an erased guest's history keeps the facts without the personal data", async () => {
    const reply = await history(data.cy);
    const text = JSON.stringify(reply.body);
    for (const value of ['Cy', 'Oz', 'cy@example.com', 'C-3']) expect(text).not.toContain(`"${value}"`);
    expect(reply.body.events.map((e: any) => e.type)).toEqual(['GuestRegistered', 'TicketIssued', 'GuestErased']);
    expect(reply.body.events[0].data).toMatchObject({ guestId: data.cy, eventId: data.eventId, tags: ['staff'], personalDataErased: true });
    expect(reply.body.events[2]).toMatchObject({ actor: { type: 'client', id: data.alice.id }, data: { reason: 'the guest asked', erasedBy: data.alice.id } });
    // asOf after the erasure: the guest as it was then, erased.
    const asOf = await history(data.cy, `?asOf=${encodeURIComponent(new Date().toISOString())}`);
    expect(JSON.stringify(asOf.body.state)).not.toMatch(/"(Cy|Oz|cy@example\.com|C-3)"/);
    expect(asOf.body.state).toMatchObject({ id: data.cy, tags: 'staff', erased: true, erasedAt: reply.body.events[2].data.at, personalDataErased: true });
    // asOf before the erasure: not erased then, but what it held then is gone, and the state says so.
    const then = await history(data.cy, `?asOf=${encodeURIComponent(reply.body.events[1].at)}`);
    expect(then.body.state).toMatchObject({ id: data.cy, personalDataErased: true });
    expect(then.body.state.erased).toBeUndefined();
    expect((await history(data.ann, `?asOf=${encodeURIComponent(new Date().toISOString())}`)).body.state.personalDataErased).toBeUndefined();

    const personal = await data.alice.call('GET', `/checkin/v1/api/guest/${data.cy}/personal-data`);
    expect(personal.status).toBe(200);
    expect(JSON.stringify(personal.body)).not.toMatch(/"(Cy|Oz|cy@example\.com|C-3)"/);
    expect(personal.body.guest).toMatchObject({ erased: true, firstName: null, email: null, customId: null });
  });

  it('personal-data holds the guest, its scans, its invitations and the same history', async () => {
    const reply = await data.alice.call('GET', `/checkin/v1/api/guest/${data.bo}/personal-data`);
    expect(reply.status).toBe(200);
    expect(reply.body.guest).toMatchObject({ id: data.bo, firstName: 'Bo', blockedReason: 'duplicate ticket' });
    expect(reply.body.scans.map((s: any) => `${s.result}${s.annulled ? ' annulled' : ''}`)).toEqual(['admitted annulled', 'rejected']);
    expect(reply.body.history.map((e: any) => e.type)).toEqual((await history(data.bo)).body.events.map((e: any) => e.type));
  });
});
