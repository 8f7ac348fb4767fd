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
import { isResponseError, sendGridFailure } from '../sendgrid-errors.js';

export interface SendGridDomainAuthenticatorOptions {
  apiKey: string;
  /** Defaults to https://api.sendgrid.com/; tests point it at a double (SENDGRID_BASE_URL). */
  baseUrl?: string;
  /** Per request; a request that takes longer fails as a transient DomainProviderError. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DOMAINS = '/v3/whitelabel/domains';

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
  validation_results: z.record(z.string(), z.object({ valid: z.boolean(), reason: z.string().nullish() }).loose()).default({}),
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
    const records = current.records.map((record) => {
      const checked = result.validation_results[record.purpose];
      const valid = checked?.valid ?? record.valid;
      // SendGrid's reason ("Expected CNAME for … to match …") tells the client what to correct.
      return { ...record, valid, ...(!valid && checked?.reason ? { reason: checked.reason } : {}) };
    });
    return { ...current, records, valid: result.valid };
  }

  /** `GET /v3/whitelabel/domains?domain=` (a search, so the answer is filtered to the exact names here). */
  async find(request: { domain: string; subdomain: string }): Promise<AuthenticatedDomain | undefined> {
    const domain = request.domain.trim().toLowerCase();
    const subdomain = request.subdomain.trim().toLowerCase();
    const listed = await this.call('could not list domains', z.array(z.unknown()), { method: 'GET', url: DOMAINS, qs: { domain, limit: 200 } });
    // Read one by one: another entry of the search (a legacy or manual-security one) in a shape not read here is no reason to fail.
    const entries = listed.flatMap((entry) => {
      const parsed = sendGridDomain.safeParse(entry);
      return parsed.success ? [parsed.data] : [];
    });
    const match = entries.find((entry) => entry.domain.toLowerCase() === domain && entry.subdomain.toLowerCase() === subdomain);
    return match ? fromSendGrid(match) : undefined;
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

/** SendGrid's refusal as a DomainProviderError; its messages are kept whole (on create they become the 422 sendgrid_create_failed message). */
function toDomainProviderError(error: unknown, failure: string): DomainProviderError {
  const read = sendGridFailure(error);
  if (read.kind === 'unreachable') return new DomainProviderError(`SendGrid unreachable: ${read.reason}`, false);
  const text = `SendGrid ${failure} (${read.status})`;
  return new DomainProviderError(read.messages.length ? `${text}: ${read.messages.join('; ')}` : text, read.permanent, read.status, read.retryAfterMs);
}
