import { domainToASCII } from 'node:url';
import { DomainProviderError, type AuthenticatedDomain, type DomainAuthenticator } from '../adapters/domains/port.js';
import { ConcurrencyError } from '../adapters/eventstore/port.js';
import { DomainError } from '../domain/decider.js';
import { isEmailLocalPart } from '../domain/email-address.js';
import {
  createWentUnanswered,
  sendingDomainDecider,
  sendingDomainStream,
  type SendingDomainCommand,
  type SendingDomainState,
} from '../domain/sending-domain.js';
import type { SendingDomainDoc } from '../projections/sending-domains.js';
import { handleCommand, type CommandContext } from './handle-command.js';
import type { Services } from './services.js';

/** The spec's domain authentication record. */
export interface SendingDomainView {
  /** The delivery provider's id of the domain authentication record. */
  id: string;
  domain: string;
  subdomain: string;
  /** True once the provider has verified the DNS records (as of the last verify). */
  valid: boolean;
  /** EnableCustomDomain: sends route through the custom domain. */
  enableCustomDomain: boolean;
  /** The records to publish; each `valid` once the provider sees it propagated. */
  dnsRecords: SendingDomainDoc['records'];
  sendingAddress: string;
  createdAt: string;
  lastVerifiedAt?: string;
}

const domains = (services: Services) => services.readStore.collection<SendingDomainDoc>('sending_domains');

function toView(doc: SendingDomainDoc): SendingDomainView {
  return {
    id: doc.providerId,
    domain: doc.domain,
    subdomain: doc.subdomain,
    valid: doc.valid,
    enableCustomDomain: doc.enabled,
    dnsRecords: doc.records,
    sendingAddress: doc.sendingAddress,
    createdAt: doc.createdAt,
    ...(doc.lastVerifiedAt ? { lastVerifiedAt: doc.lastVerifiedAt } : {}),
  };
}

export async function getSendingDomain(services: Services, clientId: string): Promise<SendingDomainView> {
  const doc = await domains(services).get(clientId);
  if (!doc) throw new DomainError('not_found', 'no custom sending domain is configured');
  return toView(doc);
}

/** The domain a client's sends come from now, if its custom domain is enabled. */
export async function enabledSendingAddress(services: Services, clientId: string): Promise<string | undefined> {
  const doc = await domains(services).get(clientId);
  return doc?.enabled ? doc.sendingAddress : undefined;
}

/**
 * The domain of `host` (an address's domain, or a domain to configure) that another account has
 * verified as its sending domain: `host` itself or a domain it is under. A verify proves control
 * of the domain's DNS, so from then on no other account may configure it, verify it, or send
 * from an address at it (a shared delivery-provider account would sign such mail with the
 * owner's authentication). Claims nobody has verified block no one.
 */
export async function domainVerifiedByAnother(services: Services, clientId: string, host: string): Promise<string | undefined> {
  const labels = host.trim().toLowerCase().replace(/\.$/, '').split('.');
  const candidates = labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'));
  if (candidates.length === 0) return undefined;
  const page = await domains(services).find({ domain: { $in: candidates }, everVerified: true, _id: { $ne: clientId } }, { limit: 1, readOnly: true });
  return page.items[0]?.domain;
}

/**
 * The domain part of an address (after its last `@`), in ASCII form: `bücher.de` is the
 * `xn--bcher-kva.de` an account verifies (a sending domain is configured in ASCII).
 */
export const domainOfAddress = (address: string): string => {
  const domain = address.trim().slice(address.trim().lastIndexOf('@') + 1);
  return domainToASCII(domain) || domain;
};

const domainInUse = (domain: string) =>
  new DomainError('conflict', `${domain} is verified as another account's sending domain: configure a domain whose DNS you control`, { code: 'domain_in_use' });

export interface DomainRequest {
  domain: string;
  subdomain?: string;
  /** Local part or full address at `domain`; default `invites@<domain>`. */
  sendingAddress?: string;
}

