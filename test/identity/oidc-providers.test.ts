import { constants, createHmac, createPrivateKey, createPublicKey, sign } from 'node:crypto';
import { exportJWK } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createTokenVerifier,
  InvalidTokenError,
  type InvalidTokenReason,
  type TokenVerifier,
  type TokenVerifierOptions,
} from '../../src/identity/token-verifier.js';
import { loadConfig } from '../../src/config.js';
import { newKey, signToken, standardClaims, startProviderStub, type ProviderStub, type TestKey } from './oidc-provider-stub.js';

/**
 * The verifier against a stand-in for a real OpenID provider (discovery + JWKS over node:http),
 * with what Keycloak, Auth0, Entra ID, Okta and Google actually issue.
 */

async function failure(verifier: TokenVerifier, token: string): Promise<InvalidTokenError> {
  const err = await verifier.verify(token).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InvalidTokenError);
  return err as InvalidTokenError;
}
const rejection = async (verifier: TokenVerifier, token: string): Promise<InvalidTokenReason> => (await failure(verifier, token)).reason;

let provider: ProviderStub;
let rsa: TestKey;

function verifierFor(options: Partial<TokenVerifierOptions> = {}): TokenVerifier {
  return createTokenVerifier({ issuer: () => provider.base, audience: 'checkin-api', allowInsecureIssuer: true, cacheSize: 0, ...options });
}

beforeAll(async () => {
  provider = await startProviderStub();
  rsa = await newKey('RS256');
});
afterAll(() => provider.close());
beforeEach(() => {
  provider.issuer = provider.base;
  provider.jwks = { keys: [rsa.publicJwk] };
  provider.state = 'up';
  provider.jwksUp = true;
  provider.hits = { discovery: 0, jwks: 0 };
});
afterEach(() => void vi.useRealTimers());

describe('discovery and the issuer', () => {
  it('takes jwks_uri from the discovery document and compares iss exactly with the issuer it states', async () => {
    const verifier = verifierFor();
    expect(await verifier.verify(await signToken(rsa, standardClaims(provider.base)))).toMatchObject({ sub: 'user-1', role: 'client' });
    expect(provider.hits).toEqual({ discovery: 1, jwks: 1 });
    // Same issuer with a trailing slash is another issuer (OIDC Discovery 4.3, RFC 9068 4).
    expect(await rejection(verifier, await signToken(rsa, standardClaims(`${provider.base}/`)))).toBe('wrong issuer');
  });

  it('works with an issuer that ends in a slash (Auth0) when OIDC_ISSUER is written without it', async () => {
    const auth0 = await startProviderStub('');
    try {
      auth0.issuer = `${auth0.base}/`;
      auth0.jwks = { keys: [rsa.publicJwk] };
      const verifier = createTokenVerifier({ issuer: () => auth0.base, audience: 'checkin-api', allowInsecureIssuer: true });
      expect((await verifier.verify(await signToken(rsa, standardClaims(`${auth0.base}/`)))).sub).toBe('user-1');
      expect(await rejection(verifier, await signToken(rsa, standardClaims(auth0.base)))).toBe('wrong issuer');
    } finally {
      await auth0.close();
    }
  });

  it('works with a host-only issuer without a slash (Google, Okta org) and matches iss as the provider states it', async () => {
    const google = await startProviderStub('');
    try {
      google.jwks = { keys: [rsa.publicJwk] };
      const verifier = createTokenVerifier({ issuer: () => google.base, audience: 'checkin-api', allowInsecureIssuer: true });
      expect((await verifier.verify(await signToken(rsa, standardClaims(google.base)))).sub).toBe('user-1');
      expect(await rejection(verifier, await signToken(rsa, standardClaims(`${google.base}/`)))).toBe('wrong issuer');
    } finally {
      await google.close();
    }
  });

  it('refuses a discovery document whose issuer differs from OIDC_ISSUER, and says which value to configure', async () => {
    // OIDC_ISSUER typed with a trailing slash, Keycloak states it without one.
    const verifier = verifierFor({ issuer: () => `${provider.base}/` });
    const err = await failure(verifier, await signToken(rsa, standardClaims(provider.base)));
    expect(err.reason).toBe('discovery failed');
    expect(String((err.cause as Error).message)).toContain(`"${provider.base}"`);
  });

  it('refuses a template issuer (Entra ID common endpoint) at discovery instead of refusing every token later', async () => {
    const entra = await startProviderStub('/%7Btenantid%7D/v2.0');
    try {
      const origin = new URL(entra.base).origin;
      entra.issuer = `${origin}/{tenantid}/v2.0`;
      entra.jwks = { keys: [rsa.publicJwk] };
      const verifier = createTokenVerifier({ issuer: () => `${origin}/{tenantid}/v2.0`, audience: 'checkin-api', allowInsecureIssuer: true });
      const err = await failure(verifier, await signToken(rsa, standardClaims(`${origin}/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0`)));
      expect(err.reason).toBe('discovery failed');
      expect(String((err.cause as Error).message)).toContain('tenant-specific issuer');
    } finally {
      await entra.close();
    }
  });

  it('does not ask a provider that is down again on every request: one attempt per back-off, then recovers', async () => {
    let now = new Date();
    const verifier = verifierFor({ now: () => now });
    const token = await signToken(rsa, standardClaims(provider.base));
    provider.state = '503';
    expect(await rejection(verifier, token)).toBe('discovery failed');
    provider.state = 'refuse';
    expect(await rejection(verifier, token)).toBe('discovery failed');
    expect(provider.hits.discovery).toBe(1); // the second verify did not ask again
    provider.state = 'up';
    expect(await rejection(verifier, token)).toBe('discovery failed'); // still backing off
    expect(provider.hits.discovery).toBe(1);
    now = new Date(now.getTime() + 11_000);
    expect((await verifier.verify(token)).sub).toBe('user-1');
    expect(provider.hits.discovery).toBe(2);
  });

  it('refuses a JWKS fetched over plain http from a real (https) issuer configuration', async () => {
    const strict = verifierFor({ allowInsecureIssuer: false });
    expect(await rejection(strict, await signToken(rsa, standardClaims(provider.base)))).toBe('discovery failed');
    expect(provider.hits.discovery).toBe(0);
  });
});

