import type { Decider } from '../domain/decider.js';
import {
  ConcurrencyError,
  type Actor,
  type EventMetadata,
  type EventStore,
  type NewEvent,
} from '../adapters/eventstore/port.js';
import { derivedId } from '../domain/webhook.js';
import { newId, newSortableId } from '../shared/ids.js';
import { completeBatch, deciderName, itemEvents, recordIntent, type BatchIntent, type BatchStage } from './batch-intents.js';

/** Who asks, and the ids that tie the resulting events to the request. */
export interface CommandContext {
  tenantId: string;
  actor: Actor;
  correlationId: string;
  causationId?: string;
  requestId?: string;
  now: Date;
  /**
   * Set when the request carries an Idempotency-Key: the same for every retry of that request
   * (src/http/middleware/idempotency.ts), so the ids it makes can be the first attempt's.
   */
  idempotencySeed?: string;
  /**
   * Set by the HTTP layer, and kept by copies of the context: marked once an append of this
   * request succeeded, so that a failure after it (the read store not answering the read-back) is
   * answered `503 read_models_behind` ("recorded, read it back") and not as a retryable failure.
   */
  writes?: { recorded: boolean };
}

const markRecorded = (context: CommandContext): void => {
  if (context.writes) context.writes.recorded = true;
};

/**
 * An id the request makes (a new guest's, an invitation's): under an Idempotency-Key derived from
 * the request's seed and `parts`, so a retry of a request the store applied after all (a batch
 * completed after a crash, an append whose answer was lost) names what the first attempt wrote,
 * and finds it; else a new id. docs/eventstore.md.
 */
export const repeatableId = (context: Pick<CommandContext, 'idempotencySeed'>, ...parts: string[]): string =>
  context.idempotencySeed === undefined ? newSortableId() : derivedId('request', context.idempotencySeed, ...parts);

export interface CommandResult<State, Event> {
  state: State;
  events: Event[];
  /**
   * Global position of the last event written. When the decider decided nothing: the position of
   * the stream's last event as read (-1 for a stream that does not exist), so a request whose
   * change another request recorded first (a duplicate create, a retry) waits until the read
   * models show that change before answering from them (docs/eventstore.md).
   */
  position: number;
  revision: number;
}

export interface HandleOptions {
  maxAttempts?: number;
  /**
   * Derive event ids (e.g. from a bus message or a scanner nonce) so a repeated command appends
   * nothing new: when the first id is already in the stream, nothing is decided (durably, on
   * every store).
   */
  eventIds?: (index: number) => string;
  /**
   * `false`: the decision needs no personal field of the stream (a door scan decides on plus-ones,
   * blocks and times), so the stream is read without opening them (ReadStreamOptions.personalData).
   * The fold made so is cached as such: a command that needs personal data reads the stream again.
   */
  personalData?: false;
}

type AnyEvent = { type: string; data: unknown };

interface Decided<State, Event> {
  streamName: string;
  state: State;
  revision: number;
  /** Global position of the stream's last event as read; -1 when none was read (a new stream, a cached fold). */
  lastPosition: number;
  events: Event[];
  toAppend: NewEvent[];
}

/** The metadata made for each context (contexts are never changed once made). */
const metadataMade = new WeakMap<CommandContext, EventMetadata>();

/**
 * The events' metadata. Every command of one context gets the same object (an import's 400
 * events one, not 400), so the layers below stamp and serialise it once; it is frozen.
 */
function metadataOf(context: CommandContext): EventMetadata {
  let metadata = metadataMade.get(context);
  if (metadata) return metadata;
  metadata = Object.freeze({
    tenantId: context.tenantId,
    actor: context.actor,
    correlationId: context.correlationId,
    occurredAt: context.now.toISOString(),
    ...(context.causationId ? { causationId: context.causationId } : {}),
    ...(context.requestId ? { requestId: context.requestId } : {}),
  });
  metadataMade.set(context, metadata);
  return metadata;
}

