/**
 * A guest's erasure and the stored replies of idempotent requests (kept 24 h): the erased guest's
 * own reply loses its personal values and stays valid JSON; another guest's reply that merely
 * holds the same text (a shared last name) is replayed unchanged. Before, every reply of the
 * client holding any of the values became the bare text "[erased]" (found by the restore drill).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

const api = '/checkin/v1/api';

describe('erasure and stored idempotent replies', () => {
  let service: TestService;
  let client: Client;

  beforeAll(async () => {
    service = await startTestService();
    client = await createClient(service);
  });

  afterAll(async () => {
    await service?.close();
  });

  it("scrubs the erased guest's own replies, keeps them JSON, and leaves another guest's reply with the same last name as it was", async () => {
    const event = await client.call('POST', `${api}/event`, { title: 'Drill night', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' });
    const eventId = event.body.id as string;
    const erasedKey = `erased-${randomUUID()}`;
    const keptKey = `kept-${randomUUID()}`;
    const erasedBody = { eventId, firstName: 'Erasme', lastName: 'Drillsworth', email: 'erasme.drillsworth@example.com', barcode: 'DRILL-ERASE-1' };
    const keptBody = { eventId, firstName: 'Idem', lastName: 'Drillsworth', email: 'idem.other@example.com', barcode: 'DRILL-KEEP-1' };
    const first = await client.call('POST', `${api}/guest`, erasedBody, { 'Idempotency-Key': erasedKey });
    const other = await client.call('POST', `${api}/guest`, keptBody, { 'Idempotency-Key': keptKey });
    expect(first.status).toBe(200);
    expect(other.status).toBe(200);
    // A door scan of the guest to be erased, sent with a key too: its reply names the guest.
    const scanKey = `scan-${randomUUID()}`;
    const scan = await client.call('POST', `${api}/guests/${eventId}/checkin`, { barcode: 'DRILL-ERASE-1' }, { 'Idempotency-Key': scanKey });
    expect(scan.status, JSON.stringify(scan.body)).toBe(200);

    const erased = await client.call('POST', `${api}/guest/${first.body.id}/erase`, { reason: 'request 7' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);

    // Another guest's retry: the very answer it got the first time.
    const otherAgain = await client.call('POST', `${api}/guest`, keptBody, { 'Idempotency-Key': keptKey });
    expect(otherAgain.status).toBe(200);
    expect(otherAgain.body).toEqual(other.body);

    // The erased guest's retry: the same guest (nothing created), as JSON, without its values.
    const firstAgain = await client.call('POST', `${api}/guest`, erasedBody, { 'Idempotency-Key': erasedKey });
    expect(firstAgain.status).toBe(200);
    expect(typeof firstAgain.body).toBe('object');
    expect(firstAgain.body.id).toBe(first.body.id);
    const text = JSON.stringify(firstAgain.body);
    for (const value of ['Erasme', 'erasme.drillsworth@example.com', 'DRILL-ERASE-1']) expect(text).not.toContain(value);

    const scanAgain = await client.call('POST', `${api}/guests/${eventId}/checkin`, { barcode: 'DRILL-ERASE-1' }, { 'Idempotency-Key': scanKey });
    expect(scanAgain.status).toBe(200);
    expect(typeof scanAgain.body).toBe('object');
    expect(scanAgain.body.result).toBe(scan.body.result);
    expect(JSON.stringify(scanAgain.body)).not.toContain('Erasme');

    const list = await client.call('GET', `${api}/guests/${eventId}?limit=10`);
    expect(list.status).toBe(200);
  });

  it("keeps createdBy (the caller's User id) when the erased guest's customId is a piece of it", async () => {
    const event = await client.call('POST', `${api}/event`, { title: 'Ids night', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' });
    const eventId = event.body.id as string;
    // A short CRM number that happens to be inside the caller's id (a CI run met "2026" inside one by chance).
    const customId = String(client.id).replace(/-/g, '').slice(3, 7);
    const created = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Numa', customId });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.createdBy).toBe(client.id);
    const erased = await client.call('POST', `${api}/guest/${created.body.id}/erase`, { reason: 'request 8' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    const guest = await client.call('GET', `${api}/guest/${created.body.id}`);
    expect(guest.body.customId).toBeNull();
    expect(guest.body.createdBy).toBe(client.id);
    const access = await client.call('GET', `${api}/guest/${created.body.id}/personal-data`);
    expect(access.status).toBe(200);
    expect(JSON.stringify(access.body)).not.toContain('[erased]');
  });
});
