/**
 * Embedded domain authentication (docs/invitations.md): no provider account; the records are generated
 * here, in SendGrid's shape, and verified by real DNS lookups. Everything needed to check a
 * domain travels in the `AuthenticatedDomain` the caller keeps, so this adapter stores nothing.
 *
 * Records:
 * - `mail_cname`: CNAME `<subdomain>.<domain>` → `u<random>.<target>`. `target` is the name an
 *   operator points at their mail relay (a wildcard `*.<target>` record covers every domain).
 * - `domain_verification`: TXT `_checkin-verification.<domain>` with
 *   `checkin-domain-verification=<token>`, proving the client controls the domain.
 */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { isPublicDomainName } from '../../domain/domain-name.js';
import { DomainProviderError, type AuthenticatedDomain, type DnsRecord, type DomainAuthenticator } from './port.js';

/** The two lookups validation needs; `node:dns/promises` by default, an in-memory map in tests. */
export interface DnsResolver {
  resolveCname(host: string): Promise<string[]>;
  resolveTxt(host: string): Promise<string[][]>;
}

export interface EmbeddedDomainAuthenticatorOptions {
  resolver?: DnsResolver;
  /** Where `mail_cname` records point; the operator's relay name. */
  target?: string;
}

export const DEFAULT_TARGET = 'mail.checkin.invalid';
export const VERIFICATION_HOST_PREFIX = '_checkin-verification';
export const VERIFICATION_PREFIX = 'checkin-domain-verification=';

/** A lookup that does not answer within this (per try) counts as "not seen yet". */
const LOOKUP_TIMEOUT_MS = 2_000;
const LOOKUP_TRIES = 2;

const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const TOKEN_LENGTH = 32;

export class EmbeddedDomainAuthenticator implements DomainAuthenticator {
  readonly kind = 'embedded';
  private readonly resolver: DnsResolver;
  private readonly target: string;

  constructor(options: EmbeddedDomainAuthenticatorOptions = {}) {
    this.resolver = options.resolver ?? new Resolver({ timeout: LOOKUP_TIMEOUT_MS, tries: LOOKUP_TRIES });
    this.target = (options.target ?? DEFAULT_TARGET).toLowerCase();
  }

  async create(request: { domain: string; subdomain?: string }): Promise<AuthenticatedDomain> {
    const domain = sendingDomain(request.domain);
    const subdomain = request.subdomain === undefined ? `em${randomInt(0, 10_000).toString().padStart(4, '0')}` : label(request.subdomain);
    const records: DnsRecord[] = [
      { purpose: 'mail_cname', type: 'cname', host: `${subdomain}.${domain}`, data: `u${randomBytes(5).toString('hex')}.${this.target}`, valid: false },
      { purpose: 'domain_verification', type: 'txt', host: `${VERIFICATION_HOST_PREFIX}.${domain}`, data: `${VERIFICATION_PREFIX}${token()}`, valid: false },
    ];
    return { providerId: randomUUID(), domain, subdomain, valid: false, records };
  }

  async validate(domain: AuthenticatedDomain): Promise<AuthenticatedDomain> {
    const records = await Promise.all(domain.records.map(async (record) => ({ ...record, valid: await this.published(record) })));
    return { ...domain, records, valid: records.every((record) => record.valid) };
  }

  /** Nothing is held here; the records the client published are theirs to remove. */
  async remove(_domain: AuthenticatedDomain): Promise<void> {}

  /**
   * Whether DNS answers with exactly this record now. Any failed lookup counts as "not yet":
   * NXDOMAIN and ENODATA mean not published, and a timeout or SERVFAIL gives no proof either way.
   */
  private async published(record: DnsRecord): Promise<boolean> {
    try {
      switch (record.type) {
        case 'cname': {
          const answers = await this.resolver.resolveCname(record.host);
          return answers.length > 0 && answers.every((answer) => sameName(answer, record.data));
        }
        case 'txt': {
          const answers = await this.resolver.resolveTxt(record.host);
          return answers.some((chunks) => chunks.join('') === record.data);
        }
        case 'mx':
          return false; // never generated here
      }
    } catch {
      return false;
    }
  }
}

/**
 * The domain as it will be authenticated: lower-cased, a plausible public DNS name (at least two
 * labels, not an IP address, a TLD that is not all digits). Refused permanently otherwise, as
 * SendGrid refuses one.
 */
function sendingDomain(input: string): string {
  const domain = input.trim().toLowerCase();
  if (!isPublicDomainName(domain)) throw new DomainProviderError(`"${input}" is not a valid domain name`, true);
  return domain;
}

/** A single DNS label (letters, digits, inner hyphens), lower-cased. */
function label(input: string): string {
  const value = input.trim().toLowerCase();
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(value)) {
    throw new DomainProviderError(`"${input}" is not a valid subdomain`, true);
  }
  return value;
}

/** DNS names compare case-insensitively, and a trailing dot (fully qualified) changes nothing. */
function sameName(a: string, b: string): boolean {
  const normal = (name: string) => name.toLowerCase().replace(/\.$/, '');
  return normal(a) === normal(b);
}

function token(): string {
  return Array.from({ length: TOKEN_LENGTH }, () => TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)]).join('');
}
