import {
  AppendTooLargeError,
  ConcurrencyError,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type StoredEvent,
} from '../adapters/eventstore/port.js';
import type { ReadStore } from '../adapters/readstore/port.js';
import { accountDecider } from '../domain/account.js';
import { DomainError, type Decider } from '../domain/decider.js';
import { guestDecider } from '../domain/guest.js';
import { reservationDecider } from '../domain/reservation.js';
import { teamMemberDecider } from '../domain/team-member.js';
import { derivedId } from '../domain/webhook.js';
import type { Logger } from '../shared/logger.js';

/**
 * Multi-stream batches on a store without multi-stream transactions (EventStoreDB): the
 * batch is first written as an intent (one event, one stream: atomic), then applied stream
 * by stream in three stages, and finally marked completed. Every step is idempotent, so the
 * process that wrote the intent, or the completer after a crash, can run it again:
 *
 * 1. claims (unique keys: customId, user name) are reserved first. A claim someone else
 *    holds aborts the batch: `BatchAborted` is written, then every claim is released
 *    (compensation events), and nothing else of the batch is written.
 * 2. the main commands are applied with the revision they were decided on; on a conflict the
 *    stream is checked for the batch's own events (applied before a crash) and otherwise the
 *    command is decided again on the fresh stream (roll forward). A command that a
 *    concurrent change made impossible is skipped and its claims released.
 * 3. releases of keys the main commands gave up, only for main commands that were applied.
 *
 * Claims before the claimers and releases after them: no key is ever used by an entity that
 * does not hold its reservation, whatever crashes between two streams. docs/eventstore.md.
 */

export type BatchStage = 'claim' | 'main' | 'release';

/** The stream all intents and their outcomes go to; read forwards by the completer. */
export const batchLogStream = 'batchlog';

/** Where an intent too large for one append keeps its items, in parts (see `recordIntent`). */
export const intentPartsStream = (batchId: string): string => `${batchLogStream}-parts-${batchId}`;

/**
 * How long the store keeps intents (the batch log and the parts streams) where it can drop old
 * events (EventStoreDB's `$maxAge`): an intent is read again only while its batch is open, which
 * the completer ends within a minute; a month leaves room for a completer that was down.
 */
export const intentRetentionSeconds = 30 * 24 * 3600;

const deciders = new Map<string, Decider<any, any, any>>([
  ['guest', guestDecider],
  ['reservation', reservationDecider],
  ['account', accountDecider],
  ['team-member', teamMemberDecider],
]);

/** Deciders a batch may use on a non-atomic store must be known by name, so a completer can decide again. */
export function registerBatchDecider(name: string, decider: Decider<any, any, any>): void {
  deciders.set(name, decider);
}

export function deciderName(decider: Decider<any, any, any>): string {
  for (const [name, known] of deciders) if (known === decider) return name;
  throw new Error('a batch on a store without atomic batches uses a decider that is not registered (registerBatchDecider)');
}

export interface IntentContext {
  tenantId: string;
  actor: NewEvent['metadata']['actor'];
  correlationId: string;
  causationId?: string;
  requestId?: string;
  now: string;
}

export interface IntentItem {
  streamName: string;
  decider: string;
  command: unknown;
  stage: BatchStage;
  /** For a claim or a release: the main item it belongs to. */
  partOf?: number;
  /** For a claim: the command that gives it back. */
  undo?: unknown;
  /** Caller-chosen event ids (index -> id), kept for every decision of this item. */
  eventIds?: string[];
  expectedRevision: ExpectedRevision;
  events: NewEvent[];
}

export interface BatchIntent {
  batchId: string;
  context: IntentContext;
  items: IntentItem[];
}

export interface ItemOutcome {
  status: 'applied' | 'skipped';
  /** The stream's state after the item; undefined when the decision of the intent was applied as it was. */
  state: unknown;
  /** True when the item was decided again on a fresh stream. */
  redecided?: boolean;
  events: { type: string; data: unknown }[];
  position: number;
  revision: number;
  error?: DomainError;
}

