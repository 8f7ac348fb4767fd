import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';
import { startSmtpServer, type SmtpTestServer } from '../support/smtp-server.js';
import { loggedLines } from '../support/log-lines.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';
import { smtpError } from '../../src/adapters/mailer/smtp.js';
import { invitationStream } from '../../src/domain/invitation.js';
import { commsSourceEventTypes, webhookIdFor } from '../../src/domain/webhook.js';

/**
 * A refusal of OUR provider credentials (SendGrid 401, a 403 for a key without the mail.send scope,
 * an SMTP authentication failure) is not the guest's or the email's fault: the send is held and tried
 * again, and goes out exactly once when the key works again; only after the hold
 * (SEND_CREDENTIALS_HOLD_MS) does it fail, as provider_credentials_refused (docs/invitations.md).
 */
const api = '/comms/v1/api/comms';
const receivers: Receiver[] = [];
let sendgrid: SendGridDouble;
/** Holds for 10 minutes: long enough for the test to fix the key. */
let holding: TestService;
/** Holds for 300 ms: the hold runs out. */
let shortHold: TestService;
const logs = loggedLines('info');

beforeAll(async () => {
  sendgrid = await startSendGridDouble();
  const env = {
    WEBHOOK_ALLOW_INSECURE: 'true',
    SENDGRID_API_KEY: sendgrid.apiKey,
    SENDGRID_BASE_URL: sendgrid.url,
    SEND_RETRY_DELAYS_MS: '50,50',
    SEND_CREDENTIALS_RETRY_DELAYS_MS: '50,100',
  };
  holding = await startTestService({ ...env, SEND_CREDENTIALS_HOLD_MS: '600000' }, { logger: logs.logger });
  shortHold = await startTestService({ ...env, SEND_CREDENTIALS_HOLD_MS: '300' });
});
afterAll(async () => {
  sendgrid?.restoreKey();
  await Promise.all(receivers.map((r) => r.close()));
  await holding?.close();
  await shortHold?.close();
  await sendgrid?.close();
});

async function setUp(service: TestService, fromAddress = 'expo@organizer.example'): Promise<{ client: Client; receiver: Receiver; eventId: string; templateId: string }> {
  const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const receiver = await startReceiver();
  receivers.push(receiver);
  receiver.secret = (await client.call('POST', `${api}/webhook`, { url: receiver.url })).body.secret;
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Expo', startTime: '2026-12-01T09:00:00Z', endTime: '2026-12-01T17:00:00Z' });
  const template = await client.call('POST', `${api}/template`, { eventId: event.body.id, name: 'Expo pass', subject: 'Your pass', html: '<p>Hello {{firstName}}</p>', fromAddress });
  expect(template.status).toBe(200);
  return { client, receiver, eventId: event.body.id, templateId: template.body.id };
}

async function invitationWhere(client: Client, attendeeId: string, what: string, test: (item: Record<string, unknown>) => boolean) {
  return eventually(async () => {
    const [item] = (await client.call('GET', `${api}/invitations?attendeeId=${attendeeId}`)).body.items;
    return item && test(item) ? item : undefined;
  }, 60_000, what);
}

const historyTypes = (invitation: Record<string, unknown>) => (invitation.history as Array<{ type: string }>).map((h) => h.type);
const acceptedFor = (email: string) => sendgrid.accepted.filter((a) => a.body.personalizations[0]?.to[0]?.email === email);

async function scrape(service: TestService): Promise<string> {
  return (await fetch(`${service.url}/metrics`)).text();
}

