import { createDecipheriv, randomBytes } from 'node:crypto';
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
import { keyEndRuleFor, personalDataRuleFor, type PersonalDataRule, type SealedPersonalData } from '../domain/personal-data.js';
import type { DataKeys } from './data-keys.js';
import { DataKeyConflictError } from '../adapters/keystore/port.js';
import type { Logger } from '../shared/logger.js';
import { sealGcm } from '../shared/encryption.js';

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
  const openAll = (events: StoredEvent[], withhold = false) => openEvents(keys, events, recent, withhold);
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
      return openAll(await inner.readStream(streamName, options), options?.personalData === false);
    },
    headPosition: (filter) => inner.headPosition(filter),
    ...(inner.endPosition ? { endPosition: () => inner.endPosition!() } : {}),
    get maxAppendBytes() {
      return inner.maxAppendBytes;
    },
    ...(inner.checkAppendSizes ? { checkAppendSizes: (appends: StreamAppend[]) => inner.checkAppendSizes!(appends.map(asSealed)) } : {}),
    ...(inner.setMaxAge ? { setMaxAge: (streamName: string, seconds: number) => inner.setMaxAge!(streamName, seconds) } : {}),
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
 * that read them right back (an import's guests) do not decrypt them again. Bounded (the oldest
 * go first: a Map in insertion order, cheaper per import than an LRU with timers), entries older
 * than a minute are not used, and a guest erased here is forgotten at once. Never persisted.
 */
export class RecentlySealed {
  private readonly events = new Map<string, { owner: string; data: Record<string, unknown>; at: number }>();
  /** Event ids in the order remembered, a ring of `max` slots: the next slot's id is the oldest. */
  private readonly order: (string | undefined)[];
  private slot = 0;

  constructor(
    private readonly max = 8_192,
    private readonly ttlMs = 60_000,
  ) {
    this.order = new Array<string | undefined>(max);
  }

  get size(): number {
    return this.events.size;
  }

  remember(eventId: string, owner: string, data: Record<string, unknown>, at: number): void {
    const oldest = this.order[this.slot];
    if (oldest !== undefined) this.events.delete(oldest);
    this.order[this.slot] = eventId;
    this.slot = (this.slot + 1) % this.max;
    this.events.set(eventId, { owner, data, at });
  }

  opened(eventId: string, keyId: string): Record<string, unknown> | undefined {
    const entry = this.events.get(eventId);
    return entry && entry.owner === keyId && Date.now() - entry.at < this.ttlMs ? entry.data : undefined;
  }

  /** Drops the guest's entries (their ring slots are left to be overwritten). */
  forget(guestId: string): void {
    for (const [id, entry] of this.events) if (entry.owner === guestId) this.events.delete(id);
  }
}

/** What one event carries: its rule, the key that seals it, the personal fields and the rest of its data. */
interface Found {
  rule: PersonalDataRule;
  owner: string;
  fields: Record<string, unknown>;
  rest: Record<string, unknown>;
}

/** Splits an event's data into its personal fields and the rest, in one pass; undefined when it carries none. */
function split(streamName: string, event: NewEvent): Found | undefined {
  const rule = personalDataRuleFor(streamName, event.type);
  if (!rule) return undefined;
  const data = event.data;
  const holder = (rule.within ? data[rule.within] : data) as Record<string, unknown> | undefined;
  if (!holder) return undefined;
  // New objects without the fields (`delete` on a copy would turn it into a slow dictionary).
  let fields: Record<string, unknown> | undefined;
  const kept: Record<string, unknown> = {};
  for (const name in holder) {
    const value = holder[name];
    if (!rule.fields.includes(name)) kept[name] = value;
    else if (value !== undefined) (fields ??= {})[name] = value;
  }
  if (!fields) return undefined;
  const owner = rule.owner(data, event.metadata.tenantId);
  if (typeof owner !== 'string' || owner === '') return undefined;
  return { rule, owner, fields, rest: rule.within ? { ...data, [rule.within]: kept } : kept };
}

