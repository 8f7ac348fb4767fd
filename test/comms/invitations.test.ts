import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics } from '../../src/workers/topics.js';
import { toMessage } from '../../src/workers/event-message.js';
import { readOutbox } from '../support/mail-readers.js';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';
import { guestStream } from '../../src/domain/guest.js';
import { invitationStream } from '../../src/domain/invitation.js';
import { deliveryStream, webhookIdFor } from '../../src/domain/webhook.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';

const api = '/comms/v1/api/comms';
const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const sendgridKey = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');

let service: TestService;
const receivers: Receiver[] = [];
const outbox = () => path.join(service.dataDir, 'outbox');

beforeAll(async () => {
  service = await startTestService({
    WEBHOOK_ALLOW_INSECURE: 'true',
    SPAM_BLOCKED_DOMAINS: 'evil.test',
    SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: sendgridKey,
    INVITES_SENDING_ADDRESS: 'invites@checkin.test',
  });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service.close();
});

const commsClient = () => createClient(service, { commsApiEnabled: true, senderTrusted: true });

async function eventOf(client: Client, overrides: Record<string, unknown> = {}): Promise<string> {
  const reply = await client.call('POST', '/checkin/v1/api/event', {
    title: 'Winter Gala',
    startTime: '2026-12-12T18:00:00Z',
    endTime: '2026-12-12T23:00:00Z',
    timeZoneId: 'Europe/Amsterdam',
    ...overrides,
  });
  expect(reply.status).toBe(200);
  return reply.body.id;
}

const templateBody = (eventId: string, overrides: Record<string, unknown> = {}) => ({
  eventId,
  name: 'Gala invitation',
  subject: 'Welcome {{firstName}} to {{eventTitle}}',
  html: '<p>Dear {{fullName}},</p><p>See you on {{eventStart}}. Your code: {{barcode}}</p><a href="https://tickets.example.com/t/{{attendeeId}}">Ticket</a>',
  ...overrides,
});

async function templateOf(client: Client, eventId: string, overrides: Record<string, unknown> = {}): Promise<string> {
  const reply = await client.call('POST', `${api}/template`, templateBody(eventId, overrides));
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.id;
}

async function receiverFor(client: Client): Promise<Receiver> {
  const receiver = await startReceiver();
  receivers.push(receiver);
  const configured = await client.call('POST', `${api}/webhook`, { url: receiver.url });
  receiver.secret = configured.body.secret;
  return receiver;
}

async function invitationOf(client: Client, attendeeId: string, status: string, count = 1) {
  return eventually(async () => {
    const reply = await client.call('GET', `${api}/invitations?attendeeId=${attendeeId}`);
    const items = reply.body.items as { status: string }[];
    return items.length === count && items.every((i) => i.status === status) ? (reply.body.items as any[]) : undefined;
  }, 10_000, `${count} invitation(s) of ${attendeeId} ${status}`);
}

/** Waits for mail; the bound is a hang guard (a PDF render on a loaded machine took 12 s), not a speed check. */
async function mailTo(email: string, count = 1) {
  return eventually(async () => {
    const mails = (await readOutbox(outbox())).filter((m) => m.to.email === email);
    return mails.length >= count ? mails : undefined;
  }, 60_000, `${count} mail(s) to ${email}`);
}

