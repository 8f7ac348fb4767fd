import path from 'node:path';
import type { Filter, FindOptions, Page } from '../adapters/readstore/port.js';
import type { Config } from '../config.js';
import { DomainError } from '../domain/decider.js';
import {
  shownCommsData,
  deliveryDecider,
  deliveryStream,
  webhookDecider,
  webhookIdFor,
  webhookStream,
  type StoredSecret,
  defaultRetryDelaysMs,
} from '../domain/webhook.js';
import type { CommsEventDoc, DeliveryDoc, WebhookDoc } from '../projections/webhooks.js';
import { commsHistoryCutoff } from './comms-history-retention.js';
import { decrypt, encrypt, keyringOf, loadOrCreateKeyFile, type Keyring } from '../shared/encryption.js';
import { newId } from '../shared/ids.js';
import { newSecret } from '../shared/secrets.js';
import { checkUrlForm, resolveUrl, systemResolver, UrlRefusedError, type Resolver, type UrlPolicy } from '../shared/url-guard.js';
import { handleCommand, type CommandContext } from './handle-command.js';
import type { Services } from './services.js';

/** What the webhook API and dispatcher need beyond Services; built once from config. */
export interface WebhookSettings {
  keyring: Keyring;
  urlPolicy: UrlPolicy;
  resolver: Resolver;
  /** Delay before retry n is `retryDelaysMs[n-1]` (plus up to 20 % jitter); attempts = length + 1. */
  retryDelaysMs: number[];
  timeoutMs: number;
  /** Attempts in flight at once, in all and per account (a slow receiver holds only its own). */
  concurrency: number;
  perAccountConcurrency: number;
  /** How long an attempt is held without a heartbeat before another worker may make it (issue 12, item 4). */
  leaseMs?: number;
  /** How often a dispatcher looks for deliveries no live worker holds; 0 or unset: never. */
  sweepMs?: number;
  /** COMMS_HISTORY_RETENTION_DAYS: a finished delivery older than this is no longer in the log (0 or unset: kept for ever). */
  historyRetentionDays?: number;
}

/** The webhook backoff schedule unless WEBHOOK_RETRY_DELAYS_MS sets one (the domain holds it: config checks against it). */
export { defaultRetryDelaysMs };

const settingsByConfig = new WeakMap<Config, WebhookSettings>();

/**
 * Settings from config, once per config. Without WEBHOOK_ENCRYPTION_KEYS the keyring is the
 * development key file `DATA_DIR/webhooks/encryption-keys.json`, created on first start.
 */
export function webhookSettings(config: Config): WebhookSettings {
  let settings = settingsByConfig.get(config);
  if (!settings) {
    const keyring = config.webhookEncryptionKeys
      ? keyringOf(config.webhookEncryptionKeys, config.webhookEncryptionKeyId)
      : loadOrCreateKeyFile(path.join(config.dataDir, 'webhooks', 'encryption-keys.json'));
    settings = {
      keyring,
      urlPolicy: { allowInsecure: config.webhookAllowInsecure },
      resolver: systemResolver,
      retryDelaysMs: config.webhookRetryDelaysMs ?? defaultRetryDelaysMs,
      timeoutMs: config.webhookTimeoutMs,
      concurrency: 128,
      perAccountConcurrency: 4,
      leaseMs: config.comms.sendLeaseMs,
      sweepMs: config.comms.sweepMs,
      historyRetentionDays: config.commsHistoryRetentionDays,
    };
    settingsByConfig.set(config, settings);
  }
  return settings;
}

/** The additional data that binds a stored secret to its client (see shared/encryption). */
export const secretContext = (clientId: string): string => `webhook-secret:${clientId}`;

const webhooks = (services: Services) => services.readStore.collection<WebhookDoc>('webhooks');
const deliveries = (services: Services) => services.readStore.collection<DeliveryDoc>('webhook_deliveries');
const commsEvents = (services: Services) => services.readStore.collection<CommsEventDoc>('comms_events');

/** A new plaintext secret (returned once) and its stored, encrypted form. */
function freshSecret(settings: WebhookSettings, clientId: string): { plaintext: string; stored: StoredSecret } {
  const plaintext = newSecret('whsec');
  const { ciphertext, keyId } = encrypt(settings.keyring, plaintext, secretContext(clientId));
  return { plaintext, stored: { encryptedSecret: ciphertext, keyId } };
}

/**
 * The URL rules (docs/webhooks.md) as a 400 on `url`. A host that does not resolve yet
 * (DNS being set up, or a resolver that is down) is accepted: every delivery attempt resolves
 * and checks the addresses again, and retries while DNS fails (docs/webhooks.md).
 */
async function checkedUrl(settings: WebhookSettings, url: string): Promise<string> {
  const refused = (message: string) => new DomainError('validation_error', message, { errors: [{ path: 'url', message }] });
  let form: URL;
  try {
    form = checkUrlForm(url, settings.urlPolicy);
  } catch (error) {
    throw refused((error as Error).message);
  }
  try {
    return (await resolveUrl(url, settings.urlPolicy, settings.resolver)).url.href;
  } catch (error) {
    if (error instanceof UrlRefusedError) throw refused(error.message);
    return form.href;
  }
}

