import { exactKey } from '../shared/ids.js';
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
      /** `idAsSent`: the id kept exactly as sent (absent: registered when a GUID-shaped id was lowercased; storedTeamMemberId). */
      data: TeamMemberProfile & { teamMemberId: string; clientId: string; passwordHash: string; idAsSent?: true };
    }
  | {
      /** The client removed its door staff: it signs in no more, and its tokens from before are refused (docs/api.md, Team members). */
      type: 'TeamMemberRemoved';
      data: { teamMemberId: string; clientId: string; userName: string; at: string };
    };

export type TeamMemberCommand =
  | {
      type: 'RegisterTeamMember';
      teamMemberId: string;
      clientId: string;
      profile: TeamMemberProfile;
      passwordHash: string;
    }
  | { type: 'RemoveTeamMember'; teamMemberId: string; clientId: string; at: string };

/** `removed`: the id may be registered again (the way to give door staff a new password). */
export type TeamMemberState =
  | { status: 'none' }
  | { status: 'registered'; clientId: string; profile: TeamMemberProfile }
  | { status: 'removed'; clientId: string };

/** Team member ids are the caller's and scoped per client (docs/identifiers.md). */
export const teamMemberStream = (clientId: string, id: string): string => `teammember-${exactKey(clientId, id)}`;

export const teamMemberDecider: Decider<TeamMemberState, TeamMemberCommand, TeamMemberEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_state, event) => {
    if (event.type === 'TeamMemberRemoved') return { status: 'removed', clientId: event.data.clientId };
    const { teamMemberId: _t, clientId, passwordHash: _p, ...profile } = event.data;
    return { status: 'registered', clientId, profile };
  },
  decide(command, state) {
    if (command.type === 'RemoveTeamMember') {
      // A repeated removal (a retry) changes nothing; an id never registered is not found.
      if (state.status === 'removed') return [];
      if (state.status !== 'registered') throw new DomainError('not_found', 'team member not found');
      return [
        {
          type: 'TeamMemberRemoved',
          data: { teamMemberId: command.teamMemberId, clientId: command.clientId, userName: state.profile.userName, at: command.at },
        },
      ];
    }
    if (state.status === 'registered') {
      throw new DomainError('conflict', 'a team member with this id already exists', { code: 'team_member_exists' });
    }
    return [
      {
        type: 'TeamMemberRegistered',
        data: {
          teamMemberId: command.teamMemberId,
          clientId: command.clientId,
          passwordHash: command.passwordHash,
          ...command.profile,
          idAsSent: true,
        },
      },
    ];
  },
};
