/**
 * Domain authentication through SendGrid's v3 API (`/v3/whitelabel/domains`), with the official
 * `@sendgrid/client`. Automated security, so SendGrid hands out three CNAMEs (`mail_cname`,
 * `dkim1`, `dkim2`) and rotates the DKIM keys behind them itself. The instance has its own
 * Client (not the package's singleton), so a test double's base URL never leaks into others.
 */
import { Client } from '@sendgrid/client';
import type { ClientRequest } from '@sendgrid/client/src/request.js';
import { z } from 'zod';
import { DomainProviderError, type AuthenticatedDomain, type DnsRecord, type DomainAuthenticator } from './port.js';

export interface SendGridDomainAuthenticatorOptions {
  apiKey: string;
  /** Defaults to https://api.sendgrid.com/; tests point it at a double (SENDGRID_BASE_URL). */
  baseUrl?: string;
  /** Per request; a request that takes longer fails as a transient DomainProviderError. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DOMAINS = '/v3/whitelabel/domains';

/** The 4xx answers worth another try; every other 4xx refuses the request itself. */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 429]);

/** What SendGrid answers for an authenticated domain (create, get); `dns` keyed by purpose. */
const sendGridDomain = z.object({
  id: z.number(),
  domain: z.string(),
  subdomain: z.string(),
  valid: z.boolean(),
  dns: z.record(
    z.string(),
    z.object({
      valid: z.boolean(),
      type: z.string().transform((type) => type.toLowerCase()).pipe(z.enum(['cname', 'txt', 'mx'])),
      host: z.string(),
      data: z.string(),
    }),
  ),
});

/** The validate answer: overall `valid` and, per record purpose, `valid` and a `reason` when not. */
const validation = z.object({
  valid: z.boolean(),
  validation_results: z.record(z.string(), z.object({ valid: z.boolean() }).loose()).default({}),
});

export class SendGridDomainAuthenticator implements DomainAuthenticator {
  readonly kind = 'sendgrid';
  private readonly client = new Client();

  constructor({ apiKey, baseUrl, timeoutMs = DEFAULT_TIMEOUT_MS }: SendGridDomainAuthenticatorOptions) {
    // setApiKey resets the base URL to the global region, so the override comes after it.
    this.client.setApiKey(apiKey);
    if (baseUrl) this.client.setDefaultRequest('baseUrl', baseUrl);
    // The client hands its default request to axios, which reads `timeout`; the typings omit it.
    this.client.setDefaultRequest({ timeout: timeoutMs } as Partial<ClientRequest> as ClientRequest);
  }

  async create(request: { domain: string; subdomain?: string }): Promise<AuthenticatedDomain> {
    const body = {
      domain: request.domain.trim().toLowerCase(),
      ...(request.subdomain === undefined ? {} : { subdomain: request.subdomain.trim().toLowerCase() }),
      automatic_security: true,
      default: false,
    };
    const created = await this.call('refused the domain', sendGridDomain, { method: 'POST', url: DOMAINS, body });
    return fromSendGrid(created);
  }

  /** Asks SendGrid to check the records now, then reads the record list back (hosts and data can change). */
  async validate(domain: AuthenticatedDomain): Promise<AuthenticatedDomain> {
    const url = `${DOMAINS}/${encodeURIComponent(domain.providerId)}`;
    const result = await this.call('could not validate the domain', validation, { method: 'POST', url: `${url}/validate` });
    const current = fromSendGrid(await this.call('could not read the domain', sendGridDomain, { method: 'GET', url }));
    const records = current.records.map((record) => ({
      ...record,
      valid: result.validation_results[record.purpose]?.valid ?? record.valid,
    }));
    return { ...current, records, valid: result.valid };
  }

  async remove(domain: AuthenticatedDomain): Promise<void> {
    try {
      await this.client.request({ method: 'DELETE', url: `${DOMAINS}/${encodeURIComponent(domain.providerId)}` });
    } catch (error) {
      if (isResponseError(error) && error.code === 404) return; // already gone
      throw toDomainProviderError(error, 'could not remove the domain');
    }
  }

  private async call<T>(failure: string, schema: z.ZodType<T>, request: ClientRequest): Promise<T> {
    let body: unknown;
    try {
      [, body] = await this.client.request(request);
    } catch (error) {
      throw toDomainProviderError(error, failure);
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) throw new DomainProviderError(`SendGrid ${failure}: unexpected answer`, false);
    return parsed.data;
  }
}

function fromSendGrid(domain: z.infer<typeof sendGridDomain>): AuthenticatedDomain {
  const records: DnsRecord[] = Object.entries(domain.dns).map(([purpose, record]) => ({ purpose, ...record }));
  return { providerId: String(domain.id), domain: domain.domain, subdomain: domain.subdomain, valid: domain.valid, records };
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
 * Built from the status and SendGrid's own messages only: the underlying error objects carry
 * the request config, Authorization header included, so they are neither kept nor wrapped.
 * SendGrid's messages are kept whole: on create they become the 422 sendgrid_create_failed message.
 */
function toDomainProviderError(error: unknown, failure: string): DomainProviderError {
  if (isResponseError(error)) {
    const status = error.code;
    const permanent = status >= 400 && status < 500 && !RETRYABLE_CLIENT_STATUSES.has(status);
    const details = providerMessages(error.response.body);
    const text = `SendGrid ${failure} (${status})`;
    return new DomainProviderError(details.length ? `${text}: ${details.join('; ')}` : text, permanent, status);
  }
  // Network failures and timeouts (axios errors), or anything unexpected: worth another try.
  return new DomainProviderError(`SendGrid unreachable: ${(error as Error)?.message ?? String(error)}`, false);
}

/** `{"errors":[{"message","field"}]}`, as SendGrid answers 4xx and most 5xx. */
function providerMessages(body: unknown): string[] {
  const parsed = typeof body === 'string' ? safeJson(body) : body;
  const errors = (parsed as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(errors)) return [];
  return errors
    .map((entry: { message?: unknown } | null) => entry?.message)
    .filter((message): message is string => typeof message === 'string' && message !== '');
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
