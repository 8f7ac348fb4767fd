/**
 * Mailer adapter for SendGrid's v3 mail/send, through the official `@sendgrid/mail` client.
 * Each instance has its own MailService and Client (not the packages' shared singletons),
 * so instances with different keys or base URLs (a test double) coexist in one process.
 */
import { Client } from '@sendgrid/client';
import { MailService, type MailDataRequired } from '@sendgrid/mail';
import { MailerError, type Mailer, type MailMessage, type MailReceipt } from './port.js';
import { sendGridFailure } from '../sendgrid-errors.js';

export interface SendGridMailerOptions {
  apiKey: string;
  /** Defaults to https://api.sendgrid.com/; tests point it at a double (SENDGRID_BASE_URL). */
  baseUrl?: string;
  /** Per request; a request that takes longer fails as a transient MailerError. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

export class SendGridMailer implements Mailer {
  readonly kind = 'sendgrid';
  private readonly service = new MailService();

  constructor({ apiKey, baseUrl, timeoutMs = DEFAULT_TIMEOUT_MS }: SendGridMailerOptions) {
    const client = new Client();
    // setApiKey resets the base URL to the global region, so the override comes after it.
    client.setApiKey(apiKey);
    if (baseUrl) client.setDefaultRequest('baseUrl', baseUrl);
    this.service.setClient(client);
    this.service.setTimeout(timeoutMs);
  }

  async send(message: MailMessage): Promise<MailReceipt> {
    try {
      const [response] = await this.service.send(toSendGrid(message));
      // SendGrid always sets it on 202; a message accepted without one is still accepted.
      return { providerMessageId: String(response.headers?.['x-message-id'] ?? '') };
    } catch (error) {
      throw toMailerError(error);
    }
  }

  async close(): Promise<void> {}
}

/** The v3 mail/send body; `messageKey` rides in custom_args so event webhooks can name the message. */
function toSendGrid(message: MailMessage): MailDataRequired {
  return {
    from: message.from,
    to: message.to,
    replyTo: message.replyTo,
    subject: message.subject,
    html: message.html,
    text: message.text,
    attachments: message.attachments?.map((attachment) => ({
      filename: attachment.filename,
      type: attachment.contentType,
      content: attachment.content.toString('base64'),
      // v3 mail/send: an inline image names its content_id, which the html references as cid:. The
      // helper passes attachment objects through as given (it does not snake_case them), so the
      // wire name is written here.
      ...(attachment.contentId ? { disposition: 'inline', content_id: attachment.contentId } : { disposition: 'attachment' }),
    })) as MailDataRequired['attachments'],
    customArgs: { ...message.trackingArgs, messageKey: message.messageKey },
  };
}

/** The provider's refusal (permanent or not) as a MailerError; see sendgrid-errors.ts for what is kept. */
function toMailerError(error: unknown): MailerError {
  const failure = sendGridFailure(error, { withFields: true });
  if (failure.kind === 'unreachable') return new MailerError(`SendGrid unreachable: ${failure.reason}`, false);
  const text = `SendGrid rejected the message (${failure.status}${failure.statusText ? ` ${failure.statusText}` : ''})`;
  return new MailerError(failure.messages.length ? `${text}: ${failure.messages.join('; ')}` : text, failure.permanent, failure.status);
}
