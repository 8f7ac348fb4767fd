import { createLocalJWKSet, errors, type FlattenedJWSInput, type JWSHeaderParameters, type JWTVerifyGetKey } from 'jose';

/** The provider's key set could not be fetched (network, timeout, non-200, not a JWKS) and no earlier copy is at hand. */
export class KeysUnavailableError extends Error {
  override readonly name = 'KeysUnavailableError';
}

export interface RemoteKeySetOptions {
  /** A fetched key set is used this long before it is fetched again; default 10 minutes. */
  cacheMaxAgeMs?: number;
  /** A token with a kid not in the set refetches at most this often; default 30 s. */
  unknownKidCooldownMs?: number;
  /** After a failed fetch, no new attempt for this long; default 10 s. */
  failureBackoffMs?: number;
  /** Per fetch; default 5 s. */
  timeoutMs?: number;
  now?: () => number;
}

/**
 * The issuer's JWKS (jwks_uri), fetched on first use and kept. Key selection (kid, kty, alg,
 * use, key_ops, crv) is jose's createLocalJWKSet; this adds what jose's createRemoteJWKSet lacks
 * for an API that must keep answering while its provider is down:
 * - a refresh that fails keeps the keys it has (a provider outage past the cache age does not
 *   refuse every token signed with a key already known);
 * - failed fetches are not retried on every request, only after `failureBackoffMs`;
 * - a token with an unknown kid (key rotation) refetches at most once per `unknownKidCooldownMs`,
 *   so a flood of tokens with made-up kids cannot hammer the provider; while the last fetch has
 *   failed, an unknown kid is reported as keys unavailable, not as a bad signature.
 * Concurrent callers share one fetch.
 */
export function createRemoteKeySet(url: URL, options: RemoteKeySetOptions = {}): JWTVerifyGetKey {
  const set = new RemoteKeySet(url, options);
  return (header, token) => set.getKey(header, token);
}

type LocalKeySet = ReturnType<typeof createLocalJWKSet>;

class RemoteKeySet {
  readonly #cacheMaxAgeMs: number;
  readonly #cooldownMs: number;
  readonly #backoffMs: number;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  #local: LocalKeySet | undefined;
  #fetchedAt = Number.NEGATIVE_INFINITY;
  #attemptedAt = Number.NEGATIVE_INFINITY;
  #lastFailure: KeysUnavailableError | undefined;
  #pending: Promise<void> | undefined;

  constructor(
    private readonly url: URL,
    options: RemoteKeySetOptions,
  ) {
    this.#cacheMaxAgeMs = options.cacheMaxAgeMs ?? 10 * 60_000;
    this.#cooldownMs = options.unknownKidCooldownMs ?? 30_000;
    this.#backoffMs = options.failureBackoffMs ?? 10_000;
    this.#timeoutMs = options.timeoutMs ?? 5_000;
    this.#now = options.now ?? Date.now;
  }

  async getKey(header: JWSHeaderParameters, token: FlattenedJWSInput) {
    const now = this.#now();
    const mayFetch = now - this.#attemptedAt >= (this.#lastFailure ? this.#backoffMs : 0);
    if (this.#local === undefined) {
      if (!mayFetch) throw this.#lastFailure!;
      await this.#reload();
    } else if (now - this.#fetchedAt >= this.#cacheMaxAgeMs && mayFetch) {
      // Stale: try to refresh; on failure keep verifying with the keys already known.
      await this.#reload().catch(() => undefined);
    }
    const local = this.#local!;
    try {
      return await local(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
      // After a failed fetch the next attempt waits the failure back-off (the 503's Retry-After), not the cooldown.
      if (this.#now() - this.#attemptedAt < (this.#lastFailure ? this.#backoffMs : this.#cooldownMs)) {
        // The last fetch failed: the kid may be a rotated key the provider could not tell about.
        throw this.#lastFailure ?? err;
      }
      // An unknown kid: the provider may have rotated its keys since the last fetch.
      await this.#reload();
      return this.#local!(header, token);
    }
  }

  #reload(): Promise<void> {
    this.#pending ??= this.#fetch().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #fetch(): Promise<void> {
    this.#attemptedAt = this.#now();
    try {
      const reply = await fetch(this.url, {
        headers: { accept: 'application/jwk-set+json, application/json' },
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      if (reply.status !== 200) throw new Error(`it answered HTTP ${reply.status}`);
      this.#local = createLocalJWKSet(await reply.json());
      this.#fetchedAt = this.#now();
      this.#lastFailure = undefined;
    } catch (err) {
      this.#lastFailure = new KeysUnavailableError(
        `the identity provider's key set (${this.url.href}) could not be read: ${(err as Error).message}`,
        { cause: err },
      );
      throw this.#lastFailure;
    }
  }
}