export type BatchOutcome =
  | { status: 'completed'; items: ItemOutcome[] }
  | { status: 'aborted'; item: number; error: DomainError | ConcurrencyError };

/** An intent in parts has `parts` instead of `items`. */
type Started = { type: 'BatchStarted'; data: BatchIntent | (Omit<BatchIntent, 'items'> & { items?: undefined; parts: number }) };
type Completed = { type: 'BatchCompleted'; data: { batchId: string; skipped: { item: number; code: string; message: string }[] } };
type Aborted = { type: 'BatchAborted'; data: { batchId: string; item: number; code: string; message: string } };
/** After an aborted batch gave its claims back: its intent is not read again (its key goes). */
type Released = { type: 'BatchReleased'; data: { batchId: string } };
/** One slice of the items' JSON text. */
type Part = { type: 'BatchIntentPart'; data: { batchId: string; part: number; items: string } };
/** Written by the completer into a parts stream its writer left unfinished: the writer's next part conflicts. */
type Abandoned = { type: 'BatchIntentAbandoned'; data: { batchId: string } };

const metadataOf = (context: IntentContext, batch?: { id: string; item: number }): NewEvent['metadata'] => ({
  tenantId: context.tenantId,
  actor: context.actor,
  correlationId: context.correlationId,
  occurredAt: context.now,
  ...(context.causationId ? { causationId: context.causationId } : {}),
  ...(context.requestId ? { requestId: context.requestId } : {}),
  ...(batch ? { batch } : {}),
});

/** Event ids of an item's decision at a revision: the same decision always gets the same ids. */
export function itemEventIds(batchId: string, item: number, revision: number, given?: string[]): (index: number) => string {
  return (index) => given?.[index] ?? derivedId('batch', batchId, String(item), String(revision), String(index));
}

export function itemEvents(
  intent: Pick<BatchIntent, 'batchId' | 'context'>,
  item: number,
  revision: number,
  events: { type: string; data: unknown }[],
  given?: string[],
): NewEvent[] {
  const ids = itemEventIds(intent.batchId, item, revision, given);
  const metadata = metadataOf(intent.context, { id: intent.batchId, item });
  return events.map((event, index) => ({ id: ids(index), type: event.type, data: event.data as Record<string, unknown>, metadata }));
}

async function fold(store: EventStore, decider: Decider<any, any, any>, streamName: string) {
  const history = await store.readStream(streamName);
  let state = decider.initialState();
  for (const stored of history) state = decider.evolve(state, stored);
  return { state, revision: history.length > 0 ? history[history.length - 1]!.revision : -1, history };
}

const maxItemAttempts = 10;

/**
 * Applies one item: the decided append, else (on a conflict) the batch's own events already
 * in the stream (main items only), else a fresh decision. Claims and releases are decided
 * again rather than recognised by id: a key reserved and then given back must be reserved
 * again, not taken as held.
 */
