import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  StoredEvent,
  StreamAppend,
  SubscribeOptions,
  Subscription,
  SubscriptionBatch,
} from '../adapters/eventstore/port.js';
import { LRUCache } from 'lru-cache';
import { keyEndRuleFor, personalDataRuleFor, type PersonalDataRule, type SealedPersonalData } from '../domain/personal-data.js';
import type { DataKeys } from './data-keys.js';
import { DataKeyConflictError } from '../adapters/keystore/port.js';
import type { Logger } from '../shared/logger.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Set on an event's data (in place of the fields) when its guest's key is gone. */
export const ERASED_MARK = 'personalDataErased';

/**
 * The personal-data codec (issue 14): an event-store decorator. Appends seal each event's
 * personal fields (src/domain/personal-data.ts) with the owning guest's data key, in one
 * `personalData` object; reads and subscriptions open them again while the key exists, and
 * mark the event `personalDataErased: true` once it is gone. Events written before this
 * codec (plaintext) are read as they are. Deciders and projections never see ciphertext.
 * An appended event that ends a key's use (keyEndRules: a completed batch's intent) deletes
 * that key once the event is stored; a failed delete is logged, never the append's error.
 */
export function sealedEventStore(inner: EventStore, keys: DataKeys, options: { logger?: Logger } = {}): EventStore {
  const recent = new RecentlySealed();
  keys.onErase((guestId) => recent.forget(guestId));
  /**
   * Seals and appends; a staged key that lost to a stored one (DataKeyConflictError: another
   * process made the guest's key first, or erased it) is read from the store and the events are
   * sealed again. Nothing was written by the failed try.
   */
  const sealAndAppend = async <T>(appends: StreamAppend[], write: (sealed: StreamAppend[]) => Promise<T>): Promise<T> => {
    const lookUp = new Set<string>();
    for (let attempt = 1; ; attempt++) {
      try {
        return await write(await sealAll(keys, appends, recent, lookUp));
      } catch (error) {
        if (!(error instanceof DataKeyConflictError) || attempt >= 3) throw error;
        keys.forget(error.keyIds);
        for (const id of error.keyIds) lookUp.add(id);
      }
    }
  };
  const openAll = (events: StoredEvent[]) => openEvents(keys, events, recent);
  return {
    get kind() {
      return inner.kind;
    },
    get atomicBatches() {
      return inner.atomicBatches;
    },
    async append(streamName: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
      const result = await sealAndAppend([{ streamName, events, expectedRevision }], ([sealed]) => inner.append(streamName, sealed!.events, expectedRevision));
      await endKeys(keys, [{ streamName, events }], options.logger);
      return result;
    },
    async appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
      const results = await sealAndAppend(appends, (sealed) => inner.appendMany(sealed));
      await endKeys(keys, appends, options.logger);
      return results;
    },
    async readStream(streamName, options) {
      return openAll(await inner.readStream(streamName, options));
    },
    headPosition: (filter) => inner.headPosition(filter),
    subscribeToAll(options?: SubscribeOptions): Subscription {
      const subscription = inner.subscribeToAll(options);
      return {
        stop: () => subscription.stop(),
        async *[Symbol.asyncIterator](): AsyncIterator<SubscriptionBatch> {
          for await (const batch of subscription) yield { ...batch, events: await openAll(batch.events) };
        },
      };
    },
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
}

/** Deletes the keys that stored events made needless (keyEndRules); nothing for every other append. */
async function endKeys(keys: DataKeys, appends: { streamName: string; events: NewEvent[] }[], logger?: Logger): Promise<void> {
  for (const { streamName, events } of appends) {
    for (const event of events) {
      const keyId = keyEndRuleFor(streamName, event.type)?.keyId(event.data, event.metadata.tenantId);
      if (!keyId) continue;
      // The event is stored: a key store that fails now leaves the key (its data stays readable), not the write undone.
      await keys.erase(keyId, event.metadata.occurredAt).catch((error: unknown) =>
        logger?.warn({ err: error, keyId, streamName }, 'a data key no longer needed could not be deleted: the data it seals stays readable; check the key store'),
      );
    }
  }
}

/**
 * The plaintext of events this process sealed a moment ago, by event id, so the projections
 * that read them right back (an import's guests) do not decrypt them again. Bounded; a guest
 * erased here is forgotten at once.
 */
class RecentlySealed {
  private readonly events = new LRUCache<string, { owner: string; data: Record<string, unknown> }>({ max: 20_000, ttl: 60_000 });

  remember(eventId: string, owner: string, data: Record<string, unknown>): void {
    this.events.set(eventId, { owner, data });
  }

  opened(eventId: string, keyId: string): Record<string, unknown> | undefined {
    const entry = this.events.get(eventId);
    return entry && entry.owner === keyId ? entry.data : undefined;
  }

  forget(guestId: string): void {
    for (const [id, entry] of this.events.entries()) if (entry.owner === guestId) this.events.delete(id);
  }
}

interface Personal {
  rule: PersonalDataRule;
  owner: string;
}

function personalOf(streamName: string, event: { type: string; data: unknown; metadata: { tenantId: string } }): Personal | undefined {
  const rule = personalDataRuleFor(streamName, event.type);
  if (!rule) return undefined;
  const owner = rule.owner(event.data as Record<string, unknown>, event.metadata.tenantId);
  return typeof owner === 'string' && owner !== '' ? { rule, owner } : undefined;
}

