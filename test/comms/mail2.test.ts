/**
 * Invitation emails as the recipient's mail system sees them (docs/invitations.md, What the
 * recipient sees): which of our ids ride along, and how the recipient can unsubscribe, per mailer.
 * SMTP against a real SMTP server (smtp-server), the outbox's `.eml` file, SendGrid's double.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxMailer } from '../../src/adapters/mailer/outbox.js';
import type { MailMessage } from '../../src/adapters/mailer/port.js';
import { SendGridMailer } from '../../src/adapters/mailer/sendgrid.js';
import { sendgridReports } from '../../src/adapters/mailer/sendgrid-events.js';
import { SmtpMailer } from '../../src/adapters/mailer/smtp.js';
import { invitationMessage, type InvitationParts } from '../../src/comms/invitation-message.js';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';
import { startSmtpServer, type SmtpTestServer } from '../support/smtp-server.js';

const clientId = 'c0ffee00-1111-4222-8333-444455556666';
const guestId = '9a9a9a9a-bbbb-4ccc-8ddd-eeeeffff0000';
const invitationId = '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

function parts(template: Partial<InvitationParts['template']> = {}): InvitationParts {
  return {
    attendeeInvitationId: invitationId,
    clientId,
    guest: { id: guestId, email: 'ann@example.org', firstName: 'Ann', barcode: 'ABC-123' },
    template: { subject: 'Your pass, {{firstName}}', html: '<p>Hi {{firstName}}</p>{{qrCode}}', replyTo: 'help@organizer.example', ...template },
    event: { title: 'Gala', startTime: '2026-06-01T18:00:00Z', endTime: '2026-06-01T23:00:00Z' },
    account: { companyName: 'Organizer' },
  };
}

const sender = { address: 'events@organizer.example', name: 'Organizer' };

/** The message's top-level header lines, unfolded, as `name: value`. */
function headersOf(raw: Buffer): Map<string, string[]> {
  const text = raw.toString('latin1');
  const block = text.slice(0, text.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ');
  const headers = new Map<string, string[]>();
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  return headers;
}

let smtp: SmtpTestServer;
let smtpMailer: SmtpMailer;
let sendgrid: SendGridDouble;
let sendgridMailer: SendGridMailer;
const outboxDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mail2-'));
const outbox = new OutboxMailer(outboxDir);

beforeAll(async () => {
  smtp = await startSmtpServer();
  smtpMailer = new SmtpMailer(smtp.url);
  sendgrid = await startSendGridDouble();
  sendgridMailer = new SendGridMailer({ apiKey: sendgrid.apiKey, baseUrl: sendgrid.url });
});
afterAll(async () => {
  await smtpMailer?.close();
  await smtp?.close();
  await sendgrid?.close();
  fs.rmSync(outboxDir, { recursive: true, force: true });
});

/** The raw message as the SMTP server received it, and as the outbox wrote it. */
async function rendered(message: MailMessage): Promise<Array<[string, Buffer]>> {
  const before = smtp.received.length;
  await smtpMailer.send(message);
  const viaSmtp = smtp.received.slice(before).map((mail) => mail.raw);
  expect(viaSmtp).toHaveLength(1);
  const dir = fs.mkdtempSync(path.join(outboxDir, 'run-'));
  await new OutboxMailer(dir).send(message);
  return [
    ['smtp', viaSmtp[0]!],
    ['outbox', fs.readFileSync(path.join(dir, `${message.messageKey}.eml`))],
  ];
}

describe('what the recipient of an invitation sees (SMTP and the outbox render the same message)', () => {
  it('carries no client or guest id anywhere, and the invitation id only as X-Message-Key (no X-Tracking-Args)', async () => {
    const message = await invitationMessage(parts(), sender);
    for (const [mailer, raw] of await rendered(message)) {
      const headers = headersOf(raw);
      expect(headers.has('x-tracking-args'), mailer).toBe(false);
      expect(headers.get('x-message-key'), mailer).toEqual([invitationId]);
      // The headers and every MIME part: an id of the tenant or of the guest is in none of them.
      expect(raw.toString('latin1'), mailer).not.toContain(clientId);
      expect(raw.toString('latin1'), mailer).not.toContain(guestId);
    }
    // The outbox mailer itself never wrote one either.
    await outbox.send(message);
    expect(fs.readFileSync(path.join(outboxDir, `${invitationId}.eml`), 'latin1')).not.toMatch(/^X-Tracking-Args:/im);
  });

  it('with a Reply-To: List-Unsubscribe names it as mailto (RFC 2369), without the one-click POST header that needs https', async () => {
    const message = await invitationMessage(parts({ replyTo: 'help+rsvp@bücher.example' }), sender);
    for (const [mailer, raw] of await rendered(message)) {
      const headers = headersOf(raw);
      expect(headers.get('list-unsubscribe'), mailer).toEqual(['<mailto:help+rsvp@xn--bcher-kva.example?subject=unsubscribe>']);
      expect(headers.has('list-unsubscribe-post'), mailer).toBe(false);
    }
  });

  it('an unsubscribe address that is no address (a header injection) is refused permanently, and nothing goes out', async () => {
    const message = await invitationMessage(parts(), sender);
    const injected = { ...message, messageKey: `${invitationId}-q`, unsubscribeAddress: 'help@organizer.example?subject=x>\r\nBcc: all@example.com' };
    const before = smtp.received.length;
    await expect(smtpMailer.send(injected)).rejects.toMatchObject({ name: 'MailerError', permanent: true });
    await expect(outbox.send(injected)).rejects.toMatchObject({ name: 'MailerError', permanent: true });
    expect(smtp.received.length).toBe(before);
    expect(fs.existsSync(path.join(outboxDir, `${injected.messageKey}.eml`))).toBe(false);
  });

  it('without a Reply-To there is no mailbox to unsubscribe at: no List-Unsubscribe', async () => {
    const message = await invitationMessage(parts({ replyTo: undefined }), sender);
    expect(message.unsubscribeAddress).toBeUndefined();
    for (const [mailer, raw] of await rendered({ ...message, messageKey: `${invitationId}-n` })) {
      expect(headersOf(raw).has('list-unsubscribe'), mailer).toBe(false);
    }
  });
});

describe('SendGrid: the invitation id is the only id of ours handed over, and still names the invitation in its events', () => {
  it('custom_args hold the invitation id only; no headers and no tracking settings of ours (the account’s subscription tracking applies)', async () => {
    const message = await invitationMessage(parts(), sender);
    await sendgridMailer.send(message);
    const body = sendgrid.accepted.at(-1)!.body as unknown as Record<string, unknown>;
    expect(body.custom_args).toEqual({ attendeeInvitationId: invitationId, messageKey: invitationId });
    expect(body).not.toHaveProperty('headers');
    expect(body).not.toHaveProperty('tracking_settings');
    expect(JSON.stringify(body)).not.toContain(clientId);
    expect(JSON.stringify(body)).not.toContain(guestId);

    // SendGrid copies custom_args into each event: an unsubscribe (its one-click, subscription
    // tracking) names the invitation, whose client the service knows (comms.unsubscribed).
    const [report] = sendgridReports([
      { event: 'unsubscribe', email: 'ann@example.org', timestamp: 1_780_000_000, sg_event_id: 'ev-1', ...(body.custom_args as object) },
    ]);
    expect(report).toMatchObject({ attendeeInvitationId: invitationId, event: 'unsubscribed', email: 'ann@example.org' });
  });
});
