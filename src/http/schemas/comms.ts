import { z } from 'zod';
import { mergeTokens } from '../../comms/merge-tokens.js';
import { isPublicDomainName } from '../../domain/domain-name.js';
import { registry } from '../openapi.js';
import { Guid, PageQuery } from './common.js';

const email = z.string().trim().max(320).email('must be an email address');
const tokenList = mergeTokens.map((t) => `\`{{${t.token}}}\` ${t.description}`).join('; ');

export const TemplateBody = registry.register(
  'CommsTemplate',
  z.object({
    id: Guid.optional().openapi({ description: 'Template id; generated when absent. An id that exists returns that template unchanged.' }),
    eventId: Guid.openapi({ description: 'Event the template belongs to (one of the caller’s)' }),
    name: z.string().trim().min(1).max(200).openapi({ description: 'Internal name; the PDF attachment is named after it' }),
    html: z
      .string()
      .min(1)
      .max(500_000)
      .openapi({ description: `Full HTML body with merge tokens in double braces. Tokens: ${tokenList}. Blocks: {{#if token}}…{{else}}…{{/if}}, {{#unless token}}.` }),
    subject: z.string().trim().min(1).max(500).optional().openapi({ description: 'Subject line with merge tokens; default "Your invitation to {{eventTitle}}"' }),
    fromAddress: email.optional(),
    fromName: z.string().trim().min(1).max(200).optional(),
    replyTo: email.optional(),
    attachPdf: z.boolean().optional().openapi({ description: 'Attach a PDF of the rendered HTML to every send (default false)' }),
  }),
);

export const TemplateResponse = registry.register(
  'CommsTemplateResponse',
  z.object({
    id: z.string(),
    eventId: z.string(),
    name: z.string(),
    html: z.string(),
    subject: z.string().openapi({ description: 'The subject the send uses: the one given, else "Your invitation to {{eventTitle}}"' }),
    fromAddress: z.string().nullable().openapi({ description: 'null: the account’s sending address is used' }),
    fromName: z.string().nullable(),
    replyTo: z.string().nullable(),
    attachPdf: z.boolean(),
    created: z.string(),
  }),
);

export const TemplateListQuery = PageQuery.extend({ eventId: Guid.optional().openapi({ description: 'Only this event’s templates' }) });

export const SendBody = registry.register(
  'CommsSend',
  z.object({
    templateId: Guid,
    attendeeIds: z
      .array(Guid)
      .min(1)
      .max(200, 'at most 200 guests per call')
      .openapi({ description: 'Guests (of the template’s event) to email; at most 200. Pace calls at 5 per second or less.' }),
    correlationId: z.string().max(200).optional().openapi({ description: 'Echoed as data.correlationId in the comms webhooks' }),
  }),
);

const InvitationStatus = z.enum(['requested', 'sending', 'retrying', 'sent', 'failed']);

export const SendResponse = registry.register(
  'CommsSendResult',
  z.object({
    templateId: z.string(),
    invitations: z.array(z.object({ attendeeId: z.string(), attendeeInvitationId: z.string(), status: z.literal('requested') })),
  }),
);

export const InvitationResponse = registry.register(
  'Invitation',
  z.object({
    attendeeInvitationId: z.string(),
    eventId: z.string(),
    attendeeId: z.string(),
    templateId: z.string(),
    correlationId: z.string().optional(),
    status: InvitationStatus,
    attempts: z.number(),
    to: z.string().optional(),
    provider: z.string().optional(),
    providerMessageId: z.string().optional(),
    error: z.string().optional().openapi({ description: 'When failed: a code (no_email, previous_send_permanently_failed, provider_rejected, ...) and what went wrong' }),
    providerStatus: z.string().optional().openapi({ description: 'The provider’s latest report: delivered, opened, bounced, dropped, spam_reported, unsubscribed' }),
    opens: z.number(),
    skips: z.number(),
    requestedAt: z.string(),
    sentAt: z.string().optional(),
    updatedAt: z.string(),
    history: z.array(z.object({ type: z.string(), at: z.string(), attempt: z.number().optional(), detail: z.string().optional() })),
  }),
);

export const InvitationListQuery = PageQuery.extend({
  eventId: Guid.optional(),
  attendeeId: Guid.optional(),
  templateId: Guid.optional(),
  status: InvitationStatus.optional(),
});

export const IdParam = z.object({ id: z.string().min(1).max(200) });

export const DomainBody = registry.register(
  'SendingDomainRequest',
  z.object({
    domain: z
      .string()
      .trim()
      .min(3)
      .max(254)
      .refine(isPublicDomainName, 'must be a public domain name such as example.com (not localhost or an IP address)')
      .openapi({ description: 'The domain sends come from, e.g. example.com', example: 'example.com' }),
    subdomain: z
      .string()
      .trim()
      .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i, 'must be a single DNS label')
      .optional()
      .openapi({ description: 'Subdomain for the provider’s return path (default chosen by the provider)' }),
    sendingAddress: z.string().trim().max(320).optional().openapi({ description: 'From address at the domain, or its local part (default invites@<domain>)' }),
  }),
);

export const DomainResponse = registry.register(
  'SendingDomain',
  z.object({
    id: z.string().openapi({ description: 'The delivery provider’s id of the domain authentication record' }),
    domain: z.string(),
    subdomain: z.string(),
    valid: z.boolean().openapi({ description: 'True once the provider has verified the DNS records (as of the last verify)' }),
    enableCustomDomain: z.boolean().openapi({ description: 'EnableCustomDomain: sends route through the custom domain' }),
    dnsRecords: z.array(
      z.object({ purpose: z.string(), type: z.string(), host: z.string(), data: z.string(), valid: z.boolean() }),
    ),
    sendingAddress: z.string(),
    createdAt: z.string(),
    lastVerifiedAt: z.string().optional(),
  }),
);