export interface WebhookSecretView {
  url: string;
  /** Only on first configuration and on rotation; null when a call changed the URL only (Comms rule 2). */
  secret: string | null;
}

/** Spec, Comms rules 2 and 4: the first call creates the secret; a later one changes the URL only. */
export async function configureWebhook(
  services: Services,
  settings: WebhookSettings,
  context: CommandContext,
  input: { url: string },
): Promise<WebhookSecretView> {
  const url = await checkedUrl(settings, input.url);
  const secret = freshSecret(settings, context.tenantId);
  const result = await handleCommand(services.eventStore, webhookDecider, webhookStream(context.tenantId), {
    type: 'ConfigureWebhook',
    clientId: context.tenantId,
    url,
    secret: secret.stored,
  }, context);
  await services.readYourWrites(result.position);
  const created = result.events.some((e) => e.type === 'WebhookConfigured');
  return { url, secret: created ? secret.plaintext : null };
}

/** Spec, Comms rule 3: a new secret; the old one stops signing at once. */
export async function rotateWebhookSecret(
  services: Services,
  settings: WebhookSettings,
  context: CommandContext,
): Promise<Required<WebhookSecretView>> {
  const secret = freshSecret(settings, context.tenantId);
  const result = await handleCommand(services.eventStore, webhookDecider, webhookStream(context.tenantId), {
    type: 'RotateWebhookSecret',
    clientId: context.tenantId,
    secret: secret.stored,
  }, context);
  await services.readYourWrites(result.position);
  if (result.state.status !== 'configured') throw new DomainError('not_found', 'no webhook is configured');
  return { url: result.state.url, secret: secret.plaintext };
}

export interface WebhookView {
  url: string;
  createdAt: string;
  updatedAt: string;
  secretRotatedAt?: string;
}

/** The configured webhook, never its secret. */
export async function getWebhook(services: Services, clientId: string): Promise<WebhookView> {
  const doc = await webhooks(services).get(clientId);
  if (!doc) throw new DomainError('not_found', 'no webhook is configured');
  return {
    url: doc.url,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
    ...(doc.secretRotatedAt ? { secretRotatedAt: doc.secretRotatedAt } : {}),
  };
}

export async function deleteWebhook(services: Services, context: CommandContext): Promise<{ url: string; deleted: true }> {
  const result = await handleCommand(services.eventStore, webhookDecider, webhookStream(context.tenantId), {
    type: 'DeleteWebhook',
    clientId: context.tenantId,
  }, context);
  await services.readYourWrites(result.position);
  const deleted = result.events.find((e) => e.type === 'WebhookDeleted');
  return { url: deleted?.type === 'WebhookDeleted' ? deleted.data.url : '', deleted: true };
}

/** A synthetic comms.test through the whole signing and delivery path; its webhook id is returned. */
export async function requestWebhookTest(
  services: Services,
  context: CommandContext,
  input: { correlationId?: string },
): Promise<{ webhookId: string; type: 'comms.test' }> {
  const eventId = newId();
  const result = await handleCommand(
    services.eventStore,
    webhookDecider,
    webhookStream(context.tenantId),
    { type: 'RequestWebhookTest', clientId: context.tenantId, ...input },
    context,
    { eventIds: () => eventId },
  );
  await services.readYourWrites(result.position);
  return { webhookId: webhookIdFor(eventId), type: 'comms.test' };
}

/** A delivery as the log shows it: the read model without the owner and internal links. */
export type DeliveryView = Omit<DeliveryDoc, '_id' | 'clientId' | 'sourceEventId' | 'redeliveries'> & { id: string };

export function toDeliveryView(doc: DeliveryDoc): DeliveryView {
  const { _id, clientId: _c, sourceEventId: _s, redeliveries: _r, ...rest } = doc;
  return { id: _id, ...rest };
}

const range = (from?: string, to?: string): Filter | undefined =>
  from || to ? { ...(from ? { $gte: from } : {}), ...(to ? { $lt: to } : {}) } : undefined;

export interface DeliveryQuery {
  status?: DeliveryDoc['status'];
  type?: string;
  from?: string;
  to?: string;
  limit: number;
  cursor?: string;
}

/** The delivery log, newest first. */
export async function listDeliveries(
  services: Services,
  clientId: string,
  query: DeliveryQuery,
): Promise<{ items: DeliveryView[]; nextCursor?: string }> {
  const created = range(query.from, query.to);
  const filter: Filter = {
    clientId,
    ...(query.status ? { status: query.status } : {}),
    ...(query.type ? { type: query.type } : {}),
    ...(created ? { createdAt: created } : {}),
  };
  const options: FindOptions = { sort: { createdAt: -1 }, limit: query.limit, ...(query.cursor ? { cursor: query.cursor } : {}) };
  const result = await deliveries(services).find(filter, options);
  return { items: result.items.map(toDeliveryView), ...(result.nextCursor ? { nextCursor: result.nextCursor } : {}) };
}

