import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

/**
 * An auditor replays a guest's history (docs/guests.md, "History for auditors"). Here: `asOf`
 * when the clocks of the service's instances disagree, so that a guest's stream holds an event
 * whose `at` is earlier than the `at` of the event before it.
 */
let service: TestService;
let alice: Client;
/** The service's clock: a test sets it as another instance's clock would read. */
let now: Date | undefined;

beforeAll(async () => {
  service = await startTestService({}, { clock: { now: () => now ?? new Date() } });
  alice = await createClient(service);
}, 60_000);
afterAll(() => service?.close());

const history = (id: string, asOf: string) => alice.call('GET', `/checkin/v1/api/guest/${id}/history?asOf=${encodeURIComponent(asOf)}`);

describe('asOf folds the guest as it was: a prefix of its stream, never a state it never had', () => {
  it('an event recorded after another but stamped earlier (a clock behind) is not folded without the event it followed', async () => {
    const eventId = await newEvent(alice);
    const base = Date.now() - 3_600_000;
    const at = (ms: number) => new Date(base + ms).toISOString();
    now = new Date(base);
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', customId: 'A-1' });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    // Instance 1 (its clock right) blocks the guest at +10 s ...
    now = new Date(base + 10_000);
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { ids: [id], reason: 'fraud' })).status).toBe(200);
    // ... then instance 2, its clock 5 s behind, unblocks it: recorded after the block, stamped +8 s.
    now = new Date(base + 8_000);
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/unblock`, { ids: [id] })).status).toBe(200);
    now = undefined;
    await eventually(async () => ((await alice.call('GET', `/checkin/v1/api/guest/${id}`)).body?.blockedDate === null ? true : undefined), 60_000, 'unblock projected');

    // The stream: registered (+0), blocked (+10 s), unblocked (+8 s, recorded last).
    const whole = (await alice.call('GET', `/checkin/v1/api/guest/${id}/history`)).body.events as any[];
    expect(whole.map((e) => [e.type, e.at])).toEqual([
      ['GuestRegistered', at(0)],
      ['TicketIssued', at(0)],
      ['GuestBlocked', at(10_000)],
      ['GuestUnblocked', at(8_000)],
    ]);

    // At +9 s the service had not yet recorded the unblock (it came after the block, at +10 s):
    // the guest as it was is the registered one, and the history up to then is its registration.
    const reply = await history(id, at(9_000));
    expect(reply.status).toBe(200);
    expect(reply.body.events.map((e: any) => e.type)).toEqual(['GuestRegistered', 'TicketIssued']);
    expect(reply.body.state).toMatchObject({ id, firstName: 'Ann', customId: 'A-1' });
    expect(reply.body.state.blockedDate).toBeUndefined();

    // After the block's stamp: blocked, then unblocked; the whole stream.
    const later = await history(id, at(10_000));
    expect(later.body.events.map((e: any) => e.type)).toEqual(['GuestRegistered', 'TicketIssued', 'GuestBlocked', 'GuestUnblocked']);
    expect(later.body.state.blockedDate).toBeUndefined();
  });
});

describe('asOf without an offset is a wall time on the guest’s event clock', () => {
  it('without ?eventId= too: the path names the guest, so its event’s zone reads the time (by id and by customId)', async () => {
    const eventId = await newEvent(alice, { timeZoneId: 'Asia/Tokyo' });
    now = new Date('2026-06-01T03:00:00Z');
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Kei', customId: 'TZ-1' });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    now = new Date('2026-06-01T05:00:00Z'); // 14:00 in Tokyo
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { ids: [id], reason: 'late' })).status).toBe(200);
    now = undefined;
    await eventually(async () => ((await alice.call('GET', `/checkin/v1/api/guest/${id}`)).body?.blockedDate ? true : undefined), 60_000, 'block projected');
    // 13:00 on the event's clock is 04:00Z, before the block (read as UTC, 13:00Z, it was after).
    for (const guest of [id, 'TZ-1']) {
      const before = await history(guest, '2026-06-01T13:00:00');
      expect(before.status, guest).toBe(200);
      expect(before.body.events.map((e: any) => e.type), guest).not.toContain('GuestBlocked');
      expect(before.body.state.blockedDate, guest).toBeUndefined();
      const after = await history(guest, '2026-06-01T14:00:00');
      expect(after.body.events.map((e: any) => e.type), guest).toContain('GuestBlocked');
    }
  });
});
