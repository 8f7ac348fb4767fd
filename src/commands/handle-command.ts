import type { Decider } from '../domain/decider.js';
import {
  ConcurrencyError,
  type Actor,
  type EventMetadata,
  type EventStore,
  type NewEvent,
} from '../adapters/eventstore/port.js';
import { newId } from '../shared/ids.js';

/** Who asks, and the ids that tie the resulting events to the request. */
export interface CommandContext {
  tenantId: string;
  actor: Actor;
  correlationId: string;
  causationId?: string;
  requestId?: string;
  now: Date;
}

export interface CommandResult<State, Event> {
  state: State;
  events: Event[];
  /** Global position of the last event written, or -1 when the decider decided nothing. */
  position: number;
  revision: number;
}

export interface HandleOptions {
  maxAttempts?: number;
  /** Derive event ids (e.g. from a bus message) so a redelivered command appends nothing new. */
  eventIds?: (index: number) => string;
}

type AnyEvent = { type: string; data: unknown };

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
    const history = await store.readStream(streamName);
    let state = decider.initialState();
    for (const stored of history) state = decider.evolve(state, stored as unknown as Event);
    const revision = history.length > 0 ? history[history.length - 1]!.revision : -1;

    const events = decider.decide(command, state);
    if (events.length === 0) return { state, events, position: -1, revision };

    const metadata: EventMetadata = {
      tenantId: context.tenantId,
      actor: context.actor,
      correlationId: context.correlationId,
      occurredAt: context.now.toISOString(),
      ...(context.causationId ? { causationId: context.causationId } : {}),
      ...(context.requestId ? { requestId: context.requestId } : {}),
    };
    const toAppend: NewEvent[] = events.map((event, index) => ({
      id: options.eventIds?.(index) ?? newId(),
      type: event.type,
      data: event.data as Record<string, unknown>,
      metadata,
    }));
    try {
      const result = await store.append(streamName, toAppend, revision < 0 ? 'no_stream' : revision);
      for (const event of events) state = decider.evolve(state, event);
      return { state, events, position: result.position, revision: result.nextRevision };
    } catch (error) {
      if (error instanceof ConcurrencyError && attempt < maxAttempts) continue;
      throw error;
    }
  }
}
