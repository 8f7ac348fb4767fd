/**
 * An HTTP test double of the SendGrid v3 endpoints this service calls (DESIGN.md §7), so the
 * real `@sendgrid/*` clients run unchanged against it (`SENDGRID_BASE_URL`). It answers the
 * way SendGrid does: `{"errors":[{"message","field","help"}]}` bodies, 202 + `X-Message-Id`.
 *
 * Supported: `POST /v3/mail/send`.
 * Domain-authentication endpoints (`/v3/whitelabel/domains...`) belong here too when that
 * adapter is written: add them as routes next to `mailSend` below, sharing `authorized`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/** The parts of a v3 mail/send body this service sends, as SendGrid receives them. */
export interface SendGridAddress {
  email: string;
  name?: string;
}

export interface SendGridMail {
  personalizations: Array<{ to: SendGridAddress[] }>;
  from: SendGridAddress;
  reply_to?: SendGridAddress;
  subject: string;
  content: Array<{ type: string; value: string }>;
  attachments?: Array<{ content: string; filename: string; type?: string; disposition?: string }>;
  custom_args?: Record<string, string>;
}

export interface AcceptedMail {
  /** The `X-Message-Id` the double answered with. */
  messageId: string;
  body: SendGridMail;
}

export interface SendGridDouble {
  /** Base URL for `SendGridMailer({ baseUrl })`, e.g. `http://127.0.0.1:54321`. */
  url: string;
  apiKey: string;
  accepted: AcceptedMail[];
  /** The next request gets this status (with a SendGrid-style error body) instead of being processed. */
  failNext(status: number, message?: string): void;
  close(): Promise<void>;
}

interface ProviderError {
  message: string;
  field: string | null;
  help: string | null;
}

const HELP = 'http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html';

/** SendGrid's wording for the common failures (used when a test scripts one without a message). */
const STATUS_MESSAGES: Record<number, string> = {
  400: 'Bad Request',
  401: 'The provided authorization grant is invalid, expired, or revoked',
  403: 'access forbidden',
  413: 'Payload Too Large',
  429: 'too many requests',
  500: 'internal server error',
  503: 'service unavailable',
};

export async function startSendGridDouble(options: { apiKey?: string } = {}): Promise<SendGridDouble> {
  // Real keys start with "SG."; the client warns on console otherwise.
  const apiKey = options.apiKey ?? `SG.double-${randomUUID()}`;
  const accepted: AcceptedMail[] = [];
  const scripted: Array<{ status: number; message?: string }> = [];

  const server = http.createServer((req, res) => {
    void route(req, res).catch((error: Error) => reply(res, 500, [providerError(error.message)]));
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const script = scripted.shift();
    if (script) return reply(res, script.status, [providerError(script.message ?? STATUS_MESSAGES[script.status] ?? 'error')]);
    if (!authorized(req)) return reply(res, 401, [providerError(STATUS_MESSAGES[401])]);
    if (req.method === 'POST' && req.url === '/v3/mail/send') return mailSend(body, res);
    reply(res, 404, [providerError('not found')]);
  }

  function authorized(req: IncomingMessage): boolean {
    return req.headers.authorization === `Bearer ${apiKey}`;
  }

  function mailSend(raw: string, res: ServerResponse): void {
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return reply(res, 400, [providerError('Bad Request', null)]);
    }
    const errors = mailSendErrors(body);
    if (errors.length) return reply(res, 400, errors);
    const messageId = randomBytes(16).toString('base64url');
    accepted.push({ messageId, body: body as SendGridMail });
    res.writeHead(202, { 'X-Message-Id': messageId }).end();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    accepted,
    failNext: (status, message) => void scripted.push({ status, message }),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

const email = z.email();
const isEmail = (value: unknown): boolean => email.safeParse(value).success;

/** SendGrid's validation of the fields this service sends, with SendGrid's messages and field names. */
function mailSendErrors(body: unknown): ProviderError[] {
  const mail = (body ?? {}) as Partial<SendGridMail>;
  const errors: ProviderError[] = [];
  const add = (message: string, field: string) => errors.push(providerError(message, field));
  if (!isEmail(mail.from?.email)) add('The from email does not contain a valid address.', 'from.email');
  const to = mail.personalizations?.[0]?.to ?? [];
  if (to.length === 0) add('The to array is required for all personalization objects, and must have at least one email object with a valid email address.', 'personalizations.0.to');
  to.forEach((address, i) => {
    if (!isEmail(address?.email)) add('Does not contain a valid address.', `personalizations.0.to.${i}.email`);
  });
  if (mail.reply_to && !isEmail(mail.reply_to.email)) add('The reply_to email does not contain a valid address.', 'reply_to.email');
  if (typeof mail.subject !== 'string' || mail.subject === '') add('The subject is required.', 'subject');
  errors.push(...contentErrors(mail.content));
  errors.push(...attachmentErrors(mail.attachments));
  for (const [key, value] of Object.entries(mail.custom_args ?? {})) {
    if (typeof value !== 'string') add('Invalid type. Expected: string.', `custom_args.${key}`);
  }
  return errors;
}

function contentErrors(content: SendGridMail['content'] | undefined): ProviderError[] {
  if (!Array.isArray(content) || content.length === 0) {
    return [providerError('Unless a valid template_id is provided, the content parameter is required.', 'content')];
  }
  if (content.some((part) => typeof part.value !== 'string' || part.value === '')) {
    return [providerError('The content value must be a string at least one character in length.', 'content.value')];
  }
  const plainIndex = content.findIndex((part) => part.type === 'text/plain');
  if (plainIndex > 0) {
    return [providerError('If present, text/plain content must be first, followed by text/html, followed by any other content.', 'content')];
  }
  return [];
}

function attachmentErrors(attachments: SendGridMail['attachments']): ProviderError[] {
  return (attachments ?? []).flatMap((attachment, i) => {
    if (!attachment.filename) return [providerError('The attachment filename parameter is required.', `attachments.${i}.filename`)];
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(attachment.content ?? '')) {
      return [providerError('The attachment content must be base64 encoded.', `attachments.${i}.content`)];
    }
    return [];
  });
}

function providerError(message: string, field: string | null = null): ProviderError {
  return { message, field, help: field ? `${HELP}#message.${field}` : null };
}

function reply(res: ServerResponse, status: number, errors: ProviderError[]): void {
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ errors }));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
