import type { LinkPolicy } from '../comms/link-safety.js';
import { unsafeLinks } from '../comms/link-safety.js';
import { checkTemplate, defaultSubject } from '../comms/merge-tokens.js';
import { assertTextSize } from '../domain/text-size.js';
import { DomainError } from '../domain/decider.js';
import { templateDecider, templateStream, type TemplateDetails } from '../domain/template.js';
import type { TemplateDoc } from '../projections/templates.js';
import { guidAsSent, newId, scopedKey } from '../shared/ids.js';
import { getEvent } from './events.js';
import { domainOfAddress, domainVerifiedByAnother } from './sending-domain.js';
import { handleCommand, type CommandContext } from './handle-command.js';
import { readModelsBehind, type Services } from './services.js';

/**
 * The spec's Comms template object, every field present ("returns all of the fields"): the
 * subject the send will use (the default when none was given), and null for an unset optional.
 */
export interface TemplateView {
  id: string;
  eventId: string;
  name: string;
  html: string;
  subject: string;
  fromAddress: string | null;
  fromName: string | null;
  replyTo: string | null;
  attachPdf: boolean;
  created: string;
}

export type TemplateInput = Omit<TemplateDetails, 'attachPdf'> & { id?: string; attachPdf?: boolean };

export const templates = (services: Services) => services.readStore.collection<TemplateDoc>('templates');

export function toTemplateView(doc: TemplateDoc): TemplateView {
  return {
    id: doc.templateIdAsSent ?? doc.templateId ?? doc._id,
    eventId: doc.eventId,
    name: doc.name,
    html: doc.html,
    subject: doc.subject ?? defaultSubject,
    fromAddress: doc.fromAddress ?? null,
    fromName: doc.fromName ?? null,
    replyTo: doc.replyTo ?? null,
    attachPdf: doc.attachPdf,
    created: doc.created,
  };
}

/** A template of this client, or null; another client's template with the same id is not seen. */
export async function findTemplateDoc(services: Services, clientId: string, templateId: string): Promise<TemplateDoc | null> {
  const doc = await templates(services).get(scopedKey(clientId, templateId));
  if (doc) return doc;
  // A document written before template ids were scoped (until `projections rebuild templates`).
  const legacy = await templates(services).get(templateId.toLowerCase());
  return legacy && legacy.clientId === clientId && legacy.templateId === undefined ? legacy : null;
}

/**
 * Spec: Comms, template create. An id that exists already returns that template (rule 1).
 * Merge tokens are checked (400 naming the token) and links too (422 spam_check_failed),
 * so a stored template can always be rendered and sent.
 */
export async function createTemplate(
  services: Services,
  linkPolicy: LinkPolicy,
  context: CommandContext,
  input: TemplateInput,
): Promise<TemplateView> {
  const templateId = (input.id ?? newId()).toLowerCase();
  if (input.id) {
    const existing = await findTemplateDoc(services, context.tenantId, templateId);
    if (existing) return toTemplateView(existing);
  }
  await getEvent(services, context.tenantId, input.eventId);
  const { id: _id, ...fields } = input;
  const details: TemplateDetails = { ...fields, attachPdf: input.attachPdf ?? false };
  // The template's document holds these texts: at most 4 MiB together (MongoDB's 16 MiB; docs/api.md, Strings).
  assertTextSize('template', (['name', 'html', 'subject', 'fromAddress', 'fromName', 'replyTo'] as const).map((field) => ({ field, value: details[field], given: true })));
  checkContent(details, linkPolicy);
  await assertOwnSender(services, context.tenantId, details.fromAddress);
  const result = await handleCommand(
    services.eventStore,
    templateDecider,
    templateStream(context.tenantId, templateId),
    { type: 'CreateTemplate', templateId, ...(guidAsSent(input.id) ? { templateIdAsSent: input.id } : {}), clientId: context.tenantId, details, at: context.now.toISOString() },
    context,
  );
  await services.readYourWrites(result.position);
  const doc = await findTemplateDoc(services, context.tenantId, templateId);
  if (!doc) throw readModelsBehind(`template ${templateId}`);
  return toTemplateView(doc);
}

function checkContent(details: TemplateDetails, linkPolicy: LinkPolicy): void {
  const problems = checkTemplate({ html: details.html, ...(details.subject !== undefined ? { subject: details.subject } : {}) });
  if (problems.length > 0) {
    throw new DomainError('validation_error', 'the template cannot be rendered: see errors', { errors: problems });
  }
  assertSafeLinks(details.html, linkPolicy);
}

/**
 * A From address at a domain another account has verified as its sending domain is refused:
 * mail from it would pass as that account's (commands/sending-domain.ts, domainVerifiedByAnother).
 * Checked again at send time, for a domain verified after the template was made.
 */
async function assertOwnSender(services: Services, clientId: string, fromAddress: string | undefined): Promise<void> {
  if (!fromAddress) return;
  const taken = await domainVerifiedByAnother(services, clientId, domainOfAddress(fromAddress));
  if (!taken) return;
  throw new DomainError('validation_error', 'fromAddress is at another account\'s sending domain: see errors', {
    errors: [{ path: 'fromAddress', message: `${taken} is verified as another account's sending domain; use an address at your own domain, or leave fromAddress out` }],
  });
}

/** Spec: 422 spam_check_failed, "template HTML contains URLs flagged as unsafe". */
export function assertSafeLinks(html: string, linkPolicy: LinkPolicy): void {
  const unsafe = unsafeLinks(html, linkPolicy);
  if (unsafe.length === 0) return;
  throw new DomainError('unprocessable', `the template HTML contains ${unsafe.length} link(s) flagged as unsafe: see errors`, {
    code: 'spam_check_failed',
    errors: unsafe.map((link) => ({ path: 'html', message: `${link.url}: ${link.reason}` })),
  });
}

/** One template of this client; another client's is reported as missing, never as forbidden. */
export async function getTemplate(services: Services, clientId: string, templateId: string): Promise<TemplateView> {
  const doc = await findTemplateDoc(services, clientId, templateId.toLowerCase());
  if (!doc) throw new DomainError('not_found', 'template not found');
  return toTemplateView(doc);
}

/** The client's templates, newest first, optionally of one event. */
export async function listTemplates(
  services: Services,
  clientId: string,
  query: { eventId?: string; limit: number; cursor?: string },
) {
  const filter = query.eventId ? { clientId, eventId: query.eventId } : { clientId };
  const page = await templates(services).find(filter, {
    sort: { created: -1 },
    limit: query.limit,
    ...(query.cursor ? { cursor: query.cursor } : {}),
  });
  return { items: page.items.map(toTemplateView), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
}
