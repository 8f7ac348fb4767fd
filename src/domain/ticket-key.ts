import { exactKey } from '../shared/ids.js';
import type { Decider } from './decider.js';

/**
 * An event's ticket signing keys (issue 16): Ed25519 key pairs, newest last. The newest signs
 * new tickets; a rotated-out one still verifies until the event ends (docs/tickets.md). The
 * private key is stored encrypted, like webhook secrets (src/shared/encryption.ts), and never
 * leaves the service.
 */
export interface NewTicketKey {
  /** 8 hex digits, random. */
  keyId: string;
  /** Raw 32-byte Ed25519 public key, base64url. */
  publicKey: string;
  /** PKCS#8 DER of the private key, AES-256-GCM encrypted (base64url), and the keyring's key id. */
  encryptedPrivateKey: string;
  encryptionKeyId: string;
}

export interface TicketKey extends NewTicketKey {
  createdAt: string;
  /** When a newer key took over signing. */
  retiredAt?: string;
}

export interface TicketKeysState {
  keys: TicketKey[];
}

export type TicketKeyEvent =
  | {
      type: 'TicketKeyCreated';
      data: NewTicketKey & { clientId: string; eventId: string; createdAt: string; rotated: boolean };
    }
  /** The current key's private half encrypted again under another keyring key (an operator's key rotation); the key pair is unchanged. */
  | {
      type: 'TicketKeyReencrypted';
      data: { clientId: string; eventId: string; keyId: string; encryptedPrivateKey: string; encryptionKeyId: string };
    };

export type TicketKeyCommand =
  /** The first use of an event's keys: create one unless there is one. */
  | { type: 'EnsureTicketKey'; clientId: string; eventId: string; key: NewTicketKey; at: string }
  | { type: 'RotateTicketKey'; clientId: string; eventId: string; key: NewTicketKey; at: string }
  /** `from` is the ciphertext that was decrypted: a key rotated or re-encrypted in between makes it stale, and nothing is written. */
  | { type: 'ReencryptTicketKey'; clientId: string; eventId: string; keyId: string; from: string; encryptedPrivateKey: string; encryptionKeyId: string };

export const ticketKeysStream = (clientId: string, eventId: string): string => `ticketkeys-${exactKey(clientId, eventId)}`;

export const currentTicketKey = (state: TicketKeysState): TicketKey | undefined => state.keys[state.keys.length - 1];

export const ticketKeyDecider: Decider<TicketKeysState, TicketKeyCommand, TicketKeyEvent> = {
  initialState: () => ({ keys: [] }),
  evolve(state, event) {
    if (event.type === 'TicketKeyReencrypted') {
      const { keyId, encryptedPrivateKey, encryptionKeyId } = event.data;
      return { keys: state.keys.map((k) => (k.keyId === keyId ? { ...k, encryptedPrivateKey, encryptionKeyId } : k)) };
    }
    const { clientId: _c, eventId: _e, rotated: _r, ...key } = event.data;
    const keys = state.keys.map((k) => (k.retiredAt ? k : { ...k, retiredAt: key.createdAt }));
    return { keys: [...keys, key] };
  },
  decide(command, state) {
    if (command.type === 'ReencryptTicketKey') {
      const current = currentTicketKey(state);
      if (current?.keyId !== command.keyId || current.encryptedPrivateKey !== command.from) return [];
      const { clientId, eventId, keyId, encryptedPrivateKey, encryptionKeyId } = command;
      return [{ type: 'TicketKeyReencrypted', data: { clientId, eventId, keyId, encryptedPrivateKey, encryptionKeyId } }];
    }
    if (command.type === 'EnsureTicketKey' && state.keys.length > 0) return [];
    return [
      {
        type: 'TicketKeyCreated',
        data: {
          clientId: command.clientId,
          eventId: command.eventId,
          ...command.key,
          createdAt: command.at,
          rotated: command.type === 'RotateTicketKey' && state.keys.length > 0,
        },
      },
    ];
  },
};