export async function getDelivery(services: Services, clientId: string, id: string): Promise<DeliveryView> {
  const doc = await deliveries(services).get(id.toLowerCase());
  if (!doc || doc.clientId !== clientId) throw new DomainError('not_found', 'delivery not found');
  return toDeliveryView(doc);
}

/** Sends a delivery again: same webhook id and body, fresh timestamp and signature, a fresh attempt budget. */
export async function redeliver(services: Services, context: CommandContext, id: string, settings?: Pick<WebhookSettings, 'historyRetentionDays'>): Promise<DeliveryView> {
  const deliveryId = id.toLowerCase();
  if (await pastRetention(services, deliveryId, settings?.historyRetentionDays ?? 0)) throw new DomainError('not_found', 'delivery not found');
  // Sent to the webhook configured now, even when the delivery was first made for one since deleted.
  const webhook = await webhooks(services).get(context.tenantId);
  const result = await handleCommand(services.eventStore, deliveryDecider, deliveryStream(deliveryId), {
    type: 'RequestRedelivery',
    deliveryId,
    clientId: context.tenantId,
    ...(webhook?.configurationId ? { webhookConfigurationId: webhook.configurationId } : {}),
  }, context);
  await services.readYourWrites(result.position);
  return getDelivery(services, context.tenantId, deliveryId);
}

/**
 * A delivery the log no longer shows because it finished longer ago than the retention (its
 * events stay in the event store): not redelivered, as one never made is not. One the read model
 * does not show yet (just scheduled) is younger than any window, so it can be.
 */
async function pastRetention(services: Services, deliveryId: string, days: number): Promise<boolean> {
  const cutoff = commsHistoryCutoff({ days }, services.clock.now());
  if (cutoff === undefined || (await deliveries(services).get(deliveryId))) return false;
  const [last] = await services.eventStore.readStream(deliveryStream(deliveryId), { direction: 'backwards', maxCount: 1 });
  return last !== undefined && last.metadata.occurredAt < cutoff;
}

export interface CommsEventView {
  id: string;
  type: string;
  createdAt: string;
  data: CommsEventDoc['data'];
  /** Where its webhook delivery stands; absent when none was made (no webhook configured then). */
  deliveryStatus?: DeliveryDoc['status'];
}

/**
 * The account's comms events in the order they happened, from `since`: what a receiver that was
 * down for hours fetches to reconcile (spec: delivery rule 2). Same shape as the webhook body.
 */
export async function listCommsEvents(
  services: Services,
  clientId: string,
  query: { since?: string; type?: string; limit: number; cursor?: string },
): Promise<{ items: CommsEventView[]; nextCursor?: string }> {
  const filter: Filter = {
    clientId,
    ...(query.since ? { createdAt: { $gte: query.since } } : {}),
    ...(query.type ? { type: query.type } : {}),
  };
  const result = await commsEvents(services).find(filter, {
    sort: { position: 1 },
    limit: query.limit,
    ...(query.cursor ? { cursor: query.cursor } : {}),
  });
  const ids = result.items.map((e) => e._id);
  const statuses = new Map<string, DeliveryDoc['status']>();
  if (ids.length > 0) {
    const found = await deliveries(services).find({ _id: { $in: ids }, clientId }, { limit: ids.length, projection: { status: 1 } });
    for (const d of found.items) statuses.set(d._id, d.status);
  }
  return {
    items: result.items.map((e) => ({
      id: e._id,
      type: e.type,
      createdAt: e.createdAt,
      data: shownCommsData(e),
      ...(statuses.has(e._id) ? { deliveryStatus: statuses.get(e._id)! } : {}),
    })),
    ...(result.nextCursor ? { nextCursor: result.nextCursor } : {}),
  };
}

/**
 * An operator's keyring rotation (`npm run admin -- reencrypt-secrets`): the account's webhook
 * secret, unchanged, encrypted again under the current keyring key, so the old key can go.
 */
export async function reencryptWebhookSecret(
  services: Services,
  keyring: Keyring,
  context: CommandContext,
  clientId: string,
): Promise<'reencrypted' | 'current' | 'none' | { missingKeyId: string }> {
  let state = webhookDecider.initialState();
  for (const event of await services.eventStore.readStream(webhookStream(clientId))) state = webhookDecider.evolve(state, event as never);
  if (state.status !== 'configured') return 'none';
  if (state.keyId === keyring.currentKeyId) return 'current';
  if (!keyring.keys.has(state.keyId)) return { missingKeyId: state.keyId };
  const plaintext = decrypt(keyring, { ciphertext: state.encryptedSecret, keyId: state.keyId }, secretContext(clientId));
  const again = encrypt(keyring, plaintext, secretContext(clientId));
  const result = await handleCommand(services.eventStore, webhookDecider, webhookStream(clientId), {
    type: 'ReencryptWebhookSecret',
    clientId,
    from: state.encryptedSecret,
    secret: { encryptedSecret: again.ciphertext, keyId: again.keyId },
  }, context);
  return result.events.length > 0 ? 'reencrypted' : 'current';
}
