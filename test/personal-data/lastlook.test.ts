/**
 * Erasure and GUIDs that are not the guest's: a short customId (a CRM number) can be inside any
 * random GUID by chance. Every GUID-shaped value stays (a CRM's `correlationId`, like `createdBy`
 * before it), unless one of the guest's values holds it whole (a customId that is that GUID).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

const api = '/checkin/v1/api';

describe('erasure keeps GUIDs that only happen to hold a short value', () => {
  let service: TestService;
  let client: Client;
  let eventId: string;

  beforeAll(async () => {
    service = await startTestService();
    client = await createClient(service);
    const event = await client.call('POST', `${api}/event`, { title: 'GUID night', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' });
    eventId = event.body.id as string;
  });

  afterAll(async () => {
    await service?.close();
  });

  it('keeps a GUID correlationId that a short customId is a piece of', async () => {
    const correlationId = randomUUID();
    const customId = correlationId.slice(2, 6);
    const created = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Corra', customId, correlationId });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.correlationId).toBe(correlationId);
    const erased = await client.call('POST', `${api}/guest/${created.body.id}/erase`, { reason: 'request 9' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    const guest = await client.call('GET', `${api}/guest/${created.body.id}`);
    expect(guest.status).toBe(200);
    expect(guest.body.customId).toBeNull();
    expect(guest.body.firstName).toBeNull();
    expect(guest.body.correlationId).toBe(correlationId);
  });

  it('scrubs a GUID correlationId that is itself the guest\'s customId', async () => {
    const crmId = randomUUID();
    const created = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Crm', customId: crmId.toUpperCase(), correlationId: crmId });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const erased = await client.call('POST', `${api}/guest/${created.body.id}/erase`, { reason: 'request 10' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    const guest = await client.call('GET', `${api}/guest/${created.body.id}`);
    expect(guest.status).toBe(200);
    expect(JSON.stringify(guest.body).toLowerCase()).not.toContain(crmId);
  });
});