describe('JWKS', () => {
  it('caches the key set: many tokens, one fetch', async () => {
    const verifier = verifierFor();
    for (let i = 0; i < 5; i++) await verifier.verify(await signToken(rsa, standardClaims(provider.base, { sub: `user-${i}` })));
    expect(provider.hits.jwks).toBe(1);
  });

  it('refetches once for an unknown kid (rotation), and a flood of forged kids does not hammer the provider', async () => {
    const verifier = verifierFor();
    await verifier.verify(await signToken(rsa, standardClaims(provider.base)));
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 31_000);
    const next = await newKey('RS256');
    provider.jwks = { keys: [rsa.publicJwk, next.publicJwk] };
    expect((await verifier.verify(await signToken(next, standardClaims(provider.base)))).sub).toBe('user-1');
    expect(provider.hits.jwks).toBe(2);
    const forger = await newKey('RS256');
    for (let i = 0; i < 20; i++) {
      const forged = await signToken(forger, standardClaims(provider.base), { kid: `forged-${i}` });
      expect(await rejection(verifier, forged)).toBe('bad signature');
    }
    expect(provider.hits.jwks).toBe(2);
  });

  it('verifies a token without kid against several keys without kid (tries each candidate)', async () => {
    const first = await newKey('RS256', { kid: null });
    const second = await newKey('RS256', { kid: null });
    provider.jwks = { keys: [first.publicJwk, second.publicJwk] };
    const verifier = verifierFor();
    expect((await verifier.verify(await signToken(second, standardClaims(provider.base)))).sub).toBe('user-1');
    expect((await verifier.verify(await signToken(first, standardClaims(provider.base)))).sub).toBe('user-1');
    const other = await newKey('RS256', { kid: null });
    expect(await rejection(verifier, await signToken(other, standardClaims(provider.base)))).toBe('bad signature');
  });

  it('skips encryption keys in the set (Keycloak publishes an RSA-OAEP key next to the signing key)', async () => {
    const signing = await newKey('RS256', { kid: null });
    const encryption = await newKey('RS256', { kid: null });
    provider.jwks = { keys: [{ ...encryption.publicJwk, use: 'enc', alg: 'RSA-OAEP' }, signing.publicJwk] };
    const verifier = verifierFor();
    expect((await verifier.verify(await signToken(signing, standardClaims(provider.base)))).sub).toBe('user-1');
  });

  it('keeps verifying with the keys it has when a refresh fails (provider down past the cache age)', async () => {
    const verifier = verifierFor();
    await verifier.verify(await signToken(rsa, standardClaims(provider.base)));
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 11 * 60_000);
    provider.jwksUp = false;
    expect((await verifier.verify(await signToken(rsa, standardClaims(provider.base)))).sub).toBe('user-1');
    expect((await verifier.verify(await signToken(rsa, standardClaims(provider.base, { sub: 'user-2' })))).sub).toBe('user-2');
    expect(provider.hits.jwks).toBe(2); // one failed refresh, not one per request
  });

  it('reports a new kid as keys unavailable, not as a bad signature, while the provider is down', async () => {
    const verifier = verifierFor();
    await verifier.verify(await signToken(rsa, standardClaims(provider.base)));
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 31_000);
    provider.jwksUp = false;
    const rotated = await newKey('RS256');
    const token = await signToken(rotated, standardClaims(provider.base));
    expect(await rejection(verifier, token)).toBe('keys unavailable');
    expect(await rejection(verifier, token)).toBe('keys unavailable');
    expect(provider.hits.jwks).toBe(2);
    expect((await verifier.verify(await signToken(rsa, standardClaims(provider.base)))).sub).toBe('user-1');
  });

  it('reports keys it could never fetch as unavailable, and does not refetch on every request', async () => {
    provider.jwksUp = false;
    let now = new Date();
    const verifier = verifierFor({ now: () => now });
    const token = await signToken(rsa, standardClaims(provider.base));
    expect(await rejection(verifier, token)).toBe('keys unavailable');
    expect(await rejection(verifier, token)).toBe('keys unavailable');
    expect(provider.hits.jwks).toBe(1);
    provider.jwksUp = true;
    now = new Date(now.getTime() + 11_000);
    expect((await verifier.verify(token)).sub).toBe('user-1');
  });
});

