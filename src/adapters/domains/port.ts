/**
 * The domain-authentication port (docs/invitations.md; spec: Domain authentication record):
 * a custom sending domain is authenticated through DNS records at the email delivery provider.
 * Adapters: SendGrid's domain authentication API (`sendgrid.ts`, via @sendgrid/client) and an
 * embedded one (`embedded.ts`) that generates the records locally and verifies them by real
 * DNS lookups.
 */

import type { AuthenticatedDomain } from '../../domain/sending-domain.js';

export type { AuthenticatedDomain, DnsRecord } from '../../domain/sending-domain.js';

/** The provider refused to create the domain; `message` explains (spec: 422 sendgrid_create_failed). */
export class DomainProviderError extends Error {
  constructor(
    message: string,
    /** Refused for good (a bad domain, a duplicate); false: the provider was unavailable. */
    readonly permanent: boolean,
    readonly statusCode?: number,
    /** 429: when the provider's rate limit resets (SendGrid's X-RateLimit-Reset). */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'DomainProviderError';
  }
}

export interface DomainAuthenticator {
  readonly kind: 'sendgrid' | 'embedded';
  /** Starts authentication of `domain` (records to publish, none valid yet). */
  create(request: { domain: string; subdomain?: string }): Promise<AuthenticatedDomain>;
  /** Checks the records now: each record's `valid`, and `valid` overall. `domain` is what create returned. */
  validate(domain: AuthenticatedDomain): Promise<AuthenticatedDomain>;
  /** Removes a domain this service created but could not keep (a lost race); one already gone is fine. */
  remove(domain: AuthenticatedDomain): Promise<void>;
  /**
   * The provider's existing authentication of exactly `domain` and `subdomain`, if it has one:
   * what a create whose answer was lost (a timeout, a gateway error) left there, which the retry's
   * create is refused for. Providers that refuse no duplicate need not implement it.
   */
  find?(request: { domain: string; subdomain: string }): Promise<AuthenticatedDomain | undefined>;
}
