import { Readable } from 'node:stream';
import { EventStoreDBClient } from '@eventstore/db-client';
import { describe, expect, it } from 'vitest';
import { connectionStringProblem, EsdbEventStore } from '../../src/adapters/eventstore/esdb.js';
import { StoreUnavailableError } from '../../src/adapters/eventstore/port.js';

/**
 * The EventStoreDB adapter against what @eventstore/db-client 6.2.1 really does (no server runs
 * here). Each stand-in below does what the client's own source does, cited where it is used.
 */

describe('EventStoreDB adapter: a connection string that hides conflicts', () => {
  // batchAppend.ts: with throwOnAppendFailure false a WrongExpectedVersion answer resolves as
  // `{ success: false }` instead of rejecting with WrongExpectedVersionError.
  it('refuses throwOnAppendFailure=false, with which a conflict would pass as an append', () => {
    const url = 'esdb://localhost:2113?tls=false&throwOnAppendFailure=false';
    // The client takes the option (a protected getter that batchAppend.ts reads).
    expect((EventStoreDBClient.connectionString(url) as unknown as { throwOnAppendFailure: boolean }).throwOnAppendFailure).toBe(false);
    expect(connectionStringProblem(url)).toMatch(/throwOnAppendFailure/);
    expect(() => new EsdbEventStore(url)).toThrow(/EVENTSTORE_URL .*throwOnAppendFailure/);
    expect(connectionStringProblem('esdb://localhost:2113?tls=false&throwOnAppendFailure=true')).toBeUndefined();
  });
});

describe('EventStoreDB adapter: $maxAge on a server that does not answer', () => {
  it('gives up reading the stream metadata at the read deadline (the client read has none)', async () => {
    // A server that never answers a read; the metadata is read the way the client reads it
    // (getStreamMetadata.ts: a backwards read of one event of the `$$` stream on `this.readStream`).
    const never = () => Object.assign(new Readable({ objectMode: true, read() {} }), { cancel: async () => {} });
    const client = {
      readStream: never,
      getStreamMetadata(this: unknown, streamName: string) {
        return EventStoreDBClient.prototype.getStreamMetadata.call(this as EventStoreDBClient, streamName);
      },
      setStreamMetadata: async () => ({ success: true, nextExpectedRevision: 0n, position: { commit: 1n, prepare: 1n } }),
      dispose: async () => {},
    } as unknown as EventStoreDBClient;
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client, readDeadlineMs: 50 });
    const failure = await store.setMaxAge('batchlog', 2_592_000).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure).toMatchObject({ reason: 'deadline_exceeded', retryable: true });
  }, 10_000);
});
