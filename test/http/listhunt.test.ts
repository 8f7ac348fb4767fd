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
