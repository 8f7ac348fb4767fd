import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

/** docs/read-models.md, `scans`: an admission sent with `force: true` carries `forced: true`; others have no `forced`. */
let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

it('marks forced admissions in the scans read model, so analysts can count overrides', async () => {
  const eventId = await newEvent(alice);
  const blocked = (await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo', barcode: 'F-1' })).body.id;
  const plain = (await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Al', barcode: 'F-2' })).body.id;
  expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { ids: [blocked], reason: 'unpaid' })).status).toBe(200);
  const forced = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'F-1', force: true });
  expect(forced.body.result).toBe('admitted');
  const normal = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'F-2' });
  expect(normal.body.result).toBe('admitted');

  const scans = service.platform.readStore.collection('scans');
  const forcedDoc = await eventually(async () => (await scans.get(forced.body.scanId)) ?? undefined, 60_000, 'forced scan projected');
  const normalDoc = await eventually(async () => (await scans.get(normal.body.scanId)) ?? undefined, 60_000, 'scan projected');
  expect(forcedDoc).toMatchObject({ guestId: blocked, result: 'admitted', forced: true });
  expect(normalDoc).toMatchObject({ guestId: plain, result: 'admitted' });
  expect(normalDoc).not.toHaveProperty('forced');
  expect(await scans.count({ eventId, forced: true })).toBe(1);
});
