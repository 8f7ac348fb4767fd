import { Router } from 'express';
import { changePassword, getUserByEmail, updateUser } from '../../commands/accounts.js';
import type { Services } from '../../commands/services.js';
import { commandContext, principalOf } from '../context.js';
import { defineRoute } from '../route.js';
import { PasswordChangeBody, UserEmailQuery, UserResponse, UserUpdateBody, userFields } from '../schemas/account.js';
import { withEveryField } from '../../shared/every-field.js';

/** Spec, Users: a client reads and changes only itself; anything else is 404. */
export function usersRouter(services: Services): Router {
  const router = Router();
  defineRoute(
    router,
    {
      method: 'get',
      path: '/users/v1/api/users/email',
      summary: 'Read the calling user by its email',
      tags: ['Users'],
      query: UserEmailQuery,
      response: UserResponse,
      errors: [404],
    },
    async ({ query, res }) => {
      const { commsApiEnabled: _c, senderTrusted: _s, ...user } = await getUserByEmail(services, principalOf(res).tenantId, query.email);
      return withEveryField(user, userFields);
    },
  );
  defineRoute(
    router,
    {
      method: 'put',
      path: '/users/v1/api/user',
      summary: 'Update the calling user',
      tags: ['Users'],
      body: UserUpdateBody,
      status: 204,
      errors: [404, 409],
    },
    async ({ body, res }) => {
      const { password: _ignored, ...changes } = body;
      await updateUser(services, commandContext(res, services.clock), changes);
    },
  );
  defineRoute(
    router,
    {
      method: 'put',
      path: '/users/v1/api/user/changepassword',
      summary: 'Change the calling user’s password; optionally sign out every session',
      tags: ['Users'],
      body: PasswordChangeBody,
      status: 204,
      errors: [404],
    },
    async ({ body, res }) => {
      await changePassword(services, commandContext(res, services.clock), body);
    },
  );
  return router;
}
