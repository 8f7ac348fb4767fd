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
}
