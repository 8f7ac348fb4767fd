import { Router } from 'express';
import { z } from 'zod';
import type { Services } from '../../commands/services.js';
import { listTeamMembers, registerTeamMember, removeTeamMember } from '../../commands/team-members.js';
import { commandContext, principalOf } from '../context.js';
import { defineRoute } from '../route.js';
import { TeamMemberIdParams, TeamMemberBody, TeamMemberResponse, teamMemberFields, UsernameParams } from '../schemas/account.js';
import { withEveryField } from '../../shared/every-field.js';

export function teamMembersRouter(services: Services): Router {
  const router = Router();
  defineRoute(
    router,
    {
      method: 'post',
      path: '/checkin/v1/api/teammember',
      summary: 'Create a team member (door staff) of the calling client',
      tags: ['Team members'],
      body: TeamMemberBody,
      response: TeamMemberResponse,
      errors: [409],
    },
    async ({ body, res }) => withEveryField(await registerTeamMember(services, commandContext(res, services.clock), body), teamMemberFields),
  );
  defineRoute(
    router,
    {
      method: 'delete',
      path: '/checkin/v1/api/teammember/:id',
      summary: 'Remove a team member (door staff) of the calling client',
      description:
        'The team member signs in no more and every token it was given before the removal is refused (401), at once; its user name is free again ' +
        '(create it anew to give the person a new password). Its scans stay counted in the team statistics. A repeat is 204; an id the client never used is 404.',
      tags: ['Team members'],
      params: TeamMemberIdParams,
      status: 204,
      errors: [404],
    },
    async ({ params, res }) => {
      await removeTeamMember(services, commandContext(res, services.clock), params.id);
    },
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/checkin/v1/api/teammembers/user/:username/events',
      summary: 'Team members of the calling client (username = the client’s user name), or one team member by user name; a team member: itself, by its own user name',
      tags: ['Team members'],
      params: UsernameParams,
      response: z.array(TeamMemberResponse),
      roles: ['client', 'team_member'],
      errors: [404],
    },
    async ({ params, res }) => {
      const { tenantId, role, actor } = principalOf(res);
      const members = await listTeamMembers(services, tenantId, params.username, role === 'team_member' ? actor.id : undefined);
      return members.map((member) => withEveryField(member, teamMemberFields));
    },
  );
  return router;
}
