/**
 * Contract every mailer adapter passes (DESIGN.md §2, §7). Each adapter's test reads what
 * was delivered back from its provider (the outbox folder, the SendGrid double) into one
 * normalized view, `DeliveredMail`, so the same assertions hold for all of them.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MailerError, type MailAddress, type Mailer, type MailMessage } from '../../src/adapters/mailer/port.js';

export interface DeliveredMail {
  messageKey: string;
  from: MailAddress;
  to: MailAddress;
  replyTo?: MailAddress;
  subject: string;
  html: string;
  text?: string;
  attachments: Array<{ filename: string; contentType: string; content: Buffer }>;
  /** The tracking args as given, without the message key an adapter may add next to them. */
  trackingArgs: Record<string, string>;
}

export interface MailerUnderTest {
  mailer: Mailer;
  /** Everything the provider has received so far, oldest first. */
  delivered: () => Promise<DeliveredMail[]>;
  /** Providers that can be made to fail: the next request answers with this status. */
  failNext?: (status: number, message?: string) => void;
  /** Providers with credentials: the same provider reached with another API key. */
  withApiKey?: (apiKey: string) => Mailer;
  /**
   * True when the provider takes the tracking args for its event reports (SendGrid custom_args).
   * The others leave them out: what an SMTP message carries, its recipient sees.
   */
  passesTrackingArgs?: boolean;
  /** True when a repeated hand-over of one message key delivers nothing new (the outbox). */
  dedupesMessageKey?: boolean;
}

/** A PDF-like attachment whose bytes are not valid UTF-8, so any text mangling shows. */
const pdfBytes = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x0d, 0x0a]), Buffer.from('%%EOF\n')]);

function invitation(overrides: Partial<MailMessage> = {}): MailMessage {
  return {
    messageKey: randomUUID(),
    from: { email: 'events@example.com', name: 'Example Events' },
    to: { email: 'guest@example.org', name: 'Guest One' },
    replyTo: { email: 'help@example.com', name: 'Help Desk' },
    subject: 'Your invitation',
    html: '<p>Welcome, <b>Guest One</b>.</p>',
    text: 'Welcome, Guest One.',
    attachments: [{ filename: 'invitation.pdf', contentType: 'application/pdf', content: pdfBytes }],
    trackingArgs: { eventId: 'b7b3a3b0-9f3e-4c7e-9d7e-2b1c3a4d5e6f', kind: 'invitation' },
    ...overrides,
  };
}

