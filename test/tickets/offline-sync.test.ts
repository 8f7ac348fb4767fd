import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * Issue 16: an offline scanner verifies signatures itself, but a signature cannot say that a
 * ticket was revoked or reissued after the scanner synced. GET …/event/{id}/tickets?changedSince=
 * tells it, in one call per page.
 */

let service: TestService;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  service = await startTestService();
  [alice, bob] = await Promise.all([createClient(service), createClient(service)]);
});
afterAll(async () => {
  await service?.close();
});

type Item = { guestId: string; kind: string; code?: string; serial?: number; keyId?: string; updated: string };

async function sync(client: Client, eventId: string, changedSince?: string): Promise<Item[]> {
  const items: Item[] = [];
  let cursor: string | undefined;
  do {
    const query = new URLSearchParams({ limit: '2', ...(changedSince ? { changedSince } : {}), ...(cursor ? { cursor } : {}) });
    const page = await client.call('GET', `/checkin/v1/api/event/${eventId}/tickets?${query}`);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    items.push(...page.body.items);
    cursor = page.body.nextCursor;
  } while (cursor);
  return items;
}

describe('offline sync of tickets', () => {
  it('lists every guest’s current code; after a revoke and a reissue, changedSince names just those two', async () => {
    const event = await alice.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-01-01T18:00:00Z', endTime: '2099-12-12T23:00:00Z' });
    const eventId = event.body.id;
    const ids: string[] = [];
    for (const fields of [{}, {}, {}, { barcode: 'GALA-0001' }]) {
      const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', lastName: 'Lee', ...fields });
      ids.push(guest.body.id);
    }
    const first = await sync(alice, eventId);
    expect(first.map((i) => i.guestId).sort()).toEqual([...ids].sort());
    expect(first.find((i) => i.guestId === ids[3])).toMatchObject({ kind: 'barcode', code: 'GALA-0001' });
    const ticketOf = (items: Item[], id: string) => items.find((i) => i.guestId === id)!;
    expect(ticketOf(first, ids[0]!)).toMatchObject({ kind: 'signed', serial: 1, code: expect.stringMatching(/^T1\./), keyId: expect.stringMatching(/^[0-9a-f]{8}$/) });
    const since = first.map((i) => i.updated).sort().at(-1)!;

    expect((await alice.call('POST', `/checkin/v1/api/guest/${ids[0]}/ticket/revoke`)).status).toBe(204);
    const reissued = await alice.call('POST', `/checkin/v1/api/guest/${ids[1]}/ticket/reissue`);
    expect(reissued.status).toBe(200);

    const changes = await sync(alice, eventId, since);
    expect(changes.map((i) => i.guestId).sort()).toEqual([ids[0], ids[1]].sort());
    expect(ticketOf(changes, ids[0]!)).toEqual({ guestId: ids[0], kind: 'none', updated: expect.any(String) });
    expect(ticketOf(changes, ids[1]!)).toMatchObject({ kind: 'signed', serial: 2, code: reissued.body.code });
    // Another client's event is not found; a changedSince that is no date-time is 400.
    expect((await bob.call('GET', `/checkin/v1/api/event/${eventId}/tickets`)).status).toBe(404);
    expect((await alice.call('GET', `/checkin/v1/api/event/${eventId}/tickets?changedSince=yesterday`)).status).toBe(400);
  });
});
