import {
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

type Started = { type: 'BatchStarted'; data: BatchIntent };
type Completed = { type: 'BatchCompleted'; data: { batchId: string; skipped: { item: number; code: string; message: string }[] } };
type Aborted = { type: 'BatchAborted'; data: { batchId: string; item: number; code: string; message: string } };

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
    if (decided.length === 0) return { status: 'applied', state: fresh.state, redecided: true, events: [], position: -1, revision: fresh.revision };
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

/** Writes the intent: from here on the batch is completed, by this process or by the completer. */
export async function recordIntent(store: EventStore, intent: BatchIntent): Promise<void> {
  await store.append(batchLogStream, [logEvent(intent, 'started', 'BatchStarted', intent as unknown as Record<string, unknown>)], 'any');
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
  return { status: 'aborted', item, error };
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

/**
 * The process manager: finishes every batch whose intent is recorded but whose outcome is
 * not (the writer crashed, or the store failed between two streams). Returns how many it ran.
 */
export async function completeOpenBatches(store: EventStore, options: CompleterOptions): Promise<{ completed: number; aborted: number; open: number }> {
  const now = options.now ?? (() => new Date());
  const graceMs = options.olderThanMs ?? 0;
  const settled = (await options.checkpoints?.getCheckpoint(settledCheckpoint)) ?? -1;
  const open = new Map<string, { intent: BatchIntent; revision: number; recordedAt: string; aborted: boolean }>();
  let last = settled;
  const closed = new Set<string>();
  for (let from = settled + 1; ; ) {
    const page = await store.readStream(batchLogStream, { fromRevision: from, maxCount: 500 });
    for (const event of page as unknown as (StoredEvent & (Started | Completed | Aborted))[]) {
      last = event.revision;
      if (event.type === 'BatchStarted') {
        if (!open.has(event.data.batchId) && !closed.has(event.data.batchId)) open.set(event.data.batchId, { intent: event.data, revision: event.revision, recordedAt: event.recordedAt, aborted: false });
      } else if (event.type === 'BatchCompleted') {
        open.delete(event.data.batchId);
        closed.add(event.data.batchId);
      }
      else if (event.type === 'BatchAborted') {
        const entry = open.get(event.data.batchId);
        if (entry) entry.aborted = true;
      }
    }
    if (page.length < 500) break;
    from = last + 1;
  }
  let completed = 0;
  let aborted = 0;
  let stillOpen = Number.POSITIVE_INFINITY;
  for (const [batchId, entry] of open) {
    // Items are sealed with the batch's own key (docs/personal-data.md), deleted only once the batch completed.
    if (!Array.isArray(entry.intent.items)) {
      options.logger.error({ batchId }, "a batch's intent cannot be read (its key is gone); it is left open: check the key store");
      stillOpen = Math.min(stillOpen, entry.revision);
      open.delete(batchId);
      continue;
    }
    if (entry.aborted) {
      await releaseClaims(store, entry.intent, () => true);
      open.delete(batchId);
      continue;
    }
    if (now().getTime() - Date.parse(entry.recordedAt) < graceMs) {
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
