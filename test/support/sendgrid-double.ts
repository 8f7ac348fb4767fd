/**
 * An HTTP test double of the SendGrid v3 endpoints this service calls (DESIGN.md §7), so the
 * real `@sendgrid/*` clients run unchanged against it (`SENDGRID_BASE_URL`). It answers the
 * way SendGrid does: `{"errors":[{"message","field","help"}]}` bodies, 202 + `X-Message-Id`, a 429
 * with `X-RateLimit-Reset`.
 *
 * Supported: `POST /v3/mail/send`; domain authentication with automated security
 * (`POST` and `GET /v3/whitelabel/domains` (`?domain=` searches), `GET` and `DELETE /v3/whitelabel/domains/{id}`,
 * `POST /v3/whitelabel/domains/{id}/validate`). DNS is not looked up: a test marks records as
 * propagated with `publishDns`, and validate answers from that.
 */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
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
  attachments?: Array<{ content: string; filename: string; type?: string; disposition?: string; content_id?: string }>;
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
  /**
   * The next request is processed as usual (a domain is created, a mail accepted), but its answer
   * is lost: the client gets this status instead, as from a gateway that timed out waiting.
   */
  loseNextAnswer(status: number): void;
  /**
   * Every request is refused as SendGrid refuses a key (401 by default: revoked, deleted or wrong;
   * 403 `access forbidden`: a key without the scope) until `restoreKey`, as after a bad key rotation.
   */
  revokeKey(status?: 401 | 403, message?: string): void;
  restoreKey(): void;
  /** Authenticated domains by id, as created (and deleted) through the API. */
  domains: Map<number, SendGridDomain>;
  /**
   * Marks records of a domain (by id or domain name) as propagated, so validate sees them;
   * all three when `records` is omitted.
   */
  publishDns(domain: number | string, records?: DnsPurpose[]): void;
  close(): Promise<void>;
}

/** The records SendGrid hands out for a domain with automated security. */
export type DnsPurpose = 'mail_cname' | 'dkim1' | 'dkim2';
const DNS_PURPOSES: DnsPurpose[] = ['mail_cname', 'dkim1', 'dkim2'];

export interface SendGridDnsRecord {
  valid: boolean;
  type: 'cname';
  host: string;
  data: string;
}

/** An authenticated domain in SendGrid's shape (create and get answer with it). */
export interface SendGridDomain {
  id: number;
  user_id: number;
  subdomain: string;
  domain: string;
  username: string;
  ips: string[];
  custom_spf: boolean;
  default: boolean;
  legacy: boolean;
  automatic_security: boolean;
  valid: boolean;
  dns: Record<DnsPurpose, SendGridDnsRecord>;
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
  const scripted: Array<{ status: number; message?: string; process?: boolean }> = [];
  const domains = new Map<number, SendGridDomain>();
  /** Per domain id, the records a test has published. */
  const propagated = new Map<number, Set<DnsPurpose>>();
  const userId = randomInt(1_000_000, 10_000_000);
  let nextDomainId = 1;
  let revoked: { status: number; message: string } | undefined;

