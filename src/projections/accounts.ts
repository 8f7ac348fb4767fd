import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { WriteOp } from '../adapters/readstore/port.js';
import type { AccountEvent } from '../domain/account.js';
import type { TeamMemberEvent } from '../domain/team-member.js';
import type { Projection } from './projection.js';
import { exactKey } from '../shared/ids.js';
import { caselessKey } from '../shared/text-key.js';

/**
 * `accounts`: one document per client account, read by authentication (hashes of the
 * password, client secret and subscription keys; when sessions were last revoked) and by
 * the users endpoints. Hashes stay inside the service: no response maps them.
 */
export interface AccountDoc {
  _id: string;
  email: string;
  emailLower: string;
  userName: string;
  userNameLower: string;
  firstName?: string;
  lastName?: string;
  companyName?: string;
  timeZoneId?: string;
  customData?: string;
  /** The client's retention default (absent: none; documents written before a rebuild may hold null). */
  retentionDays?: number | null;
  passwordHash: string;
  clientSecretHash: string;
  commsApiEnabled: boolean;
  senderTrusted: boolean;
  /** keyId -> SHA-256 of the subscription key. */
  subscriptionKeys: Record<string, string>;
  /** Tokens issued before this instant are refused (PasswordChanged with signOutAllSessions). */
  sessionsValidAfter?: string;
  created: string;
  updated: string;
}

export interface TeamMemberDoc {
  /** The client and the team member id (`scopedKey`): team member ids are scoped per client. */
  _id: string;
  /** Absent in documents written before ids were scoped, whose `_id` is the id. */
  teamMemberId?: string;
  clientId: string;
  userName: string;
  userNameLower: string;
  email: string;
  firstName?: string;
  lastName?: string;
  canForce?: boolean;
  passwordHash: string;
  /** Registered with its id kept exactly as sent (docs/identifiers.md, Case). */
  idAsSent?: true;
  created: string;
}

/**
 * `team_member_removals`: when a client removed a team member (`_id` as in `team_members`).
 * Authentication refuses that team member's tokens issued before it (src/http/auth.ts).
 */
export interface TeamMemberRemovalDoc {
  _id: string;
  clientId: string;
  teamMemberId: string;
  removedAt: string;
}

const set = (id: string, fields: Record<string, unknown>, extra: Record<string, unknown> = {}): WriteOp => ({
  kind: 'update',
  collection: 'accounts',
  id,
  update: { $set: fields, ...extra },
});

export const accountsProjection: Projection = {
  name: 'accounts',
  /** 2: emailLower is stored trimmed; 3: userNameLower and emailLower are NFC (caselessKey). */
  version: 3,
  filter: { streamPrefixes: ['account-'] },
  collections: [
    {
      name: 'accounts',
      indexes: [
        { name: 'emailLower', keys: { emailLower: 1 } },
        { name: 'userNameLower', keys: { userNameLower: 1 } },
      ],
    },
  ],
  apply(stored: StoredEvent): WriteOp[] {
    const event = stored as unknown as StoredEvent & AccountEvent;
    const at = stored.metadata.occurredAt;
    const id = event.data.clientId;
    switch (event.type) {
      case 'AccountRegistered': {
        const { clientId: _c, ...fields } = event.data;
        return [
          {
            kind: 'update',
            collection: 'accounts',
            id,
            upsert: true,
            update: {
              $set: {
                ...fields,
                emailLower: caselessKey(fields.email.trim()),
                userNameLower: caselessKey(fields.userName),
                created: at,
                updated: at,
              },
            },
          },
        ];
      }
      case 'AccountProfileUpdated': {
        const { clientId: _c, ...changes } = event.data;
        // `retentionDays: null` removes the default: the field goes, as a field without a value is absent (docs/read-models.md).
        const cleared = Object.keys(changes).filter((field) => changes[field as keyof typeof changes] === null);
        const values = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== null));
        return [
          set(
            id,
            {
              ...values,
              ...(changes.email ? { emailLower: caselessKey(changes.email.trim()) } : {}),
              ...(changes.userName ? { userNameLower: caselessKey(changes.userName) } : {}),
              updated: at,
            },
            cleared.length > 0 ? { $unset: Object.fromEntries(cleared.map((field) => [field, ''])) } : {},
          ),
        ];
      }
      case 'PasswordChanged':
        return [
          set(id, {
            passwordHash: event.data.passwordHash,
            updated: at,
            ...(event.data.signOutAllSessions ? { sessionsValidAfter: event.data.changedAt } : {}),
          }),
        ];
      case 'CommsApiEnabled':
      case 'CommsApiDisabled':
        return [set(id, { commsApiEnabled: event.type === 'CommsApiEnabled', updated: at })];
      case 'SenderTrustVerified':
      case 'SenderTrustRevoked':
        return [set(id, { senderTrusted: event.type === 'SenderTrustVerified', updated: at })];
      case 'SubscriptionKeyIssued':
        return [set(id, { [`subscriptionKeys.${event.data.keyId}`]: event.data.keyHash, updated: at })];
      case 'SubscriptionKeyRevoked':
        return [set(id, { updated: at }, { $unset: { [`subscriptionKeys.${event.data.keyId}`]: '' } })];
      default:
        return [];
    }
  },
};

/** The team member id of a document (older documents had it as `_id`). */
export const teamMemberIdOf = (doc: TeamMemberDoc): string => doc.teamMemberId ?? doc._id;

/** `team_members`: door staff per client, for the password grant and the team member lists. */
export const teamMembersProjection: Projection = {
  name: 'team_members',
  /** 2: userNameLower and emailLower are NFC (caselessKey). */
  version: 2,
  filter: { streamPrefixes: ['teammember-'] },
  collections: [
    {
      name: 'team_members',
      indexes: [
        { name: 'clientId_userNameLower', keys: { clientId: 1, userNameLower: 1 } },
        { name: 'userNameLower', keys: { userNameLower: 1 } },
      ],
    },
    { name: 'team_member_removals', indexes: [] },
  ],
  apply(stored: StoredEvent): WriteOp[] {
    const event = stored as unknown as StoredEvent & TeamMemberEvent;
    if (event.type === 'TeamMemberRemoved') {
      const { teamMemberId, clientId, at } = event.data;
      const id = exactKey(clientId, teamMemberId);
      return [
        { kind: 'delete', collection: 'team_members', id },
        { kind: 'replace', collection: 'team_member_removals', id, doc: { clientId, teamMemberId, removedAt: at } },
      ];
    }
    if (event.type !== 'TeamMemberRegistered') return [];
    // A registration whose data key its removal deleted (docs/personal-data.md): its removal follows and leaves no document.
    if (event.data.personalDataErased || event.data.userName === undefined) return [];
    const { teamMemberId, registrationId: _r, personalDataErased: _e, ...fields } = event.data;
    const { userName } = event.data;
    return [
      {
        kind: 'replace',
        collection: 'team_members',
        id: exactKey(fields.clientId, teamMemberId),
        doc: { teamMemberId, ...fields, userNameLower: caselessKey(userName), created: stored.metadata.occurredAt },
      },
    ];
  },
};
