/**
 * Whether this process is shedding load right now: set by the overload guard
 * (src/http/middleware/overload.ts) from its event-loop delay samples. Work that can wait for the
 * disk either on the event loop or off it reads it: while requests are being refused, the loop's
 * time is better spent finishing the requests already accepted than refusing more, so the
 * embedded event store then syncs its WAL inline (src/adapters/eventstore/sqlite.ts). One flag
 * per process: several services in one process (tests) share it, which changes only when a
 * sync runs, never what is durable.
 */
export const overloadState = { shedding: false };