async function applyItem(store: EventStore, intent: BatchIntent, index: number, command: unknown): Promise<ItemOutcome> {
  const item = intent.items[index]!;
  // Nothing was decided for it: like the atomic path, it is neither written nor checked.
  if (command === item.command && item.events.length === 0) return { status: 'applied', state: undefined, events: [], position: -1, revision: -1 };
  const decider = deciders.get(item.decider);
  if (!decider) throw new Error(`batch ${intent.batchId}: no decider named ${item.decider} is registered`);
  const planned = command === item.command;
  let expected = item.expectedRevision;
  let events: NewEvent[] = planned ? item.events : [];
  let decided: { type: string; data: unknown }[] = planned ? item.events.map(({ type, data }) => ({ type, data })) : [];
  let base: { state: unknown; revision: number } | undefined;
  for (let attempt = 1; ; attempt++) {
    if (events.length > 0) {
      try {
        const written = await store.append(item.streamName, events, expected);
        let state = base?.state;
        if (base) for (const event of decided) state = decider.evolve(state, event);
        return { status: 'applied', state, redecided: !!base, events: decided, position: written.position, revision: written.nextRevision };
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || attempt >= maxItemAttempts) throw error;
      }
    }
    const fresh = await fold(store, decider, item.streamName);
    if (item.stage === 'main') {
      const own = fresh.history.filter((e: StoredEvent) => e.metadata.batch?.id === intent.batchId && e.metadata.batch.item === index);
      if (own.length > 0) {
        const last = own[own.length - 1]!;
        return { status: 'applied', state: fresh.state, redecided: true, events: own.map(({ type, data }) => ({ type, data })), position: last.position, revision: fresh.revision };
      }
    }
    try {
      decided = decider.decide(command, fresh.state);
    } catch (error) {
      if (error instanceof DomainError) return { status: 'skipped', state: fresh.state, redecided: true, events: [], position: -1, revision: fresh.revision, error };
      throw error;
    }
    // Decided nothing on the fresh stream (a racer made the change first): its last event is what the answer waits for (handle-command.ts, CommandResult).
    const lastPosition = fresh.history.length > 0 ? (fresh.history[fresh.history.length - 1] as StoredEvent).position : -1;
    if (decided.length === 0) return { status: 'applied', state: fresh.state, redecided: true, events: [], position: lastPosition, revision: fresh.revision };
    base = { state: fresh.state, revision: fresh.revision };
    expected = fresh.revision < 0 ? 'no_stream' : fresh.revision;
    // Caller-chosen ids belong to the item's own command, never to its undo.
    events = itemEvents(intent, index, fresh.revision, decided, planned ? item.eventIds : undefined);
  }
}

const logEvent = (intent: BatchIntent, kind: string, type: string, data: Record<string, unknown>): NewEvent => ({
  id: derivedId('batch', intent.batchId, kind),
  type,
  data,
  metadata: metadataOf(intent.context),
});

/** Gives back every claim of the batch (or of one main item): idempotent, a key held by someone else is left alone. */
async function releaseClaims(store: EventStore, intent: BatchIntent, which: (item: IntentItem) => boolean): Promise<void> {
  for (const [index, item] of intent.items.entries()) {
    if (item.stage !== 'claim' || item.undo === undefined || !which(item)) continue;
    // Only a key this batch took: one its owner held before (a no-op claim) stays held.
    const [latest] = await store.readStream(item.streamName, { direction: 'backwards', maxCount: 1 });
    if (latest?.metadata.batch?.id !== intent.batchId || latest.metadata.batch.item !== index) continue;
    const outcome = await applyItem(store, intent, index, item.undo);
    if (outcome.status === 'skipped') throw outcome.error;
  }
}

/** Would the store refuse this append for its size? Only a store with a limit says (EventStoreDB). */
function tooLarge(store: EventStore, streamName: string, events: NewEvent[]): boolean {
  try {
    store.checkAppendSizes?.([{ streamName, events, expectedRevision: 'any' }]);
    return false;
  } catch (error) {
    if (error instanceof AppendTooLargeError) return true;
    throw error;
  }
}

const partEvent = (intent: BatchIntent, part: number, items: string): NewEvent => logEvent(intent, `part:${part}`, 'BatchIntentPart', { batchId: intent.batchId, part, items });

/** The items' JSON text cut into slices that each fit one append (never inside a surrogate pair). */
function partsOf(store: EventStore, intent: BatchIntent, text: string): string[] {
  const stream = intentPartsStream(intent.batchId);
  const parts: string[] = [];
  let length = Math.floor((store.maxAppendBytes ?? text.length) / 2);
  for (let at = 0; at < text.length; ) {
    let end = Math.min(text.length, at + length);
    const high = text.charCodeAt(end - 1);
    if (end < text.length && high >= 0xd800 && high <= 0xdbff) end -= 1;
    if (end > at && !tooLarge(store, stream, [partEvent(intent, parts.length, text.slice(at, end))])) {
      parts.push(text.slice(at, end));
      at = end;
      continue;
    }
    if (length <= 1) throw new Error(`batch ${intent.batchId}: not even one character of its intent fits an append of the event store`);
    length = Math.floor(length * 0.75);
  }
  return parts;
}

