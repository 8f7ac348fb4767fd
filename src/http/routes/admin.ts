import { Router, type RequestHandler } from 'express';
import {
  getAccount,
  issueSubscriptionKey,
  registerAccount,
  revokeSubscriptionKey,
  setAccountAccess,
  toUserView,
} from '../../commands/accounts.js';
import type { Services } from '../../commands/services.js';
import { sameSecret, sha256 } from '../../shared/secrets.js';
import { commandContext } from '../context.js';
import { HttpError } from '../errors.js';
import { defineRoute } from '../route.js';
import {
  AccountAccessBody,
  AccountCreateBody,
  AccountCreatedResponse,
  AccountIdParams,
  AccountResponse,
  KeyParams,
  SubscriptionKeyResponse,
  userFields,
} from '../schemas/account.js';
import { withEveryField } from '../../shared/every-field.js';

/** Operator API (docs/api.md): `Authorization: Bearer <ADMIN_API_KEY>`. */
export function adminAuth(adminApiKey: string): RequestHandler {
  const expected = sha256(adminApiKey);
  return (req, res, next) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
    if (!match || !sameSecret(match[1]!, expected)) {
      return next(new HttpError(401, 'unauthorized', 'the admin API needs Authorization: Bearer <ADMIN_API_KEY>'));
    }
    res.locals.principal = { tenantId: 'admin', actor: { type: 'system', id: 'admin-api' }, role: 'client' };
    next();
  };
}

export function adminRouter(services: Services): Router {
  const router = Router();
  const secured = false;
  const security = 'admin' as const;
  defineRoute(
    router,
    {
      method: 'post',
      path: '/admin/v1/accounts',
      summary: 'Open a client account (returns the client secret and first subscription key once)',
      tags: ['Admin'],
      body: AccountCreateBody,
      response: AccountCreatedResponse,
      status: 201,
      secured,
      security,
      errors: [401, 409],
      links: {
        GetAccount: { operationId: 'getAdminV1AccountsId', parameters: { id: '$response.body#/id' } },
        SetAccess: { operationId: 'patchAdminV1AccountsId', parameters: { id: '$response.body#/id' } },
        IssueKey: { operationId: 'postAdminV1AccountsIdSubscriptionKeys', parameters: { id: '$response.body#/id' } },
        RevokeFirstKey: {
          operationId: 'postAdminV1AccountsIdSubscriptionKeysKeyIdRevoke',
          parameters: { id: '$response.body#/id', keyId: '$response.body#/subscriptionKeyId' },
        },
      },
    },
    async ({ body, res }) => withEveryField(await registerAccount(services, commandContext(res, services.clock), body), userFields),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: '/admin/v1/accounts/:id',
      summary: 'Read an account',
      tags: ['Admin'],
      params: AccountIdParams,
      response: AccountResponse,
      secured,
      security,
      errors: [401, 404],
    },
    async ({ params }) => withEveryField(toUserView(await getAccount(services, params.id)), userFields),
  );
  defineRoute(
    router,
    {
      method: 'patch',
      path: '/admin/v1/accounts/:id',
      summary: 'Switch comms API access and sender trust',
      tags: ['Admin'],
      params: AccountIdParams,
      body: AccountAccessBody,
      response: AccountResponse,
      secured,
      security,
      errors: [401, 404],
    },
    async ({ params, body, res }) => withEveryField(await setAccountAccess(services, commandContext(res, services.clock), params.id, body), userFields),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: '/admin/v1/accounts/:id/subscription-keys',
      summary: 'Issue a new subscription key (shown once)',
      tags: ['Admin'],
      params: AccountIdParams,
      response: SubscriptionKeyResponse,
      status: 201,
      secured,
      security,
      errors: [401, 404],
    },
    ({ params, res }) => issueSubscriptionKey(services, commandContext(res, services.clock), params.id),
  );
  defineRoute(
    router,
    {
      method: 'post',
      path: '/admin/v1/accounts/:id/subscription-keys/:keyId/revoke',
      summary: 'Revoke a subscription key at once',
      tags: ['Admin'],
      params: KeyParams,
      status: 204,
      secured,
      security,
      errors: [401, 404],
    },
    async ({ params, res }) => {
      await revokeSubscriptionKey(services, commandContext(res, services.clock), params.id, params.keyId);
    },
  );
  return router;
}
