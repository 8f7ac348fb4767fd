import { exactKey } from '../shared/ids.js';
import { assertTextSize } from './text-size.js';
import { DomainError, type Decider } from './decider.js';

export interface TeamMemberProfile {
  userName: string;
  email: string;
  firstName?: string;
  lastName?: string;
  /** The client allows this team member to `force` a scan past a block or validity window (docs/guests.md). */
  canForce?: boolean;
}

export type TeamMemberEvent =
  | {
      type: 'TeamMemberRegistered';
      /**
       * `registrationId` names this registration's data key, which seals the profile and the
       * password hash (docs/personal-data.md, "Team members and account users"); removal deletes
       * it. Events written before it carry none and hold their fields in plaintext. After the
       * removal the event reads without the sealed fields and with `personalDataErased: true`.
       * `idAsSent`: the id kept exactly as sent (absent: registered when a GUID-shaped id was
       * lowercased; storedTeamMemberId).
       */
      data: Partial<TeamMemberProfile> & { teamMemberId: string; clientId: string; passwordHash?: string; registrationId?: string; personalDataErased?: true; idAsSent?: true };
    }
  | {
      /** The client removed its door staff: it signs in no more, and its tokens from before are refused (docs/api.md, Team members). */
      type: 'TeamMemberRemoved';
      /** `userName`: in events written before team members' data was sealed only; `registrationId` names the data key deleted with it. */
      data: { teamMemberId: string; clientId: string; userName?: string; registrationId?: string; at: string };
    };

export type TeamMemberCommand =
  | {
      type: 'RegisterTeamMember';
      teamMemberId: string;
      clientId: string;
      profile: TeamMemberProfile;
      passwordHash: string;
      /** A new random id per registration: it names the data key that seals this registration's personal data. */
      registrationId: string;
    }
  | { type: 'RemoveTeamMember'; teamMemberId: string; clientId: string; at: string };

/** `removed`: the id may be registered again (the way to give door staff a new password). */
export type TeamMemberState =
  | { status: 'none' }
  | { status: 'registered'; clientId: string; profile: TeamMemberProfile; registrationId?: string }
  | { status: 'removed'; clientId: string };

/** Team member ids are the caller's and scoped per client (docs/identifiers.md). */
export const teamMemberStream = (clientId: string, id: string): string => `teammember-${exactKey(clientId, id)}`;

export const teamMemberDecider: Decider<TeamMemberState, TeamMemberCommand, TeamMemberEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_state, event) => {
    if (event.type === 'TeamMemberRemoved') return { status: 'removed', clientId: event.data.clientId };
    const { teamMemberId: _t, clientId, passwordHash: _p, registrationId, personalDataErased: _e, ...profile } = event.data;
    // A registration whose key its removal deleted has no profile; its removal always follows it in the stream.
    return { status: 'registered', clientId, profile: profile as TeamMemberProfile, ...(registrationId !== undefined ? { registrationId } : {}) };
  },
  decide(command, state) {
    if (command.type === 'RemoveTeamMember') {
      // A repeated removal (a retry) changes nothing; an id never registered is not found.
      if (state.status === 'removed') return [];
      if (state.status !== 'registered') throw new DomainError('not_found', 'team member not found');
      return [
        {
          type: 'TeamMemberRemoved',
          // No user name: the removal deletes the registration's data key, and the event must not repeat what it sealed.
          data: {
            teamMemberId: command.teamMemberId,
            clientId: command.clientId,
            ...(state.registrationId !== undefined ? { registrationId: state.registrationId } : {}),
            at: command.at,
          },
        },
      ];
    }
    if (state.status === 'registered') {
      throw new DomainError('conflict', 'a team member with this id already exists', { code: 'team_member_exists' });
    }
    // The team member's document holds these texts and a lower-cased user name: at most 4 MiB together (MongoDB's 16 MiB; docs/api.md, Strings).
    const { profile } = command;
    assertTextSize('team member', [
      { field: 'userName', value: profile.userName, given: true, keyed: true },
      { field: 'email', value: profile.email, given: true },
      { field: 'firstName', value: profile.firstName, given: true },
      { field: 'lastName', value: profile.lastName, given: true },
    ]);
    return [
      {
        type: 'TeamMemberRegistered',
        data: {
          teamMemberId: command.teamMemberId,
          clientId: command.clientId,
          passwordHash: command.passwordHash,
          registrationId: command.registrationId,
          ...command.profile,
          idAsSent: true,
        },
      },
    ];
  },
};