/**
 * Writes the intent: from here on the batch is completed, by this process or by the completer.
 * An intent larger than the store takes in one append (EventStoreDB's MaxAppendSize: 200
 * guests with images) is written as a `BatchStarted` that names its number of parts, then the
 * parts, each a slice of the items' JSON, in a stream of the batch's own with expected
 * revisions. The batch is applied only after its last part is stored; a completer that finds
 * parts missing long after the writer started appends `BatchIntentAbandoned` there at the next
 * revision (so a writer still at work fails on its next part) and aborts the batch, which has
 * applied nothing. docs/eventstore.md, "Size of an append".
 */
export async function recordIntent(store: EventStore, intent: BatchIntent): Promise<void> {
  const whole = logEvent(intent, 'started', 'BatchStarted', intent as unknown as Record<string, unknown>);
  if (!tooLarge(store, batchLogStream, [whole])) {
    await store.append(batchLogStream, [whole], 'any');
    return;
  }
  const parts = partsOf(store, intent, JSON.stringify(intent.items));
  const { items: _items, ...header } = intent;
  await store.append(batchLogStream, [logEvent(intent, 'started', 'BatchStarted', { ...header, parts: parts.length })], 'any');
  await store.setMaxAge?.(intentPartsStream(intent.batchId), intentRetentionSeconds);
  for (const [part, items] of parts.entries()) {
    await store.append(intentPartsStream(intent.batchId), [partEvent(intent, part, items)], part === 0 ? 'no_stream' : part - 1);
  }
}

/** The items of an intent written in parts; `incomplete` while parts are missing, `abandoned` once a completer gave up on them. */
async function itemsFromParts(store: EventStore, batchId: string, parts: number): Promise<{ items: unknown; found: number } | { missing: 'incomplete' | 'abandoned'; found: number }> {
  const events = (await store.readStream(intentPartsStream(batchId))) as unknown as (StoredEvent & (Part | Abandoned))[];
  if (events.some((e) => e.type === 'BatchIntentAbandoned')) return { missing: 'abandoned', found: events.length };
  if (events.length < parts) return { missing: 'incomplete', found: events.length };
  // A part whose key is gone has no `items`: the joined text is then no JSON array, and the caller says so.
  const text = events.map((e) => (e.type === 'BatchIntentPart' && typeof e.data.items === 'string' ? e.data.items : '')).join('');
  try {
    return { items: JSON.parse(text), found: events.length };
  } catch {
    return { items: undefined, found: events.length };
  }
}

/** Runs (or runs again) a recorded batch to its end: completed, or aborted with its claims given back. */
export async function completeBatch(store: EventStore, intent: BatchIntent): Promise<BatchOutcome> {
  const outcomes: ItemOutcome[] = [];
  for (const [index, item] of intent.items.entries()) {
    if (item.stage !== 'claim') continue;
    let outcome: ItemOutcome;
    try {
      outcome = await applyItem(store, intent, index, item.command);
    } catch (error) {
      if (!(error instanceof ConcurrencyError)) throw error;
      return abort(store, intent, index, error);
    }
    if (outcome.status === 'skipped') return abort(store, intent, index, outcome.error!);
    outcomes[index] = outcome;
  }
  const skipped: number[] = [];
  for (const [index, item] of intent.items.entries()) {
    if (item.stage !== 'main') continue;
    const outcome = await applyItem(store, intent, index, item.command);
    outcomes[index] = outcome;
    if (outcome.status === 'skipped') {
      skipped.push(index);
      await releaseClaims(store, intent, (claim) => claim.partOf === index);
    }
  }
  for (const [index, item] of intent.items.entries()) {
    if (item.stage !== 'release') continue;
    if (item.partOf !== undefined && skipped.includes(item.partOf)) {
      outcomes[index] = { status: 'skipped', state: undefined, events: [], position: -1, revision: -1 };
      continue;
    }
    const outcome = await applyItem(store, intent, index, item.command);
    outcomes[index] = outcome;
  }
  const completed: Completed['data'] = {
    batchId: intent.batchId,
    skipped: skipped.map((item) => ({ item, code: outcomes[item]!.error!.code, message: outcomes[item]!.error!.message })),
  };
  await store.append(batchLogStream, [logEvent(intent, 'completed', 'BatchCompleted', completed)], 'any');
  return { status: 'completed', items: outcomes };
}

