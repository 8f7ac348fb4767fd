import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

async function snapshot(collection: string): Promise<unknown[]> {
  const docs: unknown[] = [];
  for await (const doc of service.platform.readStore.collection(collection).stream({}, { sort: { _id: 1 } })) docs.push(doc);
  return docs;
}

describe('projection rebuild', () => {
  it('rebuilds the guests read models from the event store into exactly the live documents', async () => {
    const ev = (await alice.call('POST', '/checkin/v1/api/event', { title: 'R', startTime: '2026-01-01T00:00:00Z', endTime: '2027-01-01T00:00:00Z' })).body.id;
    const records = Array.from({ length: 150 }, (_, i) => ({
      firstName: `F${i}`,
      lastName: `L${i % 7}`,
      barcode: `RB-${i}`,
      tags: i % 2 ? 'odd' : 'even',
      plusOnes: i % 3,
      customId: `rc-${i}`,
    }));
    await alice.call('PUT', `/checkin/v1/api/guests/${ev}/upsert`, records);
    await alice.call('PUT', `/checkin/v1/api/guests/${ev}/upsert?removeObsoleteTags=true`, [{ customId: 'rc-1', tags: 'new', email: 'x@example.com' }]);
    for (let i = 0; i < 20; i++) {
      await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin`, { barcode: `RB-${i}`, gate: i % 2 ? 'A' : 'B', plusOnes: 1, nonce: `n-${i}` });
    }
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin`, { barcode: 'nope' });
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkout`, { barcode: 'RB-3' });
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin/undo`, { nonce: 'n-5' });
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/block`, { barcodes: ['RB-30', 'RB-31'], reason: 'r' });
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/unblock`, { barcodes: ['RB-31'] });

    const collections = ['guests', 'scans', 'team_stats', 'event_stats'];
    const live = await Promise.all(collections.map(snapshot));
    expect((live[0] as unknown[]).length).toBe(150);

    const progress: number[] = [];
    await service.runner!.rebuild(['guests'], (p) => progress.push(p.position));
    const rebuilt = await Promise.all(collections.map(snapshot));
    expect(rebuilt).toEqual(live);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[progress.length - 1]).toBe(await service.platform.eventStore.headPosition());

    // The live loop resumed: new writes still reach the read model.
    await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin`, { barcode: 'RB-100' });
    expect((await alice.call('GET', `/checkin/v1/api/guests/${ev}?q=RB-100`)).body.items[0].admitted).toBeTruthy();
  });

  it('refuses an unknown projection name', async () => {
    await expect(service.runner!.rebuild(['nope'])).rejects.toThrow('unknown projection nope');
  });
});
