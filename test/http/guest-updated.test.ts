/**
 * A CRM keeping itself in sync walks `changedSince`: every guest answer carries `updated`, the
 * guest's last change, so the newest one read is the next walk's bound (docs/guests.md, "Paging
 * while guests change").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;
beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

describe('a guest answer’s updated', () => {
  it('moves with every change (details, a scan) and is the bound of the next changedSince walk', async () => {
    const eventId = await newEvent(alice);
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada' });
    const first = created.body.updated as string;
    expect(new Date(first).toISOString()).toBe(first);
    expect((await alice.call('GET', `/checkin/v1/api/guest/${created.body.id}`)).body.updated).toBe(first);

    // Times have milliseconds: the scan comes a few later, so its change time is another.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const scan = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: created.body.id });
    expect(scan.body.result).toBe('admitted');
    const second = scan.body.guest.updated as string;
    expect(second > first).toBe(true);

    const since = (bound: string) => alice.call('GET', `/checkin/v1/api/guests/${eventId}?changedSince=${encodeURIComponent(bound)}`);
    expect((await since(first)).body.items.map((g: { id: string; updated: string }) => [g.id, g.updated])).toEqual([[created.body.id, second]]);
    expect((await since(second)).body.items).toEqual([]);
  });
});