async function abort(store: EventStore, intent: BatchIntent, item: number, error: DomainError | ConcurrencyError): Promise<BatchOutcome> {
  const code = error instanceof DomainError ? error.code : 'conflict';
  const aborted: Aborted['data'] = { batchId: intent.batchId, item, code, message: error.message };
  // The decision to abort is recorded before any claim is given back: a completer that finds
  // it gives the claims back too, and never reads a released claim as one to build on.
  await store.append(batchLogStream, [logEvent(intent, 'aborted', 'BatchAborted', aborted)], 'any');
  await releaseClaims(store, intent, () => true);
  await recordReleased(store, intent);
  return { status: 'aborted', item, error };
}

/** An aborted batch gave its claims back: its intent is not needed again, and its data key goes (keyEndRules). */
async function recordReleased(store: EventStore, intent: Pick<BatchIntent, 'batchId' | 'context'>): Promise<void> {
  const released: Released['data'] = { batchId: intent.batchId };
  await store.append(batchLogStream, [logEvent(intent as BatchIntent, 'released', 'BatchReleased', released)], 'any');
}

/**
 * Ends a parts stream its writer left short, at the revision after the parts found: false when
 * the writer appended another part meanwhile (it is still at work; look again later).
 */
async function abandonParts(store: EventStore, intent: BatchIntent, found: number): Promise<boolean> {
  const abandoned: Abandoned['data'] = { batchId: intent.batchId };
  try {
    await store.append(intentPartsStream(intent.batchId), [logEvent(intent, 'abandoned', 'BatchIntentAbandoned', abandoned)], found === 0 ? 'no_stream' : found - 1);
    return true;
  } catch (error) {
    if (error instanceof ConcurrencyError) return false;
    throw error;
  }
}

/**
 * An open intent written in parts: `loaded` (its items are in `entry.intent`), `wait` (parts are
 * missing but its writer may still be at work), or ended: its writer stopped before the last part,
 * so nothing of the batch was applied and no claim is held; the batch is recorded as aborted
 * (`aborted`, or `ended` when an earlier run did that) and released.
 */
async function settleParts(
  store: EventStore,
  entry: { intent: BatchIntent; parts?: number; aborted: boolean },
  young: boolean,
  logger: Logger,
): Promise<'loaded' | 'wait' | 'aborted' | 'ended'> {
  const { batchId } = entry.intent;
  const loaded = await itemsFromParts(store, batchId, entry.parts!);
  if ('items' in loaded) {
    entry.intent.items = loaded.items as IntentItem[];
    return 'loaded';
  }
  if (loaded.missing === 'incomplete' && (young || !(await abandonParts(store, entry.intent, loaded.found)))) return 'wait';
  if (!entry.aborted) {
    const data: Aborted['data'] = { batchId, item: -1, code: 'intent_incomplete', message: 'the intent was not written whole; nothing of the batch was applied' };
    await store.append(batchLogStream, [logEvent(entry.intent, 'aborted', 'BatchAborted', data)], 'any');
  }
  await recordReleased(store, entry.intent);
  logger.warn({ batchId, correlationId: entry.intent.context.correlationId }, 'aborted a batch whose writer stopped before its intent was written whole');
  return entry.aborted ? 'ended' : 'aborted';
}

export interface CompleterOptions {
  logger: Logger;
  /** Where the completer remembers how far the batch log is settled (a checkpoint); omit to read it all. */
  checkpoints?: Pick<ReadStore, 'getCheckpoint' | 'setCheckpoint'>;
  /** Leave younger intents to the process that wrote them. */
  olderThanMs?: number;
  now?: () => Date;
}

const settledCheckpoint = 'batchlog:settled';
/** Events of the batch log read at once by the completer. */
const logPage = 100;

