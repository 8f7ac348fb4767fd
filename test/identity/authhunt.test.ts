import nodePath from 'node:path';
import { SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateSigningKey } from '../../src/identity/signing-key.js';
import { createTokenVerifier, InvalidTokenError } from '../../src/identity/token-verifier.js';
import { newKey, signToken, standardClaims, startProviderStub, type ProviderStub, type TestKey } from './oidc-provider-stub.js';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * Authentication as an operator and an API caller meet it through the real service: the dev
 * provider behind a public URL, the answer to a wrong subscription key, and the token endpoint
 * driven by a standard OAuth client library.
 */

const path = (client: Client) => `/users/v1/api/users/email?email=${encodeURIComponent(client.email)}`;

describe('the dev provider behind a PUBLIC_URL the service itself cannot reach (a proxy, a remapped port)', () => {
  let service: TestService;
  beforeAll(async () => {
    // Port 9 on loopback: nothing listens, as for a container whose PUBLIC_URL is the host's mapped port.
    service = await startTestService({ PUBLIC_URL: 'http://127.0.0.1:9' });
  });
  afterAll(() => service.close());

  it('issues tokens for PUBLIC_URL/core and accepts them, without fetching its own keys through PUBLIC_URL', async () => {
    const client = await createClient(service);
    const [, payload] = client.token.split('.');
    expect(JSON.parse(Buffer.from(payload!, 'base64url').toString()).iss).toBe('http://127.0.0.1:9/core');
    const reply = await client.call('GET', path(client));
    expect(reply.body).toMatchObject({ id: client.id });
    expect(reply.status).toBe(200);
  });

  it('still refuses a token signed by another key or naming another issuer', async () => {
    const client = await createClient(service);
    const [header, payload] = client.token.split('.');
    const forged = `${header}.${payload}.${Buffer.from('not the signature').toString('base64url')}`;
    const reply = await client.call('GET', path(client), undefined, { authorization: `Bearer ${forged}` });
    expect(reply.status).toBe(401);
    expect(reply.headers.get('www-authenticate')).toContain('error="invalid_token"');
    // Signed with the provider's own key but naming the bound address as issuer, not PUBLIC_URL/core.
    const key = loadOrCreateSigningKey(nodePath.join(service.dataDir, 'identity', 'signing-key.json'));
    const otherIssuer = await new SignJWT({ tenant: client.id, role: 'client' })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
      .setIssuer(`${service.url}/core`)
      .setSubject(client.id)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(key.privateKey);
    const wrongIssuer = await client.call('GET', path(client), undefined, { authorization: `Bearer ${otherIssuer}` });
    expect(wrongIssuer.status).toBe(401);
    expect(wrongIssuer.body.message).toContain('wrong issuer');
  });
});

