import {
  ConcurrencyError,
  type AppendResult,
  type EventStore,
  type NewEvent,
} from '../adapters/eventstore/port.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from './metrics.js';
import { currentTrace, traceMetadata } from './trace.js';

/**
 * The event store as the service uses it: every append is timed (eventstore_append_duration_seconds),
 * stamped with the current trace (requestId and traceparent in each event's metadata, unless the
 * command set them) and logged as one line, so the command step shows in `grep <requestId>`.
 */
export function observedEventStore(store: EventStore, options: { metrics?: Pick<Metrics, 'observeAppend'>; logger: Logger }): EventStore {
  const { metrics, logger } = options;
  /** Events sharing a metadata object keep sharing one stamped object (the store serialises it once). */
  const stamp = (events: NewEvent[], stamped: Map<NewEvent['metadata'], NewEvent['metadata']> = new Map()): NewEvent[] => {
    if (!currentTrace()) return events;
    return events.map((event) => {
      let metadata = stamped.get(event.metadata);
      if (!metadata) stamped.set(event.metadata, (metadata = { ...traceMetadata(), ...definedOnly(event.metadata) }));
      return { ...event, metadata };
    });
  };
  const timed = async <T>(operation: 'append' | 'appendMany', write: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      const result = await write();
      metrics?.observeAppend(operation, 'ok', (performance.now() - started) / 1000);
      return result;
    } catch (error) {
      metrics?.observeAppend(operation, error instanceof ConcurrencyError ? 'conflict' : 'error', (performance.now() - started) / 1000);
      throw error;
    }
  };
  const logAppended = (appends: { streamName: string; events: NewEvent[] }[], results: AppendResult[]) => {
    const events = appends.flatMap((a) => a.events);
    if (events.length === 0 || !logger.isLevelEnabled('info')) return;
    logger.info(
      {
        stream: loggedStreamName(appends[0]!.streamName),
        ...(appends.length > 1 ? { streams: appends.length } : {}),
        events: events.length,
        types: [...new Set(events.map((e) => e.type))],
        position: Math.max(...results.map((r) => r.position)),
      },
      'events appended',
    );
  };

  const append: EventStore['append'] = async (streamName, events, expectedRevision) => {
    const stamped = stamp(events);
    const result = await timed('append', () => store.append(streamName, stamped, expectedRevision));
    logAppended([{ streamName, events: stamped }], [result]);
    return result;
  };
  const appendMany: EventStore['appendMany'] = async (appends) => {
    const metadata = new Map<NewEvent['metadata'], NewEvent['metadata']>();
    const stamped = appends.map((a) => ({ ...a, events: stamp(a.events, metadata) }));
    const results = await timed('appendMany', () => store.appendMany(stamped));
    logAppended(stamped, results);
    return results;
  };
  // A size check weighs the events as they will be appended: stamped.
  const checkAppendSizes = store.checkAppendSizes
    ? (appends: Parameters<NonNullable<EventStore['checkAppendSizes']>>[0]) => {
        const metadata = new Map<NewEvent['metadata'], NewEvent['metadata']>();
        store.checkAppendSizes!(appends.map((a) => ({ ...a, events: stamp(a.events, metadata) })));
      }
    : undefined;
  // Everything else (reads, subscriptions, whatever an adapter adds) goes to the store itself,
  // each method bound once (a door's scan reads the stream through here: a bind per call added up).
  const bound = new WeakMap<object, unknown>();
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'append') return append;
      if (property === 'appendMany') return appendMany;
      if (property === 'checkAppendSizes') return checkAppendSizes;
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      let method = bound.get(value);
      if (!method) bound.set(value, (method = (value as (...args: unknown[]) => unknown).bind(target)));
      return method;
    },
  });
}

/** A metadata object without its undefined fields (so they do not hide the carried ones). */
function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/**
 * A stream name as logged. A user name's reservation stream is named by the name itself (an
 * account's is often an email address), and so is a customId's under its legacy name; a log line
 * cannot be erased, so those are logged as `username-[Redacted]` and
 * `guestcustomid-<client>:<event>:[Redacted]` (docs/personal-data.md, "Team members and account users").
 */
export function loggedStreamName(streamName: string): string {
  if (streamName.startsWith('username-')) return 'username-[Redacted]';
  return streamName.replace(/^(guestcustomid-[^:]*:[^:]*:)(?!#)[^]+$/, '$1[Redacted]');
}
