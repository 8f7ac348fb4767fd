/**
 * Sign-in details an integrator and the dashboard's users meet: a refresh token presented twice
 * within a short grace (two tabs, a retry after a lost response), RFC 7009 revocation, a JWT
 * issued in the future, and a discovery document that states what the built-in provider does.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import type { ReadStore } from '../../src/adapters/readstore/port.js';
import { RefreshTokens, type RefreshFamilyDoc } from '../../src/identity/refresh-tokens.js';
import { loadOrCreateSigningKey } from '../../src/identity/signing-key.js';
import { createTokenVerifier, InvalidTokenError } from '../../src/identity/token-verifier.js';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';
import { newKey, signToken, standardClaims, startProviderStub, type ProviderStub, type TestKey } from './oidc-provider-stub.js';

let offsetMs = 0;
const clock = { now: () => new Date(Date.now() + offsetMs) };
let service: TestService;
let alice: Client;
let issuer: string;

beforeAll(async () => {
  service = await startTestService({}, { clock });
  alice = await createClient(service);
  issuer = ((await (await fetch(`${service.url}/core/.well-known/openid-configuration`)).json()) as { issuer: string }).issuer;
});
afterAll(() => service.close());

interface Reply {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

async function post(route: string, form: Record<string, string>, url = service.url): Promise<Reply> {
  const response = await fetch(`${url}/core/connect/${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, headers: response.headers };
}

const signIn = async (url?: string) => (await post('token', { grant_type: 'password', client_id: 'checkin-app', username: alice.email, password: alice.password }, url)).body;
const refresh = (refreshToken: string, url?: string) => post('token', { grant_type: 'refresh_token', client_id: 'checkin-app', refresh_token: refreshToken }, url);
const revoke = (form: Record<string, string>, url?: string) => post('revocation', form, url);

async function apiStatus(accessToken: unknown): Promise<number> {
  const reply = await request(service.url, 'GET', '/checkin/v1/api/events', undefined, {
    authorization: `Bearer ${String(accessToken)}`,
    'ocp-apim-subscription-key': alice.subscriptionKey,
  });
  return reply.status;
}

describe('refresh token reuse grace (REFRESH_TOKEN_REUSE_GRACE_SECONDS, default 30)', () => {
  it('two refreshes with one token at once (two tabs) both succeed and hold the same live token', async () => {
    const first = (await signIn()).refresh_token as string;
    const [a, b] = await Promise.all([refresh(first), refresh(first)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.refresh_token).toBe(b.body.refresh_token);
    expect(await apiStatus(a.body.access_token)).toBe(200);
    expect(await apiStatus(b.body.access_token)).toBe(200);
    // The sign-in goes on with that token.
    expect((await refresh(a.body.refresh_token as string)).status).toBe(200);
  });

  it('a retry with the spent token inside the grace answers the token the lost answer carried', async () => {
    const first = (await signIn()).refresh_token as string;
    const lost = await refresh(first);
    const start = offsetMs;
    try {
      offsetMs = start + 20_000;
      const retried = await refresh(first);
      expect(retried.status).toBe(200);
      expect(retried.body.refresh_token).toBe(lost.body.refresh_token);
      // After the grace, the spent token is reuse again: the whole sign-in ends.
      offsetMs = start + 31_000;
      expect(await refresh(first)).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: expect.stringContaining('already used') } });
      expect((await refresh(lost.body.refresh_token as string)).status).toBe(400);
    } finally {
      offsetMs = start;
    }
  });

  it('a token older than the last one spent is reuse even inside the grace', async () => {
    const first = (await signIn()).refresh_token as string;
    const second = (await refresh(first)).body.refresh_token as string;
    const third = (await refresh(second)).body.refresh_token as string;
    expect((await refresh(first)).status).toBe(400);
    expect((await refresh(third)).status).toBe(400);
  });

  it('REFRESH_TOKEN_REUSE_GRACE_SECONDS=0 turns it off: the second of two refreshes is reuse', async () => {
    const strict = await startTestService({ REFRESH_TOKEN_REUSE_GRACE_SECONDS: '0' });
    try {
      const client = await createClient(strict);
      const signedIn = await post('token', { grant_type: 'password', client_id: 'checkin-app', username: client.email, password: client.password }, strict.url);
      const first = signedIn.body.refresh_token as string;
      expect((await refresh(first, strict.url)).status).toBe(200);
      expect((await refresh(first, strict.url)).status).toBe(400);
    } finally {
      await strict.close();
    }
  });
});

describe('reuse grace across api processes sharing one store', () => {
  const subject = { sub: 'tm-1', tenant: 'acct-1', role: 'team_member' as const };
  const always = async () => true;
  let now = Date.parse('2026-11-28T10:00:00Z');
  let dir: string;
  let opened: ReadStore[];
  let one: RefreshTokens;
  let other: RefreshTokens;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'identity2-'));
    opened = [new EmbeddedReadStore(path.join(dir, 'read-models.sqlite')), new EmbeddedReadStore(path.join(dir, 'read-models.sqlite'))];
    const make = (s: ReadStore) => new RefreshTokens({ collection: s.collection<RefreshFamilyDoc>('refresh_token_families'), now: () => new Date(now) });
    [one, other] = [make(opened[0]!), make(opened[1]!)];
  });
  afterAll(async () => {
    for (const s of opened) await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('two processes refreshing one token at once both answer the same token', async () => {
    const first = await one.issue(subject, 'checkin-app');
    const results = await Promise.all([one.rotate(first, 'checkin-app', always), other.rotate(first, 'checkin-app', always)]);
    expect(results.map((r) => r.ok)).toEqual([true, true]);
    const tokens = results.map((r) => (r.ok ? r.token : ''));
    expect(tokens[0]).toBe(tokens[1]);
    expect((await other.rotate(tokens[0]!, 'checkin-app', always)).ok).toBe(true);
  });

  it("a process whose clock is 2 s behind the rotating one's still takes the spent token inside the grace", async () => {
    const behind = new RefreshTokens({ collection: opened[1]!.collection<RefreshFamilyDoc>('refresh_token_families'), now: () => new Date(now - 2000) });
    const first = await one.issue(subject, 'checkin-app');
    const rotated = await one.rotate(first, 'checkin-app', always);
    if (!rotated.ok) throw new Error('rotation refused');
    expect(await behind.rotate(first, 'checkin-app', always)).toMatchObject({ ok: true, token: rotated.token });
  });

  it('the spent token presented at the other process after the grace ends the family for both', async () => {
    const first = await one.issue(subject, 'checkin-app');
    const rotated = await one.rotate(first, 'checkin-app', always);
    if (!rotated.ok) throw new Error('rotation refused');
    now += 31_000;
    expect(await other.rotate(first, 'checkin-app', always)).toEqual({ ok: false, reason: 'reused' });
    expect(await one.rotate(rotated.token, 'checkin-app', always)).toEqual({ ok: false, reason: 'unknown' });
  });

  it('the store holds no usable token: only hashes and the rotation nonce', async () => {
    const first = await one.issue(subject, 'checkin-app');
    const rotated = await one.rotate(first, 'checkin-app', always);
    if (!rotated.ok) throw new Error('rotation refused');
    const stored = JSON.stringify((await opened[0]!.collection<RefreshFamilyDoc>('refresh_token_families').swap(rotated.family._id, null, null)).current);
    expect(stored).not.toContain(first.split('.')[1]);
    expect(stored).not.toContain(rotated.token.split('.')[1]);
  });
});

describe('RFC 7009 token revocation (POST /core/connect/revocation)', () => {
  it('the discovery document names it; openid-client revokes a refresh token and the sign-in ends', async () => {
    const config = await oidc.discovery(new URL(issuer), 'checkin-app', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    expect(config.serverMetadata().revocation_endpoint).toBe(`${issuer}/connect/revocation`);
    const signedIn = await signIn();
    const next = (await refresh(signedIn.refresh_token as string)).body.refresh_token as string;
    await oidc.tokenRevocation(config, next, { token_type_hint: 'refresh_token' });
    expect(await refresh(next)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('the token just spent by a rotation ends the sign-in too; the answer is 200 with no-store', async () => {
    const signedIn = await signIn();
    const first = signedIn.refresh_token as string;
    const next = (await refresh(first)).body.refresh_token as string;
    const revoked = await revoke({ token: first, token_type_hint: 'refresh_token', client_id: 'checkin-app' });
    expect(revoked.status).toBe(200);
    expect(revoked.headers.get('cache-control')).toBe('no-store');
    expect((await refresh(next)).status).toBe(400);
  });

  it('an unknown or already revoked token is 200 (RFC 7009 2.2); a wrong hint is only a hint', async () => {
    const token = (await signIn()).refresh_token as string;
    expect((await revoke({ token, token_type_hint: 'access_token', client_id: 'checkin-app' })).status).toBe(200);
    expect((await refresh(token)).status).toBe(400);
    expect((await revoke({ token, client_id: 'checkin-app' })).status).toBe(200);
    expect((await revoke({ token: 'no-such-token', client_id: 'checkin-app' })).status).toBe(200);
  });

  it('an access token is 400 unsupported_token_type (it lapses at exp and still works)', async () => {
    const signedIn = await signIn();
    const reply = await revoke({ token: signedIn.access_token as string, client_id: 'checkin-app' });
    expect(reply).toMatchObject({ status: 400, body: { error: 'unsupported_token_type', error_description: expect.any(String) } });
    expect(await apiStatus(signedIn.access_token)).toBe(200);
  });

  it('client authentication and a missing token answer as the token endpoint does', async () => {
    const token = (await signIn()).refresh_token as string;
    expect(await revoke({ token: '', client_id: 'checkin-app' })).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    const noClient = await revoke({ token });
    expect(noClient).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(noClient.headers.get('www-authenticate')).toContain('Basic');
    expect(await revoke({ token, client_id: alice.id, client_secret: alice.clientSecret })).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    // None of these revoked it.
    expect((await refresh(token)).status).toBe(200);
  });
});

describe('the discovery document states what the built-in provider does', () => {
  let doc: Record<string, unknown>;
  beforeAll(async () => {
    doc = (await (await fetch(`${service.url}/core/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  });

  it('names an authorization_endpoint (OpenID Connect Discovery 1.0 section 3) that refuses every response_type, not a 404', async () => {
    expect(doc.authorization_endpoint).toBe(`${issuer}/connect/authorize`);
    const reply = await fetch(`${String(doc.authorization_endpoint)}?response_type=code&client_id=checkin-app&redirect_uri=https%3A%2F%2Fevil.example%2Fcb`, { redirect: 'manual' });
    expect(reply.status).toBe(400);
    expect(reply.headers.get('location')).toBeNull();
    expect(await reply.json()).toMatchObject({ error: 'unsupported_response_type', error_description: expect.stringContaining('grant_type=password') });
    // No response type works there, so none is listed (it said "token", the implicit flow).
    expect(doc.response_types_supported).toEqual([]);
  });

  it('every grant type and client authentication method it lists works', async () => {
    expect(doc.grant_types_supported).toEqual(['client_credentials', 'password', 'refresh_token']);
    expect(doc.token_endpoint_auth_methods_supported).toEqual(['client_secret_post', 'client_secret_basic', 'none']);
    const byPost = await post('token', { grant_type: 'client_credentials', client_id: alice.id, client_secret: alice.clientSecret });
    expect(byPost.status).toBe(200);
    const basic = Buffer.from(`${encodeURIComponent(alice.id)}:${encodeURIComponent(alice.clientSecret)}`).toString('base64');
    const byBasic = await fetch(`${service.url}/core/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
      body: 'grant_type=client_credentials',
    });
    expect(byBasic.status).toBe(200);
    const signedIn = await signIn();
    expect(signedIn.refresh_token).toEqual(expect.any(String));
    expect((await refresh(signedIn.refresh_token as string)).status).toBe(200);
  });
});

describe('a JWT issued in the future is refused (iat, like nbf, beyond the 5 s clock tolerance)', () => {
  const devToken = async (claims: { iat: number; nbf?: number }) => {
    const key = loadOrCreateSigningKey(path.join(service.dataDir, 'identity', 'signing-key.json'));
    const jwt = new SignJWT({ tenant: alice.id, role: 'client', client_id: alice.id })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
      .setIssuer(issuer)
      .setSubject(alice.id)
      .setIssuedAt(claims.iat)
      .setExpirationTime(claims.iat + 3600);
    if (claims.nbf !== undefined) jwt.setNotBefore(claims.nbf);
    return jwt.sign(key.privateKey);
  };
  const call = async (token: string) => {
    const reply = await fetch(`${service.url}/checkin/v1/api/events`, {
      headers: { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': alice.subscriptionKey },
    });
    return { status: reply.status, challenge: reply.headers.get('www-authenticate'), body: (await reply.json()) as Record<string, unknown> };
  };
  const nowSec = () => Math.floor(Date.now() / 1000);

  it('iat a day ahead: 401 unauthorized, invalid_token, naming the claim', async () => {
    const reply = await call(await devToken({ iat: nowSec() + 86_400 }));
    expect(reply.status).toBe(401);
    expect(reply.challenge).toContain('error="invalid_token"');
    expect(reply.body).toMatchObject({ code: 'unauthorized', message: expect.stringContaining('"iat"') });
  });

  it('nbf a day ahead: 401 too; iat 3 s ahead (inside the tolerance) is accepted', async () => {
    expect((await call(await devToken({ iat: nowSec(), nbf: nowSec() + 86_400 }))).status).toBe(401);
    expect((await call(await devToken({ iat: nowSec() + 3 }))).status).toBe(200);
  });

  describe('an external provider', () => {
    let stub: ProviderStub;
    let key: TestKey;
    beforeAll(async () => {
      stub = await startProviderStub();
      key = await newKey('RS256');
      stub.jwks.keys = [key.publicJwk];
    });
    afterAll(() => stub.close());

    it("a token with iat in the future is 'not yet valid'", async () => {
      const verifier = createTokenVerifier({ issuer: () => stub.base, audience: 'checkin-api', allowInsecureIssuer: true });
      const err = await verifier.verify(await signToken(key, standardClaims(stub.issuer, { iat: nowSec() + 3600, exp: nowSec() + 7200 }))).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidTokenError);
      expect((err as InvalidTokenError).reason).toBe('not yet valid');
      await expect(verifier.verify(await signToken(key, standardClaims(stub.issuer)))).resolves.toMatchObject({ sub: 'user-1' });
    });

    it('while the provider cannot be reached, such a token is 401, not 503', async () => {
      const verifier = createTokenVerifier({ issuer: () => 'https://127.0.0.1:9/realms/test', audience: 'checkin-api' });
      const token = await signToken(key, standardClaims('https://127.0.0.1:9/realms/test', { iat: nowSec() + 3600, exp: nowSec() + 7200 }));
      const err = await verifier.verify(token).catch((e: unknown) => e);
      expect((err as InvalidTokenError).reason).toBe('not yet valid');
    });
  });
});

describe('the dashboard revokes the refresh token at sign-out', () => {
  it('the page names the dev provider revocation endpoint', async () => {
    const page = await (await fetch(`${service.url}/dashboard`)).text();
    expect(page).toContain('data-revocation-url="/core/connect/revocation"');
    const script = await (await fetch(`${service.url}/dashboard/dashboard.js`)).text();
    expect(script).toContain("token_type_hint: 'refresh_token'");
  });

  it("with an external issuer, its discovery document's revocation_endpoint (and that origin in the CSP)", async () => {
    const provider = http.createServer((req, res) => {
      if (req.url !== '/.well-known/openid-configuration') return void res.writeHead(404).end();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer: 'x', token_endpoint: 'https://id.example.org/token', revocation_endpoint: 'https://revoke.example.org/revoke' }));
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(provider.address() as { port: number }).port}`;
    const external = await startTestService({ OIDC_ISSUER: url, OIDC_AUDIENCE: 'checkin-api' });
    try {
      const reply = await fetch(`${external.url}/dashboard`);
      expect(await reply.text()).toContain('data-revocation-url="https://revoke.example.org/revoke"');
      expect(reply.headers.get('content-security-policy')).toContain("connect-src 'self' https://id.example.org https://revoke.example.org;");
    } finally {
      await external.close();
      provider.close();
    }
  });
});
