/**
 * Gate and device names are any text a door device sends. They become field names in the read
 * models (stats, timeline), so a name every JavaScript object already has (`__proto__`,
 * `constructor`, `toString`) once stopped the projections (`__proto__`: every later write waited
 * in vain for its read model) or vanished from the counts (`constructor`, `toString`).
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

const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'Hall A.1', '$gate', 'North'];

describe('gate and device names that every JavaScript object has', () => {
  it('are counted like any other name in the stats and the timeline, and the projections go on', async () => {
    const ev = await newEvent(alice);
    const guests = names.map((_, i) => ({ firstName: `G${i}`, barcode: `GATE-${i}` }));
    expect((await alice.call('POST', `/checkin/v1/api/guests/${ev}`, guests)).status).toBe(200);
    for (const [i, name] of names.entries()) {
      const scan = await alice.call('POST', `/checkin/v1/api/guests/${ev}/checkin`, {
        barcode: `GATE-${i}`,
        gate: name,
        device: name,
        at: '2026-11-21T10:01:00Z',
      });
      expect(scan.status, name).toBe(200);
      expect(scan.body.result, name).toBe('admitted');
    }
    const perName = Object.fromEntries(names.map((name) => [name, { admissions: 1, people: 1 }]));
    const stats = await alice.call('GET', `/checkin/v1/api/event/${ev}/stats`);
    expect(stats.status).toBe(200);
    expect(stats.body.admitted).toBe(names.length);
    expect(stats.body.admissionsByGate).toEqual(perName);
    expect(stats.body.admissionsByDevice).toEqual(perName);
    for (const by of ['gate', 'device']) {
      const timeline = await alice.call('GET', `/checkin/v1/api/event/${ev}/timeline?bucket=5&by=${by}`);
      expect(timeline.status).toBe(200);
      const groups = timeline.body.buckets.find((b: { admissions: number }) => b.admissions > 0).groups;
      expect(Object.keys(groups).sort()).toEqual([...names].sort());
      for (const name of names) expect(groups[name].admissions, `${by} ${name}`).toBe(1);
    }
    // The projections went on: a later write answers with its read model.
    const after = await alice.call('POST', '/checkin/v1/api/guest', { eventId: ev, firstName: 'After' });
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ firstName: 'After', eventId: ev });
    expect(Object.prototype).not.toHaveProperty('admissions');
  });
});