/**
 * Spec: POST /api/comms/domain. One per client (409 domain_already_configured); the provider's
 * refusal is 422 sendgrid_create_failed with its message. The provider is asked first; a
 * create that then loses a race to another request removes what it created at the provider.
 */
export async function configureSendingDomain(
  services: Services,
  authenticator: DomainAuthenticator,
  context: CommandContext,
  request: DomainRequest,
): Promise<SendingDomainView> {
  const domain = request.domain.trim().toLowerCase().replace(/\.$/, '');
  const sendingAddress = sendingAddressOf(request.sendingAddress, domain);
  if (await domains(services).get(context.tenantId)) {
    throw new DomainError('conflict', 'a custom sending domain is already configured', { code: 'domain_already_configured' });
  }
  const taken = await domainVerifiedByAnother(services, context.tenantId, domain);
  if (taken) throw domainInUse(taken);
  const subdomain = request.subdomain?.trim().toLowerCase() || undefined;
  const { created, adopted } = await providerCall(() => createOrAdopt(services, authenticator, context, { domain, ...(subdomain ? { subdomain } : {}) }), true);
  const setup = { provider: authenticator.kind, providerId: created.providerId, domain: created.domain, subdomain: created.subdomain, records: created.records, sendingAddress };
  try {
    await decide(services, context, { type: 'ConfigureDomain', clientId: context.tenantId, setup, at: context.now.toISOString() });
  } catch (error) {
    // One adopted may be what the winning request created (its answer arrived after all): kept.
    if (!adopted) {
      await authenticator.remove(created).catch((cleanup: unknown) =>
        services.logger.warn({ err: cleanup, providerId: created.providerId }, 'could not remove a domain left over at the provider'),
      );
    }
    throw error instanceof ConcurrencyError
      ? new DomainError('conflict', 'a custom sending domain is already configured', { code: 'domain_already_configured' })
      : error;
  }
  return getSendingDomain(services, context.tenantId);
}

/**
 * The provider's create. A create whose answer was lost (a timeout, a gateway's 502) may have
 * created the domain anyway; SendGrid then refuses the retry with the same subdomain (400, "already
 * exists"). A create of this client's that went unanswered is recorded (DomainCreateUnanswered), and
 * its retry adopts that authentication when no client of this service holds it and none of its
 * records was ever validated, so the retry succeeds instead of failing for good. Anything else
 * stays refused: another's create is never adopted.
 */
async function createOrAdopt(
  services: Services,
  authenticator: DomainAuthenticator,
  context: CommandContext,
  request: { domain: string; subdomain?: string },
): Promise<{ created: AuthenticatedDomain; adopted: boolean }> {
  try {
    return { created: await authenticator.create(request), adopted: false };
  } catch (error) {
    const { subdomain } = request;
    if (!(error instanceof DomainProviderError) || subdomain === undefined || !authenticator.find) throw error;
    if (!error.permanent) {
      const at = context.now.toISOString();
      await decide(services, context, { type: 'RecordUnansweredCreate', clientId: context.tenantId, domain: request.domain, subdomain, at }).catch((record: unknown) =>
        services.logger.warn({ err: record }, 'could not record an unanswered domain create'),
      );
      throw error;
    }
    if (error.statusCode !== 400) throw error;
    const state = await currentState(services, context.tenantId);
    if (!createWentUnanswered(state, request.domain, subdomain)) throw error;
    const existing = await authenticator.find({ domain: request.domain, subdomain }).catch(() => undefined);
    // One that was ever validated is no leftover of ours (nobody knew its id to validate it): it is
    // someone's working authentication, and adopting it would verify a domain without publishing DNS.
    if (!existing || existing.valid || existing.records.some((record) => record.valid)) throw error;
    const holder = await domains(services).find({ provider: authenticator.kind, providerId: existing.providerId }, { limit: 1, readOnly: true });
    if (holder.items.length > 0) throw error;
    services.logger.info({ providerId: existing.providerId, domain: existing.domain }, 'adopting a domain authentication a lost create left at the provider');
    return { created: existing, adopted: true };
  }
}