describe('templates (spec: Comms template, Comms rule 1)', () => {
  it('creates a template and returns every field with created', async () => {
    const client = await commsClient();
    const eventId = await eventOf(client);
    const reply = await client.call('POST', `${api}/template`, templateBody(eventId, { fromName: 'Gala Team', replyTo: 'desk@example.com', attachPdf: true }));
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      ...templateBody(eventId),
      fromAddress: null,
      fromName: 'Gala Team',
      replyTo: 'desk@example.com',
      attachPdf: true,
      created: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect((await client.call('GET', `${api}/template/${reply.body.id}`)).body).toEqual(reply.body);
    const list = await client.call('GET', `${api}/templates?eventId=${eventId}`);
    expect(list.body.items).toEqual([reply.body]);
    // Spec: GET /api/comms/template[s]: the singular path lists too.
    expect((await client.call('GET', `${api}/template?eventId=${eventId}`)).body).toEqual(list.body);
  });

  it('shows every field: unset optional ones as null, and the default subject the send will use', async () => {
    const client = await commsClient();
    const eventId = await eventOf(client);
    const { subject: _s, ...withoutSubject } = templateBody(eventId);
    const reply = await client.call('POST', `${api}/template`, withoutSubject);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      subject: 'Your invitation to {{eventTitle}}',
      fromAddress: null,
      fromName: null,
      replyTo: null,
      attachPdf: false,
      created: expect.any(String),
    });
    expect(Object.keys(reply.body).sort()).toEqual(
      ['id', 'eventId', 'name', 'html', 'subject', 'fromAddress', 'fromName', 'replyTo', 'attachPdf', 'created'].sort(),
    );
  });

  it('returns the existing template for a create with an id that exists, changing nothing', async () => {
    const client = await commsClient();
    const eventId = await eventOf(client);
    const id = crypto.randomUUID();
    const first = await client.call('POST', `${api}/template`, templateBody(eventId, { id }));
    const again = await client.call('POST', `${api}/template`, templateBody(eventId, { id, name: 'Other name', html: '<p>other</p>' }));
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await service.platform.eventStore.readStream(`template-${client.id}:${id}`)).length).toBe(1);
  });

  it('reports another client’s template and event as not found; the same template id is another client’s own', async () => {
    const owner = await commsClient();
    const other = await commsClient();
    const eventId = await eventOf(owner);
    const templateId = await templateOf(owner, eventId);
    expect((await other.call('GET', `${api}/template/${templateId}`)).status).toBe(404);
    expect((await other.call('POST', `${api}/template`, templateBody(eventId))).status).toBe(404);
    expect((await other.call('GET', `${api}/templates`)).body.items).toEqual([]);
    // Template ids are scoped per client: the same id is the other client's own template, and neither sees the other's.
    const own = await other.call('POST', `${api}/template`, templateBody(await eventOf(other), { id: templateId, name: 'Other’s' }));
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ id: templateId, name: 'Other’s' });
    expect((await owner.call('GET', `${api}/template/${templateId}`)).body.name).not.toBe('Other’s');
    expect((await other.call('GET', `${api}/template/${templateId}`)).body.name).toBe('Other’s');
  });

  it('refuses unknown merge tokens (400, naming the token) and unsafe links (422 spam_check_failed), storing nothing', async () => {
    const client = await commsClient();
    const eventId = await eventOf(client);
    const typo = await client.call('POST', `${api}/template`, templateBody(eventId, { html: '<p>Hi {{fristName}}</p>' }));
    expect(typo.status).toBe(400);
    expect(typo.body.code).toBe('validation_error');
    expect(JSON.stringify(typo.body.errors)).toContain('fristName');
    const spam = await client.call('POST', `${api}/template`, templateBody(eventId, { html: '<a href="https://login.evil.test/x">win</a><a href="http://10.0.0.1/">ip</a>' }));
    expect(spam.status).toBe(422);
    expect(spam.body.code).toBe('spam_check_failed');
    expect(spam.body.errors).toHaveLength(2);
    expect((await client.call('GET', `${api}/templates`)).body.items).toEqual([]);
  });

  it('needs comms API access, then sender trust (403)', async () => {
    const closed = await createClient(service);
    const untrusted = await createClient(service, { commsApiEnabled: true });
    const body = templateBody(crypto.randomUUID());
    expect((await closed.call('POST', `${api}/template`, body)).body.code).toBe('comms_api_not_enabled');
    expect((await untrusted.call('POST', `${api}/template`, body)).body.code).toBe('trust_required');
  });
});

