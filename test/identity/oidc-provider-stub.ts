import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

/**
 * Stands in for a real OpenID provider (Keycloak, Auth0, Entra ID, Okta...): a node:http server
 * with a discovery document under `path` and a JWKS at the `jwks_uri` it names (Keycloak's layout).
 * Everything is mutable so a test can rotate keys, change the issuer or take the provider down,
 * and the hit counters show how often the verifier asked.
 */
export interface ProviderStub {
  /** The discovery base (what OIDC_ISSUER would be set to, without any trailing slash). */
  base: string;
  /** The `issuer` the discovery document states; defaults to `base`. */
  issuer: string;
  jwks: { keys: JWK[] };
  /** `up`: answers; `503`: answers 503; `refuse`: destroys every connection without answering. */
  state: 'up' | '503' | 'refuse';
  /** When false the JWKS endpoint alone answers 503 (the discovery document still works). */
  jwksUp: boolean;
  /** Requests received per endpoint, answered or not. */
  hits: { discovery: number; jwks: number };
  close(): Promise<void>;
}

export async function startProviderStub(path = '/realms/test'): Promise<ProviderStub> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', stub.base);
    const discovery = url.pathname === `${path}/.well-known/openid-configuration`;
    const jwks = url.pathname === `${path}/protocol/openid-connect/certs`;
    if (discovery) stub.hits.discovery += 1;
    if (jwks) stub.hits.jwks += 1;
    if (stub.state === 'refuse') return void req.socket.destroy();
    if (stub.state === '503') return void res.writeHead(503).end();
    const send = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (discovery) {
      return send({
        issuer: stub.issuer,
        jwks_uri: `${origin}${path}/protocol/openid-connect/certs`,
        token_endpoint: `${origin}${path}/protocol/openid-connect/token`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        // Keycloak lists HMAC algorithms here too: the verifier must not take them from it.
        id_token_signing_alg_values_supported: ['RS256', 'ES384', 'HS256'],
      });
    }
    if (jwks) {
      if (!stub.jwksUp) return void res.writeHead(503).end();
      return send(stub.jwks);
    }
    res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const stub: ProviderStub = {
    base: `${origin}${path}`,
    issuer: `${origin}${path}`,
    jwks: { keys: [] },
    state: 'up',
    jwksUp: true,
    hits: { discovery: 0, jwks: 0 },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return stub;
}

export interface TestKey {
  alg: string;
  kid?: string;
  privateKey: CryptoKey;
  /** The public JWK as a provider publishes it (with kid, use and alg unless told otherwise). */
  publicJwk: JWK;
}

export async function newKey(alg: string, jwk: { kid?: string | null; declareAlg?: boolean } = {}): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = jwk.kid === null ? undefined : (jwk.kid ?? `${alg}-${Math.random().toString(36).slice(2, 10)}`);
  const publicJwk: JWK = {
    ...(await exportJWK(publicKey)),
    use: 'sig',
    ...(kid ? { kid } : {}),
    ...(jwk.declareAlg === false ? {} : { alg }),
  };
  return { alg, kid, privateKey, publicJwk };
}

/** Signs claims as the provider would; `header` overrides or removes (undefined) header members. */
export async function signToken(
  key: TestKey,
  claims: JWTPayload,
  header: { alg?: string; kid?: string | undefined; typ?: string | undefined } = {},
): Promise<string> {
  const protectedHeader: Record<string, unknown> = { alg: key.alg, ...(key.kid ? { kid: key.kid } : {}), typ: 'JWT', ...header };
  for (const name of Object.keys(protectedHeader)) if (protectedHeader[name] === undefined) delete protectedHeader[name];
  return new SignJWT(claims).setProtectedHeader(protectedHeader as { alg: string }).sign(key.privateKey);
}

/** Claims a provider configured for this service issues: iss, sub, aud, iat, exp and the tenant and role claims. */
export function standardClaims(issuer: string, overrides: JWTPayload = {}): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: issuer,
    sub: 'user-1',
    aud: 'checkin-api',
    iat: now,
    exp: now + 300,
    tenant: 'b3b7f6a2-0c61-4a4e-9d55-2f1f8f0f6a11',
    role: 'client',
    ...overrides,
  };
}
