import { DomainError, type Decider } from './decider.js';

/**
 * Usernames are unique across the service (account users and team members share one
 * namespace, since both log in through the password grant). Each name is a stream.
 */
export type UsernameEvent =
  | { type: 'UsernameReserved'; data: { userName: string; ownerType: 'account' | 'team_member'; ownerId: string } }
  | { type: 'UsernameReleased'; data: { userName: string; ownerId: string } };

export type UsernameCommand =
  | { type: 'ReserveUsername'; userName: string; ownerType: 'account' | 'team_member'; ownerId: string }
  | { type: 'ReleaseUsername'; userName: string; ownerId: string };

export type UsernameState = { ownerId?: string };

/** Case-insensitive: `Door1` and `door1` are the same name. */
export const usernameKey = (userName: string): string => userName.trim().toLowerCase();
export const usernameStream = (userName: string): string => `username-${usernameKey(userName)}`;

export const usernameDecider: Decider<UsernameState, UsernameCommand, UsernameEvent> = {
  initialState: () => ({}),
  evolve: (_state, event) => (event.type === 'UsernameReserved' ? { ownerId: event.data.ownerId } : {}),
  decide(command, state) {
    if (command.type === 'ReserveUsername') {
      if (state.ownerId === command.ownerId) return [];
      if (state.ownerId) throw new DomainError('conflict', `the user name ${command.userName} is taken`, { code: 'username_taken' });
      const { type: _t, ...data } = command;
      return [{ type: 'UsernameReserved', data }];
    }
    if (state.ownerId !== command.ownerId) return [];
    return [{ type: 'UsernameReleased', data: { userName: command.userName, ownerId: command.ownerId } }];
  },
};
