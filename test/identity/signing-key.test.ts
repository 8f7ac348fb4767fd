import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDevIdentityProvider } from '../../src/identity/dev-provider.js';
import { loadOrCreateSigningKey } from '../../src/identity/signing-key.js';
import { fakeCredentials, tempKeyFile } from './support.js';

const provider = (keyFile: string) =>
  createDevIdentityProvider({ issuer: () => 'http://127.0.0.1:8080/core', keyFile, credentials: fakeCredentials });

describe('dev identity provider signing key', () => {
  it('is generated on first start as a private RSA JWK, mode 0600, in a created directory', () => {
    const keyFile = tempKeyFile();
    expect(fs.existsSync(path.dirname(keyFile))).toBe(false);
    provider(keyFile);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    const jwk = JSON.parse(fs.readFileSync(keyFile, 'utf8')) as Record<string, string>;
    expect(jwk).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.any(String), d: expect.any(String) });
    expect(Buffer.from(jwk.n, 'base64url').length * 8).toBe(2048);
  });

  it('is read back, not regenerated, on the next start', () => {
    const keyFile = tempKeyFile();
    const first = loadOrCreateSigningKey(keyFile);
    const again = loadOrCreateSigningKey(keyFile);
    expect(again.kid).toBe(first.kid);
    expect(again.publicJwk).toEqual(first.publicJwk);
  });

  it('a corrupt key file stops the start with an error naming the file', () => {
    for (const content of ['{not json', JSON.stringify({ kty: 'oct', k: 'abc' }), JSON.stringify({ kty: 'RSA', n: 'AQAB', e: 'AQAB', d: 'AQAB' })]) {
      const keyFile = tempKeyFile();
      fs.mkdirSync(path.dirname(keyFile), { recursive: true });
      fs.writeFileSync(keyFile, content);
      expect(() => provider(keyFile)).toThrow(keyFile);
      expect(() => provider(keyFile)).toThrow(/corrupt/);
    }
  });
});
