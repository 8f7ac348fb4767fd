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

describe("erasure keeps the provider's message id of the guest's invitation", () => {
  let service: TestService;
  let client: Client;

  beforeAll(async () => {
    service = await startTestService();
    client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  });

  afterAll(async () => {
    await service?.close();
  });

  it('a customId that is a piece of the message id (random text, so any short value can be) leaves it as it was', async () => {
    const event = await client.call('POST', `${api}/event`, { title: 'Mail night', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' });
    const eventId = event.body.id as string;
    const template = await client.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invitation', subject: 'Hi', html: '<p>Hi</p>' });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    const created = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Mela', email: 'mela@example.com', commsTemplateId: template.body.id });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const guestId = created.body.id as string;
    const invitation = async () => {
      const list = await client.call('GET', `/comms/v1/api/comms/invitations?eventId=${encodeURIComponent(eventId)}`);
      expect(list.status, JSON.stringify(list.body)).toBe(200);
      return (list.body.items as { attendeeId: string; status: string; providerMessageId?: string }[]).find((i) => i.attendeeId === guestId);
    };
    let sent: Awaited<ReturnType<typeof invitation>>;
    for (let i = 0; i < 300 && !(sent = await invitation())?.providerMessageId; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const messageId = sent!.providerMessageId!;
    expect(messageId, 'the invitation was sent within the hang guard').toBeTruthy();
    const customId = messageId.slice(2, 6);
    const upsert = await client.call('PUT', `${api}/guests/${eventId}/upsert`, [{ id: guestId, firstName: 'Mela', customId }]);
    expect(upsert.status, JSON.stringify(upsert.body)).toBe(204);
    const erased = await client.call('POST', `${api}/guest/${guestId}/erase`, { reason: 'request 11' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect((await invitation())?.providerMessageId).toBe(messageId);
  });
});
