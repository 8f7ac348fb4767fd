import { createHash, createHmac } from 'node:crypto';
import { exactKey } from '../shared/ids.js';
import { caselessKey } from '../shared/text-key.js';
import { DomainError, type Decider } from './decider.js';

/**
 * A unique key (a user name across the service, a guest's customId within an event) is a
 * stream of its own: reserving appends to it, so two racing reservations cannot both win.
 */
export type ReservationEvent =
  | { type: 'KeyReserved'; data: { key?: string; ownerType: string; ownerId: string } }
  | { type: 'KeyReleased'; data: { key?: string; ownerId: string } };

/**
 * `keyInEvent: false` leaves the key out of the event: a stream named by a keyed hash of it (a
 * guest's customId, docs/personal-data.md) then holds it nowhere, not even sealed; the guest's own
 * events say which customId it had. Default: the event repeats the key.
 */
export type ReservationCommand =
  | { type: 'Reserve'; key: string; ownerType: string; ownerId: string; keyInEvent?: boolean }
  | { type: 'Release'; key: string; ownerId: string; keyInEvent?: boolean };

export type ReservationState = { ownerId?: string };

/** Keys are case-insensitive and Unicode-equivalent: `Door1` and `door1` are one name, and so are a composed and a decomposed `José`. */
export const reservationKey = (value: string): string => caselessKey(value.trim());

export const usernameStream = (userName: string): string => `username-${reservationKey(userName)}`;
/**
 * A stream name as a log line shows it: a user-name reservation stream is named by the user name
 * (an account's is its email address) and a legacy customId reservation stream by the customId, so
 * their value is `[Redacted]` (docs/personal-data.md, What the logs hold). Other stream names hold
 * ids only and are shown as they are.
 */
export function streamNameForLogs(streamName: string): string {
  if (streamName.startsWith('username-')) return 'username-[Redacted]';
  if (streamName.startsWith('guestcustomid-')) {
    const at = streamName.lastIndexOf(':');
    if (at !== -1 && !streamName.startsWith('#', at + 1)) return `${streamName.slice(0, at + 1)}[Redacted]`;
  }
  return streamName;
}

/**
 * The secret that names customId reservation streams (docs/personal-data.md, "Stream names"):
 * a per-deployment key held wrapped in the data-key store; its id is part of every name.
 */
export interface StreamNameKey {
  id: string;
  key: Buffer;
}

/**
 * A customId is unique within one event of one client, so it has a reservation stream per
 * client and event. With a name key (personal data encrypted, the default) the stream is named
 * by an HMAC-SHA256 of the client, the event and the lower-cased customId:
 * `guestcustomid-<client>:<event>:#<key id>.<base64url HMAC>`, so the name does not hold the
 * customId. Without one (PII_ENCRYPTION=off) it is the legacy name.
 */
export const customIdStream = (clientId: string, eventId: string, customId: string, nameKey: StreamNameKey | undefined): string => {
  if (!nameKey) return legacyCustomIdStream(clientId, eventId, customId);
  const scope = exactKey(clientId, eventId);
  const digest = createHmac('sha256', nameKey.key).update(`${scope}\n${reservationKey(customId)}`, 'utf8').digest('base64url');
  return `guestcustomid-${scope}:#${nameKey.id}.${digest}`;
};

/**
 * What finds an erased guest by the customId it had, for a retried erasure only (its customId is
 * gone from the guest's document): an HMAC of the client and the lower-cased customId under the
 * stream-name key, a SHA-256 without one (PII_ENCRYPTION=off, where reservation streams carry
 * the customId in clear anyway). Holds no customId.
 */
export const erasedCustomIdKey = (clientId: string, customId: string, nameKey: StreamNameKey | undefined): string => {
  const text = `erased-customid\n${clientId}\n${reservationKey(customId)}`;
  return nameKey ? `#${nameKey.id}.${createHmac('sha256', nameKey.key).update(text, 'utf8').digest('base64url')}` : createHash('sha256').update(text, 'utf8').digest('base64url');
};

/**
 * The name reservations had before it was hashed (every part percent-encoded, the customId in
 * plaintext). Still read, so a customId reserved under it stays taken, and released.
 */
export const legacyCustomIdStream = (clientId: string, eventId: string, customId: string): string =>
  `guestcustomid-${exactKey(clientId, eventId)}:${encodeURIComponent(reservationKey(customId))}`;

export const reservationDecider: Decider<ReservationState, ReservationCommand, ReservationEvent> = {
  initialState: () => ({}),
  evolve: (_state, event) => (event.type === 'KeyReserved' ? { ownerId: event.data.ownerId } : {}),
  decide(command, state) {
    if (command.type === 'Reserve') {
      if (state.ownerId === command.ownerId) return [];
      if (state.ownerId) throw new DomainError('conflict', `${command.key} is already taken`, { code: 'already_taken' });
      const { type: _t, keyInEvent, key, ...data } = command;
      return [{ type: 'KeyReserved', data: keyInEvent === false ? data : { key, ...data } }];
    }
    if (state.ownerId !== command.ownerId) return [];
    return [{ type: 'KeyReleased', data: command.keyInEvent === false ? { ownerId: command.ownerId } : { key: command.key, ownerId: command.ownerId } }];
  },
};
