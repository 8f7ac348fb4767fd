import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
  bob = await createClient(service);
});
afterAll(() => service.close());

const api = '/checkin/v1/api';
const names = ['Ann', 'Bea', 'Cid', 'Dan', 'Eve'];
const badCursor = { code: 'validation_error', errors: [{ path: 'cursor', message: expect.any(String) }] };

describe('a list cursor belongs to the query that returned it (docs/api.md, Lists)', () => {
  it('a guest list cursor of another event, another filter or another client is 400 on cursor, never a page', async () => {
    const first = await newEvent(alice);
    const second = await newEvent(alice);
    for (const eventId of [first, second]) {
      const saved = await alice.call('POST', `${api}/guests/${eventId}`, names.map((n) => ({ firstName: n, lastName: 'Same', tags: 'x' })));
      expect(saved.status).toBe(200);
    }
    // Bob has an event with the same id and the same guests.
    await newEvent(bob, { id: first });
    await bob.call('POST', `${api}/guests/${first}`, names.map((n) => ({ firstName: n, lastName: 'Same', tags: 'x' })));

    const page = await alice.call('GET', `${api}/guests/${first}?limit=2`);
    expect(page.body.items.map((g: { firstName: string }) => g.firstName)).toEqual(['Ann', 'Bea']);
    const cursor = page.body.nextCursor as string;

    const misuses = [
      alice.call('GET', `${api}/guests/${second}?limit=2&cursor=${cursor}`),
      alice.call('GET', `${api}/guests/${first}?limit=2&tag=x&cursor=${cursor}`),
      alice.call('GET', `${api}/guests/${first}?limit=2&state=not_admitted&cursor=${cursor}`),
      bob.call('GET', `${api}/guests/${first}?limit=2&cursor=${cursor}`),
    ];
    for (const reply of await Promise.all(misuses)) {
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject(badCursor);
    }
    // The same query goes on with it, whatever the page size.
    const next = await alice.call('GET', `${api}/guests/${first}?limit=5&cursor=${cursor}`);
    expect(next.status).toBe(200);
    expect(next.body.items.map((g: { firstName: string }) => g.firstName)).toEqual(['Cid', 'Dan', 'Eve']);
  });

  it('an events list cursor of another client is 400 on cursor', async () => {
    const carol = await createClient(service);
    await newEvent(carol);
    await newEvent(carol);
    const page = await carol.call('GET', `${api}/events?limit=1`);
    expect(page.body.nextCursor).toEqual(expect.any(String));
    const other = await bob.call('GET', `${api}/events?limit=1&cursor=${page.body.nextCursor}`);
    expect(other.status).toBe(400);
    expect(other.body).toMatchObject(badCursor);
    expect((await carol.call('GET', `${api}/events?limit=1&cursor=${page.body.nextCursor}`)).body.items).toHaveLength(1);
  });
});

describe('walking the guest list while guests change (docs/guests.md, "Paging while guests change")', () => {
  it('a changedSince walk skips no guest: one changed behind the cursor comes again, an erased one comes erased', async () => {
    const eventId = await newEvent(alice);
    const saved = await alice.call('POST', `${api}/guests/${eventId}`, ['Ann', 'Bea', 'Cid', 'Dan', 'Eve'].map((n) => ({ firstName: n })));
    const id = Object.fromEntries(saved.body.map((g: { firstName: string; id: string }) => [g.firstName, g.id]));
    const since = `changedSince=${encodeURIComponent('2000-01-01T00:00:00Z')}`;
    let page = await alice.call('GET', `${api}/guests/${eventId}?limit=2&${since}`);
    const seen: string[] = page.body.items.map((g: { id: string }) => g.id);
    const first = [...seen];
    // Behind the cursor: a guest already returned changes; ahead of it: one is erased.
    await alice.call('POST', `${api}/guests/${eventId}`, [{ id: first[0], additionalInfo: 'changed' }]);
    const notYet = Object.values(id).find((g) => !first.includes(g as string)) as string;
    expect((await alice.call('POST', `${api}/guest/${notYet}/erase`, { reason: 'asked' })).status).toBe(200);
    const items: Array<{ id: string; erased?: boolean; additionalInfo: string | null }> = [];
    while (page.body.nextCursor) {
      page = await alice.call('GET', `${api}/guests/${eventId}?limit=2&${since}&cursor=${page.body.nextCursor}`);
      expect(page.status).toBe(200);
      items.push(...page.body.items);
    }
    seen.push(...items.map((g) => g.id));
    expect(new Set(seen)).toEqual(new Set(Object.values(id)));
    expect(seen.filter((g) => g === first[0])).toHaveLength(2);
    expect(items.find((g) => g.id === first[0])?.additionalInfo).toBe('changed');
    expect(items.at(-1)).toMatchObject({ id: notYet, erased: true });
  });

  it('an event’s new timeZoneId leaves the guests’ validity windows at the instants they were read as', async () => {
    const eventId = await newEvent(alice, { timeZoneId: 'Europe/Berlin' });
    const [guest] = (await alice.call('POST', `${api}/guests/${eventId}`, [{ firstName: 'Zoe', validFrom: '2026-06-01T10:00:00' }])).body;
    expect(guest.validFrom).toBe('2026-06-01T08:00:00.000Z');
    const moved = await alice.call('POST', `${api}/event`, { id: eventId, title: 'Ball', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z', timeZoneId: 'America/New_York' });
    expect(moved.body.timeZoneId).toBe('America/New_York');
    expect((await alice.call('GET', `${api}/guest/${guest.id}`)).body.validFrom).toBe('2026-06-01T08:00:00.000Z');
  });
});
