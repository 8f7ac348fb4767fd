import { Router } from 'express';
import type { LinkPolicy } from '../../comms/link-safety.js';
import { getInvitation, listInvitations, requestSends } from '../../commands/invitations.js';
import type { Services } from '../../commands/services.js';
import { createTemplate, getTemplate, listTemplates } from '../../commands/templates.js';
import { commandContext, principalOf } from '../context.js';
import { defineRoute } from '../route.js';
import {
  GuidIdParam,
  InvitationListQuery,
  InvitationResponse,
  SendBody,
  SendResponse,
  TemplateBody,
  TemplateListQuery,
  TemplateResponse,
} from '../schemas/comms.js';
import { pageOf } from '../schemas/common.js';

const base = '/comms/v1/api/comms';

/** Spec: Comms (template create, rule 1; template[s] and send); docs/invitations.md (template list/get, invitation status). */
export function commsRouter(services: Services, linkPolicy: LinkPolicy): Router {
  const router = Router();
  const context = (res: Parameters<typeof commandContext>[0]) => commandContext(res, services.clock);

  for (const path of [`${base}/template`, `${base}/templates`]) {
    defineRoute(
      router,
      {
        method: 'post',
        path,
        summary:
          path.endsWith('s')
            ? 'Create an invitation template (the same as POST /template)'
            : 'Create an invitation template of one event; an id that exists returns that template',
        tags: ['Templates'],
        body: TemplateBody,
        response: TemplateResponse,
        errors: [400, 403, 404, 422],
        ...(path.endsWith('s') ? { operationId: 'postCommsV1ApiCommsTemplates' } : {}),
        links: {
          GetTemplate: { operationId: 'getCommsV1ApiCommsTemplateId', parameters: { id: '$response.body#/id' } },
          ListEventTemplates: { operationId: 'getCommsV1ApiCommsTemplates', parameters: { eventId: '$response.body#/eventId' } },
        },
      },
      ({ body, res }) => createTemplate(services, linkPolicy, context(res), body),
    );
  }
  defineRoute(
    router,
    {
      method: 'get',
      path: `${base}/template/:id`,
      summary: 'Read one template',
      tags: ['Templates'],
      params: GuidIdParam,
      response: TemplateResponse,
      errors: [403, 404],
    },
    ({ params, res }) => getTemplate(services, principalOf(res).tenantId, params.id),
  );
  // Spec: GET /api/comms/template[s]: both spellings list.
  for (const path of [`${base}/templates`, `${base}/template`]) {
    defineRoute(
      router,
      {
        method: 'get',
        path,
        summary: path.endsWith('s')
          ? 'The client’s templates, newest first (filter by event; cursor paged)'
          : 'The client’s templates (the same as GET /templates)',
        tags: ['Templates'],
        query: TemplateListQuery,
        response: pageOf(TemplateResponse),
        errors: [403],
      },
      ({ query, res }) => listTemplates(services, principalOf(res).tenantId, query),
    );
  }
  defineRoute(
    router,
    {
      method: 'post',
      path: `${base}/send`,
      summary: 'Email a template to guests of its event now (at most 200; each gets a new attendeeInvitationId); outcomes arrive as comms webhooks',
      description:
        'Each guest by id or customId. A guest that is not of the template’s event is 404; a guest without an email address, or with one that is not an address, is 400 (each named in `errors`).',
      tags: ['Invitations'],
      body: SendBody,
      response: SendResponse,
      errors: [400, 403, 404, 422, 429],
      links: {
        GetInvitation: {
          operationId: 'getCommsV1ApiCommsInvitationsId',
          parameters: { id: '$response.body#/invitations/0/attendeeInvitationId' },
        },
      },
    },
    ({ body, res }) => requestSends(services, linkPolicy, context(res), body),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: `${base}/invitations/:id`,
      summary: 'One invitation email by attendeeInvitationId: status, attempts, provider reports and history',
      tags: ['Invitations'],
      params: GuidIdParam,
      response: InvitationResponse,
      errors: [403, 404],
    },
    ({ params, res }) => getInvitation(services, principalOf(res).tenantId, params.id),
  );
  defineRoute(
    router,
    {
      method: 'get',
      path: `${base}/invitations`,
      summary: 'The client’s invitation emails, newest first (filter by event, guest id or customId, template, status; cursor paged)',
      tags: ['Invitations'],
      query: InvitationListQuery,
      response: pageOf(InvitationResponse),
      errors: [403, 409],
    },
    ({ query, res }) => listInvitations(services, principalOf(res).tenantId, query),
  );
  return router;
}