describe('the dev provider and the API with a standard OAuth client (openid-client)', () => {
  let service: TestService;
  let client: Client;
  beforeAll(async () => {
    service = await startTestService();
    client = await createClient(service);
  });
  afterAll(() => service.close());

  const discover = (clientId: string, auth?: oidc.ClientAuth, secret?: string) =>
    oidc.discovery(new URL(`${service.url}/core`), clientId, secret, auth, { execute: [oidc.allowInsecureRequests] });

  it('client_credentials with the library default client authentication (client_secret_post) gives a token the API accepts', async () => {
    const config = await discover(client.id, undefined, client.clientSecret);
    const tokens = await oidc.clientCredentialsGrant(config);
    const reply = await client.call('GET', path(client), undefined, { authorization: `Bearer ${tokens.access_token}` });
    expect(reply.status).toBe(200);
  });

  it('a wrong secret is refused with 401 (RFC 6749 5.2 invalid_client, with its Basic challenge), a wrong password as invalid_grant', async () => {
    const wrongSecret = await discover(client.id, undefined, 'cs_wrong');
    // openid-client reports a 401 that carries a challenge as the challenge (WWWAuthenticateChallengeError).
    await expect(oidc.clientCredentialsGrant(wrongSecret)).rejects.toMatchObject({ status: 401, cause: [expect.objectContaining({ scheme: 'basic' })] });
    const app = await discover('checkin-app', oidc.None());
    await expect(oidc.genericGrantRequest(app, 'password', { username: client.email, password: 'not the password' })).rejects.toMatchObject({
      error: 'invalid_grant',
      status: 400,
    });
  });

  it("the discovery document lists 'none' among the token endpoint's client authentication methods (checkin-app is a public client)", async () => {
    const config = await discover('checkin-app', oidc.None());
    expect(config.serverMetadata().token_endpoint_auth_methods_supported).toEqual(expect.arrayContaining(['client_secret_post', 'client_secret_basic', 'none']));
  });

  it('password grant for the check-in app (a public client, no secret) gives a token the API accepts', async () => {
    const app = await discover('checkin-app', oidc.None());
    const tokens = await oidc.genericGrantRequest(app, 'password', { username: client.email, password: client.password });
    expect(tokens.token_type).toBe('bearer');
    const reply = await client.call('GET', path(client), undefined, { authorization: `Bearer ${tokens.access_token}` });
    expect(reply.status).toBe(200);
  });

  it('a valid token with a missing or wrong subscription key is 401 without error="invalid_token": a new token would not help', async () => {
    const other = await createClient(service);
    for (const key of [undefined, 'sk_wrong', other.subscriptionKey]) {
      const reply = await request(service.url, 'GET', path(client), undefined, {
        authorization: `Bearer ${client.token}`,
        ...(key ? { 'ocp-apim-subscription-key': key } : {}),
      });
      expect(reply.status).toBe(401);
      expect(reply.body.code).toBe('unauthorized');
      expect(reply.body.message).toContain('subscription key');
      const challenge = reply.headers.get('www-authenticate') ?? '';
      // OAuth client libraries throw the token away and fetch a new one on invalid_token.
      expect(challenge).not.toContain('invalid_token');
      expect(challenge).toContain('name="Ocp-Apim-Subscription-Key"');
    }
  });

  it('with both headers wrong, the token is reported (invalid_token): it is checked first', async () => {
    const reply = await request(service.url, 'GET', path(client), undefined, {
      authorization: 'Bearer not-a-jwt',
      'ocp-apim-subscription-key': 'sk_wrong',
    });
    expect(reply.status).toBe(401);
    expect(reply.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});

describe("claim names with a path (Keycloak's realm_access.roles)", () => {
  let provider: ProviderStub;
  let rsa: TestKey;
  beforeAll(async () => {
    provider = await startProviderStub();
    rsa = await newKey('RS256');
    provider.jwks = { keys: [rsa.publicJwk] };
  });
  afterAll(() => provider.close());

  const verifierWith = (claimNames: { tenant?: string; role?: string }) =>
    createTokenVerifier({ issuer: () => provider.base, audience: 'checkin-api', allowInsecureIssuer: true, cacheSize: 0, claimNames });
  const keycloakClaims = (extra: Record<string, unknown>) => {
    const claims: Record<string, unknown> = { ...standardClaims(provider.base), ...extra };
    delete claims.role;
    return claims;
  };

  it('reads a role from a nested claim named by a dotted path, as Keycloak issues realm and client roles', async () => {
    const realmRoles = keycloakClaims({ realm_access: { roles: ['default-roles-test', 'offline_access', 'client'] } });
    expect(await verifierWith({ role: 'realm_access.roles' }).verify(await signToken(rsa, realmRoles))).toMatchObject({ role: 'client' });
    const clientRoles = keycloakClaims({ resource_access: { 'checkin-api': { roles: ['team_member'] }, account: { roles: ['manage-account'] } } });
    expect(await verifierWith({ role: 'resource_access.checkin-api.roles' }).verify(await signToken(rsa, clientRoles))).toMatchObject({
      role: 'team_member',
    });
  });

  it('prefers a top-level claim whose name has dots (Auth0 namespaced claims), and refuses a path that leads nowhere', async () => {
    const tenant = 'acct-42';
    const claims = keycloakClaims({ 'https://checkin.example/role': 'client', tenant });
    expect(await verifierWith({ role: 'https://checkin.example/role' }).verify(await signToken(rsa, claims))).toMatchObject({ tenant, role: 'client' });
    const missing = await verifierWith({ role: 'realm_access.roles' }).verify(await signToken(rsa, keycloakClaims({ realm_access: 'client' }))).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(InvalidTokenError);
    expect((missing as InvalidTokenError).message).toContain('realm_access.roles');
  });
});