/**
 * Recently folded streams, per event store: a command on a stream it knows skips the read and
 * the fold. It is only a guess: the append still names the revision, so if another writer got
 * there first the store refuses it and the command starts again from a fresh read.
 */
const folded = new WeakMap<EventStore, Map<string, { state: unknown; revision: number; withheld: boolean }>>();
const foldedLimit = 20_000;

/** `withheld`: the state was folded without the stream's personal fields (HandleOptions.personalData). */
function remember(store: EventStore, streamName: string, state: unknown, revision: number, withheld: boolean): void {
  let cache = folded.get(store);
  if (!cache) folded.set(store, (cache = new Map()));
  cache.delete(streamName);
  cache.set(streamName, { state, revision, withheld });
  if (cache.size > foldedLimit) cache.delete(cache.keys().next().value as string);
}

/** The cached fold of a stream, if there is one this command may decide on. */
function cachedFold(store: EventStore, streamName: string, options: Pick<HandleOptions, 'personalData'>) {
  const cached = folded.get(store)?.get(streamName);
  return cached && (!cached.withheld || options.personalData === false) ? cached : undefined;
}

function forget(store: EventStore, streamName: string): void {
  folded.get(store)?.delete(streamName);
}

async function load<State, Command, Event extends AnyEvent>(
  store: EventStore,
  decider: Decider<State, Command, Event>,
  streamName: string,
  command: Command,
  context: CommandContext,
  how: Pick<HandleOptions, 'eventIds' | 'personalData'> & { useCache?: boolean; assumeNew?: boolean } = {},
): Promise<Decided<State, Event>> {
  const { eventIds, useCache = false, assumeNew = false, personalData } = how;
  // With caller-chosen ids the stream is read, not the cache: the ids are looked for in it.
  const cached = useCache && !eventIds ? cachedFold(store, streamName, { personalData }) : undefined;
  let state = cached?.state as State | undefined;
  let revision = cached?.revision ?? -1;
  let lastPosition = -1;
  let applied = false;
  if (state === undefined) {
    // A stream believed new is not read: the append expects no stream, so the store refuses it
    // if one exists after all, and the retry reads it.
    const history = assumeNew ? [] : await store.readStream(streamName, personalData === false ? { personalData } : undefined);
    state = decider.initialState();
    for (const stored of history) state = decider.evolve(state, stored as unknown as Event);
    revision = history.length > 0 ? history[history.length - 1]!.revision : -1;
    lastPosition = history.length > 0 ? history[history.length - 1]!.position : -1;
    // Check first: a command whose ids are already in the stream was applied. The store's own
    // id check covers only a retry at the same revision (EventStoreDB), not one decided later.
    if (eventIds) {
      const first = eventIds(0);
      applied = history.some((stored) => stored.id === first);
    }
  }
  const events = applied ? [] : decider.decide(command, state);
  const metadata = metadataOf(context);
  const toAppend = events.map((event, index) => ({
    id: eventIds?.(index) ?? newSortableId(),
    type: event.type,
    data: event.data as Record<string, unknown>,
    metadata,
  }));
  return { streamName, state, revision, lastPosition, events, toAppend };
}

/** The state the command was decided on, with its events folded in. */
function stateAfter<State, Command, Event extends AnyEvent>(decider: Decider<State, Command, Event>, decided: Decided<State, Event>): State {
  let state = decided.state;
  for (const event of decided.events) state = decider.evolve(state, event);
  return state;
}

function resultOf<State, Command, Event extends AnyEvent>(
  decider: Decider<State, Command, Event>,
  decided: Decided<State, Event>,
  written?: { position: number; nextRevision: number },
): CommandResult<State, Event> {
  return {
    state: stateAfter(decider, decided),
    events: decided.events,
    position: written?.position ?? decided.lastPosition,
    revision: written?.nextRevision ?? decided.revision,
  };
}

