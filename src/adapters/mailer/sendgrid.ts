/**
 * Mailer adapter for SendGrid's v3 mail/send, through the official `@sendgrid/mail` client.
 * Each instance has its own MailService and Client (not the packages' shared singletons),
 * so instances with different keys or base URLs (a test double) coexist in one process.
 */
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { Client } from '@sendgrid/client';
import { MailService, type MailDataRequired } from '@sendgrid/mail';
import { MailerError, type MailAddress, type Mailer, type MailMessage, type MailReceipt } from './port.js';
import { isResponseError, refusesCredentials, sendGridFailure } from '../sendgrid-errors.js';

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
    // Our own agents, to tell whether a failed request ever reached SendGrid (toMailerError), and
    // no redirects, so that the request axios reports is the one that went out (mail/send never
    // redirects).
    // (The client merges its default request into axios's options as given; its type names httpsAgent only.)
    const axiosOptions = {
      httpAgent: notingConnections(new http.Agent({ keepAlive: true }), 'connect'),
      httpsAgent: notingConnections(new https.Agent({ keepAlive: true }), 'secureConnect'),
      maxRedirects: 0,
    };
    client.setDefaultRequest(axiosOptions as unknown as Parameters<Client['setDefaultRequest']>[0]);
    this.service.setClient(client);
    this.service.setTimeout(timeoutMs);
  }

  async send(message: MailMessage): Promise<MailReceipt> {
    const data = toSendGrid(message);
    checkSize(data);
    try {
      const [response] = await this.service.send(data);
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
    to: recipient(message.to),
    replyTo: message.replyTo,
    subject: message.subject,
    html: message.html,
    // SendGrid refuses an empty content value (400 "The content value must be a string at least one
    // character in length"): html that renders to no text (an image only) goes without a text part.
    ...(message.text ? { text: message.text } : {}),
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

/**
 * SendGrid's mail/send limits ("Mail Send: Limitations"): the whole email, attachments included,
 * under 30 MB. The JSON body is what SendGrid measures (413 "The JSON payload you have included in
 * your request is too large"), so it is weighed as sent; a larger one is refused here, permanently,
 * instead of uploading it to be refused (or cut off mid-upload, which would leave its outcome unknown).
 */
export const SENDGRID_MAX_MESSAGE_BYTES = 30 * 1024 * 1024;

function checkSize(data: MailDataRequired): void {
  const bytes = Buffer.byteLength(JSON.stringify(data));
  if (bytes >= SENDGRID_MAX_MESSAGE_BYTES) {
    const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
    throw new MailerError(`the email is ${mb(bytes)} MB with its attachments; SendGrid takes less than ${mb(SENDGRID_MAX_MESSAGE_BYTES)} MB`, true, 413);
  }
}

/**
 * SendGrid refuses a recipient name with `;` or `,` (400; "Mail Send: Limitations": to.name cannot
 * include either). A guest named "Smith, Jr." still gets the email, named "Smith Jr.".
 */
function recipient(address: MailAddress): MailAddress {
  if (address.name === undefined) return address;
  const name = address.name.replace(/[;,]/g, ' ').replace(/\s+/g, ' ').trim();
  return name ? { email: address.email, name } : { email: address.email };
}

/** The provider's refusal (permanent or not) as a MailerError; see sendgrid-errors.ts for what is kept. */
function toMailerError(error: unknown): MailerError {
  // @sendgrid/mail's helpers check the data before any request and reject with a plain Error: the same
  // message would be refused again. (Network failures come as axios errors, answers as ResponseError.)
  if (!isResponseError(error) && (error as { isAxiosError?: unknown } | undefined)?.isAxiosError !== true) {
    return new MailerError(`SendGrid's client refused the message before sending it: ${(error as Error)?.message ?? String(error)}`, true);
  }
  const failure = sendGridFailure(error, { withFields: true });
  if (failure.kind === 'unreachable') {
    if (!failure.requestSent || !reachedSendGrid(error)) return new MailerError(`SendGrid unreachable: ${failure.reason}`, false);
    return new MailerError(
      `SendGrid did not answer (${failure.reason}) after the email was handed over; it may have accepted it, so it is not sent again`,
      false,
      undefined,
      { outcomeUnknown: true },
    );
  }
  const text = `SendGrid rejected the message (${failure.status}${failure.statusText ? ` ${failure.statusText}` : ''})`;
  const described = failure.messages.length ? `${text}: ${failure.messages.join('; ')}` : text;
  if (refusesCredentials(failure.status, failure.messages)) {
    // Our key, not the email: SendGrid took nothing, so the send is held and tried again (send worker).
    const fix = 'check SENDGRID_API_KEY: a key that exists in SendGrid (Settings > API Keys) with the Mail Send (mail.send) scope, on an account that may send';
    return new MailerError(`SendGrid refused the API key (${failure.status}${failure.messages.length ? `: ${failure.messages.join('; ')}` : ''})`, false, failure.status, { credentialsRefused: fix });
  }
  return new MailerError(described, failure.permanent, failure.status, {
    ...(failure.retryAfterMs !== undefined ? { retryAfterMs: failure.retryAfterMs } : {}),
  });
}

/**
 * Sockets whose connection (TCP, and TLS for https) was made: only on such a socket can a request
 * have reached SendGrid. A connection that timed out or failed before it was made carried nothing,
 * so that send is retried instead of being left with an unknown outcome.
 */
const connectedSockets = new WeakSet<Duplex>();

/** `agent`, noting each socket it makes once `connected` fires on it ('connect', or 'secureConnect' for TLS). */
function notingConnections<A extends http.Agent>(agent: A, connected: 'connect' | 'secureConnect'): A {
  const create = agent.createConnection.bind(agent);
  agent.createConnection = (...args: Parameters<http.Agent['createConnection']>) => {
    const socket = create(...args);
    socket?.once(connected, () => connectedSockets.add(socket));
    return socket;
  };
  return agent;
}

/**
 * Whether the failed request had a connection to SendGrid (an axios error carries the request it
 * made). Without one nothing was sent; with one, the request may have been received.
 */
function reachedSendGrid(error: unknown): boolean {
  const socket = (error as { request?: { socket?: Duplex | null } } | undefined)?.request?.socket;
  return socket ? connectedSockets.has(socket) : false;
}
