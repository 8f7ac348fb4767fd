import { caselessKey } from '../shared/text-key.js';
import { assertTextSize } from './text-size.js';
import { DomainError, type Decider } from './decider.js';

/** The client's user profile (spec: User). The password never appears here, only its hash. */
export interface AccountProfile {
  email: string;
  userName: string;
  firstName?: string;
  lastName?: string;
  companyName?: string;
  timeZoneId?: string;
  customData?: string;
  /**
   * The client's default for events without their own `retentionDays`: erase an event's guests
   * this many days after its end (docs/personal-data.md, Retention). `null` clears it.
   */
  retentionDays?: number | null;
}

/**
 * `.` and `..`: the two user names no URL path can carry (clients resolve them as dot segments,
 * percent-encoded too), so `GET /checkin/v1/api/teammembers/user/{username}/events` could never
 * name them (docs/identifiers.md, "Ids in paths"). Refused where a name is made or changed to one.
 */
export const isPathlessUserName = (userName: string): boolean => userName === '.' || userName === '..';
export const pathlessUserNameMessage = 'must not be . or ..: a URL path cannot carry them (GET /checkin/v1/api/teammembers/user/{username}/events)';

export type AccountEvent =
  | {
      type: 'AccountRegistered';
      data: AccountProfile & {
        clientId: string;
        passwordHash: string;
        clientSecretHash: string;
        commsApiEnabled: boolean;
        senderTrusted: boolean;
      };
    }
  | { type: 'AccountProfileUpdated'; data: Partial<AccountProfile> & { clientId: string } }
  | { type: 'PasswordChanged'; data: { clientId: string; passwordHash: string; signOutAllSessions: boolean; changedAt: string } }
  | { type: 'CommsApiEnabled'; data: { clientId: string } }
  | { type: 'CommsApiDisabled'; data: { clientId: string } }
  | { type: 'SenderTrustVerified'; data: { clientId: string } }
  | { type: 'SenderTrustRevoked'; data: { clientId: string } }
  | { type: 'SubscriptionKeyIssued'; data: { clientId: string; keyId: string; keyHash: string } }
  | { type: 'SubscriptionKeyRevoked'; data: { clientId: string; keyId: string } };

export type AccountCommand =
  | {
      type: 'RegisterAccount';
      clientId: string;
      profile: AccountProfile;
      passwordHash: string;
      clientSecretHash: string;
      subscriptionKey: { keyId: string; keyHash: string };
      commsApiEnabled: boolean;
      senderTrusted: boolean;
    }
  | {
      type: 'UpdateProfile';
      clientId: string;
      changes: Partial<AccountProfile>;
      /**
       * With a `userName` in `changes`: the user name (its reservation key) the change was planned
       * on, whose reservation the same batch keeps or releases. An account renamed since (a
       * concurrent rename) is refused (`account_changed`) and the change planned again, so the
       * account never ends with a name it does not hold, nor holds one it does not use.
       */
      plannedOn?: string;
    }
  | {
      type: 'ChangePassword';
      clientId: string;
      /** Checked by the caller (scrypt is slow and async); the decider only records the outcome. */
      oldPasswordMatches: boolean;
      newPasswordHash: string;
      signOutAllSessions: boolean;
      at: string;
    }
  | { type: 'SetAccess'; clientId: string; commsApiEnabled?: boolean; senderTrusted?: boolean }
  | { type: 'IssueSubscriptionKey'; clientId: string; keyId: string; keyHash: string }
  | { type: 'RevokeSubscriptionKey'; clientId: string; keyId: string };

export type AccountState =
  | { status: 'none' }
  | {
      status: 'registered';
      profile: AccountProfile;
      commsApiEnabled: boolean;
      senderTrusted: boolean;
      keyIds: string[];
    };

export const accountStream = (clientId: string): string => `account-${clientId}`;