/** Seals every personal field of every event; keys missing for new guests are created in one batch. */
async function sealAll(keys: DataKeys, appends: StreamAppend[], recent: RecentlySealed, lookUp: ReadonlySet<string>): Promise<StreamAppend[]> {
  // One pass finds what each event carries; the second seals it with its guest's key.
  let found: (Found | undefined)[][] | undefined;
  let owners: Set<string> | undefined;
  const likelyNew = new Set<string>();
  let sealedCount = 0;
  for (let a = 0; a < appends.length; a++) {
    const { streamName, events, expectedRevision } = appends[a]!;
    for (let e = 0; e < events.length; e++) {
      const personal = split(streamName, events[e]!);
      if (!personal) continue;
      ((found ??= [])[a] ??= [])[e] = personal;
      (owners ??= new Set()).add(personal.owner);
      if (expectedRevision === 'no_stream' && !lookUp.has(personal.owner)) likelyNew.add(personal.owner);
      sealedCount++;
    }
  }
  if (!found || !owners) return appends;
  const keyOf = await keys.keysFor(owners, true, likelyNew);
  // One draw of randomness for every IV of the batch (a draw per event costs more than the cipher).
  const ivs = randomBytes(IV_BYTES * sealedCount);
  let next = 0;
  const now = Date.now();
  return appends.map((append, a) => {
    const personal = found[a];
    if (!personal) return append;
    return {
      ...append,
      events: append.events.map((event, e) => {
        const it = personal[e];
        if (!it) return event;
        const key = keyOf.get(it.owner) ?? null;
        // `rest` is split's own new object: the sealed fields (or the erased mark) go straight into it.
        // An erased guest gets no new key: whatever a late write carried is dropped, not stored.
        if (!key) {
          it.rest[ERASED_MARK] = true;
          return { ...event, data: it.rest };
        }
        recent.remember(event.id, it.owner, event.data, now);
        const iv = ivs.subarray(IV_BYTES * next, IV_BYTES * ++next);
        it.rest.personalData = sealFields(key, it.owner, it.fields, iv);
        return { ...event, data: it.rest };
      }),
    };
  });
}

/**
 * The append as `sealAll` would store it, for a size check without a key or a cipher: each
 * personal object becomes a sealed one with a ciphertext of the length the cipher would give
 * (base64url of iv, tag and the fields as JSON).
 */
function asSealed(append: StreamAppend): StreamAppend {
  let events: NewEvent[] | undefined;
  for (let e = 0; e < append.events.length; e++) {
    const event = append.events[e]!;
    const personal = split(append.streamName, event);
    if (!personal) continue;
    const bytes = IV_BYTES + TAG_BYTES + Buffer.byteLength(JSON.stringify(personal.fields), 'utf8');
    const sealed: SealedPersonalData = { keyId: personal.owner, alg: 'A256GCM', ciphertext: 'x'.repeat(Math.ceil((bytes * 4) / 3)) };
    (events ??= [...append.events])[e] = { ...event, data: { ...personal.rest, personalData: sealed } };
  }
  return events ? { ...append, events } : append;
}

/**
 * The events with their personal fields opened, or, with `withhold` (ReadStreamOptions.personalData
 * false), left out: an event this process sealed a moment ago is still given whole (that costs
 * nothing), any other comes without its sealed fields and without a key being read.
 */
async function openEvents(keys: DataKeys, events: StoredEvent[], recent: RecentlySealed, withhold = false): Promise<StoredEvent[]> {
  let owners: Set<string> | undefined;
  // What the recent seals give, by index (one look-up per event); `null` for a sealed event they do not hold.
  let fromRecent: (Record<string, unknown> | null | undefined)[] | undefined;
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!;
    const sealed = (event.data as { personalData?: SealedPersonalData }).personalData;
    if (!sealed) continue;
    const opened = recent.opened(event.id, sealed.keyId) ?? null;
    (fromRecent ??= new Array(events.length))[i] = opened;
    if (!withhold && !opened) (owners ??= new Set()).add(sealed.keyId);
  }
  if (!fromRecent) return events;
  let keyOf = new Map<string, Buffer | null>();
  if (owners) {
    keyOf = await keys.keysFor(owners, false);
    // A guest erased while the keys were read is forgotten by the recent seals: ask them again.
    for (let i = 0; i < events.length; i++) {
      const opened = fromRecent[i];
      if (opened) fromRecent[i] = recent.opened(events[i]!.id, (events[i]!.data as { personalData: SealedPersonalData }).personalData.keyId) ?? null;
    }
  }
  return events.map((event, i) => {
    const opened = fromRecent[i];
    if (opened === undefined) return event;
    if (opened) return { ...event, data: opened };
    const sealed = (event.data as { personalData: SealedPersonalData }).personalData;
    // Only an event that is opened (or withheld) here is copied without its sealed object.
    const { personalData: _sealed, ...rest } = event.data as { personalData?: SealedPersonalData } & Record<string, unknown>;
    if (withhold) return { ...event, data: rest };
    const key = keyOf.get(sealed.keyId) ?? null;
    if (!key) return { ...event, data: { ...rest, [ERASED_MARK]: true } };
    const rule = personalDataRuleFor(event.streamName, event.type);
    const fields = openFields(key, sealed);
    return { ...event, data: rule?.within ? { ...rest, [rule.within]: { ...(rest[rule.within] as object), ...fields } } : { ...rest, ...fields } };
  });
}

/** AES-256-GCM; the guest id is the additional data, so a sealed value moved to another guest fails. */
function sealFields(key: Buffer, guestId: string, fields: Record<string, unknown>, iv: Buffer): SealedPersonalData {
  return { keyId: guestId, alg: 'A256GCM', ciphertext: sealGcm(key, iv, Buffer.from(guestId, 'utf8'), JSON.stringify(fields)) };
}

function openFields(key: Buffer, sealed: SealedPersonalData): Record<string, unknown> {
  const raw = Buffer.from(sealed.ciphertext, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(sealed.keyId, 'utf8'));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return JSON.parse(Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')) as Record<string, unknown>;
}