async function currentState(services: Services, clientId: string): Promise<SendingDomainState> {
  let state = sendingDomainDecider.initialState();
  for (const event of await services.eventStore.readStream(sendingDomainStream(clientId))) {
    state = sendingDomainDecider.evolve(state, event as never);
  }
  return state;
}

function sendingAddressOf(given: string | undefined, domain: string): string {
  const address = !given ? `invites@${domain}` : given.includes('@') ? given.trim().toLowerCase() : `${given.trim().toLowerCase()}@${domain}`;
  // SendGrid refuses a From it cannot parse ("The from email does not contain a valid address."): every send would fail.
  if (!address.endsWith(`@${domain}`) || !isEmailLocalPart(address.slice(0, -domain.length - 1))) {
    throw new DomainError('validation_error', 'the sending address must be at the custom domain', {
      errors: [{ path: 'sendingAddress', message: `must be an address at ${domain} whose part before the @ is at most 64 letters, digits and . _ + - ' (RFC 5321), e.g. invites@${domain}` }],
    });
  }
  return address;
}

/** Spec: POST /api/comms/domain/verify; the first success enables the custom domain. */
export async function verifySendingDomain(services: Services, authenticator: DomainAuthenticator, context: CommandContext) {
  const doc = await domains(services).get(context.tenantId);
  if (!doc) throw new DomainError('not_found', 'no custom sending domain is configured');
  // Configured before another account verified it: that account proved control first.
  const taken = await domainVerifiedByAnother(services, context.tenantId, doc.domain);
  if (taken) throw domainInUse(taken);
  const current: AuthenticatedDomain = { providerId: doc.providerId, domain: doc.domain, subdomain: doc.subdomain, valid: doc.valid, records: doc.records };
  const result = await providerCall(() => authenticator.validate(current), false);
  await decide(services, context, { type: 'RecordVerification', clientId: context.tenantId, result, at: context.now.toISOString() });
  return getSendingDomain(services, context.tenantId);
}

/** Spec: activate (409 domain_not_verified before a successful verify) and deactivate. */
export async function switchCustomDomain(services: Services, context: CommandContext, enable: boolean) {
  const command: SendingDomainCommand = enable
    ? { type: 'ActivateCustomDomain', clientId: context.tenantId, at: context.now.toISOString() }
    : { type: 'DeactivateCustomDomain', clientId: context.tenantId, at: context.now.toISOString() };
  await decide(services, context, command);
  return getSendingDomain(services, context.tenantId);
}

async function decide(services: Services, context: CommandContext, command: SendingDomainCommand): Promise<void> {
  const result = await handleCommand(services.eventStore, sendingDomainDecider, sendingDomainStream(context.tenantId), command, context);
  await services.readYourWrites(result.position);
}

/** The provider's answer, its refusal as the spec's 422 sendgrid_create_failed (create), its absence as 503. */
async function providerCall<T>(call: () => Promise<T>, creating: boolean): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof DomainProviderError)) throw error;
    // 401/403: the provider refuses this service's key (revoked, or without the whitelabel scopes),
    // not the client's domain; only an operator can fix it.
    if (error.statusCode === 401 || error.statusCode === 403) {
      throw new DomainError('unavailable', `the email delivery provider refused this service's credentials (${error.statusCode}); an operator must fix the provider API key (it needs domain authentication access)`, {
        code: 'provider_misconfigured',
      });
    }
    if (!error.permanent) {
      const retryAfterSeconds = error.retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(error.retryAfterMs / 1000));
      throw new DomainError('unavailable', `the email delivery provider is unavailable: ${error.message}; retry later`, retryAfterSeconds === undefined ? undefined : { retryAfterSeconds });
    }
    if (creating) throw new DomainError('unprocessable', error.message, { code: 'sendgrid_create_failed' });
    throw new DomainError('unprocessable', error.message, { code: 'domain_verification_failed' });
  }
}