export const accountDecider: Decider<AccountState, AccountCommand, AccountEvent> = {
  initialState: () => ({ status: 'none' }),

  evolve(state, event) {
    if (event.type === 'AccountRegistered') {
      const { clientId: _c, passwordHash: _p, clientSecretHash: _s, commsApiEnabled, senderTrusted, ...profile } = event.data;
      return { status: 'registered', profile, commsApiEnabled, senderTrusted, keyIds: [] };
    }
    if (state.status !== 'registered') return state;
    switch (event.type) {
      case 'AccountProfileUpdated': {
        const { clientId: _c, ...changes } = event.data;
        return { ...state, profile: { ...state.profile, ...changes } };
      }
      case 'CommsApiEnabled':
        return { ...state, commsApiEnabled: true };
      case 'CommsApiDisabled':
        return { ...state, commsApiEnabled: false };
      case 'SenderTrustVerified':
        return { ...state, senderTrusted: true };
      case 'SenderTrustRevoked':
        return { ...state, senderTrusted: false };
      case 'SubscriptionKeyIssued':
        return { ...state, keyIds: [...state.keyIds, event.data.keyId] };
      case 'SubscriptionKeyRevoked':
        return { ...state, keyIds: state.keyIds.filter((k) => k !== event.data.keyId) };
      default:
        return state;
    }
  },

  decide(command, state) {
    const { clientId } = command;
    if (command.type === 'RegisterAccount') {
      if (state.status !== 'none') throw new DomainError('conflict', 'the account already exists');
      assertAccountText(command.profile, command.profile);
      return [
        {
          type: 'AccountRegistered',
          data: {
            clientId,
            ...command.profile,
            passwordHash: command.passwordHash,
            clientSecretHash: command.clientSecretHash,
            commsApiEnabled: command.commsApiEnabled,
            senderTrusted: command.senderTrusted,
          },
        },
        { type: 'SubscriptionKeyIssued', data: { clientId, ...command.subscriptionKey } },
      ];
    }
    if (state.status !== 'registered') throw new DomainError('not_found', 'user not found');
    switch (command.type) {
      case 'UpdateProfile': {
        if (command.plannedOn !== undefined && caselessKey(state.profile.userName.trim()) !== command.plannedOn) {
          throw new DomainError('conflict', 'the account was renamed meanwhile; send the change again', { code: 'account_changed' });
        }
        assertAccountText({ ...state.profile, ...Object.fromEntries(Object.entries(command.changes).filter(([, v]) => v !== undefined)) }, command.changes);
        const changed = Object.fromEntries(
          Object.entries(command.changes).filter(
            ([key, value]) => value !== undefined && state.profile[key as keyof AccountProfile] !== value,
          ),
        );
        return Object.keys(changed).length === 0 ? [] : [{ type: 'AccountProfileUpdated', data: { clientId, ...changed } }];
      }
      case 'ChangePassword':
        if (!command.oldPasswordMatches) {
          throw new DomainError('validation_error', 'the old password is not correct', { code: 'invalid_old_password' });
        }
        return [
          {
            type: 'PasswordChanged',
            data: {
              clientId,
              passwordHash: command.newPasswordHash,
              signOutAllSessions: command.signOutAllSessions,
              changedAt: command.at,
            },
          },
        ];
      case 'SetAccess': {
        const events: AccountEvent[] = [];
        if (command.commsApiEnabled !== undefined && command.commsApiEnabled !== state.commsApiEnabled) {
          events.push({ type: command.commsApiEnabled ? 'CommsApiEnabled' : 'CommsApiDisabled', data: { clientId } });
        }
        if (command.senderTrusted !== undefined && command.senderTrusted !== state.senderTrusted) {
          events.push({ type: command.senderTrusted ? 'SenderTrustVerified' : 'SenderTrustRevoked', data: { clientId } });
        }
        return events;
      }
      case 'IssueSubscriptionKey':
        return [{ type: 'SubscriptionKeyIssued', data: { clientId, keyId: command.keyId, keyHash: command.keyHash } }];
      case 'RevokeSubscriptionKey':
        if (!state.keyIds.includes(command.keyId)) throw new DomainError('not_found', 'subscription key not found');
        return [{ type: 'SubscriptionKeyRevoked', data: { clientId, keyId: command.keyId } }];
    }
  },
};

/** Text fields of an account's document; `emailLower` and `userNameLower` are lower-cased copies. */
const accountTextFields = ['email', 'userName', 'firstName', 'lastName', 'companyName', 'timeZoneId', 'customData'] as const;

/** The account's texts, as they would be after the command, hold at most 4 MiB (MongoDB's 16 MiB; docs/api.md, Strings). */
function assertAccountText(after: Partial<AccountProfile>, given: Partial<AccountProfile>): void {
  assertTextSize(
    'account',
    accountTextFields.map((field) => ({ field, value: after[field], given: given[field] !== undefined, keyed: field === 'email' || field === 'userName' })),
  );
}
