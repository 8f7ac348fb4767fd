/**
 * Mailer adapter for SendGrid's v3 mail/send, through the official `@sendgrid/mail` client.
 * Each instance has its own MailService and Client (not the packages' shared singletons),
 * so instances with different keys or base URLs (a test double) coexist in one process.
 */
import { Client } from '@sendgrid/client';
import { MailService, type MailDataRequired } from '@sendgrid/mail';
import { MailerError, type Mailer, type MailMessage, type MailReceipt } from './port.js';

export interface SendGridMailerOptions {
  apiKey: string;
  /** Defaults to https://api.sendgrid.com/; tests point it at a double (SENDGRID_BASE_URL). */
  baseUrl?: string;
  /** Per request; a request that takes longer fails as a transient MailerError. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** The 4xx answers worth another try; every other 4xx says the request itself is wrong (or the key is). */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 429]);

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
      disposition: 'attachment',
    })),
    customArgs: { ...message.trackingArgs, messageKey: message.messageKey },
  };
}

/** What the client rejects with on a >= 400 response (its ResponseError class is not exported at runtime). */
interface SendGridResponseError {
  code: number;
  message: string;
  response: { body?: unknown };
}

function isResponseError(error: unknown): error is SendGridResponseError {
  const candidate = error as Partial<SendGridResponseError> | undefined;
  return typeof candidate?.code === 'number' && typeof candidate.response === 'object';
}

/**
 * Builds the error from the status and SendGrid's own error messages only: the underlying
 * error objects carry the request config, Authorization header included, so they are not kept.
 */
function toMailerError(error: unknown): MailerError {
  if (isResponseError(error)) {
    const status = error.code;
    const permanent = status >= 400 && status < 500 && !RETRYABLE_CLIENT_STATUSES.has(status);
    const details = providerMessages(error.response.body);
    const text = `SendGrid rejected the message (${status}${error.message ? ` ${error.message}` : ''})`;
    return new MailerError(details.length ? `${text}: ${details.join('; ')}` : text, permanent, status);
  }
  // Network failures and timeouts (axios errors), or anything unexpected: worth another try.
  return new MailerError(`SendGrid unreachable: ${(error as Error)?.message ?? String(error)}`, false);
}

/** `{"errors":[{"message","field","help"}]}`, as SendGrid answers 4xx and most 5xx. */
function providerMessages(body: unknown): string[] {
  const parsed = typeof body === 'string' ? safeJson(body) : body;
  const errors = (parsed as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(errors)) return [];
  return errors.map((entry: { message?: unknown; field?: unknown }) =>
    entry.field ? `${String(entry.message)} (${String(entry.field)})` : String(entry.message),
  );
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
