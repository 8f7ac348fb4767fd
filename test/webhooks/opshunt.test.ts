/**
 * Re-encryption under a new keyring key (`admin reencrypt-secrets`, docs/webhooks.md) writes only
 * while what it decrypted is still what is stored: a secret rotated, or a ticket key rotated, in
 * between is left as the rotation wrote it (the re-encrypted old one would undo it).
 */
import { describe, expect, it } from 'vitest';
import type { Decider } from '../../src/domain/decider.js';
import { ticketKeyDecider, type TicketKeyEvent } from '../../src/domain/ticket-key.js';
import { webhookDecider, type WebhookEvent } from '../../src/domain/webhook.js';

function given<S, C, E extends { type: string; data: unknown }>(decider: Decider<S, C, E>, history: E[]) {
  const state = history.reduce(decider.evolve, decider.initialState());
  return { state, when: (command: C) => decider.decide(command, state) };
}

const clientId = 'c1';
const configured: WebhookEvent = { type: 'WebhookConfigured', data: { clientId, url: 'https://a.example/h', encryptedSecret: 'ct1', keyId: 'k1' } };

describe('webhook secret re-encryption', () => {
  it('replaces the stored ciphertext and key id, and the state signs with the same secret under the new key', () => {
    const reencrypt = { type: 'ReencryptWebhookSecret' as const, clientId, from: 'ct1', secret: { encryptedSecret: 'ct1-k2', keyId: 'k2' } };
    const events = given(webhookDecider, [configured]).when(reencrypt);
    expect(events).toEqual([{ type: 'WebhookSecretReencrypted', data: { clientId, encryptedSecret: 'ct1-k2', keyId: 'k2' } }]);
    expect(given(webhookDecider, [configured, ...events]).state).toMatchObject({ status: 'configured', encryptedSecret: 'ct1-k2', keyId: 'k2' });
  });

  it('writes nothing when the secret was rotated (or the webhook deleted) after it was read', () => {
    const rotated: WebhookEvent = { type: 'WebhookSecretRotated', data: { clientId, encryptedSecret: 'ct9', keyId: 'k2' } };
    const reencrypt = { type: 'ReencryptWebhookSecret' as const, clientId, from: 'ct1', secret: { encryptedSecret: 'ct1-k2', keyId: 'k2' } };
    expect(given(webhookDecider, [configured, rotated]).when(reencrypt)).toEqual([]);
    expect(given(webhookDecider, [configured, { type: 'WebhookDeleted', data: { clientId, url: 'https://a.example/h' } }]).when(reencrypt)).toEqual([]);
  });
});

describe('ticket key re-encryption', () => {
  const created = (keyId: string, at: string): TicketKeyEvent => ({
    type: 'TicketKeyCreated',
    data: { clientId, eventId: 'e1', keyId, publicKey: `pub-${keyId}`, encryptedPrivateKey: `priv-${keyId}`, encryptionKeyId: 'k1', createdAt: at, rotated: false },
  });
  const reencrypt = (keyId: string) => ({
    type: 'ReencryptTicketKey' as const, clientId, eventId: 'e1', keyId, from: `priv-${keyId}`, encryptedPrivateKey: `priv-${keyId}-k2`, encryptionKeyId: 'k2',
  });

  it("re-encrypts the current key's private half; the key id, public key and retirement stay", () => {
    const history = [created('a', '2026-01-01T00:00:00.000Z'), created('b', '2026-01-02T00:00:00.000Z')];
    const events = given(ticketKeyDecider, history).when(reencrypt('b'));
    expect(events).toEqual([{ type: 'TicketKeyReencrypted', data: { clientId, eventId: 'e1', keyId: 'b', encryptedPrivateKey: 'priv-b-k2', encryptionKeyId: 'k2' } }]);
    expect(given(ticketKeyDecider, [...history, ...events]).state.keys).toEqual([
      expect.objectContaining({ keyId: 'a', encryptedPrivateKey: 'priv-a', encryptionKeyId: 'k1', retiredAt: '2026-01-02T00:00:00.000Z' }),
      expect.objectContaining({ keyId: 'b', publicKey: 'pub-b', encryptedPrivateKey: 'priv-b-k2', encryptionKeyId: 'k2' }),
    ]);
  });

  it('writes nothing for a key no longer current (rotated in between) or already re-encrypted', () => {
    const history = [created('a', '2026-01-01T00:00:00.000Z'), created('b', '2026-01-02T00:00:00.000Z')];
    expect(given(ticketKeyDecider, history).when(reencrypt('a'))).toEqual([]);
    const done = given(ticketKeyDecider, history).when(reencrypt('b'));
    expect(given(ticketKeyDecider, [...history, ...done]).when(reencrypt('b'))).toEqual([]);
  });
});
