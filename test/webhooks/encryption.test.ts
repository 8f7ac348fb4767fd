import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decrypt, encrypt, keyringOf, loadOrCreateKeyFile } from '../../src/shared/encryption.js';
import { loadConfig } from '../../src/config.js';

describe('secrets at rest (AES-256-GCM with key ids)', () => {
  const oldKey = { id: 'k1', key: randomBytes(32) };
  const newKey = { id: 'k2', key: randomBytes(32) };

  it('round-trips, and names the key it used', () => {
    const ring = keyringOf([oldKey]);
    const sealed = encrypt(ring, 'whsec_abc', 'webhook-secret:client-a');
    expect(sealed.keyId).toBe('k1');
    expect(sealed.ciphertext).not.toContain('whsec');
    expect(decrypt(ring, sealed, 'webhook-secret:client-a')).toBe('whsec_abc');
    expect(encrypt(ring, 'whsec_abc', 'x').ciphertext).not.toBe(encrypt(ring, 'whsec_abc', 'x').ciphertext);
  });

  it('fails for another context (a ciphertext copied to another client), a changed byte or a missing key', () => {
    const ring = keyringOf([oldKey]);
    const sealed = encrypt(ring, 'whsec_abc', 'webhook-secret:client-a');
    expect(() => decrypt(ring, sealed, 'webhook-secret:client-b')).toThrow();
    const raw = Buffer.from(sealed.ciphertext, 'base64url');
    raw[raw.length - 1] ^= 1;
    expect(() => decrypt(ring, { ...sealed, ciphertext: raw.toString('base64url') }, 'webhook-secret:client-a')).toThrow();
    expect(() => decrypt(keyringOf([newKey]), sealed, 'webhook-secret:client-a')).toThrow('k1');
  });

  it('rotates keys: new secrets use the current key, old ones still decrypt with theirs', () => {
    const before = encrypt(keyringOf([oldKey]), 'old', 'c');
    const ring = keyringOf([oldKey, newKey], 'k2');
    const after = encrypt(ring, 'new', 'c');
    expect(after.keyId).toBe('k2');
    expect(decrypt(ring, before, 'c')).toBe('old');
    expect(decrypt(ring, after, 'c')).toBe('new');
  });

  it('creates a development key file (mode 0600) once and reuses it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keys-'));
    try {
      const file = path.join(dir, 'webhooks', 'encryption-keys.json');
      const first = loadOrCreateKeyFile(file);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const second = loadOrCreateKeyFile(file);
      expect(second.currentKeyId).toBe(first.currentKeyId);
      expect(decrypt(second, encrypt(first, 's', 'c'), 'c')).toBe('s');
      fs.writeFileSync(file, '{"keys": {"k": "short"}}');
      expect(() => loadOrCreateKeyFile(file)).toThrow('corrupt');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads WEBHOOK_ENCRYPTION_KEYS and WEBHOOK_ENCRYPTION_KEY_ID, and refuses bad ones', () => {
    const a = randomBytes(32);
    const b = randomBytes(32);
    const config = loadConfig({ WEBHOOK_ENCRYPTION_KEYS: `a:${a.toString('base64')},b:${b.toString('hex')}`, WEBHOOK_ENCRYPTION_KEY_ID: 'b' });
    expect(config.webhookEncryptionKeys).toEqual([
      { id: 'a', key: a },
      { id: 'b', key: b },
    ]);
    expect(config.webhookEncryptionKeyId).toBe('b');
    expect(() => loadConfig({ WEBHOOK_ENCRYPTION_KEYS: 'a:tooshort' })).toThrow('WEBHOOK_ENCRYPTION_KEYS');
    expect(() => loadConfig({ WEBHOOK_ENCRYPTION_KEYS: `a:${a.toString('hex')}`, WEBHOOK_ENCRYPTION_KEY_ID: 'z' })).toThrow('KEY_ID');
    expect(() => loadConfig({ WEBHOOK_RETRY_DELAYS_MS: '10,x' })).toThrow('WEBHOOK_RETRY_DELAYS_MS');
    expect(loadConfig({ WEBHOOK_RETRY_DELAYS_MS: '10, 20' }).webhookRetryDelaysMs).toEqual([10, 20]);
    expect(loadConfig({}).webhookTimeoutMs).toBe(10_000);
    expect(loadConfig({}).webhookAllowInsecure).toBe(false);
  });
});
