import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';
import { fromSendGrid } from '../support/mail-readers.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';
import { guestStream } from '../../src/domain/guest.js';

/** The send worker on the real @sendgrid/mail client, pointed at the SendGrid test double (DESIGN.md section 7). */
const api = '/comms/v1/api/comms';
let service: TestService;
let sendgrid: SendGridDouble;
const receivers: Receiver[] = [];

beforeAll(async () => {
  sendgrid = await startSendGridDouble();
  service = await startTestService({
    WEBHOOK_ALLOW_INSECURE: 'true',
    SENDGRID_API_KEY: sendgrid.apiKey,
    SENDGRID_BASE_URL: sendgrid.url,
    SEND_RETRY_DELAYS_MS: '50,50',
  });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service.close();
  await sendgrid.close();
});

async function setUp(): Promise<{ client: Client; receiver: Receiver; eventId: string; templateId: string }> {
  const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const receiver = await startReceiver();
  receivers.push(receiver);
  receiver.secret = (await client.call('POST', `${api}/webhook`, { url: receiver.url })).body.secret;
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Expo', startTime: '2026-12-01T09:00:00Z', endTime: '2026-12-01T17:00:00Z' });
  const template = await client.call('POST', `${api}/template`, {
    eventId: event.body.id,
    name: 'Expo pass',
    subject: 'Your pass, {{firstName}}',
    html: '<p>Hello {{firstName}}</p>',
    fromAddress: 'expo@organizer.example',
    fromName: 'Expo Team',
    replyTo: 'help@organizer.example',
  });
  expect(template.status).toBe(200);
  return { client, receiver, eventId: event.body.id, templateId: template.body.id };
}

const acceptedFor = (email: string) => sendgrid.accepted.map((a) => fromSendGrid(a.body)).filter((m) => m.to.email === email);

async function invitationOf(client: Client, attendeeId: string, status: string) {
  return eventually(async () => {
    const [item] = (await client.call('GET', `${api}/invitations?attendeeId=${attendeeId}`)).body.items;
    return item?.status === status ? item : undefined;
  }, 10_000, `invitation ${status}`);
}

describe('sends through SendGrid', () => {
  it('hands the email to SendGrid with the template’s sender and the invitation id as a custom arg', async () => {
    const { client, receiver, eventId, templateId } = await setUp();
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ida', email: 'ida@example.com', commsTemplateId: templateId });
    const invitation = await invitationOf(client, guest.body.id, 'sent');
    const [mail] = acceptedFor('ida@example.com');
    expect(mail).toMatchObject({
      from: { email: 'expo@organizer.example', name: 'Expo Team' },
      replyTo: { email: 'help@organizer.example' },
      subject: 'Your pass, Ida',
      // The invitation id only: the client follows from it (no tenant id travels with the email).
      trackingArgs: { attendeeInvitationId: invitation.attendeeInvitationId },
    });
    const accepted = sendgrid.accepted.find((a) => a.body.custom_args?.attendeeInvitationId === invitation.attendeeInvitationId)!;
    expect(invitation).toMatchObject({ provider: 'sendgrid', providerMessageId: accepted.messageId, attempts: 1 });
    expect((await receiver.waitFor(1))[0]!.body.type).toBe('comms.sent');
  });

  it('retries a send SendGrid refused for now (500), and sends it once', async () => {
    const { client, receiver, eventId, templateId } = await setUp();
    sendgrid.failNext(500);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Jo', email: 'jo@example.com', commsTemplateId: templateId });
    const invitation = await invitationOf(client, guest.body.id, 'sent');
    expect(invitation.attempts).toBe(2);
    expect(invitation.history.map((h: { type: string }) => h.type)).toEqual(['requested', 'attempt_started', 'attempt_failed', 'attempt_started', 'sent']);
    expect(acceptedFor('jo@example.com')).toHaveLength(1);
    const deliveries = await receiver.waitFor(1);
    expect(deliveries.map((d) => d.body.type)).toEqual(['comms.sent']);
  });

  it('reports comms.failed when SendGrid rejects the email (400), without retrying', async () => {
    const { client, receiver, eventId, templateId } = await setUp();
    sendgrid.failNext(400, 'Does not contain a valid address.');
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Kim', email: 'kim@example.com', commsTemplateId: templateId });
    const invitation = await invitationOf(client, guest.body.id, 'failed');
    expect(invitation.attempts).toBe(1);
    expect(invitation.error).toMatch(/^provider_rejected: .*valid address/);
    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.body).toMatchObject({ type: 'comms.failed', data: { status: 'failed', error: expect.stringMatching(/^provider_rejected/) } });
    expect(JSON.stringify(invitation)).not.toContain(sendgrid.apiKey);
  });

  it('gives up after the retry schedule when SendGrid stays unavailable: comms.failed, transient', async () => {
    const { client, receiver, eventId, templateId } = await setUp();
    sendgrid.failNext(503);
    sendgrid.failNext(503);
    sendgrid.failNext(429);
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Lu', email: 'lu@example.com', commsTemplateId: templateId });
    const invitation = await invitationOf(client, guest.body.id, 'failed');
    expect(invitation.attempts).toBe(3);
    expect(invitation.error).toMatch(/^provider_unavailable: /);
    expect(acceptedFor('lu@example.com')).toHaveLength(0);
    expect((await receiver.waitFor(1))[0]!.body.type).toBe('comms.failed');
  });

  it('fails an attempt cut short by a crash as outcome_unknown once its lease is over, and never sends it again', async () => {
    const { client, receiver, eventId, templateId } = await setUp();
    const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Max', email: 'max@example.com' });
    const { eventStore } = service.platform;
    const attendeeInvitationId = randomUUID();
    const ids = { attendeeInvitationId, clientId: client.id, attendeeId: guest.body.id, eventId, templateId };
    const metadata = { tenantId: client.id, actor: { type: 'system' as const, id: 'send-worker' }, correlationId: 'crash', occurredAt: new Date().toISOString() };
    const past = new Date(Date.now() - 60_000).toISOString();
    // What a worker that died while handing the email to SendGrid leaves: an attempt, no outcome.
    await eventStore.append(`invitation-${attendeeInvitationId}`, [
      { id: randomUUID(), type: 'SendRequested', data: { ...ids, requestedAt: past }, metadata },
      { id: randomUUID(), type: 'SendStarted', data: { attendeeInvitationId, attempt: 1, to: 'max@example.com', at: past, leaseUntil: past }, metadata },
    ], 'no_stream');
    // The request reaches a worker again (a redelivery, or a restart's resume).
    await eventStore.append(guestStream(client.id, guest.body.id), [
      { id: randomUUID(), type: 'InvitationRequested', data: { guestId: guest.body.id, eventId, attendeeInvitationId, templateId }, metadata },
    ], 'any');

    const invitation = await invitationOf(client, guest.body.id, 'failed');
    expect(invitation.error).toMatch(/^outcome_unknown: /);
    expect(acceptedFor('max@example.com')).toHaveLength(0);
    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.body).toMatchObject({ type: 'comms.failed', data: { attendeeInvitationId, error: expect.stringMatching(/^outcome_unknown/) } });
  });
});
