/**
 * One request followed end to end (W3C Trace Context, https://www.w3.org/TR/trace-context/):
 * the HTTP request's trace id and request id are kept in an AsyncLocalStorage while the request
 * runs, stamped into the metadata of every event it appends, carried in bus message headers,
 * and taken up again by each worker that handles what the request caused. The logger adds the
 * current ids to every line (src/shared/logger.ts), so `grep <requestId>` tells the story.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomFillSync } from 'node:crypto';
import { newId } from '../shared/ids.js';

export interface TraceContext {
  /** 32 lower-case hex digits, shared by every step of the request. */
  traceId: string;
  /** 16 hex digits: this service's span for the current step (HTTP request, bus message, send). */
  spanId: string;
  /** W3C trace-flags, 2 hex digits (01 = sampled). */
  flags: string;
  /** The request id (X-Request-Id): taken from the caller, else generated. */
  requestId: string;
}

/** Where a step picks up its trace: event metadata or bus headers. */
export interface TraceCarrier {
  traceparent?: string;
  requestId?: string;
}

const storage = new AsyncLocalStorage<TraceContext>();

/** The trace of the work running now, if any. */
export const currentTrace = (): TraceContext | undefined => storage.getStore();

/** Runs `work` (and everything it starts) as part of `trace`. */
export const runInTrace = <T>(trace: TraceContext, work: () => T): T => storage.run(trace, work);

/** Runs `work` in the trace the carrier names, or outside any trace when it names none. */
export function runInCarriedTrace<T>(carrier: TraceCarrier | undefined, work: () => T): T {
  const trace = continueTrace(carrier);
  return trace ? storage.run(trace, work) : storage.exit(work);
}

const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const allZeros = /^0+$/;

/** The parts of a valid `traceparent` header, or undefined (the spec says: then start a new trace). */
export function parseTraceparent(header: string | undefined): { traceId: string; parentId: string; flags: string } | undefined {
  const match = header ? traceparentPattern.exec(header.trim()) : null;
  if (!match) return undefined;
  const [, version, traceId, parentId, flags, rest] = match as unknown as [string, string, string, string, string, string?];
  // Version ff is forbidden; version 00 has exactly four fields; later versions may add fields.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (allZeros.test(traceId) || allZeros.test(parentId)) return undefined;
  return { traceId, parentId, flags };
}

export const formatTraceparent = (trace: TraceContext): string => `00-${trace.traceId}-${trace.spanId}-${trace.flags}`;

/**
 * Random ids from a pool of CSPRNG bytes refilled 4 kB at a time (as crypto.randomUUID pools):
 * every request takes 24 bytes; two `randomBytes` calls per request were about 2% of a scan's CPU time.
 */
const pool = Buffer.alloc(4096);
let pooled = pool.length;
function randomHex(bytes: number): string {
  if (pooled + bytes > pool.length) {
    randomFillSync(pool);
    pooled = 0;
  }
  const hex = pool.toString('hex', pooled, pooled + bytes);
  pooled += bytes;
  return hex;
}

const newSpanId = (): string => randomHex(8);

/** A request id we accept from a caller: printable ASCII without spaces, at most 200 characters. */
export const acceptableRequestId = (value: string | undefined): value is string =>
  value !== undefined && /^[\x21-\x7e]{1,200}$/.test(value);

/** The trace of an incoming HTTP request: a child of the caller's traceparent, else a new trace. */
export function startTrace(incoming: { traceparent?: string; requestId?: string }): TraceContext {
  const parent = parseTraceparent(incoming.traceparent);
  return {
    traceId: parent?.traceId ?? randomHex(16),
    spanId: newSpanId(),
    flags: parent?.flags ?? '01',
    requestId: acceptableRequestId(incoming.requestId) ? incoming.requestId : newId(),
  };
}

/** A later step of a carried trace (a new span of the same trace, the same request id); undefined without one. */
export function continueTrace(carrier: TraceCarrier | undefined): TraceContext | undefined {
  const parent = parseTraceparent(carrier?.traceparent);
  if (!parent && !carrier?.requestId) return undefined;
  return {
    traceId: parent?.traceId ?? randomHex(16),
    spanId: newSpanId(),
    flags: parent?.flags ?? '01',
    requestId: carrier?.requestId ?? newId(),
  };
}

/** The current trace as event metadata fields. */
export function traceMetadata(trace = currentTrace()): TraceCarrier {
  return trace ? { traceparent: formatTraceparent(trace), requestId: trace.requestId } : {};
}

/** Bus header names of the carried trace. */
export const traceHeaderNames = { traceparent: 'traceparent', requestId: 'request-id' } as const;

export function traceHeaders(carrier: TraceCarrier): Record<string, string> {
  return {
    ...(carrier.traceparent ? { [traceHeaderNames.traceparent]: carrier.traceparent } : {}),
    ...(carrier.requestId ? { [traceHeaderNames.requestId]: carrier.requestId } : {}),
  };
}

export function carrierFromHeaders(headers: Record<string, string | undefined>): TraceCarrier {
  const traceparent = headers[traceHeaderNames.traceparent];
  const requestId = headers[traceHeaderNames.requestId];
  return { ...(traceparent ? { traceparent } : {}), ...(requestId ? { requestId } : {}) };
}

/** The fields every log line of a traced step carries. */
export function traceLogFields(): { traceId?: string; spanId?: string; requestId?: string } {
  const trace = currentTrace();
  return trace ? { traceId: trace.traceId, spanId: trace.spanId, requestId: trace.requestId } : {};
}

/** Events grouped by the request that caused them (events that carry no trace are left out). */
export function byTrace<T extends { metadata: TraceCarrier }>(events: T[]): T[][] {
  const groups = new Map<string, T[]>();
  for (const event of events) {
    const key = event.metadata.requestId ?? event.metadata.traceparent;
    if (!key) continue;
    const group = groups.get(key);
    if (group) group.push(event);
    else groups.set(key, [event]);
  }
  return [...groups.values()];
}
