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

export const teamMemberStream = (id: string): string => `teammember-${id}`;

export const teamMemberDecider: Decider<TeamMemberState, TeamMemberCommand, TeamMemberEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_state, event) => {
    const { teamMemberId: _t, clientId, passwordHash: _p, ...profile } = event.data;
    return { status: 'registered', clientId, profile };
  },
  decide(command, state) {
    if (state.status === 'registered') {
      // A caller-chosen id of another client's team member is reported as taken, not as theirs.
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