describe('algorithms', () => {
  it('accepts the asymmetric algorithms real providers can be set to (Keycloak: ES384, RS512, PS256; Okta/Entra/Auth0: RS256)', async () => {
    for (const alg of ['ES256', 'ES384', 'ES512', 'RS384', 'RS512', 'PS256', 'PS512', 'EdDSA']) {
      const key = await newKey(alg);
      provider.jwks = { keys: [key.publicJwk] };
      const verifier = verifierFor();
      expect((await verifier.verify(await signToken(key, standardClaims(provider.base)))).sub, alg).toBe('user-1');
    }
  });

  it('accepts keys that declare no alg (Entra ID) and refuses an alg the key does not declare', async () => {
    const undeclared = await newKey('RS256', { declareAlg: false });
    provider.jwks = { keys: [undeclared.publicJwk, rsa.publicJwk] };
    const verifier = verifierFor();
    expect((await verifier.verify(await signToken(undeclared, standardClaims(provider.base)))).sub).toBe('user-1');
    // The same RSA key used for PS256 while its JWK says RS256 (signed by hand: jose binds a key to one algorithm).
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const input = `${encode({ alg: 'PS256', kid: rsa.kid, typ: 'JWT' })}.${encode(standardClaims(provider.base))}`;
    const key = createPrivateKey({ key: (await exportJWK(rsa.privateKey)) as never, format: 'jwk' });
    const pss = sign('sha256', Buffer.from(input), { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
    expect(await rejection(verifier, `${input}.${pss.toString('base64url')}`)).toBe('bad signature');
  });

  it('refuses alg none and HS256 keyed with the public key (algorithm confusion)', async () => {
    const verifier = verifierFor();
    const claims = standardClaims(provider.base);
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${encode({ alg: 'none', kid: rsa.kid })}.${encode(claims)}.`;
    expect(await rejection(verifier, unsigned)).toBe('bad signature');
    const pem = createPublicKey({ key: rsa.publicJwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    for (const secret of [pem, JSON.stringify(rsa.publicJwk), rsa.publicJwk.n!]) {
      const input = `${encode({ alg: 'HS256', kid: rsa.kid, typ: 'JWT' })}.${encode(claims)}`;
      const hmac = `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
      expect(await rejection(verifier, hmac)).toBe('bad signature');
    }
  });
});

describe('claims and token type', () => {
  it('accepts aud as an array (Auth0, Entra) and refuses an array without our audience', async () => {
    const verifier = verifierFor();
    const auth0 = standardClaims(provider.base, { aud: ['checkin-api', 'https://tenant.auth0.com/userinfo'], azp: 'spa-client' });
    expect((await verifier.verify(await signToken(rsa, auth0))).sub).toBe('user-1');
    const other = standardClaims(provider.base, { aud: ['another-api', 'account'] });
    expect(await rejection(verifier, await signToken(rsa, other))).toBe('wrong audience');
  });

  it('accepts typ at+jwt (RFC 9068), application/at+jwt, JWT (Keycloak, Entra, Okta) and none; refuses other token types', async () => {
    const verifier = verifierFor();
    for (const typ of ['at+jwt', 'application/at+jwt', 'AT+JWT', 'JWT', undefined]) {
      expect((await verifier.verify(await signToken(rsa, standardClaims(provider.base), { typ }))).sub, String(typ)).toBe('user-1');
    }
    for (const typ of ['logout+jwt', 'dpop+jwt', 'secevent+jwt', 'id_token+jwt']) {
      expect(await rejection(verifier, await signToken(rsa, standardClaims(provider.base), { typ })), typ).toBe('wrong type');
    }
  });

  it('allows a small clock skew on exp and nbf, not more', async () => {
    const verifier = verifierFor();
    const now = Math.floor(Date.now() / 1000);
    expect((await verifier.verify(await signToken(rsa, standardClaims(provider.base, { exp: now - 2 })))).sub).toBe('user-1');
    expect((await verifier.verify(await signToken(rsa, standardClaims(provider.base, { nbf: now + 2 })))).sub).toBe('user-1');
    expect(await rejection(verifier, await signToken(rsa, standardClaims(provider.base, { exp: now - 60 })))).toBe('expired');
    expect(await rejection(verifier, await signToken(rsa, standardClaims(provider.base, { nbf: now + 60 })))).toBe('not yet valid');
  });

  it('refuses a signed token without tenant or role, or with values of the wrong type, naming the claim', async () => {
    const verifier = verifierFor();
    const cases: [Record<string, unknown>, string][] = [
      [{ tenant: undefined }, 'tenant'],
      [{ tenant: 42 }, 'tenant'],
      [{ tenant: ['a', 'b'] }, 'tenant'],
      [{ tenant: '' }, 'tenant'],
      [{ role: undefined }, 'role'],
      [{ role: 'admin' }, 'role'],
      [{ role: ['client', 'team_member'] }, 'role'],
      [{ role: ['admin'] }, 'role'],
      [{ sub: 42 }, 'sub'],
      [{ sub: '' }, 'sub'],
      [{ exp: String(Math.floor(Date.now() / 1000) + 300) }, 'exp'],
      [{ iat: undefined }, 'iat'],
    ];
    for (const [overrides, claim] of cases) {
      const claims = standardClaims(provider.base, overrides as never);
      for (const name of Object.keys(claims)) if (claims[name] === undefined) delete claims[name];
      const err = await failure(verifier, await signToken(rsa, claims));
      expect(err.reason, JSON.stringify(overrides)).toBe('invalid claims');
      expect(err.message, JSON.stringify(overrides)).toContain(claim);
    }
  });
});

describe('claim names (OIDC_TENANT_CLAIM, OIDC_ROLE_CLAIM)', () => {
  it("reads the account id and the role from the provider's claims: a namespaced Auth0 claim, Entra ID's roles array", async () => {
    const verifier = verifierFor({ claimNames: { tenant: 'https://checkin.example/tenant', role: 'roles' } });
    const tenant = 'b3b7f6a2-0c61-4a4e-9d55-2f1f8f0f6a11';
    const claims = { ...standardClaims(provider.base), tenant: undefined, role: undefined, 'https://checkin.example/tenant': tenant, roles: ['Reader', 'team_member'] };
    for (const name of Object.keys(claims)) if (claims[name as keyof typeof claims] === undefined) delete claims[name as keyof typeof claims];
    const verified = await verifier.verify(await signToken(rsa, claims));
    expect(verified).toMatchObject({ tenant, role: 'team_member' });
    // The default names are not read then.
    const err = await failure(verifier, await signToken(rsa, standardClaims(provider.base)));
    expect(err.message).toContain('https://checkin.example/tenant');
    expect(loadConfig({ OIDC_TENANT_CLAIM: 'tid_custom', OIDC_ROLE_CLAIM: 'roles' })).toMatchObject({ oidcTenantClaim: 'tid_custom', oidcRoleClaim: 'roles' });
  });
});

describe('configuration', () => {
  it('refuses to start with OIDC_ISSUER but no OIDC_AUDIENCE (RFC 9068 4: the audience is checked)', async () => {
    expect(() => loadConfig({ OIDC_ISSUER: 'https://id.example.org' })).toThrow(/OIDC_AUDIENCE must be set with OIDC_ISSUER/);
    expect(loadConfig({ OIDC_ISSUER: 'https://id.example.org', OIDC_AUDIENCE: 'checkin-api' }).oidcAudience).toBe('checkin-api');
  });
});
