/**
 * What a real MongoDB refuses where a caller's text becomes part of an update path (docs/read-models.md,
 * "On MongoDB: what the store relies on"). A gate or device name is a field name of `event_stats`
 * and `timeline_minutes` (`gates.<name>.admissions`); MongoDB refuses an update path with an empty
 * part (EmptyFieldName, code 56: "The update path 'gates..admissions' contains an empty field name"),
 * and so does FerretDB. A check-in sent with `"gate": ""` made such a path: on the MongoDB read store
 * the guests and timeline projections retried that batch for ever, and no later scan was counted.
 * The embedded store took the path (a key `""`), so only a run on a MongoDB-protocol server shows it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoClient } from 'mongodb';
import { fieldKey, fieldName } from '../../src/projections/guests.js';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';

/** What MongoDB takes as one part of a dotted update path. */
const validPathPart = (key: string) => key.length > 0 && !key.includes('.') && !key.startsWith('$') && !(key in {});

describe('gate and device names as field names', () => {
  it('every name, the empty one included, becomes a key MongoDB takes as a path part, and comes back as it was', () => {
    const names = ['', ' ', 'North', 'a.b', '$gate', '.', '%', '%25', '%2E', 'constructor', '__proto__', 'Nord-Tür 1', '😀'];
    const keys = names.map(fieldKey);
    for (const key of keys) expect(validPathPart(key), key).toBe(true);
    expect(new Set(keys).size).toBe(names.length);
    expect(keys.map(fieldName)).toEqual(names);
  });
});

const url = process.env.MONGO_URL;
const dbName = `mongoreal_${Date.now()}_${process.pid}`;

for (const store of ['embedded', 'mongo'] as const) {
  describe.skipIf(store === 'mongo' && !url)(`a scan with an empty gate and device (${store} read store${store === 'mongo' ? ': MONGO_URL, skipped without one' : ''})`, () => {
    let service: TestService;
    let alice: Client;
    beforeAll(async () => {
      service = await startTestService(store === 'mongo' ? { MONGO_URL: url!, MONGO_DB: dbName } : {});
      alice = await createClient(service);
    }, 120_000);
    afterAll(async () => {
      await service?.close();
      if (store === 'mongo') {
        const client = new MongoClient(url!);
        await client.db(dbName).dropDatabase().catch(() => undefined);
        await client.close();
      }
    });

    it('is counted under the empty name, and the scans after it are counted too', async () => {
      const eventId = await newEvent(alice);
      const created = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
        { firstName: 'Empty', barcode: 'EMPTY-1' },
        { firstName: 'After', barcode: 'EMPTY-2' },
      ]);
      expect(created.status).toBe(200);
      const first = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'EMPTY-1', gate: '', device: '' });
      expect(first.body).toMatchObject({ result: 'admitted' });
      const second = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'EMPTY-2', gate: 'North' });
      expect(second.body).toMatchObject({ result: 'admitted' });

      const stats = await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`);
      expect(stats.status).toBe(200);
      expect(stats.body.admissionsByGate).toEqual({ '': { admissions: 1, people: 1 }, North: { admissions: 1, people: 1 } });
      expect(stats.body.admissionsByDevice).toEqual({ '': { admissions: 1, people: 1 }, '(none)': { admissions: 1, people: 1 } });

      const timeline = await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?by=gate`);
      expect(timeline.status).toBe(200);
      expect(timeline.body.totals).toMatchObject({ admissions: 2, admitted: 2 });
      const groups: Record<string, { admissions: number }> = {};
      for (const bucket of timeline.body.buckets as { groups?: Record<string, { admissions: number }> }[]) {
        for (const [name, counts] of Object.entries(bucket.groups ?? {})) groups[name] = { admissions: (groups[name]?.admissions ?? 0) + counts.admissions };
      }
      expect(groups).toEqual({ '': { admissions: 1 }, North: { admissions: 1 } });
    }, 120_000);
  });
}
