import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTokenVerifier, InvalidTokenError } from '../../src/identity/token-verifier.js';
import { newKey, signToken, standardClaims, startProviderStub, type ProviderStub, type TestKey } from './oidc-provider-stub.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * Authentication as outside clients and providers meet it: the dev provider's token endpoint as
 * an OAuth 2.0 client library reads its errors (RFC 6749 5.2), and an external provider's key
 * rotation during an outage as the 503's Retry-After promises it.
 */

describe('the token endpoint answers a form it cannot read in RFC 6749 5.2 shape (error, error_description, no-store)', () => {
  let service: TestService;
  let client: Client;
  beforeAll(async () => {
    service = await startTestService();
    client = await createClient(service);
  });
  afterAll(() => service.close());

  const post = async (body: string | Blob, headers: Record<string, string> = {}) => {
    const reply = await fetch(`${service.url}/core/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body,
    });
    return { status: reply.status, headers: reply.headers, body: (await reply.json()) as Record<string, unknown> };
  };
  const credentials = () => `grant_type=client_credentials&client_id=${client.id}&client_secret=${encodeURIComponent(client.clientSecret)}`;

  it('still issues a token for a readable form (the control)', async () => {
    const reply = await post(credentials());
    expect(reply.status).toBe(200);
    expect(reply.body.token_type).toBe('Bearer');
  });

  it('a form with too many parameters is 400 invalid_request, not the API error shape', async () => {
    const extra = Array.from({ length: 60 }, (_, i) => `extra${i}=1`).join('&');
    const reply = await post(`${credentials()}&${extra}`);
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ error: 'invalid_request' });
    expect(typeof reply.body.error_description).toBe('string');
    expect(reply.body).not.toHaveProperty('code');
    expect(reply.headers.get('cache-control')).toBe('no-store');
  });

  it('a body declared gzip that does not decompress is 400 invalid_request', async () => {
    const reply = await post(credentials(), { 'content-encoding': 'gzip' });
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ error: 'invalid_request' });
    expect(reply.headers.get('cache-control')).toBe('no-store');
    // The control: the same form, really compressed, is read.
    expect((await post(new Blob([gzipSync(credentials())]), { 'content-encoding': 'gzip' })).status).toBe(200);
  });

  it('a form over the 16 KiB limit is 413 with error invalid_request', async () => {
    const reply = await post(`${credentials()}&padding=${'a'.repeat(20_000)}`);
    expect(reply.status).toBe(413);
    expect(reply.body).toMatchObject({ error: 'invalid_request' });
    expect(reply.headers.get('cache-control')).toBe('no-store');
  });
});

describe('a rotated key seen while the provider is down is tried again after the Retry-After back-off (10 s), not the 30 s cooldown', () => {
  let provider: ProviderStub;
  let rsa: TestKey;
  beforeAll(async () => {
    provider = await startProviderStub();
    rsa = await newKey('RS256');
  });
  afterAll(() => provider.close());
  beforeEach(() => {
    provider.jwks = { keys: [rsa.publicJwk] };
    provider.jwksUp = true;
    provider.hits = { discovery: 0, jwks: 0 };
  });

  it('answers keys unavailable (503, Retry-After 10) and accepts the token once the provider is back 11 s later', async () => {
    let now = new Date();
    const verifier = createTokenVerifier({
      issuer: () => provider.base,
      audience: 'checkin-api',
      allowInsecureIssuer: true,
      cacheSize: 0,
      now: () => now,
    });
    await verifier.verify(await signToken(rsa, standardClaims(provider.base)));
    // The provider rotates its key while its JWKS endpoint is down.
    now = new Date(now.getTime() + 60_000);
    provider.jwksUp = false;
    const rotated = await newKey('RS256');
    const token = await signToken(rotated, standardClaims(provider.base));
    const failure = await verifier.verify(token).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(InvalidTokenError);
    expect((failure as InvalidTokenError).reason).toBe('keys unavailable');
    expect(provider.hits.jwks).toBe(2);
    // Back up, with the new key; the client retries after Retry-After (10 s) and a little.
    provider.jwksUp = true;
    provider.jwks = { keys: [rsa.publicJwk, rotated.publicJwk] };
    now = new Date(now.getTime() + 11_000);
    expect((await verifier.verify(token)).sub).toBe('user-1');
    expect(provider.hits.jwks).toBe(3);
  });

  it('still asks a provider that stays down at most once per back-off', async () => {
    let now = new Date();
    const verifier = createTokenVerifier({ issuer: () => provider.base, audience: 'checkin-api', allowInsecureIssuer: true, cacheSize: 0, now: () => now });
    await verifier.verify(await signToken(rsa, standardClaims(provider.base)));
    now = new Date(now.getTime() + 60_000);
    provider.jwksUp = false;
    const forger = await newKey('RS256');
    for (let i = 0; i < 20; i++) {
      const forged = await signToken(forger, standardClaims(provider.base), { kid: `unknown-${i}` });
      await expect(verifier.verify(forged)).rejects.toMatchObject({ reason: 'keys unavailable' });
      now = new Date(now.getTime() + 1_000);
    }
    // 20 s of unknown kids: the failed fetch at 60 s, one after 10 s of back-off, one after another 10 s.
    expect(provider.hits.jwks).toBeLessThanOrEqual(4);
  });
});

describe('while the provider is down, a token that is invalid whatever its signature is 401, not 503 "retry with the same token" (spec, Authentication rule 1)', () => {
  let provider: ProviderStub;
  let rsa: TestKey;
  beforeAll(async () => {
    provider = await startProviderStub();
    rsa = await newKey('RS256');
  });
  afterAll(() => provider.close());
  beforeEach(() => {
    provider.jwks = { keys: [rsa.publicJwk] };
    provider.state = 'up';
    provider.jwksUp = true;
  });

  const verifier = () =>
    createTokenVerifier({ issuer: () => provider.base, audience: 'checkin-api', allowInsecureIssuer: true, cacheSize: 0 });
  const reason = (v: ReturnType<typeof verifier>, token: string) =>
    v.verify(token).then(
      () => 'accepted',
      (err: unknown) => (err instanceof InvalidTokenError ? err.reason : String(err)),
    );
  const hour = 3600;
  const tokens = async () => {
    const now = Math.floor(Date.now() / 1000);
    const unsigned = (claims: object) =>
      `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    return {
      valid: await signToken(rsa, standardClaims(provider.base)),
      expired: await signToken(rsa, standardClaims(provider.base, { iat: now - 2 * hour, exp: now - hour })),
      notYetValid: await signToken(rsa, standardClaims(provider.base, { nbf: now + hour })),
      otherAudience: await signToken(rsa, standardClaims(provider.base, { aud: ['account', 'other-api'] })),
      unsigned: unsigned(standardClaims(provider.base)),
      opaque: 'k3Jb8pZ0qVx7Yw2Lr5Tn9Qs1Hc4Fd6Ge',
    };
  };

  it('discovery down: expired, not yet valid, other audience, alg none and opaque tokens are refused as such; a valid one is still unavailable', async () => {
    provider.state = 'refuse';
    const v = verifier();
    const t = await tokens();
    expect(await reason(v, t.valid)).toBe('discovery failed');
    expect(await reason(v, t.expired)).toBe('expired');
    expect(await reason(v, t.notYetValid)).toBe('not yet valid');
    expect(await reason(v, t.otherAudience)).toBe('wrong audience');
    expect(await reason(v, t.unsigned)).toBe('bad signature');
    expect(await reason(v, t.opaque)).toBe('malformed');
  });

  it('key set down (discovery up): an expired token is refused as expired, a valid one is unavailable', async () => {
    provider.jwksUp = false;
    const v = verifier();
    const t = await tokens();
    expect(await reason(v, t.expired)).toBe('expired');
    expect(await reason(v, t.valid)).toBe('keys unavailable');
  });
});

describe('the API while the external provider cannot be reached', () => {
  let service: TestService;
  beforeAll(async () => {
    // Nothing listens on port 9: discovery fails, as when the provider is down.
    service = await startTestService({ OIDC_ISSUER: 'https://127.0.0.1:9/realms/test', OIDC_AUDIENCE: 'checkin-api' });
  });
  afterAll(() => service.close());

  const call = async (token: string) => {
    const reply = await fetch(`${service.url}/checkin/v1/api/events`, {
      headers: { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': 'any' },
    });
    return { status: reply.status, challenge: reply.headers.get('www-authenticate'), retryAfter: reply.headers.get('retry-after') };
  };

  it('answers an expired token 401 invalid_token (get a new token), a current one 503 with Retry-After', async () => {
    const key = await newKey('RS256');
    const now = Math.floor(Date.now() / 1000);
    const issuer = 'https://127.0.0.1:9/realms/test';
    const expired = await call(await signToken(key, standardClaims(issuer, { iat: now - 7200, exp: now - 3600 })));
    expect(expired.status).toBe(401);
    expect(expired.challenge).toContain('error="invalid_token"');
    const current = await call(await signToken(key, standardClaims(issuer)));
    expect(current.status).toBe(503);
    expect(current.retryAfter).toBe('10');
  });
});

describe('an opaque or encrypted access token (Auth0 without an audience, Google) is refused with a message that says so', () => {
  let service: TestService;
  let client: Client;
  beforeAll(async () => {
    service = await startTestService();
    client = await createClient(service);
  });
  afterAll(() => service.close());

  const call = async (token: string) => {
    const reply = await fetch(`${service.url}/users/v1/api/users/email?email=${encodeURIComponent(client.email)}`, {
      headers: { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client.subscriptionKey },
    });
    return { status: reply.status, challenge: reply.headers.get('www-authenticate'), body: (await reply.json()) as { message: string } };
  };

  it('an opaque token: 401 invalid_token, "not a JWT"', async () => {
    const reply = await call('k3Jb8pZ0qVx7Yw2Lr5Tn9Qs1Hc4Fd6Ge');
    expect(reply.status).toBe(401);
    expect(reply.challenge).toContain('error="invalid_token"');
    expect(reply.body.message).toContain('not a JWT');
  });

  it('a JWE (five parts): 401 invalid_token, "encrypted"', async () => {
    const reply = await call('eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..aGVsbG8.d29ybGQ.dGFn');
    expect(reply.status).toBe(401);
    expect(reply.body.message).toContain('encrypted');
  });
});