describe('invitation emails (spec: check-in rule 1, Events)', () => {
  it('sends the template when a guest is created with commsTemplateId, and reports comms.sent through the webhook', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const eventId = await eventOf(client);
    const templateId = await templateOf(client, eventId);
    const guest = await client.call('POST', '/checkin/v1/api/guest', {
      eventId,
      firstName: 'Zoë',
      lastName: 'de Vries',
      email: 'zoe@example.com',
      barcode: 'GALA-1',
      commsTemplateId: templateId,
      correlationId: 'crm-42',
    });
    expect(guest.status).toBe(200);

    const [mail] = await mailTo('zoe@example.com');
    expect(mail!.subject).toBe('Welcome Zoë to Winter Gala');
    expect(mail!.from).toEqual({ email: 'invites@checkin.test' });
    expect(mail!.to).toEqual({ email: 'zoe@example.com', name: 'Zoë de Vries' });
    expect(mail!.html).toContain('Dear Zoë de Vries');
    expect(mail!.html).toContain('Saturday, 12 December 2026 at 19:00');
    expect(mail!.html).toContain(`https://tickets.example.com/t/${guest.body.id}`);
    expect(mail!.text).toContain('GALA-1');

    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.specVerified).toBe(true);
    expect(delivery!.headers['x-service-event']).toBe('comms.sent');
    const [invitation] = await invitationOf(client, guest.body.id, 'sent');
    expect(delivery!.body).toEqual({
      id: delivery!.headers['x-service-webhook-id'],
      type: 'comms.sent',
      createdAt: expect.any(String),
      data: {
        attendeeId: guest.body.id,
        templateId,
        attendeeInvitationId: invitation.attendeeInvitationId,
        status: 'sent',
        error: null,
        correlationId: 'crm-42',
      },
    });
    expect(mail!.messageKey).toBe(invitation.attendeeInvitationId);
    // The audit history tells the email's story next to the guest's.
    const history = (await client.call('GET', `/checkin/v1/api/guest/${guest.body.id}/history`)).body.events;
    expect(history.map((e: { type: string; stream: string }) => `${e.stream.split('-')[0]}:${e.type}`)).toEqual([
      'guest:GuestRegistered',
      'guest:InvitationRequested',
      'invitation:SendRequested',
      'invitation:SendStarted',
      'invitation:SendSucceeded',
    ]);
    expect(invitation).toMatchObject({ provider: 'outbox', to: 'zoe@example.com', attempts: 1, templateId, eventId });
  });

  it('attaches a PDF named after the template when attachPdf is set', { timeout: 90_000 }, async () => {
    const client = await commsClient();
    const eventId = await eventOf(client);
    const templateId = await templateOf(client, eventId, { name: 'Gala pass', attachPdf: true });
    await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', email: 'ann.pdf@example.com', commsTemplateId: templateId });
    const [mail] = await mailTo('ann.pdf@example.com');
    expect(mail!.attachments.map((a) => [a.filename, a.contentType])).toEqual([['Gala pass.pdf', 'application/pdf']]);
    expect(mail!.attachments[0]!.content.subarray(0, 5).toString()).toBe('%PDF-');
  });

  it('sends once per template on upsert: a repeated record sends nothing new, a new template sends again', async () => {
    const client = await commsClient();
    const eventId = await eventOf(client);
    const first = await templateOf(client, eventId);
    const second = await templateOf(client, eventId, { subject: 'Second {{firstName}}' });
    const record = { customId: 'crm-7', firstName: 'Bo', email: 'bo@example.com', commsTemplateId: first };
    expect((await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [record])).status).toBe(204);
    expect((await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [record])).status).toBe(204);
    await mailTo('bo@example.com');
    const guestId = (await client.call('GET', `/checkin/v1/api/guests/${eventId}`)).body.items[0].id;
    await invitationOf(client, guestId, 'sent');
    expect((await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ ...record, commsTemplateId: second }])).status).toBe(204);
    const mails = await mailTo('bo@example.com', 2);
    expect(mails.map((m) => m.subject).sort()).toEqual(['Second Bo', 'Welcome Bo to Winter Gala']);
    await invitationOf(client, guestId, 'sent', 2);
  });

  it('sends a template whose subject and fromName say nothing with the default subject and sender (they are any string)', async () => {
    const client = await commsClient();
    const eventId = await eventOf(client);
    const templateId = await templateOf(client, eventId, { subject: ' ', fromName: ' \t' });
    expect((await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Dee', email: 'blank-subject@example.com', commsTemplateId: templateId })).status).toBe(200);
    const [mail] = await mailTo('blank-subject@example.com');
    expect(mail!.subject).toBe('Your invitation to Winter Gala');
    expect(mail!.from).toEqual({ email: 'invites@checkin.test' });
  });

  it('refuses a template of another client or another event (404); nothing is applied', async () => {
    const client = await commsClient();
    const other = await commsClient();
    const eventId = await eventOf(client);
    const otherEvent = await eventOf(client, { title: 'Other' });
    const foreign = await templateOf(other, await eventOf(other));
    const elsewhere = await templateOf(client, otherEvent);
    const batch = (templateId: string) => [
      { firstName: 'Ok', email: 'ok@example.com' },
      { firstName: 'Bad', email: 'bad@example.com', commsTemplateId: templateId },
    ];
    expect((await client.call('POST', `/checkin/v1/api/guests/${eventId}`, batch(foreign))).status).toBe(404);
    expect((await client.call('POST', `/checkin/v1/api/guests/${eventId}`, batch(elsewhere))).status).toBe(404);
    // A guest without an email is created, its send failing as comms.failed no_email: test/http/integrator-conformance-5.
    expect((await client.call('GET', `/checkin/v1/api/guests/${eventId}`)).body.items).toEqual([]);
  });

  it('reports comms.skipped, and sends nothing, when a redelivered request finds the email already sent', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const eventId = await eventOf(client);
    const templateId = await templateOf(client, eventId);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Cy', email: 'cy@example.com', commsTemplateId: templateId });
    await invitationOf(client, guest.body.id, 'sent');
    await receiver.waitFor(1);

    // At-least-once: the bus hands the same InvitationRequested over again.
    const history = await service.platform.eventStore.readStream(guestStream(client.id, guest.body.id));
    const requested = history.find((e) => e.type === 'InvitationRequested')!;
    await service.platform.bus.publish(topics.invitations, [toMessage(requested)]);

    const deliveries = await receiver.waitFor(2);
    expect(deliveries[1]!.body.type).toBe('comms.skipped');
    expect(deliveries[1]!.body.data).toMatchObject({ attendeeId: guest.body.id, templateId, status: 'skipped', error: null });
    const [invitation] = await invitationOf(client, guest.body.id, 'sent');
    expect(invitation.skips).toBe(1);
    expect(await mailTo('cy@example.com')).toHaveLength(1);
  });
});

