import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOutbox } from '../support/mail-readers.js';
import { adminKey, createClient, newEvent, request, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';

/**
 * The interface spec read as an integrator reads it, seventh pass: Comms and Events (templates,
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
const admin = (method: string, pathname: string, body?: unknown) =>
  request(service.url, method, pathname, body, { authorization: `Bearer ${adminKey}` });

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

const mailsTo = async (email: string) => (await readOutbox(path.join(service.dataDir, 'outbox'))).filter((m) => m.to.email === email);

describe('Authentication rule 3: no email goes out while sender verification is not completed', () => {
  it('a guest created with commsTemplateId after trust was revoked is created, its send fails as comms.failed trust_required, and nothing is mailed', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const eventId = await newEvent(client);
    const templateId = await templateOf(client, eventId);
    expect((await admin('PATCH', `/admin/v1/accounts/${client.id}`, { senderTrusted: false })).status).toBe(200);

    const email = `untrusted-${Date.now()}@example.com`;
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Una', email, commsTemplateId: templateId });
    expect(guest.status, JSON.stringify(guest.body)).toBe(200);
    // The comms routes themselves say so at once.
    expect((await client.call('POST', `${api}/send`, { templateId, attendeeIds: [guest.body.id] })).body.code).toBe('trust_required');

    const [delivery] = await receiver.waitFor(1, 30_000);
    expect(delivery!.body).toMatchObject({
      type: 'comms.failed',
      data: { attendeeId: guest.body.id, templateId, status: 'failed', error: expect.stringMatching(/^trust_required/) },
    });
    expect(await mailsTo(email)).toEqual([]);

    // Trust restored: the next record that names the template sends.
    await admin('PATCH', `/admin/v1/accounts/${client.id}`, { senderTrusted: true });
    const resent = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [guest.body.id] });
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    await eventually(async () => (await mailsTo(email)).length === 1, 30_000, 'the mail after trust was restored');
  });
});

describe('Bodies: an optional field of a comms body takes null as not given, as the Guest and Comms template bodies do', () => {
  // A Java client generated from the document writes null for every property left unset.
  it('POST /send with correlationId null sends, and the webhook has no correlationId', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const eventId = await newEvent(client);
    const templateId = await templateOf(client, eventId);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, email: `null-corr-${Date.now()}@example.com` });
    const sent = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [guest.body.id], correlationId: null });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const [delivery] = await receiver.waitFor(1, 30_000);
    expect(delivery!.body.type).toBe('comms.sent');
    expect(delivery!.body.data).not.toHaveProperty('correlationId');
  });

  it('POST /webhook/test with correlationId null is a test without one', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const reply = await client.call('POST', `${api}/webhook/test`, { correlationId: null });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const [delivery] = await receiver.waitFor(1, 30_000);
    expect(delivery!.body.data).not.toHaveProperty('correlationId');
  });

  it('POST /domain with subdomain and sendingAddress null configures the domain with their defaults', async () => {
    const client = await commsClient();
    const reply = await client.call('POST', `${api}/domain`, { domain: `null-fields-${Date.now()}.example.org`, subdomain: null, sendingAddress: null });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.sendingAddress).toMatch(/^invites@null-fields-/);
  });
});

describe('POST /domain: a blank subdomain is the default, as a blank sendingAddress is', () => {
  it('subdomain "" configures the domain as if it were left out; a label that is not one is still 400', async () => {
    const stamp = Date.now();
    const blank = await (await commsClient()).call('POST', `${api}/domain`, { domain: `blank-${stamp}.example.org`, subdomain: '', sendingAddress: '' });
    expect(blank.status, JSON.stringify(blank.body)).toBe(200);
    const absent = await (await commsClient()).call('POST', `${api}/domain`, { domain: `blank-${stamp}.example.org` });
    expect(absent.status, JSON.stringify(absent.body)).toBe(200);
    // The provider's default return-path label (`em` and digits), and the default sending address, for both.
    for (const body of [blank.body, absent.body]) {
      expect(body.subdomain).toMatch(/^em\d+$/);
      expect(body.sendingAddress).toBe(`invites@blank-${stamp}.example.org`);
    }
    const wrong = await (await commsClient()).call('POST', `${api}/domain`, { domain: `wrong-${stamp}.example.org`, subdomain: 'two.labels' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toEqual([expect.objectContaining({ path: 'subdomain' })]);
  });
});

describe('Guest.correlationId is a string: the same correlationId is taken wherever it is echoed', () => {
  it('POST /send and POST /webhook/test take a correlationId as long as a guest create takes, and echo it byte for byte (signed)', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const eventId = await newEvent(client);
    const templateId = await templateOf(client, eventId);
    const correlationId = `crm:{"batch":"Zoë–日本 😀"}:${'x'.repeat(300)}`;
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, email: `long-corr-${Date.now()}@example.com`, correlationId });
    expect(guest.status).toBe(200);
    const sent = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [guest.body.id], correlationId });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const test = await client.call('POST', `${api}/webhook/test`, { correlationId });
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    const deliveries = await receiver.waitFor(2, 30_000);
    expect(deliveries.map((d) => d.body.type).sort()).toEqual(['comms.sent', 'comms.test']);
    for (const delivery of deliveries) {
      expect(delivery.specVerified).toBe(true);
      expect(delivery.body.data.correlationId).toBe(correlationId);
    }
  });

  it('POST /send bounds its correlationId at 4,096 characters (copied to up to 200 guests), 400 on the field, nothing sent', async () => {
    const client = await commsClient();
    const eventId = await newEvent(client);
    const templateId = await templateOf(client, eventId);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, email: `bounded-corr-${Date.now()}@example.com` });
    const refused = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [guest.body.id], correlationId: 'x'.repeat(4097) });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: 'correlationId' })]);
    expect((await client.call('GET', `${api}/invitations?attendeeId=${guest.body.id}`)).body.items).toEqual([]);
    expect((await client.call('POST', `${api}/send`, { templateId, attendeeIds: [guest.body.id], correlationId: 'x'.repeat(4096) })).status).toBe(200);
  });
});

describe('Comms template: an empty fromAddress or replyTo (a form left blank) is no override, as an empty email or customId is none on a guest', () => {
  it('takes "" in fromAddress and replyTo, answers them null, and sends from the account’s address without a Reply-To', async () => {
    const client = await commsClient();
    const eventId = await newEvent(client);
    const reply = await client.call('POST', `${api}/template`, { eventId, name: 'Blank form', html: '<p>Hi</p>', fromAddress: '', replyTo: '' });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ fromAddress: null, replyTo: null });
    const email = `blank-from-${Date.now()}@example.com`;
    expect((await client.call('POST', '/checkin/v1/api/guest', { eventId, email, commsTemplateId: reply.body.id })).status).toBe(200);
    const [mail] = await eventually(async () => {
      const mails = await mailsTo(email);
      return mails.length === 1 ? mails : undefined;
    }, 30_000, 'the mail');
    expect(mail!.from.email).toBe('invites@checkin.localhost');
    expect(mail!.replyTo).toBeUndefined();
  });

  it('still refuses a fromAddress or replyTo that is text but no address (they become mail headers)', async () => {
    const client = await commsClient();
    const eventId = await newEvent(client);
    const reply = await client.call('POST', `${api}/template`, { eventId, name: 'n', html: '<p>Hi</p>', fromAddress: ' ', replyTo: 'desk' });
    expect(reply.status).toBe(400);
    expect(reply.body.errors.map((e: { path: string }) => e.path)).toEqual(['fromAddress', 'replyTo']);
  });

  it('the document says so: the pattern of fromAddress and replyTo takes the empty string', async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as any;
    for (const field of ['fromAddress', 'replyTo']) {
      const pattern = new RegExp(doc.components.schemas.CommsTemplate.properties[field].pattern);
      expect(pattern.test(''), field).toBe(true);
      expect(pattern.test('ada@example.com'), field).toBe(true);
      expect(pattern.test('desk'), field).toBe(false);
    }
  });
});
