import { DomainError } from '../domain/decider.js';

/** An issuer's token endpoint, and its RFC 7009 revocation endpoint when it names one. */
export interface IssuerEndpoints {
  token: string;
  revocation?: string;
}

/**
 * The endpoints an external OpenID issuer names in its discovery document, found on first use
 * and kept; a failed lookup is not kept, so the next call tries again. For the pages that ask
 * for a token themselves (/dashboard), which revoke the refresh token at sign-out.
 */
export function issuerEndpoints(issuer: string, timeoutMs = 5_000): () => Promise<IssuerEndpoints> {
  let found: Promise<IssuerEndpoints> | undefined;
  const discover = async (): Promise<IssuerEndpoints> => {
    const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    try {
      const reply = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
      if (!reply.ok) throw new Error(`it answered ${reply.status}`);
      const metadata = (await reply.json()) as { token_endpoint?: unknown; revocation_endpoint?: unknown };
      const endpoint = metadata.token_endpoint;
      if (typeof endpoint !== 'string' || !/^https?:\/\//i.test(endpoint)) throw new Error('its discovery document names no http(s) token_endpoint');
      const revocation = metadata.revocation_endpoint;
      return typeof revocation === 'string' && /^https?:\/\//i.test(revocation) ? { token: endpoint, revocation } : { token: endpoint };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new DomainError('unavailable', `the identity provider's discovery document (${url}) could not be read: ${reason}; retry later, or set DASHBOARD_TOKEN_URL`);
    }
  };
  return () => {
    found ??= discover().catch((error: unknown) => {
      found = undefined;
      throw error;
    });
    return found;
  };
}

/** The token endpoint alone (issuerEndpoints). */
export function issuerTokenEndpoint(issuer: string, timeoutMs = 5_000): () => Promise<string> {
  const endpoints = issuerEndpoints(issuer, timeoutMs);
  return async () => (await endpoints()).token;
}
