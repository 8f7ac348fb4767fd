import { decodeJwt, decodeProtectedHeader } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier, type TokenVerifier } from '../../src/identity/token-verifier.js';
import {
  account,
  accountUser,
  clientCredentials,
  requestToken,
  startIdentityServer,
  teamMember,
  teamMemberPassword,
  tempKeyFile,
  type IdentityServer,
} from './support.js';

const basic = (id: string, secret: string): string =>
  'Basic ' + Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64');

describe('dev identity provider', () => {
  let server: IdentityServer;
  let verifier: TokenVerifier;

  beforeAll(async () => {
    server = await startIdentityServer(tempKeyFile());
    server.startProvider();
    verifier = createTokenVerifier({ issuer: () => server.issuer, allowInsecureIssuer: true });
  });
  afterAll(() => server.close());

  it('publishes an OpenID discovery document for its issuer', async () => {
    const response = await fetch(`${server.issuer}/.well-known/openid-configuration`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      issuer: server.issuer,
      jwks_uri: `${server.issuer}/.well-known/jwks`,
      token_endpoint: `${server.issuer}/connect/token`,
      // No browser flow: the authorization endpoint refuses every response_type (identity2.test.ts).
      authorization_endpoint: `${server.issuer}/connect/authorize`,
      grant_types_supported: ['client_credentials', 'password'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic', 'none'],
      id_token_signing_alg_values_supported: ['RS256'],
      response_types_supported: [],
      subject_types_supported: ['public'],
    });
  });

  it('publishes only the public half of its signing key, with a kid', async () => {
    const jwks = (await (await fetch(`${server.issuer}/.well-known/jwks`)).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.any(String) });
    expect(Object.keys(jwks.keys[0]).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
  });

  it('issues a token for client_credentials in the body, which the verifier accepts as the client', async () => {
    const response = await requestToken(server.issuer, clientCredentials);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600 });

    const token = response.body.access_token as string;
    const verified = await verifier.verify(token);
    expect(verified).toMatchObject({ sub: account.id, tenant: account.id, role: 'client' });
    expect(verified.exp - verified.iat).toBe(3600);
    expect(verified.claims).toMatchObject({ iss: server.issuer, client_id: account.id, nbf: verified.iat, jti: expect.any(String) });
    expect(Math.floor((verified.claims.iat_ms as number) / 1000)).toBe(verified.iat);
    expect(verified.claims.aud).toBeUndefined();
    const header = decodeProtectedHeader(token);
    expect(header).toMatchObject({ alg: 'RS256', kid: expect.any(String) });
  });

  it('issues a token for client_credentials over HTTP Basic (form-encoded id and secret)', async () => {
    const response = await requestToken(
      server.issuer,
      { grant_type: 'client_credentials' },
      { authorization: basic(account.id, account.secret) },
    );
    expect(response.status).toBe(200);
    expect(await verifier.verify(response.body.access_token as string)).toMatchObject({ tenant: account.id, role: 'client' });
  });

  it('serves a standard OpenID client: openid-client discovery + clientCredentialsGrant with client_secret_basic', async () => {
    const config = await oidc.discovery(new URL(server.issuer), account.id, undefined, oidc.ClientSecretBasic(account.secret), {
      execute: [oidc.allowInsecureRequests],
    });
    const tokens = await oidc.clientCredentialsGrant(config);
    expect(tokens.token_type).toBe('bearer');
    expect((await verifier.verify(tokens.access_token)).sub).toBe(account.id);
  });

  it('password grant for an account user gives role client', async () => {
    const response = await requestToken(server.issuer, {
      grant_type: 'password',
      client_id: 'checkin-app',
      username: accountUser.username,
      password: accountUser.password,
    });
    expect(response.status).toBe(200);
    const verified = await verifier.verify(response.body.access_token as string);
    expect(verified).toMatchObject({ sub: account.id, tenant: account.id, role: 'client' });
    expect(verified.claims.client_id).toBe('checkin-app');
  });

  it('password grant for a team member gives role team_member in the account', async () => {
    const response = await requestToken(server.issuer, teamMemberPassword);
    expect(response.status).toBe(200);
    expect(await verifier.verify(response.body.access_token as string)).toMatchObject({
      sub: teamMember.id,
      tenant: account.id,
      role: 'team_member',
    });
  });

  it('a wrong client secret is 401 invalid_client (body and Basic)', async () => {
    for (const response of [
      await requestToken(server.issuer, { ...clientCredentials, client_secret: 'wrong' }),
      await requestToken(server.issuer, { grant_type: 'client_credentials' }, { authorization: basic(account.id, 'wrong') }),
      await requestToken(server.issuer, { grant_type: 'client_credentials', client_id: 'unknown', client_secret: 'x' }),
    ]) {
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
      expect(response.headers.get('www-authenticate')).toMatch(/^Basic /);
      expect(response.headers.get('cache-control')).toBe('no-store');
    }
  });

  it('client_credentials without a secret is 401 invalid_client', async () => {
    const response = await requestToken(server.issuer, { grant_type: 'client_credentials', client_id: account.id });
    expect(response.status).toBe(401);
    expect(response.body.error).toBe('invalid_client');
  });

  it('a wrong password or unknown username is 400 invalid_grant', async () => {
    for (const credentials of [
      { username: teamMember.username, password: 'wrong' },
      { username: 'nobody', password: teamMember.password },
    ]) {
      const response = await requestToken(server.issuer, { grant_type: 'password', client_id: 'checkin-app', ...credentials });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_grant', error_description: expect.any(String) });
    }
  });

  it('the password grant is only for client_id checkin-app', async () => {
    for (const clientId of ['other-app', undefined]) {
      const params: Record<string, string> = { ...teamMemberPassword };
      if (clientId) params.client_id = clientId;
      else delete params.client_id;
      const response = await requestToken(server.issuer, params);
      expect(response.status).toBe(401);
      expect(response.body.error).toBe('invalid_client');
    }
  });

  it('an unsupported grant type is 400 unsupported_grant_type', async () => {
    const response = await requestToken(server.issuer, { grant_type: 'authorization_code', code: 'x', client_id: 'checkin-app' });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('unsupported_grant_type');
  });

  it('malformed token requests are 400 invalid_request', async () => {
    const cases: Array<Promise<Response>> = [
      fetch(`${server.issuer}/connect/token`, { method: 'POST', body: new URLSearchParams({ client_id: account.id }) }),
      fetch(`${server.issuer}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(clientCredentials),
      }),
      fetch(`${server.issuer}/connect/token`, {
        method: 'POST',
        body: new URLSearchParams([...Object.entries(clientCredentials), ['client_secret', 'twice']]),
      }),
      fetch(`${server.issuer}/connect/token`, {
        method: 'POST',
        headers: { authorization: basic(account.id, account.secret) },
        body: new URLSearchParams(clientCredentials),
      }),
      fetch(`${server.issuer}/connect/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'password', client_id: 'checkin-app', username: 'x' }),
      }),
    ];
    for (const response of await Promise.all(cases)) {
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toBe('invalid_request');
    }
  });

  it('sets aud when an audience is configured', async () => {
    const keyFile = tempKeyFile();
    const withAudience = await startIdentityServer(keyFile);
    try {
      withAudience.startProvider({ audience: 'checkin-api', tokenTtlSeconds: 120 });
      const response = await requestToken(withAudience.issuer, teamMemberPassword);
      expect(response.body.expires_in).toBe(120);
      const claims = decodeJwt(response.body.access_token as string);
      expect(claims.aud).toBe('checkin-api');
      const strict = createTokenVerifier({ issuer: () => withAudience.issuer, audience: 'checkin-api', allowInsecureIssuer: true });
      expect((await strict.verify(response.body.access_token as string)).role).toBe('team_member');
    } finally {
      await withAudience.close();
    }
  });
});
