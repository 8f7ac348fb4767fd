import { scopedKey } from '../shared/ids.js';
import { DomainError, type Decider } from './decider.js';

export interface TeamMemberProfile {
  userName: string;
  email: string;
  firstName?: string;
  lastName?: string;
  /** The client allows this team member to `force` a scan past a block or validity window (docs/guests.md). */
  canForce?: boolean;
}

export type TeamMemberEvent = {
  type: 'TeamMemberRegistered';
  data: TeamMemberProfile & { teamMemberId: string; clientId: string; passwordHash: string };
};

export type TeamMemberCommand = {
  type: 'RegisterTeamMember';
  teamMemberId: string;
  clientId: string;
  profile: TeamMemberProfile;
  passwordHash: string;
};

export type TeamMemberState = { status: 'none' } | { status: 'registered'; clientId: string; profile: TeamMemberProfile };

/** Team member ids are the caller's and scoped per client (docs/identifiers.md). */
export const teamMemberStream = (clientId: string, id: string): string => `teammember-${scopedKey(clientId, id)}`;

export const teamMemberDecider: Decider<TeamMemberState, TeamMemberCommand, TeamMemberEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_state, event) => {
    const { teamMemberId: _t, clientId, passwordHash: _p, ...profile } = event.data;
    return { status: 'registered', clientId, profile };
  },
  decide(command, state) {
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
        },
      },
    ];
  },
};