export function mailerContract(name: string, make: () => Promise<MailerUnderTest>): void {
  describe(`mailer contract: ${name}`, () => {
    let subject: MailerUnderTest;
    const extraMailers: Mailer[] = [];

    beforeAll(async () => {
      subject = await make();
    });

    afterAll(async () => {
      await Promise.all([subject?.mailer.close(), ...extraMailers.map((mailer) => mailer.close())]);
    });

    async function deliveredOnly(messageKey: string): Promise<DeliveredMail> {
      const matching = (await subject.delivered()).filter((mail) => mail.messageKey === messageKey);
      expect(matching).toHaveLength(1);
      return matching[0];
    }

    async function rejection(send: Promise<unknown>): Promise<MailerError> {
      const error = await send.then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(MailerError);
      return error as MailerError;
    }

    it('a message with an attachment arrives with everything it was given', async () => {
      const message = invitation();
      await subject.mailer.send(message);

      const mail = await deliveredOnly(message.messageKey);
      expect(mail).toMatchObject({
        from: message.from,
        to: message.to,
        replyTo: message.replyTo,
        subject: message.subject,
        text: message.text,
        trackingArgs: subject.passesTrackingArgs ? message.trackingArgs : {},
      });
      expect(mail.html).toContain('<b>Guest One</b>');
      expect(mail.attachments).toEqual([{ filename: 'invitation.pdf', contentType: 'application/pdf', content: pdfBytes }]);
    });

    it('an html-only message without attachments or tracking args is delivered as such', async () => {
      const message = invitation({ replyTo: undefined, text: undefined, attachments: undefined, trackingArgs: undefined });
      await subject.mailer.send(message);

      const mail = await deliveredOnly(message.messageKey);
      expect(mail.replyTo).toBeUndefined();
      expect(mail.text).toBeUndefined();
      expect(mail.attachments).toEqual([]);
      expect(mail.trackingArgs).toEqual({});
    });

    it('the receipt names the message with a provider id of its own', async () => {
      const first = await subject.mailer.send(invitation());
      const second = await subject.mailer.send(invitation());

      expect(first.providerMessageId).toMatch(/\S/);
      expect(second.providerMessageId).not.toBe(first.providerMessageId);
    });

    it('the message key comes back with the delivered message; tracking args only where the provider takes them for its events', async () => {
      const trackingArgs = { attendeeInvitationId: randomUUID(), note: 'Grüße, "quoted" & spaced' };
      const message = invitation({ trackingArgs });
      await subject.mailer.send(message);

      const mail = await deliveredOnly(message.messageKey);
      expect(mail.messageKey).toBe(message.messageKey);
      expect(mail.trackingArgs).toEqual(subject.passesTrackingArgs ? trackingArgs : {});
    });

    it('non-ASCII subjects, names, bodies and file names survive', async () => {
      const message = invitation({
        from: { email: 'events@example.com', name: 'Zoë Müller-Lüdenscheidt, Événements' },
        to: { email: 'guest@example.org', name: '王小明 "Ming"' },
        subject: 'Einladung für Zoë: Sommerfest 2026 — 会议邀请 🎉 mit einer recht langen Betreffzeile',
        html: '<p>Grüße aus Köln — 欢迎 🎉</p>',
        text: 'Grüße aus Köln — 欢迎 🎉',
        attachments: [{ filename: 'Einladung für Zoë.pdf', contentType: 'application/pdf', content: pdfBytes }],
      });
      await subject.mailer.send(message);

      const mail = await deliveredOnly(message.messageKey);
      expect(mail).toMatchObject({ from: message.from, to: message.to, subject: message.subject, text: message.text });
      expect(mail.html).toContain('Grüße aus Köln — 欢迎 🎉');
      expect(mail.attachments.map((attachment) => attachment.filename)).toEqual(['Einladung für Zoë.pdf']);
    });

    it('an invalid to address is a permanent MailerError and nothing is delivered', async () => {
      const message = invitation({ to: { email: 'not an address', name: 'Nobody' } });

      const error = await rejection(subject.mailer.send(message));
      expect(error.permanent).toBe(true);
      expect((await subject.delivered()).some((mail) => mail.messageKey === message.messageKey)).toBe(false);
    });

    it('a repeated hand-over of one message key delivers one message and the same receipt', async ({ skip }) => {
      skip(!subject.dedupesMessageKey, `${name} does not deduplicate by message key`);
      const message = invitation();
      const first = await subject.mailer.send(message);
      const again = await subject.mailer.send({ ...message, subject: 'A changed subject' });

      expect(again).toEqual(first);
      expect((await deliveredOnly(message.messageKey)).subject).toBe(message.subject);
    });

    it('a provider 5xx or 429 is a transient MailerError', async ({ skip }) => {
      skip(!subject.failNext, `${name} has no HTTP status to script (its own failure tests cover SMTP replies)`);
      for (const status of [500, 503, 429]) {
        subject.failNext!(status);
        const error = await rejection(subject.mailer.send(invitation()));
        expect(error).toMatchObject({ permanent: false, statusCode: status });
      }
    });

    it('a provider 400 is a permanent MailerError carrying the provider message', async ({ skip }) => {
      skip(!subject.failNext, `${name} has no HTTP status to script (its own failure tests cover SMTP replies)`);
      subject.failNext!(400, 'The to email is invalid');

      const error = await rejection(subject.mailer.send(invitation()));
      expect(error).toMatchObject({ permanent: true, statusCode: 400 });
      expect(error.message).toContain('The to email is invalid');
    });

    it('a wrong API key is a MailerError refusing our credentials (held and retried, not permanent) that never contains the key', async ({ skip }) => {
      skip(!subject.withApiKey, `${name} authenticates without an API key (its own tests cover a wrong password)`);
      const wrongKey = `SG.wrong-${randomUUID()}`;
      const mailer = subject.withApiKey!(wrongKey);
      extraMailers.push(mailer);

      const error = await rejection(mailer.send(invitation()));
      expect(error).toMatchObject({ permanent: false, statusCode: 401, credentialsRefused: expect.stringContaining('SENDGRID_API_KEY') });
      expect(`${error.message} ${error.stack} ${JSON.stringify(error)}`).not.toContain(wrongKey);
    });
  });
}
