import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * MongoDB stores a document of at most 16 MiB (16,777,216 bytes) and refuses an update that would
 * make it larger; the guests read model keeps a lower-cased copy of the names, email, customId,
 * additionalInfo and tags, so one guest with 9 MB of additionalInfo (a request BODY_LIMIT takes)
 * made a document of 18 MB that MongoDB refuses, and the guests projection retried that batch for
 * ever: no guest of any client changed in the read models after it. The embedded store has no
 * such limit, so the rule is checked here, where it is made (the API), on the embedded store: the
 * same rule holds on every store, so events never hold a guest a rebuild onto MongoDB cannot store.
 */
let service: TestService;
let alice: Client;
let eventId: string;

beforeAll(async () => {
  service = await startTestService({ BODY_LIMIT: '16mb' });
  alice = await createClient(service);
  const event = await alice.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-13T02:00:00Z' });
  expect(event.status).toBe(200);
  eventId = event.body.id;
});
afterAll(() => service.close());

const text = (bytes: number) => 'a'.repeat(bytes);
/** The documented limit (docs/guests.md, "Size of a guest"): 4 MiB of text per guest. */
const GUEST_TEXT_LIMIT = 4 * 1024 * 1024;

describe('a guest fits in a MongoDB document (16 MiB) with its lower-cased copies', () => {
  it('refuses a guest whose texts are over 4 MiB with 400 naming the field, and stores nothing', async () => {
    const big = await alice.call('POST', '/checkin/v1/api/guest', { eventId, id: '0b6f3c1e-8a52-4c2e-9d0a-1f6e2b7c9d01', additionalInfo: text(9_000_000) });
    expect(big.status).toBe(400);
    expect(big.body.errors).toEqual([expect.objectContaining({ path: 'additionalInfo' })]);
    expect((await alice.call('GET', '/checkin/v1/api/guest/0b6f3c1e-8a52-4c2e-9d0a-1f6e2b7c9d01')).status).toBe(404);

    // Several fields together count: each under the limit, the guest over it.
    const spread = await alice.call('POST', '/checkin/v1/api/guest', { eventId, image: text(GUEST_TEXT_LIMIT - 10), lastName: text(11) });
    expect(spread.status).toBe(400);
    expect(spread.body.errors[0].path).toBe('image');
  });

  it('takes a guest at the limit, and a 1 MB image (20 times the recommended size)', async () => {
    const atLimit = await alice.call('POST', '/checkin/v1/api/guest', { eventId, image: text(GUEST_TEXT_LIMIT - 2), lastName: 'Ng' });
    expect(atLimit.status).toBe(200);
    const image = await alice.call('POST', '/checkin/v1/api/guest', { eventId, image: text(1_000_000), firstName: 'Ada' });
    expect(image.status).toBe(200);
    expect(image.body.image).toHaveLength(1_000_000);
  });

  it('counts what an upsert keeps of the stored guest: fields and tags added one request at a time', async () => {
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, customId: 'grow-1', image: text(3_000_000) });
    expect(created.status).toBe(200);
    const grown = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'grow-1', additionalInfo: text(1_500_000) }]);
    expect(grown.status).toBe(400);
    expect(grown.body.errors).toEqual([expect.objectContaining({ path: '0.additionalInfo' })]);
    expect((await alice.call('GET', `/checkin/v1/api/guest/${created.body.id}`)).body.additionalInfo).toBeNull();

    // Tags are added to the stored ones unless removeObsoleteTags replaces them.
    const tagged = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'grow-1', tags: text(1_000_000) }]);
    expect(tagged.status).toBe(204);
    const more = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'grow-1', tags: `b${text(999_999)}` }]);
    expect(more.status).toBe(400);
    expect(more.body.errors[0].path).toBe('0.tags');
    const replaced = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert?removeObsoleteTags=true`, [{ customId: 'grow-1', tags: `b${text(999_999)}` }]);
    expect(replaced.status).toBe(204);

    // A change that makes the guest smaller is taken.
    const smaller = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'grow-1', image: '', additionalInfo: text(1_500_000) }]);
    expect(smaller.status).toBe(204);
  });

  it('bounds a bulk block reason to 4 MiB', async () => {
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, customId: 'block-1', image: text(3_500_000) });
    expect(created.status).toBe(200);
    const huge = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { customIds: ['block-1'], reason: text(9_000_000) });
    expect(huge.status).toBe(400);
    expect(huge.body.errors).toEqual([expect.objectContaining({ path: 'reason' })]);
    expect((await alice.call('GET', `/checkin/v1/api/guest/${created.body.id}`)).body.blockedDate).toBeNull();
  });

  it('does not count a block reason against the records of a blocked guest (a record cannot change it)', async () => {
    const created = await alice.call('POST', '/checkin/v1/api/guest', { eventId, customId: 'block-2', image: text(3_500_000) });
    expect(created.status).toBe(200);
    const blocked = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { customIds: ['block-2'], reason: text(1_000_000) });
    expect(blocked.status).toBe(200);
    // The reason is not the record's to change (spec rule 3), so it does not count against the record.
    const renamed = await alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ customId: 'block-2', firstName: 'Ada' }]);
    expect(renamed.status).toBe(204);
  });
});
