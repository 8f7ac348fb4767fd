import fs from 'node:fs';
import { decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createTokenVerifier,
  InvalidTokenError,
  type InvalidTokenReason,
  type TokenVerifier,
} from '../../src/identity/token-verifier.js';
import {
  accessToken,
  account,
  clientCredentials,
  startIdentityServer,
  teamMemberPassword,
  tempKeyFile,
  type IdentityServer,
} from './support.js';

async function rejection(verifier: TokenVerifier, token: string): Promise<InvalidTokenReason> {
  const err = await verifier.verify(token).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InvalidTokenError);
  return (err as InvalidTokenError).reason;
}

describe('token verifier', () => {
  let keyFile: string;
  let server: IdentityServer;
  let verifier: TokenVerifier;

  beforeAll(async () => {
    keyFile = tempKeyFile();
    server = await startIdentityServer(keyFile);
    server.startProvider();
    verifier = createTokenVerifier({ issuer: () => server.issuer, allowInsecureIssuer: true });
  });
  afterAll(() => server.close());
  afterEach(() => {
    vi.useRealTimers();
    server.startProvider();
  });

  it('rejects an expired token', async () => {
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    server.startProvider({ now: () => twoHoursAgo });
    const token = await accessToken(server.issuer, clientCredentials);
    expect(await rejection(verifier, token)).toBe('expired');
  });

  it('rejects a token that is not valid yet', async () => {
    const inAnHour = new Date(Date.now() + 3600_000);
    server.startProvider({ now: () => inAnHour });
    const token = await accessToken(server.issuer, clientCredentials);
    expect(await rejection(verifier, token)).toBe('not yet valid');
  });

  it('rejects a token signed by another key, whether its kid is unknown or borrowed', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const realKid = decodeProtectedHeader(await accessToken(server.issuer, clientCredentials)).kid!;
    for (const kid of ['someone-else', realKid]) {
      const forged = await new SignJWT({ tenant: account.id, role: 'client' })
        .setProtectedHeader({ alg: 'RS256', kid })
        .setIssuer(server.issuer)
        .setSubject(account.id)
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey);
      expect(await rejection(verifier, forged)).toBe('bad signature');
    }
  });

  it('rejects unsigned and HMAC tokens (no algorithm confusion)', async () => {
    const claims = { iss: server.issuer, sub: account.id, tenant: account.id, role: 'client', iat: 1, exp: 4e9 };
    const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    const hmac = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('x'.repeat(32)));
    expect(await rejection(verifier, unsigned)).toBe('bad signature');
    expect(await rejection(verifier, hmac)).toBe('bad signature');
  });

  it('rejects a token from another issuer, even when signed with the right key', async () => {
    server.startProvider({ issuer: () => 'http://elsewhere.example/core' });
    const token = await accessToken(server.issuer, clientCredentials);
    expect(await rejection(verifier, token)).toBe('wrong issuer');
  });

  it('rejects malformed strings', async () => {
    for (const token of ['', 'not-a-jwt', 'a.b.c', 'x'.repeat(20_000)]) {
      expect(await rejection(verifier, token)).toBe('malformed');
    }
  });

  it('rejects a token with a missing or wrong audience when an audience is required', async () => {
    const strict = createTokenVerifier({ issuer: () => server.issuer, audience: 'checkin-api', allowInsecureIssuer: true });
    expect(await rejection(strict, await accessToken(server.issuer, clientCredentials))).toBe('wrong audience');
    server.startProvider({ audience: 'another-api' });
    expect(await rejection(strict, await accessToken(server.issuer, clientCredentials))).toBe('wrong audience');
    server.startProvider({ audience: 'checkin-api' });
    expect((await strict.verify(await accessToken(server.issuer, clientCredentials))).tenant).toBe(account.id);
  });

  it('rejects a signed token that lacks the tenant or role claims', async () => {
    const jwk = JSON.parse(fs.readFileSync(keyFile, 'utf8')) as { kid: string };
    const withoutTenant = await new SignJWT({ role: 'client' })
      .setProtectedHeader({ alg: 'RS256', kid: jwk.kid })
      .setIssuer(server.issuer)
      .setSubject(account.id)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(jwk as never);
    expect(await rejection(verifier, withoutTenant)).toBe('invalid claims');
  });

  it('accepts tokens from a rotated key once its JWKS cooldown has passed (refetch on unknown kid)', async () => {
    const rotating = createTokenVerifier({ issuer: () => server.issuer, allowInsecureIssuer: true });
    const before = await accessToken(server.issuer, clientCredentials);
    await rotating.verify(before); // discovery done, old JWKS cached

    fs.rmSync(keyFile);
    server.startProvider(); // "restart": a new key and kid
    const after = await accessToken(server.issuer, teamMemberPassword);
    expect(decodeProtectedHeader(after).kid).not.toBe(decodeProtectedHeader(before).kid);

    // Within jose's 30 s cooldown an unknown kid does not trigger a fetch (a flood of forged kids can't hammer the issuer).
    expect(await rejection(rotating, after)).toBe('bad signature');
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 31_000);
    expect(await rotating.verify(after)).toMatchObject({ role: 'team_member', tenant: account.id });
  });

  it('keeps old tokens valid across a restart with the same key file', async () => {
    const token = await accessToken(server.issuer, clientCredentials);
    server.startProvider(); // the same keyFile: the key is read back, not regenerated
    const fresh = createTokenVerifier({ issuer: () => server.issuer, allowInsecureIssuer: true });
    expect(await fresh.verify(token)).toMatchObject({ sub: account.id, role: 'client' });
  });

  it('forgets a cached token when it expires', async () => {
    let now = new Date();
    server.startProvider({ tokenTtlSeconds: 60 });
    const clocked = createTokenVerifier({ issuer: () => server.issuer, allowInsecureIssuer: true, now: () => now });
    const token = await accessToken(server.issuer, clientCredentials);
    await clocked.verify(token);
    await clocked.verify(token); // served from the cache
    now = new Date(now.getTime() + 61_000 + 5_000);
    expect(await rejection(clocked, token)).toBe('expired');
  });

  it('reports discovery failure and retries discovery on a verify after the back-off', async () => {
    const token = await accessToken(server.issuer, clientCredentials);
    server.mount((_req, res) => void res.status(503).end());
    let now = new Date();
    const lazy = createTokenVerifier({ issuer: () => server.issuer, allowInsecureIssuer: true, now: () => now });
    expect(await rejection(lazy, token)).toBe('discovery failed');
    server.startProvider();
    now = new Date(now.getTime() + 10_000);
    expect((await lazy.verify(token)).sub).toBe(account.id);
  });

  it('refuses a plain-http issuer unless allowInsecureIssuer is set', async () => {
    const token = await accessToken(server.issuer, clientCredentials);
    const https = createTokenVerifier({ issuer: () => server.issuer });
    expect(await rejection(https, token)).toBe('discovery failed');
  });
});