  const server = http.createServer((req, res) => {
    void route(req, res).catch((error: Error) => reply(res, 500, [providerError(error.message)]));
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    // Another key is another sender (a service of another test file that had a double on this
    // listen(0) port before, still retrying): refused before it takes a scripted answer meant for this test's sender.
    if (!authorized(req)) return reply(res, 401, [providerError(STATUS_MESSAGES[401])]);
    const script = scripted.shift();
    if (script?.process) {
      // Acted on, answer lost: run the request against a sink, then answer the scripted status.
      const sink = new http.ServerResponse(req);
      await handle(req, sink, body);
      return reply(res, script.status, [providerError(STATUS_MESSAGES[script.status] ?? 'error')]);
    }
    if (script) {
      // SendGrid answers every request, a 429 too, with its rate limit: X-RateLimit-Reset is the Unix second it refreshes.
      const limits: Record<string, string> = script.status === 429 ? { 'X-RateLimit-Limit': '600', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(Math.floor(Date.now() / 1000) + 1) } : {};
      return reply(res, script.status, [providerError(script.message ?? STATUS_MESSAGES[script.status] ?? 'error')], limits);
    }
    return handle(req, res, body);
  }

  async function handle(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
    if (revoked) return reply(res, revoked.status, [providerError(revoked.message)]);
    if (!authorized(req)) return reply(res, 401, [providerError(STATUS_MESSAGES[401])]);
    const url = new URL(req.url ?? '/', 'http://double');
    const path = url.pathname;
    if (req.method === 'POST' && path === '/v3/mail/send') return mailSend(body, res);
    if (req.method === 'POST' && path === '/v3/whitelabel/domains') return createDomain(body, res);
    if (req.method === 'GET' && path === '/v3/whitelabel/domains') {
      // "Search for authenticated domains"; the caller filters the answer to the exact name.
      const search = url.searchParams.get('domain')?.toLowerCase() ?? '';
      return json(res, 200, [...domains.values()].filter((domain) => domain.domain.includes(search)));
    }
    const domainRoute = /^\/v3\/whitelabel\/domains\/(\d+)(\/validate)?$/.exec(path);
    if (domainRoute) {
      const domain = domains.get(Number(domainRoute[1]));
      if (!domain) return reply(res, 404, [providerError('authenticated domain not found')]);
      if (domainRoute[2] && req.method === 'POST') return json(res, 200, validateDomain(domain));
      if (!domainRoute[2] && req.method === 'GET') return json(res, 200, domain);
      if (!domainRoute[2] && req.method === 'DELETE') {
        domains.delete(domain.id);
        return void res.writeHead(204).end();
      }
    }
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

  function createDomain(raw: string, res: ServerResponse): void {
    const request = (safeJson(raw) ?? {}) as { domain?: unknown; subdomain?: unknown; automatic_security?: unknown; default?: unknown };
    const domain = typeof request.domain === 'string' ? request.domain.toLowerCase() : '';
    if (!isDomainName(domain)) return reply(res, 400, [domainError('invalid domain', 'domain')]);
    if (request.subdomain !== undefined && (typeof request.subdomain !== 'string' || !isLabel(request.subdomain))) {
      return reply(res, 400, [domainError('invalid subdomain', 'subdomain')]);
    }
    // Manual security answers with TXT and MX records instead, which this double does not model.
    if (request.automatic_security !== true) return reply(res, 400, [domainError('the double supports automatic_security only', 'automatic_security')]);
    const taken = (candidate: string) => [...domains.values()].some((existing) => existing.domain === domain && existing.subdomain === candidate);
    let subdomain = typeof request.subdomain === 'string' ? request.subdomain.toLowerCase() : '';
    while (!subdomain || (request.subdomain === undefined && taken(subdomain))) subdomain = `em${randomInt(1000, 10_000)}`;
    // SendGrid authenticates the same root domain again: without a subdomain each create gets its
    // own generated one (support article "Multiple Duplicate Domain Failure": em123 and em456 of one
    // domain, only one of which can validate). Only the very same domain and subdomain is refused here.
    if (taken(subdomain)) {
      return reply(res, 400, [domainError('A domain authentication for this domain and subdomain already exists.', 'subdomain')]);
    }
    const id = nextDomainId++;
    const relay = `u${userId}.wl${id}.sendgrid.net`;
    const cname = (host: string, data: string): SendGridDnsRecord => ({ valid: false, type: 'cname', host, data });
    const created: SendGridDomain = {
      id,
      user_id: userId,
      subdomain,
      domain,
      username: 'checkin-double',
      ips: [],
      custom_spf: false,
      default: request.default === true,
      legacy: false,
      automatic_security: true,
      valid: false,
      dns: {
        mail_cname: cname(`${subdomain}.${domain}`, relay),
        dkim1: cname(`s1._domainkey.${domain}`, `s1.domainkey.${relay}`),
        dkim2: cname(`s2._domainkey.${domain}`, `s2.domainkey.${relay}`),
      },
    };
    domains.set(id, created);
    json(res, 201, created);
  }

  /** Checks each record against what the test published; like SendGrid, the stored flags follow. */
  function validateDomain(domain: SendGridDomain): object {
    const seen = propagated.get(domain.id) ?? new Set<DnsPurpose>();
    const validation_results: Record<string, { valid: boolean; reason: string | null }> = {};
    for (const purpose of DNS_PURPOSES) {
      const record = domain.dns[purpose];
      record.valid = seen.has(purpose);
      validation_results[purpose] = {
        valid: record.valid,
        reason: record.valid ? null : `Expected CNAME for "${record.host}" to match "${record.data}".`,
      };
    }
    domain.valid = DNS_PURPOSES.every((purpose) => domain.dns[purpose].valid);
    return { id: domain.id, valid: domain.valid, validation_results };
  }

  function publishDns(key: number | string, records: DnsPurpose[] = DNS_PURPOSES): void {
    const domain = [...domains.values()].find((candidate) => candidate.id === Number(key) || candidate.domain === key);
    if (!domain) throw new Error(`no authenticated domain ${key} in the SendGrid double`);
    const seen = propagated.get(domain.id) ?? new Set<DnsPurpose>();
    for (const purpose of records) seen.add(purpose);
    propagated.set(domain.id, seen);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    accepted,
    failNext: (status, message) => void scripted.push({ status, message }),
    loseNextAnswer: (status) => void scripted.push({ status, process: true }),
    revokeKey: (status = 401, message) => void (revoked = { status, message: message ?? STATUS_MESSAGES[status]! }),
    restoreKey: () => void (revoked = undefined),
    domains,
    publishDns,
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

/** Domain-authentication errors name the field but link no help page. */
function domainError(message: string, field: string): ProviderError {
  return { message, field, help: null };
}

function reply(res: ServerResponse, status: number, errors: ProviderError[], headers: Record<string, string> = {}): void {
  json(res, status, { errors }, headers);
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A DNS label: letters, digits and inner hyphens, up to 63 characters. */
function isLabel(value: string): boolean {
  return /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(value);
}

/** SendGrid's refusal, approximated: at least two labels, no IP address, a TLD with a letter. */
function isDomainName(value: string): boolean {
  const labels = value.split('.');
  return value.length <= 253 && labels.length >= 2 && labels.every(isLabel) && /[a-z]/i.test(labels[labels.length - 1]) && !isIP(value);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