describe('a refusal of our SendGrid key holds the send instead of failing it', () => {
  it('holds a send SendGrid answers 401, sends it exactly once when the key is fixed, and never reports comms.failed', async () => {
    const { client, receiver, eventId, templateId } = await setUp(holding);
    sendgrid.revokeKey(401);
    let attendeeId = '';
    try {
      attendeeId = (await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', email: 'ann.key@example.com', commsTemplateId: templateId })).body.id;
      // Refused twice: held, not failed.
      const held = await invitationWhere(client, attendeeId, 'held twice', (i) => i.status === 'retrying' && historyTypes(i).filter((t) => t === 'attempt_failed').length >= 2);
      expect(held.status).toBe('retrying');
      expect(await scrape(holding)).toMatch(/^invitation_sends_blocked_on_credentials 1$/m);
      // Ready all along: the API works; only the provider's key is wrong.
      expect((await fetch(`${holding.url}/readyz`)).status).toBe(200);
    } finally {
      sendgrid.restoreKey();
    }
    const sent = await invitationWhere(client, attendeeId, 'sent', (i) => i.status === 'sent');
    expect(acceptedFor('ann.key@example.com')).toHaveLength(1);
    expect(historyTypes(sent).filter((t) => t === 'sent')).toHaveLength(1);
    expect(historyTypes(sent)).not.toContain('failed');
    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.body.type).toBe('comms.sent');
    // Nothing more comes: the one webhook is comms.sent. Shown from the store (the invitation's
    // stream holds one event that becomes a webhook, SendSucceeded, and no SendFailed) and by
    // webhook id (every delivery is that one's; webhooks are at least once, deduped by id), not by
    // a count after a fixed sleep that could end before a late comms.failed arrived.
    const stored = await holding.platform.eventStore.readStream(invitationStream(String(sent.attendeeInvitationId)));
    expect(stored.map((e) => e.type).filter((type) => commsSourceEventTypes.includes(type as never))).toEqual(['SendSucceeded']);
    const succeeded = stored.find((e) => e.type === 'SendSucceeded')!;
    expect(new Set(receiver.deliveries.map((d) => d.headers['x-service-webhook-id']))).toEqual(new Set([webhookIdFor(succeeded.id)]));
    await eventually(async () => /^invitation_sends_blocked_on_credentials 0$/m.test(await scrape(holding)), 60_000, 'unblocked');
    // One error line names what to fix.
    const errors = logs.lines.filter((line) => line.level === 50 || line.level === 'error');
    expect(errors.filter((line) => String(line.msg).includes('credentials'))).toHaveLength(1);
    expect(JSON.stringify(errors)).toContain('SENDGRID_API_KEY');
    expect(JSON.stringify(errors)).toContain('mail.send');
  });

  it('holds a send SendGrid answers 403 access forbidden (a key without the mail.send scope)', async () => {
    const { client, eventId, templateId } = await setUp(holding);
    sendgrid.revokeKey(403, 'access forbidden');
    let attendeeId = '';
    try {
      const created = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo', email: 'bo.scope@example.com', commsTemplateId: templateId });
      attendeeId = created.body.id;
      const held = await invitationWhere(client, attendeeId, 'held', (i) => i.status === 'retrying');
      expect(held.status).toBe('retrying');
    } finally {
      sendgrid.restoreKey();
    }
    await invitationWhere(client, attendeeId, 'sent', (i) => i.status === 'sent');
    expect(acceptedFor('bo.scope@example.com')).toHaveLength(1);
  });

  it('keeps a 403 about the sender identity a permanent provider_rejected', async () => {
    const { client, receiver, eventId, templateId } = await setUp(holding);
    sendgrid.failNext(403, 'The from address does not match a verified Sender Identity. Mail cannot be sent until this error is resolved.');
    const created = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Cy', email: 'cy.sender@example.com', commsTemplateId: templateId });
    const failed = await invitationWhere(client, created.body.id, 'failed', (i) => i.status === 'failed');
    expect(failed.error).toMatch(/^provider_rejected: .*verified Sender Identity/);
    expect(failed.attempts).toBe(1);
    expect((await receiver.waitFor(1))[0]!.body.type).toBe('comms.failed');
  });

  it('fails the send as provider_credentials_refused once the hold is over, reported once as comms.failed', async () => {
    const { client, receiver, eventId, templateId } = await setUp(shortHold);
    sendgrid.revokeKey(401);
    try {
      const created = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Di', email: 'di.bound@example.com', commsTemplateId: templateId });
      const failed = await invitationWhere(client, created.body.id, 'failed', (i) => i.status === 'failed');
      expect(failed.error).toMatch(/^provider_credentials_refused: SendGrid refused the API key \(401/);
      expect(failed.error).toContain('SENDGRID_API_KEY');
      expect(failed.attempts as number).toBeGreaterThan(1);
      const [delivery] = await receiver.waitFor(1);
      expect(delivery!.body).toMatchObject({ type: 'comms.failed', data: { error: expect.stringMatching(/^provider_credentials_refused/) } });
    } finally {
      sendgrid.restoreKey();
    }
    expect(acceptedFor('di.bound@example.com')).toHaveLength(0);
  });

  it('keeps the retry schedule for other failures after a hold: a 500 after the key is fixed is still retried', async () => {
    const { client, eventId, templateId } = await setUp(holding);
    sendgrid.revokeKey(401);
    let attendeeId = '';
    try {
      attendeeId = (await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ed', email: 'ed.sched@example.com', commsTemplateId: templateId })).body.id;
      // Held three times: more attempts than SEND_RETRY_DELAYS_MS has delays.
      await invitationWhere(client, attendeeId, 'held 3 times', (i) => historyTypes(i).filter((t) => t === 'attempt_failed').length >= 3);
      sendgrid.failNext(500);
      sendgrid.failNext(500);
    } finally {
      sendgrid.restoreKey();
    }
    const sent = await invitationWhere(client, attendeeId, 'sent', (i) => i.status === 'sent' || i.status === 'failed');
    expect(sent.status).toBe('sent');
    expect(acceptedFor('ed.sched@example.com')).toHaveLength(1);
  });
});

describe('held sends after a restart with the key fixed', () => {
  it('sends a held invitation at once after the restart, not at its retryAt 10 minutes on', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-sendkey-'));
    const env = {
      SENDGRID_API_KEY: sendgrid.apiKey,
      SENDGRID_BASE_URL: sendgrid.url,
      SEND_CREDENTIALS_RETRY_DELAYS_MS: '600000',
      SEND_CREDENTIALS_HOLD_MS: '86400000',
    };
    let service = await startTestService(env, { dataDir });
    try {
      const { client, eventId, templateId } = await setUp(service);
      sendgrid.revokeKey(401);
      let attendeeId = '';
      try {
        attendeeId = (await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Gus', email: 'gus.restart@example.com', commsTemplateId: templateId })).body.id;
        await invitationWhere(client, attendeeId, 'held', (i) => i.status === 'retrying');
        await service.close();
      } finally {
        // The operator puts a working key in place and restarts the service.
        sendgrid.restoreKey();
      }
      service = await startTestService(env, { dataDir });
      await eventually(async () => acceptedFor('gus.restart@example.com').length === 1, 60_000, 'sent after the restart');
      // Emails go out exactly once (the product's promise): once the send is recorded as sent, no
      // attempt follows, so the count is final then (not after a fixed sleep, which proved nothing).
      // (Read from the restarted service's own stores: the client was bound to the first one.)
      const restarted = service;
      const sent = await eventually(async () => {
        for await (const doc of restarted.platform.readStore.collection<{ _id: string; attendeeId: string; status: string }>('invitations').stream({ attendeeId })) {
          if (doc.status === 'sent') return doc;
        }
        return undefined;
      }, 60_000, 'recorded as sent');
      const stored = await restarted.platform.eventStore.readStream(invitationStream(sent._id));
      expect(stored.filter((e) => e.type === 'SendSucceeded')).toHaveLength(1);
      expect(acceptedFor('gus.restart@example.com')).toHaveLength(1);
    } finally {
      await service.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('an SMTP authentication failure holds the send', () => {
  it('reads nodemailer EAUTH (535 5.7.8) as our credentials refused, naming SMTP_URL', () => {
    const error = smtpError(Object.assign(new Error('Invalid login: 535 5.7.8 Authentication credentials invalid'), { code: 'EAUTH', responseCode: 535, command: 'AUTH PLAIN' }));
    expect(error.permanent).toBe(false);
    expect(error.credentialsRefused).toContain('SMTP_URL');
  });

  describe('against a real SMTP server', () => {
    let smtp: SmtpTestServer;
    let service: TestService;
    beforeAll(async () => {
      smtp = await startSmtpServer();
      service = await startTestService({
        WEBHOOK_ALLOW_INSECURE: 'true',
        SMTP_URL: smtp.urlWith({ user: smtp.user, password: 'wrong' }),
        SEND_RETRY_DELAYS_MS: '50,50',
        SEND_CREDENTIALS_RETRY_DELAYS_MS: '50',
        SEND_CREDENTIALS_HOLD_MS: '600000',
      });
    });
    afterAll(async () => {
      await service?.close();
      await smtp?.close();
    });

    it('holds a send whose login the server refuses (535) instead of failing it as provider_rejected', async () => {
      const { client, receiver, eventId, templateId } = await setUp(service);
      const created = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Flo', email: 'flo.smtp@example.com', commsTemplateId: templateId });
      const held = await invitationWhere(client, created.body.id, 'held twice', (i) => i.status === 'failed' || historyTypes(i).filter((t) => t === 'attempt_failed').length >= 2);
      expect(held.status).toBe('retrying');
      expect(receiver.deliveries).toHaveLength(0);
      expect(await scrape(service)).toMatch(/^invitation_sends_blocked_on_credentials 1$/m);
    });
  });
});
