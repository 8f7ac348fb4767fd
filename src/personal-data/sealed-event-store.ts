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
import { personalDataRuleFor, type PersonalDataRule, type SealedPersonalData } from '../domain/personal-data.js';
import type { DataKeys } from './data-keys.js';

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
 */
export function sealedEventStore(inner: EventStore, keys: DataKeys): EventStore {
  const seal = async (streamName: string, events: NewEvent[]) => (await sealAll(keys, [{ streamName, events }]))[0]!.events;
  return {
    get kind() {
      return inner.kind;
    },
    get atomicBatches() {
      return inner.atomicBatches;
    },
    async append(streamName: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
      return inner.append(streamName, await seal(streamName, events), expectedRevision);
    },
    async appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
      const sealed = await sealAll(keys, appends.map((a) => ({ streamName: a.streamName, events: a.events })));
      return inner.appendMany(appends.map((a, i) => ({ ...a, events: sealed[i]!.events })));
    },
    async readStream(streamName, options) {
      return openAll(keys, await inner.readStream(streamName, options));
    },
    headPosition: (filter) => inner.headPosition(filter),
    subscribeToAll(options?: SubscribeOptions): Subscription {
      const subscription = inner.subscribeToAll(options);
      return {
        stop: () => subscription.stop(),
        async *[Symbol.asyncIterator](): AsyncIterator<SubscriptionBatch> {
          for await (const batch of subscription) yield { ...batch, events: await openAll(keys, batch.events) };
        },
      };
    },
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
}

interface Personal {
  rule: PersonalDataRule;
  owner: string;
}

function personalOf(streamName: string, event: { type: string; data: unknown }): Personal | undefined {
  const rule = personalDataRuleFor(streamName, event.type);
  if (!rule) return undefined;
  const owner = rule.owner(event.data as Record<string, unknown>);
  return typeof owner === 'string' && owner !== '' ? { rule, owner } : undefined;
}

/** Seals every personal field of every event; keys missing for new guests are created in one batch. */
async function sealAll(keys: DataKeys, appends: { streamName: string; events: NewEvent[] }[]) {
  const owners = new Set<string>();
  for (const { streamName, events } of appends) {
    for (const event of events) {
      const personal = personalOf(streamName, event);
      if (personal && Object.keys(fieldsOf(personal.rule, event.data)).length > 0) owners.add(personal.owner);
    }
  }
  if (owners.size === 0) return appends;
  const keyOf = await keys.keysFor(owners, true);
  return appends.map(({ streamName, events }) => ({
    streamName,
    events: events.map((event) => {
      const personal = personalOf(streamName, event);
      if (!personal) return event;
      const fields = fieldsOf(personal.rule, event.data);
      if (Object.keys(fields).length === 0) return event;
      const key = keyOf.get(personal.owner) ?? null;
      const rest = withoutFields(personal.rule, event.data);
      // An erased guest gets no new key: whatever a late write carried is dropped, not stored.
      if (!key) return { ...event, data: { ...rest, [ERASED_MARK]: true } };
      return { ...event, data: { ...rest, personalData: sealFields(key, personal.owner, fields) } };
    }),
  }));
}

async function openAll(keys: DataKeys, events: StoredEvent[]): Promise<StoredEvent[]> {
  let owners: Set<string> | undefined;
  for (const event of events) {
    const sealed = (event.data as { personalData?: SealedPersonalData }).personalData;
    if (sealed) (owners ??= new Set()).add(sealed.keyId);
  }
  if (!owners) return events;
  const keyOf = await keys.keysFor(owners, false);
  return events.map((event) => {
    const { personalData: sealed, ...rest } = event.data as { personalData?: SealedPersonalData } & Record<string, unknown>;
    if (!sealed) return event;
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
  const strip = (holder: Record<string, unknown>) => {
    const copy = { ...holder };
    for (const field of rule.fields) delete copy[field];
    return copy;
  };
  return rule.within ? { ...data, [rule.within]: strip((data[rule.within] ?? {}) as Record<string, unknown>) } : strip(data);
}

/** AES-256-GCM; the guest id is the additional data, so a sealed value moved to another guest fails. */
function sealFields(key: Buffer, guestId: string, fields: Record<string, unknown>): SealedPersonalData {
  const iv = randomBytes(IV_BYTES);
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