/**
 * resultOf for a batch: the state after the command's events is folded when a caller first reads
 * it, once (most batch callers read only the positions: an import of 200 guests folded 200 states
 * nobody read). The fold is the same either way: it starts from the state the command was decided
 * on and folds the same event objects (a decider's evolve makes new states and changes neither).
 */
function lazyResultOf<State, Command, Event extends AnyEvent>(
  decider: Decider<State, Command, Event>,
  decided: Decided<State, Event>,
  written?: { position: number; nextRevision: number },
): CommandResult<State, Event> {
  let folded: { state: State } | undefined;
  return {
    get state(): State {
      folded ??= { state: stateAfter(decider, decided) };
      return folded.state;
    },
    set state(state: State) {
      folded = { state };
    },
    events: decided.events,
    position: written?.position ?? decided.lastPosition,
    revision: written?.nextRevision ?? decided.revision,
  };
}

/**
 * The one command loop: read the stream, fold it, decide, append with the revision read;
 * on a concurrency conflict start again from a fresh read.
 */
export async function handleCommand<State, Command, Event extends AnyEvent>(
  store: EventStore,
  decider: Decider<State, Command, Event>,
  streamName: string,
  command: Command,
  context: CommandContext,
  options: HandleOptions = {},
): Promise<CommandResult<State, Event>> {
  const maxAttempts = options.maxAttempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    // The first attempt may start from the cached fold; a retry always reads the stream.
    // Only an append checks the revision, so a refusal or a no-op decided on the cache is
    // decided again on a fresh read before anyone hears of it.
    let decided: Decided<State, Event> | undefined;
    if (attempt === 1 && cachedFold(store, streamName, options)) {
      try {
        decided = await load(store, decider, streamName, command, context, { ...options, useCache: true });
        if (decided.events.length === 0) decided = undefined;
      } catch {
        decided = undefined;
      }
      if (!decided) forget(store, streamName);
    }
    decided ??= await load(store, decider, streamName, command, context, options);
    if (decided.events.length === 0) {
      const result = resultOf(decider, decided);
      if (decided.revision >= 0) remember(store, streamName, result.state, decided.revision, options.personalData === false);
      return result;
    }
    try {
      const written = await store.append(streamName, decided.toAppend, decided.revision < 0 ? 'no_stream' : decided.revision);
      markRecorded(context);
      const result = resultOf(decider, decided, written);
      remember(store, streamName, result.state, written.nextRevision, options.personalData === false);
      return result;
    } catch (error) {
      forget(store, streamName);
      if (error instanceof ConcurrencyError && attempt < maxAttempts) continue;
      throw error;
    }
  }
}

/** One command of a batch: each may target another stream and decider. */
export interface BatchItem<State = unknown, Command = unknown, Event extends AnyEvent = AnyEvent> {
  streamName: string;
  decider: Decider<State, Command, Event>;
  command: Command;
  eventIds?: (index: number) => string;
  /**
   * Where the item goes on a store without atomic batches (src/commands/batch-intents.ts):
   * `claim` (a unique key, reserved first; `undo` gives it back), `main` (the default), or
   * `release` (a key given up, after its `partOf` item was applied).
   */
  stage?: BatchStage;
  /** Index (in the batch) of the main item a claim or release belongs to. */
  partOf?: number;
  undo?: Command;
  /**
   * The caller believes the stream does not exist yet (a guest the read model does not know):
   * on a store with atomic batches the first attempt decides on an empty stream without reading
   * it and appends expecting no stream; if one exists, the batch is refused whole and the retry
   * reads every stream as usual. Ignored on a store without atomic batches.
   */
  assumeNew?: boolean;
}

/**
 * The same loop over many streams at once (batch upserts, bulk block): every command is
 * decided before anything is appended, so one refusal applies nothing. On a store with
 * atomic batches the appends go in one `appendMany` (all or nothing); on one without, a batch
 * of more than one stream goes through an intent (claims first, releases last) that this
 * call, or the completer after a crash, runs to its end.
 */