describe('send worker restart', () => {
  it('resumes an invitation that was requested but not sent when the worker stopped', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'send-resume-'));
    const env = { INVITES_SENDING_ADDRESS: 'invites@checkin.test' };
    const first = await startTestService(env, { dataDir });
    const client = await createClient(first, { commsApiEnabled: true, senderTrusted: true });
    const eventId = (await client.call('POST', '/checkin/v1/api/event', { title: 'Resume', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.id;
    const templateId = (await client.call('POST', `${api}/template`, templateBody(eventId))).body.id;
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Rae', email: 'rae@example.com' });
    // The worker recorded the request (and committed its bus offset), then the process stopped.
    const attendeeInvitationId = crypto.randomUUID();
    const ids = { attendeeInvitationId, clientId: client.id, attendeeId: guest.body.id, eventId, templateId };
    const metadata = { tenantId: client.id, actor: { type: 'system' as const, id: 'send-worker' }, correlationId: 'resume', occurredAt: new Date().toISOString() };
    const written = await first.platform.eventStore.append(`invitation-${attendeeInvitationId}`, [
      { id: crypto.randomUUID(), type: 'SendRequested', data: { ...ids, requestedAt: metadata.occurredAt }, metadata },
    ], 'no_stream');
    await first.services.readYourWrites(written.position);
    await first.stop();

    const second = await startTestService(env, { dataDir });
    try {
      const mail = await eventually(async () => {
        const mails = await readOutbox(path.join(dataDir, 'outbox'));
        return mails.find((m) => m.messageKey === attendeeInvitationId);
      }, 60_000, 'the resumed send');
      expect(mail.to.email).toBe('rae@example.com');
    } finally {
      await second.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('POST /comms/v1/api/comms/send', () => {
  it('emails a template to the given guests, each as a new invitation', async () => {
    const client = await commsClient();
    const eventId = await eventOf(client);
    const templateId = await templateOf(client, eventId);
    const created = await client.call('POST', `/checkin/v1/api/guests/${eventId}`, [
      { firstName: 'Di', email: 'di@example.com' },
      { firstName: 'Ed', email: 'ed@example.com' },
    ]);
    const ids = created.body.map((g: { id: string }) => g.id);
    const sent = await client.call('POST', `${api}/send`, { templateId, attendeeIds: ids, correlationId: 'batch-1' });
    expect(sent.status).toBe(200);
    expect(sent.body.invitations).toEqual(ids.map((id: string) => ({ attendeeId: id, attendeeInvitationId: expect.any(String), status: 'requested' })));
    await mailTo('di@example.com');
    await mailTo('ed@example.com');
    const [invitation] = await invitationOf(client, ids[0], 'sent');
    expect(invitation.correlationId).toBe('batch-1');
  });

  it('sends once for a request repeated with the same Idempotency-Key (a client retrying after a timeout)', async () => {
    const client = await commsClient();
    const eventId = await eventOf(client);
    const templateId = await templateOf(client, eventId);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Hal', email: 'hal@example.com' });
    const body = { templateId, attendeeIds: [guest.body.id] };
    const key = { 'idempotency-key': `send-${guest.body.id}` };
    const first = await client.call('POST', `${api}/send`, body, key);
    const again = await client.call('POST', `${api}/send`, body, key);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    await invitationOf(client, guest.body.id, 'sent');
    expect(await mailTo('hal@example.com')).toHaveLength(1);
  });

  it('is all or nothing: another client’s guest is 404, more than 200 guests is 400', async () => {
    const client = await commsClient();
    const other = await commsClient();
    const eventId = await eventOf(client);
    const templateId = await templateOf(client, eventId);
    const mine = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Fi', email: 'fi@example.com' });
    const theirs = await other.call('POST', '/checkin/v1/api/guest', { eventId: await eventOf(other), firstName: 'X', email: 'x@example.com' });
    const mixed = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [mine.body.id, theirs.body.id] });
    expect(mixed.status).toBe(404);
    const tooMany = Array.from({ length: 201 }, () => crypto.randomUUID());
    expect((await client.call('POST', `${api}/send`, { templateId, attendeeIds: tooMany })).status).toBe(400);
    expect((await client.call('GET', `${api}/invitations?attendeeId=${mine.body.id}`)).body.items).toEqual([]);
    expect((await other.call('POST', `${api}/send`, { templateId, attendeeIds: [theirs.body.id] })).status).toBe(404);
  });
});

describe('provider events (SendGrid Event Webhook)', () => {
  const post = (events: unknown[], options: { key?: typeof privateKey; timestamp?: string } = {}) =>
    postSendGridEvents(service.url, options.key ?? privateKey, events, options);

  it('turns delivered and bounce reports into comms webhooks; a bounced recipient then cannot be emailed (422)', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const eventId = await eventOf(client);
    const templateId = await templateOf(client, eventId);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Gil', email: 'Gil@Example.com', commsTemplateId: templateId });
    const [invitation] = await invitationOf(client, guest.body.id, 'sent');
    const report = { email: 'Gil@Example.com', timestamp: Math.floor(Date.now() / 1000), attendeeInvitationId: invitation.attendeeInvitationId };
    const reply = await post([
      { ...report, event: 'delivered', sg_event_id: 'ev-1' },
      { ...report, event: 'delivered', sg_event_id: 'ev-1' },
      { ...report, event: 'bounce', sg_event_id: 'ev-2', reason: '550 5.1.1 mailbox unknown' },
      { ...report, event: 'processed', sg_event_id: 'ev-3' },
      { ...report, event: 'delivered', sg_event_id: 'ev-4', attendeeInvitationId: crypto.randomUUID() },
    ]);
    expect(reply.status).toBe(200);
    expect(await reply.json()).toEqual({ recorded: 2, ignored: 1 });

    const deliveries = await receiver.waitFor(3);
    expect(deliveries.map((d) => d.body.type)).toEqual(['comms.sent', 'comms.delivered', 'comms.bounced']);
    expect(deliveries[2]!.body.data).toMatchObject({ attendeeInvitationId: invitation.attendeeInvitationId, status: 'bounced', error: null });

    const refused = await client.call('POST', `${api}/send`, { templateId, attendeeIds: [guest.body.id] });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('previous_send_permanently_failed');

    // A guest created with the template for the same address: the send fails, reported as comms.failed.
    const again = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Gil', email: 'gil@example.com', commsTemplateId: templateId });
    const [failed] = await invitationOf(client, again.body.id, 'failed');
    expect(failed.error).toMatch(/^previous_send_permanently_failed: /);
    const [, , , failure] = await receiver.waitFor(4);
    expect(failure!.body).toMatchObject({ type: 'comms.failed', data: { status: 'failed', error: expect.stringMatching(/^previous_send_permanently_failed/) } });
  });

  it('reports a block and a drop for content as comms.bounced and comms.dropped, but leaves the address free to email', async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const eventId = await eventOf(client);
    const templateId = await templateOf(client, eventId);
    const guests = [];
    for (const name of ['Blocked', 'Content']) {
      const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: name, email: `${name.toLowerCase()}@example.com`, commsTemplateId: templateId });
      const [invitation] = await invitationOf(client, guest.body.id, 'sent');
      guests.push({ id: guest.body.id as string, email: `${name.toLowerCase()}@example.com`, invitationId: invitation.attendeeInvitationId as string });
    }
    const at = Math.floor(Date.now() / 1000);
    const reply = await post([
      // SendGrid's "Blocks": the receiving server refused the message (the sending IP's reputation), not the address.
      { email: guests[0]!.email, timestamp: at, attendeeInvitationId: guests[0]!.invitationId, event: 'bounce', type: 'blocked', sg_event_id: 'blk-1', reason: '554 5.7.1 IP listed' },
      { email: guests[1]!.email, timestamp: at, attendeeInvitationId: guests[1]!.invitationId, event: 'dropped', sg_event_id: 'drp-1', reason: 'Spam Content (if spam checker app enabled)' },
    ]);
    expect(reply.status).toBe(200);
    const deliveries = await receiver.waitFor(4);
    expect(deliveries.map((d) => d.body.type).sort()).toEqual(['comms.bounced', 'comms.dropped', 'comms.sent', 'comms.sent']);
    // Both can be emailed again.
    const resent = await client.call('POST', `${api}/send`, { templateId, attendeeIds: guests.map((g) => g.id) });
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
  });

  it("keeps a privacy proxy's open (sg_machine_open) in the history, but sends no comms.opened and counts no open for it", async () => {
    const client = await commsClient();
    const receiver = await receiverFor(client);
    const eventId = await eventOf(client);
    const templateId = await templateOf(client, eventId);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Mia', email: 'mia@example.com', commsTemplateId: templateId });
    const [invitation] = await invitationOf(client, guest.body.id, 'sent');
    const report = { email: 'mia@example.com', attendeeInvitationId: invitation.attendeeInvitationId, event: 'open' };
    const at = Math.floor(Date.now() / 1000);
    expect((await post([{ ...report, timestamp: at, sg_event_id: 'mpp-1', sg_machine_open: true }, { ...report, timestamp: at + 60, sg_event_id: 'open-1', sg_machine_open: false }])).status).toBe(200);
    const deliveries = await receiver.waitFor(2);
    expect(deliveries.map((d) => d.body.type)).toEqual(['comms.sent', 'comms.opened']);
    const seen = await eventually(async () => {
      const [item] = (await client.call('GET', `${api}/invitations?attendeeId=${guest.body.id}`)).body.items;
      return item.history.filter((h: { type: string }) => h.type === 'opened').length === 2 ? item : undefined;
    });
    expect(seen.opens).toBe(1);
    expect(seen.history.find((h: { detail?: string }) => h.detail?.startsWith('machine open'))).toBeDefined();
    // No webhook for the machine open, shown by ids rather than by a count after a fixed sleep (which
    // could end before a late comms.opened arrived). Both reports are on the invitation's stream, so
    // the dispatcher handles the machine open before the real one (per-key order): the comms.opened
    // that arrived is the real open's, and by then a delivery for the machine open would have been
    // scheduled, on a stream named by its webhook id.
    const reports = (await service.platform.eventStore.readStream(invitationStream(invitation.attendeeInvitationId))).filter((e) => e.type === 'ProviderEventReceived');
    const reported = (providerEventId: string) => reports.find((e) => (e.data as { providerEventId?: string }).providerEventId === providerEventId)!;
    const [machine, real] = [reported('mpp-1'), reported('open-1')];
    expect(machine.data).toMatchObject({ machineOpen: true });
    expect(deliveries[1]!.headers['x-service-webhook-id']).toBe(webhookIdFor(real.id));
    expect(await service.platform.eventStore.readStream(deliveryStream(webhookIdFor(machine.id)))).toEqual([]);
    expect(receiver.deliveries.map((d) => d.headers['x-service-webhook-id'])).not.toContain(webhookIdFor(machine.id));
  });

  it('refuses a report whose signature does not verify (401), recording nothing', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
    const reply = await post([{ event: 'delivered', sg_event_id: 'x', email: 'a@b.c', attendeeInvitationId: crypto.randomUUID() }], { key: other });
    expect(reply.status).toBe(401);
    const unsigned = await request(service.url, 'POST', `${api}/provider/sendgrid/events`, []);
    expect(unsigned.status).toBe(401);
  });
});
