import { z } from 'zod';
import { mergeTokens } from '../../comms/merge-tokens.js';
import { isPublicDomainName } from '../../domain/domain-name.js';
import { EMAIL_PATTERN } from '../../domain/email-address.js';
import { registry } from '../openapi.js';
import { Email, Guid, nullAsAbsent, OptionalGuidAsSent, PageQuery, PlainId, RefId, VisibleText, Timestamp } from './common.js';
import { ex } from './example-values.js';

/** A send's correlationId is copied into each of up to 200 guests' events and webhooks. */
export const SEND_CORRELATION_ID_MAX = 4096;

/**
 * A template's fromAddress or replyTo: an address (it becomes a mail header), or "" for none, as a
 * form left blank sends it (an empty email or customId is none on a guest too); null is not given.
 */
const optionalEmail = () =>
  z
    .preprocess((v) => (v === '' ? undefined : v), nullAsAbsent(Email))
    .openapi({ type: ['string', 'null'], maxLength: 320, pattern: `^(?:${EMAIL_PATTERN.source.slice(1, -1)})?$`, example: 'ada@example.com' });
const templateHtml =
  '<html><body><p>Dear {{firstName}},</p><p>You are invited to {{eventTitle}}.</p>{{#if barcode}}<p>Your code: {{barcode}}</p>{{/if}}</body></html>';
const tokenList = mergeTokens.map((t) => `\`{{${t.token}}}\` ${t.description}`).join('; ');

export const TemplateBody = registry.register(
  'CommsTemplate',
  z.object({
    id: nullAsAbsent(OptionalGuidAsSent).openapi({ type: ['string', 'null'], format: 'uuid', description: 'Template id; generated when absent, null or the nil GUID. An id that exists returns that template unchanged. Matched in any case, answered as first sent.' }),
    eventId: PlainId.openapi({ description: 'Event the template belongs to (one of the caller’s)' }),
    // Spec: string. Any string, kept as given (docs/api.md, Strings).
    name: z.string().openapi({ description: 'Internal name, any string; the PDF attachment is named after it (the name followed by .pdf)' }),
    html: z
      .string()
      .min(1)
      .openapi({ description: `Full HTML body with merge tokens in double braces. Tokens: ${tokenList}. Blocks: {{#if token}}…{{else}}…{{/if}}, {{#unless token}}.` }),
    subject: nullAsAbsent(z.string()).openapi({
      description: 'Subject line with merge tokens, any string; absent, or white space only, an email gets the default "Your invitation to {{eventTitle}}"',
    }),
    fromAddress: optionalEmail().openapi({ description: 'Overrides the From address; empty or null: the account’s sending address' }),
    fromName: nullAsAbsent(z.string()).openapi({ description: 'Sender name, any string; absent, or white space only, the sender’s default name' }),
    replyTo: optionalEmail().openapi({ description: 'Overrides the Reply-To address; empty or null: none' }),
    attachPdf: nullAsAbsent(z.boolean()).openapi({ description: 'Attach a PDF of the rendered HTML to every send (default false)' }),
  }).openapi({
    description: 'Links in the HTML must pass the spam check (else 422 `spam_check_failed`).',
    example: {
      eventId: ex.eventId,
      name: 'Gala invitation',
      html: templateHtml,
      subject: 'Your invitation to {{eventTitle}}',
      fromName: 'Gala Events',
      replyTo: 'rsvp@example.com',
      attachPdf: true,
    },
  }),
);

export const TemplateResponse = registry.register(
  'CommsTemplateResponse',
  z.object({
    id: z.string().openapi({ format: 'uuid' }),
    eventId: z.string(),
    name: z.string(),
    html: z.string(),
    subject: z.string().openapi({ description: 'The subject the send uses: the one given, else "Your invitation to {{eventTitle}}"' }),
    fromAddress: z.string().nullable().openapi({ description: 'null: the account’s sending address is used' }),
    fromName: z.string().nullable(),
    replyTo: z.string().nullable(),
    attachPdf: z.boolean(),
    created: z.string().openapi({ format: 'date-time' }),
  }).openapi({
    example: {
      id: ex.templateId,
      eventId: ex.eventId,
      name: 'Gala invitation',
      html: templateHtml,
      subject: 'Your invitation to {{eventTitle}}',
      fromAddress: null,
      fromName: 'Gala Events',
      replyTo: 'rsvp@example.com',
      attachPdf: true,
      created: ex.created,
    },
  }),
);

export const TemplateListQuery = PageQuery.extend({ eventId: PlainId.optional().openapi({ description: 'Only this event’s templates' }) });

export const SendBody = registry.register(
  'CommsSend',
  z.object({
    templateId: Guid,
    attendeeIds: z
      .array(RefId)
      .min(1)
      .max(200, 'at most 200 guests per call')
      .openapi({
        description:
          'Guests (of the template’s event) to email, each by guest id or customId (spec: customId is usable instead of id); at most 200. Pace calls at 5 per second or less.',
      }),
    // Spec: Guest.correlationId is a string; null is not given. Bounded here (not on the guest):
    // one value is copied into the events and webhooks of up to 200 guests.
    correlationId: nullAsAbsent(z.string().max(SEND_CORRELATION_ID_MAX, `at most ${SEND_CORRELATION_ID_MAX} characters: it is copied into every guest's events and webhooks`)).openapi({
      description: `Echoed as data.correlationId in the comms webhooks (empty or null: none); at most ${SEND_CORRELATION_ID_MAX} characters, since one call copies it to up to 200 guests`,
    }),
  }).openapi({ example: { templateId: ex.templateId, attendeeIds: [ex.guestId], correlationId: 'crm-batch-42' } }),
);

