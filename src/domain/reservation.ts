import { scopedKey } from '../shared/ids.js';
import { DomainError, type Decider } from './decider.js';

/**
 * A unique key (a user name across the service, a guest's customId within an event) is a
 * stream of its own: reserving appends to it, so two racing reservations cannot both win.
 */
export type ReservationEvent =
  | { type: 'KeyReserved'; data: { key: string; ownerType: string; ownerId: string } }
  | { type: 'KeyReleased'; data: { key: string; ownerId: string } };

export type ReservationCommand =
  | { type: 'Reserve'; key: string; ownerType: string; ownerId: string }
  | { type: 'Release'; key: string; ownerId: string };

export type ReservationState = { ownerId?: string };

/** Keys are case-insensitive: `Door1` and `door1` are one name. */
export const reservationKey = (value: string): string => value.trim().toLowerCase();

export const usernameStream = (userName: string): string => `username-${reservationKey(userName)}`;
/** A customId is unique within one event of one client; every part is percent-encoded (docs/identifiers.md). */
export const customIdStream = (clientId: string, eventId: string, customId: string): string =>
  `guestcustomid-${scopedKey(clientId, eventId)}:${encodeURIComponent(reservationKey(customId))}`;

export const reservationDecider: Decider<ReservationState, ReservationCommand, ReservationEvent> = {
  initialState: () => ({}),
  evolve: (_state, event) => (event.type === 'KeyReserved' ? { ownerId: event.data.ownerId } : {}),
  decide(command, state) {
    if (command.type === 'Reserve') {
      if (state.ownerId === command.ownerId) return [];
      if (state.ownerId) throw new DomainError('conflict', `${command.key} is already taken`, { code: 'already_taken' });
      const { type: _t, ...data } = command;
      return [{ type: 'KeyReserved', data }];
    }
    if (state.ownerId !== command.ownerId) return [];
    return [{ type: 'KeyReleased', data: { key: command.key, ownerId: command.ownerId } }];
  },
};