/** Seals every personal field of every event; keys missing for new guests are created in one batch. */
async function sealAll(keys: DataKeys, appends: StreamAppend[], recent: RecentlySealed, lookUp: ReadonlySet<string>) {
  // One pass finds what each event carries; the second seals it with its guest's key.
  const found = appends.map(({ streamName, events }) =>
    events.map((event) => {
      const personal = personalOf(streamName, event);
      if (!personal) return undefined;
      const fields = fieldsOf(personal.rule, event.data);
      return Object.keys(fields).length > 0 ? { ...personal, fields } : undefined;
    }),
  );
  const owners = new Set<string>();
  const likelyNew = new Set<string>();
  let sealedCount = 0;
  found.forEach((events, a) => {
    for (const personal of events) {
      if (!personal) continue;
      owners.add(personal.owner);
      if (appends[a]!.expectedRevision === 'no_stream' && !lookUp.has(personal.owner)) likelyNew.add(personal.owner);
      sealedCount++;
    }
  });
  if (owners.size === 0) return appends;
  const keyOf = await keys.keysFor(owners, true, likelyNew);
  // One draw of randomness for every IV of the batch (a draw per event costs more than the cipher).
  const ivs = randomBytes(IV_BYTES * sealedCount);
  let next = 0;
  const nextIv = () => ivs.subarray(IV_BYTES * next, IV_BYTES * ++next);
  return appends.map(({ streamName, events }, a) => ({
    streamName,
    expectedRevision: appends[a]!.expectedRevision,
    events: events.map((event, e) => {
      const personal = found[a]![e];
      if (!personal) return event;
      const key = keyOf.get(personal.owner) ?? null;
      const rest = withoutFields(personal.rule, event.data);
      // An erased guest gets no new key: whatever a late write carried is dropped, not stored.
      if (!key) return { ...event, data: { ...rest, [ERASED_MARK]: true } };
      recent.remember(event.id, personal.owner, event.data);
      return { ...event, data: { ...rest, personalData: sealFields(key, personal.owner, personal.fields, nextIv()) } };
    }),
  }));
}

async function openEvents(keys: DataKeys, events: StoredEvent[], recent: RecentlySealed): Promise<StoredEvent[]> {
  let owners: Set<string> | undefined;
  let anySealed = false;
  for (const event of events) {
    const sealed = (event.data as { personalData?: SealedPersonalData }).personalData;
    if (!sealed) continue;
    anySealed = true;
    if (!recent.opened(event.id, sealed.keyId)) (owners ??= new Set()).add(sealed.keyId);
  }
  if (!anySealed) return events;
  const keyOf = owners ? await keys.keysFor(owners, false) : new Map<string, Buffer | null>();
  return events.map((event) => {
    const { personalData: sealed, ...rest } = event.data as { personalData?: SealedPersonalData } & Record<string, unknown>;
    if (!sealed) return event;
    const opened = recent.opened(event.id, sealed.keyId);
    if (opened) return { ...event, data: opened };
    const key = keyOf.get(sealed.keyId) ?? null;
    if (!key) return { ...event, data: { ...rest, [ERASED_MARK]: true } };
    const rule = personalDataRuleFor(event.streamName, event.type);
    const fields = openFields(key, sealed);
    return { ...event, data: rule?.within ? { ...rest, [rule.within]: { ...(rest[rule.within] as object), ...fields } } : { ...rest, ...fields } };
  });
}

function fieldsOf(rule: PersonalDataRule, data: Record<string, unknown>): Record<string, unknown> {
  const holder = (rule.within ? data[rule.within] : data) as Record<string, unknown> | undefined;
  const fields: Record<string, unknown> = {};
  if (!holder) return fields;
  for (const field of rule.fields) if (holder[field] !== undefined) fields[field] = holder[field];
  return fields;
}

function withoutFields(rule: PersonalDataRule, data: Record<string, unknown>): Record<string, unknown> {
  // A new object without the fields (`delete` on a copy would turn it into a slow dictionary).
  const strip = (holder: Record<string, unknown>) => {
    const kept: Record<string, unknown> = {};
    for (const name in holder) if (!rule.fields.includes(name)) kept[name] = holder[name];
    return kept;
  };
  return rule.within ? { ...data, [rule.within]: strip((data[rule.within] ?? {}) as Record<string, unknown>) } : strip(data);
}

/** AES-256-GCM; the guest id is the additional data, so a sealed value moved to another guest fails. */
function sealFields(key: Buffer, guestId: string, fields: Record<string, unknown>, iv: Buffer): SealedPersonalData {
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(guestId, 'utf8'));
  const body = Buffer.concat([cipher.update(JSON.stringify(fields), 'utf8'), cipher.final()]);
  return { keyId: guestId, alg: 'A256GCM', ciphertext: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url') };
}

function openFields(key: Buffer, sealed: SealedPersonalData): Record<string, unknown> {
  const raw = Buffer.from(sealed.ciphertext, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(sealed.keyId, 'utf8'));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return JSON.parse(Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')) as Record<string, unknown>;
}
