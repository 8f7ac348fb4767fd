import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, request, startTestService, type Client, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

/**
 * The interface spec read as an integrator reads it, tenth pass: Comms and Events (templates,
 * webhooks, sending domain, sends, the webhook deliveries). The places where the service still
 * differed from the spec and was mended.
 */

const api = '/comms/v1/api/comms';
let service: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true' });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service.close();
});

const commsClient = () => createClient(service, { commsApiEnabled: true, senderTrusted: true });

async function receiverFor(client: Client): Promise<Receiver> {
  const receiver = await startReceiver();
  receivers.push(receiver);
  const configured = await client.call('POST', `${api}/webhook`, { url: receiver.url });
  expect(configured.status).toBe(200);
  receiver.secret = configured.body.secret;
  return receiver;
}

async function templateOf(client: Client, eventId: string): Promise<string> {
  const reply = await client.call('POST', `${api}/template`, { eventId, name: 'Invite', html: '<p>Hello {{firstName}}</p>' });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.id;
}

describe('Guest.correlationId, "echoed in the webhook payload": the guest’s own, also when a later record leaves it out', () => {
  it('an upsert that names a template without repeating correlationId echoes the one the guest holds', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const eventId = await newEvent(client);
    const templateId = await templateOf(client, eventId);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', email: `corr-kept-${Date.now()}@example.com`, correlationId: 'crm-contact-7' });
    expect(guest.status, JSON.stringify(guest.body)).toBe(200);

    // The CRM's next sync sends only what changed: the template.
    const synced = await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id: guest.body.id, commsTemplateId: templateId }]);
    expect(synced.status, JSON.stringify(synced.body)).toBe(204);
    expect((await client.call('GET', `/checkin/v1/api/guest/${guest.body.id}`)).body.correlationId).toBe('crm-contact-7');

    const [delivery] = await receiver.waitFor(1, 30_000);
    expect(delivery!.specVerified).toBe(true);
    expect(delivery!.body).toMatchObject({ type: 'comms.sent', data: { attendeeId: guest.body.id, templateId, correlationId: 'crm-contact-7' } });
  });

  it('a record that gives another correlationId echoes that one, and "" (cleared) echoes none', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const eventId = await newEvent(client);
    const [first, second] = [await templateOf(client, eventId), await templateOf(client, eventId)];
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo', email: `corr-new-${Date.now()}@example.com`, correlationId: 'crm-old' });
    await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id: guest.body.id, commsTemplateId: first, correlationId: 'crm-new' }]);
    const [renamed] = await receiver.waitFor(1, 30_000);
    expect(renamed!.body.data.correlationId).toBe('crm-new');

    await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id: guest.body.id, commsTemplateId: second, correlationId: '' }]);
    const [, cleared] = await receiver.waitFor(2, 30_000);
    expect(cleared!.body.data.templateId).toBe(second);
    expect(cleared!.body.data).not.toHaveProperty('correlationId');
  });
});

describe('The OpenAPI document types the comms GUIDs as the spec does (Comms template id; the webhook body’s guest, template and tracking GUIDs)', () => {
  it('CommsTemplateResponse.id, as CommsTemplate.id in the request, and the ids of sends, invitations and comms events are uuid', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const { schemas } = doc.components;
    expect(schemas.CommsTemplate.properties.id.format).toBe('uuid');
    expect(schemas.CommsTemplateResponse.properties.id.format).toBe('uuid');
    const send = schemas.CommsSendResult.properties;
    expect([send.templateId.format, send.invitations.items.properties.attendeeId.format, send.invitations.items.properties.attendeeInvitationId.format]).toEqual(['uuid', 'uuid', 'uuid']);
    for (const field of ['attendeeInvitationId', 'attendeeId', 'templateId']) {
      expect(schemas.Invitation.properties[field].format, `Invitation.${field}`).toBe('uuid');
      expect(schemas.CommsEvent.properties.data.properties[field].format, `CommsEvent.data.${field}`).toBe('uuid');
    }
  });

  it('every webhook’s body types data.attendeeId, data.templateId and data.attendeeInvitationId uuid, as it does id', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const webhooks = Object.entries(doc.webhooks as Record<string, { post: { requestBody: { content: Record<string, { schema: any }> } } }>);
    expect(webhooks).toHaveLength(10);
    for (const [type, entry] of webhooks) {
      const schema = entry.post.requestBody.content['application/json']!.schema;
      const body = schema.$ref ? doc.components.schemas[schema.$ref.split('/').at(-1)] : schema;
      expect(body.properties.id.format, `${type} id`).toBe('uuid');
      for (const field of ['attendeeId', 'templateId', 'attendeeInvitationId']) {
        expect(body.properties.data.properties[field].format, `${type} data.${field}`).toBe('uuid');
      }
    }
  });
});
