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
import { BSON, MongoClient } from 'mongodb';
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

/**
 * A guest's document holds its text and a lower-cased copy (NFC, then lower case) of the names,
 * email, customId, additionalInfo and tags. The copy can hold more bytes than the text: U+1D160
 * (4 bytes) has the NFC U+1D158 U+1D165 U+1D16E (12 bytes). A guest at the 4 MiB text limit made of
 * such text made a document over MongoDB's 16 MiB, which MongoDB refuses ("Resulting document after
 * update is larger than 16777216"), and the guests projection retried it for ever. FerretDB 1.24
 * stores documents over 16 MiB without a word, and the embedded store has no limit, so the rule is
 * checked where it is made (the API), on the embedded store (as test/adapters/mongohunt.test.ts).
 */
describe('the 4 MiB of a guest count what its lower-cased copies take beyond the text', () => {
  let service: TestService;
  let alice: Client;
  beforeAll(async () => {
    service = await startTestService({ BODY_LIMIT: '16mb' });
    alice = await createClient(service);
  }, 120_000);
  afterAll(() => service?.close());

  const growing = '\u{1D160}';
  it('refuses a guest whose text is under 4 MiB but whose document would be over 16 MiB, naming the field', async () => {
    const eventId = await newEvent(alice);
    // 4,194,300 bytes of text: its copy holds 12,582,900 more, over 16 MiB in one document with the two fields alone.
    const additionalInfo = growing.repeat(1_048_575);
    expect(BSON.calculateObjectSize({ additionalInfo, additionalInfoLower: additionalInfo.normalize('NFC').toLowerCase() })).toBeGreaterThan(16 * 1024 * 1024);
    const refused = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Big', additionalInfo });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: 'additionalInfo' })]);
    // 1.2 MB of such text counts 3.6 MB (its copy takes 2.4 MB more): taken, a document of 4.8 MB.
    const taken = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Less', additionalInfo: growing.repeat(300_000) });
    expect(taken.status).toBe(200);
    // Text whose copy is no larger counts as before: 4 MiB of it is taken.
    const plain = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Plain', additionalInfo: 'é'.repeat(2_097_140) });
    expect(plain.status).toBe(200);
  }, 120_000);
});
