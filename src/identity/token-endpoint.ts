import { DomainError } from '../domain/decider.js';

/**
 * The token endpoint an external OpenID issuer names in its discovery document, found on first
 * use and kept; a failed lookup is not kept, so the next call tries again. For the pages that
 * ask for a token themselves (/dashboard).
 */
export function issuerTokenEndpoint(issuer: string, timeoutMs = 5_000): () => Promise<string> {
  let found: Promise<string> | undefined;
  const discover = async (): Promise<string> => {
    const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    try {
      const reply = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
      if (!reply.ok) throw new Error(`it answered ${reply.status}`);
      const endpoint = ((await reply.json()) as { token_endpoint?: unknown }).token_endpoint;
      if (typeof endpoint !== 'string' || !/^https?:\/\//i.test(endpoint)) throw new Error('its discovery document names no http(s) token_endpoint');
      return endpoint;
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