export async function handleCommands(
  store: EventStore,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  items: BatchItem<any, any, any>[],
  context: CommandContext,
  options: { maxAttempts?: number } = {},
): Promise<CommandResult<unknown, AnyEvent>[]> {
  const maxAttempts = options.maxAttempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    const batchId = store.atomicBatches ? undefined : newId();
    const assume = attempt === 1 && store.atomicBatches;
    const decided = await Promise.all(
      items.map((item) => load(store, item.decider, item.streamName, item.command, context, { eventIds: item.eventIds, assumeNew: assume && item.assumeNew === true })),
    );
    const changed = decided.filter((d) => d.events.length > 0);
    if (batchId && changed.length > 1) {
      try {
        const results = await runIntent(store, items, decided, context, batchId);
        markRecorded(context);
        return results;
      } catch (error) {
        if (error instanceof ConcurrencyError && attempt < maxAttempts) continue;
        throw error;
      }
    }
    try {
      const written = await store.appendMany(
        changed.map((d) => ({
          streamName: d.streamName,
          events: d.toAppend,
          expectedRevision: d.revision < 0 ? ('no_stream' as const) : d.revision,
        })),
      );
      markRecorded(context);
      const byStream = new Map(changed.map((d, i) => [d, written[i]!]));
      // Batches read their streams; the streams they changed are no longer what a cache holds.
      for (const d of changed) forget(store, d.streamName);
      return decided.map((d, i) => lazyResultOf(items[i]!.decider, d, byStream.get(d)));
    } catch (error) {
      if (error instanceof ConcurrencyError && attempt < maxAttempts) continue;
      throw error;
    }
  }
}

async function runIntent(
  store: EventStore,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  items: BatchItem<any, any, any>[],
  decided: Decided<unknown, AnyEvent>[],
  context: CommandContext,
  batchId: string,
): Promise<CommandResult<unknown, AnyEvent>[]> {
  const intentContext = {
    tenantId: context.tenantId,
    actor: context.actor,
    correlationId: context.correlationId,
    now: context.now.toISOString(),
    ...(context.causationId ? { causationId: context.causationId } : {}),
    ...(context.requestId ? { requestId: context.requestId } : {}),
  };
  const intent: BatchIntent = {
    batchId,
    context: intentContext,
    items: items.map((item, index) => {
      const d = decided[index]!;
      const given = item.eventIds ? d.events.map((_, i) => item.eventIds!(i)) : undefined;
      return {
        streamName: item.streamName,
        decider: deciderName(item.decider),
        command: item.command,
        stage: item.stage ?? 'main',
        ...(item.partOf !== undefined ? { partOf: item.partOf } : {}),
        ...(item.undo !== undefined ? { undo: item.undo } : {}),
        ...(given ? { eventIds: given } : {}),
        expectedRevision: d.revision < 0 ? ('no_stream' as const) : d.revision,
        events: itemEvents({ batchId, context: intentContext }, index, d.revision, d.events, given),
      };
    }),
  };
  // An item the store would refuse for its size is refused now, before the intent: once recorded, a batch is applied whole.
  store.checkAppendSizes?.(intent.items.filter((item) => item.events.length > 0).map(({ streamName, events, expectedRevision }) => ({ streamName, events, expectedRevision })));
  await recordIntent(store, intent);
  const outcome = await completeBatch(store, intent);
  for (const item of items) forget(store, item.streamName);
  if (outcome.status === 'aborted') throw outcome.error;
  const skipped = outcome.items.find((o) => o?.status === 'skipped' && o.error);
  if (skipped) throw skipped.error;
  return decided.map((d, index) => {
    const done = outcome.items[index];
    if (!done || !done.redecided) return resultOf(items[index]!.decider, d, done && done.position >= 0 ? { position: done.position, nextRevision: done.revision } : undefined);
    return { state: done.state, events: done.events as AnyEvent[], position: done.position, revision: done.revision };
  });
}

/** The highest position a batch wrote, for read-your-writes. */
export const lastPosition = (results: { position: number }[]): number => Math.max(-1, ...results.map((r) => r.position));
