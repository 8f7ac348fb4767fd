import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Services } from '../../src/commands/services.js';
import { authenticate } from '../../src/http/auth.js';
import { errorHandler } from '../../src/http/errors.js';
import { createTokenVerifier } from '../../src/identity/token-verifier.js';
import { createLogger } from '../../src/shared/logger.js';
import { newKey, signToken, standardClaims, startProviderStub, type ProviderStub, type TestKey } from '../identity/oidc-provider-stub.js';

/**
 * The authentication middleware with the real verifier against a stand-in OpenID provider:
 * what an API caller gets back (RFC 6750 challenge, spec error shape, 503 when the provider is
 * down) and what the log gets (never the token).
 */

const tenant = 'b3b7f6a2-0c61-4a4e-9d55-2f1f8f0f6a11';
const subscriptionKey = 'sk_test_key';
const logLines: string[] = [];
let provider: ProviderStub;
let rsa: TestKey;
let url: string;
let close: () => Promise<void>;

let services: Services;

async function startApp(): Promise<{ url: string; close: () => Promise<void> }> {
  const verifier = createTokenVerifier({ issuer: () => provider.base, audience: 'checkin-api', allowInsecureIssuer: true, cacheSize: 0 });
  const app = express();
  app.set('logger', services.logger); // where the error handler logs, as in the service
  app.get('/probe', authenticate(verifier, services), (_req, res) => void res.json(res.locals.principal));
  app.use(errorHandler);
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/probe`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

beforeAll(async () => {
  provider = await startProviderStub();
  rsa = await newKey('RS256');
  const logger = createLogger(
    'info',
    new Writable({
      write(chunk, _encoding, done) {
        logLines.push(String(chunk));
        done();
      },
    }),
  );
  const account = { _id: tenant, subscriptionKeys: { k1: createHash('sha256').update(subscriptionKey).digest('hex') } };
  services = {
    logger,
    readStore: { collection: () => ({ get: async (id: string) => (id === tenant ? account : undefined) }) },
  } as unknown as Services;
  ({ url, close } = await startApp());
});
afterAll(async () => {
  await close();
  await provider.close();
});
beforeEach(() => {
  provider.jwks = { keys: [rsa.publicJwk] };
  provider.jwksUp = true;
  provider.state = 'up';
});

async function call(authorization?: string, at = url) {
  const reply = await fetch(at, {
    headers: { 'ocp-apim-subscription-key': subscriptionKey, ...(authorization === undefined ? {} : { authorization }) },
  });
  return { status: reply.status, headers: reply.headers, body: (await reply.json()) as { code?: string; message?: string } };
}

describe('bearer authentication against an external OpenID provider', () => {
  it('accepts a valid token with its subscription key', async () => {
    const reply = await call(`Bearer ${await signToken(rsa, standardClaims(provider.base))}`);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ tenantId: tenant, role: 'client' });
  });

  it('challenges a request without bearer credentials without an error code (RFC 6750 3.1)', async () => {
    for (const authorization of [undefined, 'Basic dXNlcjpwYXNz']) {
      const reply = await call(authorization);
      expect(reply.status).toBe(401);
      expect(reply.body.code).toBe('unauthorized');
      expect(reply.headers.get('www-authenticate')).toBe('Bearer realm="checkin-service"');
    }
    const twoTokens = await call('Bearer a b');
    expect(twoTokens.status).toBe(401);
    expect(twoTokens.headers.get('www-authenticate')).toBe('Bearer realm="checkin-service", error="invalid_request"');
  });

  it('answers every failed check with 401, error="invalid_token" and the spec shape, never echoing the token', async () => {
    const forger = await newKey('RS256');
    const now = Math.floor(Date.now() / 1000);
    const tokens = [
      'not-a-jwt',
      await signToken(forger, standardClaims(provider.base), { kid: rsa.kid }),
      await signToken(rsa, standardClaims(provider.base, { exp: now - 600, iat: now - 900 })),
      await signToken(rsa, standardClaims(provider.base, { aud: 'another-api' })),
      await signToken(rsa, standardClaims(provider.base), { typ: 'logout+jwt' }),
      await signToken(rsa, standardClaims(provider.base, { tenant: 7 })),
    ];
    for (const token of tokens) {
      const reply = await call(`Bearer ${token}`);
      expect(reply.status, token).toBe(401);
      expect(reply.headers.get('www-authenticate')).toBe('Bearer realm="checkin-service", error="invalid_token"');
      expect(Object.keys(reply.body).sort()).toEqual(['code', 'message']);
      expect(reply.body.code).toBe('unauthorized');
      for (const part of token.split('.')) expect(reply.body.message).not.toContain(part);
    }
    expect(logLines.join('')).not.toContain(tokens[1]!.split('.')[2]);
  });

  it('names the missing claim of a genuine token, so whoever set up the provider knows what to add', async () => {
    const withoutRole = standardClaims(provider.base);
    delete withoutRole.role;
    const reply = await call(`Bearer ${await signToken(rsa, withoutRole)}`);
    expect(reply.status).toBe(401);
    expect(reply.body.message).toContain('"role" claim');
  });

  it('answers 503 with Retry-After when the provider cannot be reached, and logs that once per attempt, without the token', async () => {
    const token = await signToken(rsa, standardClaims(provider.base));
    for (const down of [() => (provider.state = '503'), () => (provider.jwksUp = false)]) {
      down(); // discovery fails; then discovery works and the JWKS fails
      const app = await startApp(); // a verifier that has not fetched anything yet
      try {
        const before = logLines.length;
        for (let i = 0; i < 3; i++) {
          const reply = await call(`Bearer ${token}`, app.url);
          expect(reply.status).toBe(503);
          expect(reply.body.code).toBe('identity_provider_unavailable');
          expect(reply.headers.get('retry-after')).toBe('10');
          expect(reply.headers.get('www-authenticate')).toBeNull();
        }
        const warnings = logLines.slice(before).filter((line) => line.includes('identity provider unavailable'));
        expect(warnings).toHaveLength(1);
        // Not once more per request as a failed request: the 503 is an answer, logged where it was decided.
        expect(logLines.slice(before).filter((line) => line.includes('request failed'))).toEqual([]);
      } finally {
        await app.close();
        provider.state = 'up';
      }
    }
    expect(logLines.join('')).not.toContain(token.split('.')[1]);
  });
});