/**
 * The process manager: finishes every batch whose intent is recorded but whose outcome is
 * not (the writer crashed, or the store failed between two streams). Returns how many it ran.
 */
export async function completeOpenBatches(store: EventStore, options: CompleterOptions): Promise<{ completed: number; aborted: number; open: number }> {
  const now = options.now ?? (() => new Date());
  const graceMs = options.olderThanMs ?? 0;
  const settled = (await options.checkpoints?.getCheckpoint(settledCheckpoint)) ?? -1;
  const open = new Map<string, { intent: BatchIntent; parts?: number; revision: number; recordedAt: string; aborted: boolean }>();
  let last = settled;
  const closed = new Set<string>();
  for (let from = settled + 1; ; ) {
    // Intents are large (every command and event of a batch) and most are closed: the pass reads
    // them without their sealed items, and an open one is read whole below.
    const page = await store.readStream(batchLogStream, { fromRevision: from, maxCount: logPage, personalData: false });
    for (const event of page as unknown as (StoredEvent & (Started | Completed | Aborted | Released))[]) {
      last = event.revision;
      if (event.type === 'BatchStarted') {
        const { parts, ...intent } = event.data as BatchIntent & { parts?: number };
        if (!open.has(event.data.batchId) && !closed.has(event.data.batchId)) {
          open.set(event.data.batchId, { intent, ...(typeof parts === 'number' ? { parts } : {}), revision: event.revision, recordedAt: event.recordedAt, aborted: false });
        }
      } else if (event.type === 'BatchCompleted' || event.type === 'BatchReleased') {
        open.delete(event.data.batchId);
        closed.add(event.data.batchId);
      }
      else if (event.type === 'BatchAborted') {
        const entry = open.get(event.data.batchId);
        if (entry) entry.aborted = true;
      }
    }
    if (page.length < logPage) break;
    from = last + 1;
  }
  let completed = 0;
  let aborted = 0;
  let stillOpen = Number.POSITIVE_INFINITY;
  for (const [batchId, entry] of open) {
    const young = now().getTime() - Date.parse(entry.recordedAt) < graceMs;
    if (entry.parts !== undefined) {
      const parts = await settleParts(store, entry, young, options.logger);
      if (parts === 'wait') {
        stillOpen = Math.min(stillOpen, entry.revision);
        continue;
      }
      if (parts !== 'loaded') {
        if (parts === 'aborted') aborted += 1;
        open.delete(batchId);
        continue;
      }
    }
    if (entry.parts === undefined && entry.intent.items === undefined) {
      const [started] = (await store.readStream(batchLogStream, { fromRevision: entry.revision, maxCount: 1 })) as unknown as (StoredEvent & Started)[];
      if (started?.data.batchId === batchId) entry.intent = started.data as BatchIntent;
    }
    // Items are sealed with the batch's own key (docs/personal-data.md), deleted only once the batch completed.
    if (!Array.isArray(entry.intent.items)) {
      options.logger.error({ batchId }, "a batch's intent cannot be read (its key is gone); it is left open: check the key store");
      stillOpen = Math.min(stillOpen, entry.revision);
      open.delete(batchId);
      continue;
    }
    if (entry.aborted) {
      await releaseClaims(store, entry.intent, () => true);
      await recordReleased(store, entry.intent);
      open.delete(batchId);
      continue;
    }
    if (young) {
      stillOpen = Math.min(stillOpen, entry.revision);
      continue;
    }
    const outcome = await completeBatch(store, entry.intent);
    if (outcome.status === 'completed') completed += 1;
    else aborted += 1;
    options.logger.warn(
      { batchId, outcome: outcome.status, correlationId: entry.intent.context.correlationId },
      'completed a batch its writer left unfinished',
    );
    open.delete(batchId);
  }
  const through = Number.isFinite(stillOpen) ? stillOpen - 1 : last;
  if (through > settled) await options.checkpoints?.setCheckpoint(settledCheckpoint, through);
  return { completed, aborted, open: open.size };
}