const InvitationStatus = z.enum(['requested', 'sending', 'retrying', 'sent', 'failed']);

export const SendResponse = registry.register(
  'CommsSendResult',
  z.object({
    templateId: z.string().openapi({ format: 'uuid' }),
    invitations: z.array(
      z.object({ attendeeId: z.string().openapi({ format: 'uuid' }), attendeeInvitationId: z.string().openapi({ format: 'uuid' }), status: z.literal('requested') }),
    ),
  }).openapi({
    example: { templateId: ex.templateId, invitations: [{ attendeeId: ex.guestId, attendeeInvitationId: ex.invitationId, status: 'requested' }] },
  }),
);

export const InvitationResponse = registry.register(
  'Invitation',
  z.object({
    attendeeInvitationId: z.string().openapi({ format: 'uuid' }),
    eventId: z.string(),
    attendeeId: z.string().openapi({ format: 'uuid' }),
    templateId: z.string().openapi({ format: 'uuid' }),
    correlationId: z.string().optional(),
    status: InvitationStatus,
    attempts: z.number(),
    to: z.string().optional(),
    provider: z.string().optional(),
    providerMessageId: z.string().optional(),
    error: z.string().optional().openapi({ description: 'When failed: a code (no_email, invalid_email, previous_send_permanently_failed, provider_rejected, ...) and what went wrong' }),
    providerStatus: z.string().optional().openapi({ description: 'The provider’s report furthest along, whatever order its reports arrived in: delivered, then opened, then bounced, dropped, spam_reported or unsubscribed' }),
    opens: z.number(),
    skips: z.number(),
    requestedAt: Timestamp,
    sentAt: Timestamp.optional(),
    updatedAt: Timestamp,
    history: z.array(z.object({ type: z.string(), at: Timestamp, attempt: z.number().optional(), detail: z.string().optional() })),
  }).openapi({
    example: {
      attendeeInvitationId: ex.invitationId,
      eventId: ex.eventId,
      attendeeId: ex.guestId,
      templateId: ex.templateId,
      correlationId: 'crm-batch-42',
      status: 'sent',
      attempts: 1,
      to: 'ada@example.com',
      provider: 'outbox',
      providerMessageId: '<c7d8e9f0.1@checkin.localhost>',
      opens: 0,
      skips: 0,
      requestedAt: '2026-11-21T10:05:00.000Z',
      sentAt: '2026-11-21T10:05:01.000Z',
      updatedAt: '2026-11-21T10:05:01.000Z',
      history: [
        { type: 'InvitationRequested', at: '2026-11-21T10:05:00.000Z' },
        { type: 'SendSucceeded', at: '2026-11-21T10:05:01.000Z', attempt: 1 },
      ],
    },
  }),
);

export const InvitationListQuery = PageQuery.extend({
  eventId: PlainId.optional(),
  attendeeId: RefId.optional().openapi({ description: 'The guest, by id or customId (with `eventId` when the customId is used in several events)' }),
  templateId: Guid.optional().openapi({ description: 'Only the invitations of this template' }),
  status: InvitationStatus.optional().openapi({ description: 'Only the invitations with this status' }),
});

/** Spec: template ids and attendeeInvitationIds are GUIDs; a malformed one is 400 (Errors), not a 404. */
export const GuidIdParam = z.object({ id: Guid.openapi({ description: 'The template id or attendeeInvitationId (a GUID)' }) });

export const DomainBody = registry.register(
  'SendingDomainRequest',
  z.object({
    domain: z
      .string()
      .trim()
      .min(3)
      .max(254)
      .refine(isPublicDomainName, 'must be a public domain name such as example.com (not localhost or an IP address)')
      .openapi({
        description: 'The domain sends come from: a public DNS name such as example.com (not localhost, not an IP address)',
        maxLength: 253,
        pattern: '^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]{2,63}$',
        example: 'example.com',
      }),
    // "" (a blank form field) is the default, as for sendingAddress.
    subdomain: nullAsAbsent(
      z
        .string()
        .trim()
        .regex(/^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)?$/, 'must be a single DNS label')
        .transform((label) => label || undefined),
    ).openapi({ description: 'Subdomain for the provider’s return path (absent, null or "": the default chosen by the provider)' }),
    sendingAddress: nullAsAbsent(z.string().trim().max(320)).openapi({
      description: 'The local part of the From address at the domain (default `invites`), at most 64 characters (RFC 5321); a whole address at the domain is accepted too',
      maxLength: 64,
      pattern: '^[A-Za-z0-9_+-]+(\\.[A-Za-z0-9_+-]+)*$',
    }),
  }).openapi({ example: { domain: 'example.com', subdomain: 'mail', sendingAddress: 'invites' } }),
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
      z.object({
        purpose: z.string(),
        type: z.string(),
        host: z.string(),
        data: z.string(),
        valid: z.boolean(),
        reason: z.string().optional().openapi({ description: 'Why the provider found the record not valid at the last verify, when it said (e.g. the CNAME it found instead)' }),
      }),
    ),
    sendingAddress: z.string(),
    createdAt: Timestamp,
    lastVerifiedAt: z.string().optional().openapi({ format: 'date-time' }),
  }).openapi({
    example: {
      id: '18723456',
      domain: 'example.com',
      subdomain: 'mail',
      valid: false,
      enableCustomDomain: false,
      dnsRecords: [
        { purpose: 'mail_cname', type: 'cname', host: 'mail.example.com', data: 'u1234.wl.sendgrid.net', valid: false },
        { purpose: 'dkim1', type: 'cname', host: 's1._domainkey.example.com', data: 's1.domainkey.u1234.wl.sendgrid.net', valid: false },
      ],
      sendingAddress: 'invites@example.com',
      createdAt: ex.created,
    },
  }),
);
