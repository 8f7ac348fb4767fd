import * as grpc from '@grpc/grpc-js';
import { StreamsService } from '@eventstore/db-client/generated/streams_grpc_pb.js';
import { AppendReq, AppendResp, BatchAppendReq, BatchAppendResp } from '@eventstore/db-client/generated/streams_pb.js';
import { AllStreamPosition, Empty } from '@eventstore/db-client/generated/shared_pb.js';
import { afterEach, describe, expect, it } from 'vitest';
import { EsdbEventStore } from '../../src/adapters/eventstore/esdb.js';
import { StoreUnavailableError } from '../../src/adapters/eventstore/port.js';
import { announce24_10 } from '../support/esdb-stand-in.js';

/**
 * The EventStoreDB adapter through the real @eventstore/db-client 6.2.1 and grpc-js, against a
 * stand-in server speaking the EventStoreDB 24.10 gRPC protocol for what these cases need (it
 * announces BatchAppend as 24.10 does, takes `BatchAppend` and `Append` calls, and answers them
 * when a case says so). No EventStoreDB server can run here; the contract suite runs against a
 * real one where EVENTSTORE_URL is set (docs/eventstore.md).
 */

interface PendingAppend {
  stream: string;
  /** The server stores the append and answers it. */
  succeed(revision: number, position: number): void;
  /** The call carrying the append ends with a gRPC error (a dropped connection, a node shutting down). */
  failCall(code: grpc.status, details: string): void;
}

const servers: grpc.Server[] = [];
const stores: EsdbEventStore[] = [];
afterEach(async () => {
  await Promise.allSettled(stores.splice(0).map((s) => s.close()));
  for (const server of servers.splice(0)) server.forceShutdown();
});

async function standInServer() {
  const pending: PendingAppend[] = [];
  const waiters: Array<() => void> = [];
  const arrived = (append: PendingAppend) => {
    pending.push(append);
    for (const wake of waiters.splice(0)) wake();
  };
  let failNextRead: grpc.status | undefined;
  const unimplemented = (_call: unknown, callback?: (error: grpc.ServiceError) => void) =>
    callback?.({ code: grpc.status.UNIMPLEMENTED, details: 'not in the stand-in' } as grpc.ServiceError);
  const server = new grpc.Server();
  announce24_10(server);
  server.addService(StreamsService, {
    read: (call: grpc.ServerWritableStream<unknown, unknown>) => {
      if (failNextRead !== undefined) {
        call.emit('error', { code: failNextRead, details: 'Leader changed' });
        failNextRead = undefined;
      } else call.end();
    },
    append: (call: grpc.ServerReadableStream<AppendReq, AppendResp>, callback: grpc.sendUnaryData<AppendResp>) => {
      let stream = '';
      call.on('data', (req: AppendReq) => {
        if (req.hasOptions()) stream = Buffer.from(req.getOptions()!.getStreamIdentifier()!.getStreamName()).toString('utf8');
      });
      call.on('end', () =>
        arrived({
          stream,
          succeed: (revision, position) => {
            const p = new AppendResp.Position().setCommitPosition(String(position)).setPreparePosition(String(position));
            callback(null, new AppendResp().setSuccess(new AppendResp.Success().setCurrentRevision(String(revision)).setPosition(p)));
          },
          failCall: (code, details) => callback({ code, details } as grpc.ServiceError),
        }),
      );
    },
    batchAppend: (call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>) => {
      call.on('data', (req: BatchAppendReq) => {
        if (!req.getIsFinal()) return;
        const correlationId = req.getCorrelationId()!;
        const identifier = req.getOptions()?.getStreamIdentifier();
        arrived({
          stream: identifier ? Buffer.from(identifier.getStreamName()).toString('utf8') : '',
          succeed: (revision, position) =>
            call.write(
              new BatchAppendResp()
                .setCorrelationId(correlationId)
                .setStreamIdentifier(identifier)
                .setSuccess(
                  new BatchAppendResp.Success()
                    .setCurrentRevision(String(revision))
                    .setPosition(new AllStreamPosition().setCommitPosition(String(position)).setPreparePosition(String(position))),
                ),
            ),
          failCall: (code, details) => call.emit('error', { code, details }),
        });
      });
      call.on('error', () => {});
    },
    delete: unimplemented,
    tombstone: unimplemented,
  } as never);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  servers.push(server);
  return {
    url: `esdb://127.0.0.1:${port}?tls=false`,
    failNextRead: (code: grpc.status) => void (failNextRead = code),
    /** The append to `stream` once it reached the server. */
    async appendTo(stream: string): Promise<PendingAppend> {
      for (;;) {
        const found = pending.find((p) => p.stream === stream);
        if (found) return found;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
  };
}

const event = (n: number) => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  type: 'Happened',
  data: { n },
  metadata: { tenantId: 't', actor: { type: 'system' as const, id: 'x' }, correlationId: 'c', occurredAt: 'x' },
});

const settle = <T>(promise: Promise<T>) => promise.then((value) => ({ value }), (error: unknown) => ({ error }));
/** A hang guard far above anything these cases take. */
const within = <T>(promise: Promise<T>, ms = 5_000) =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms))]);

describe('EventStoreDB appends: an error on one call fails only the appends it carried', () => {
  it('an append the server stored after another connection failed is answered as stored, and its answer does not crash the process', async () => {
    const server = await standInServer();
    const store = new EsdbEventStore(server.url);
    stores.push(store);
    // An append to s-a is in flight on the first connection.
    const first = settle(store.append('s-a', [event(1)], 'no_stream'));
    const onFirst = await within(server.appendTo('s-a'));
    // A read fails with Unavailable (a leader change): the client opens a new connection for
    // what follows, while the first connection's calls go on (grpc-js Channel.close).
    server.failNextRead(grpc.status.UNAVAILABLE);
    await expect(store.readStream('s-x')).rejects.toBeInstanceOf(StoreUnavailableError);
    const second = settle(store.append('s-b', [event(2)], 'no_stream'));
    const onSecond = await within(server.appendTo('s-b'));
    // The first connection's call ends (the old node goes away); the second append is stored.
    onFirst.failCall(grpc.status.UNAVAILABLE, 'Node shutting down');
    const firstOutcome = await within(first);
    // 6.2.1's BatchAppend: this answer finds no pending append in the shared table and the
    // client's `data` listener throws a TypeError no caller can catch: an unhandled rejection
    // ("undefined is not iterable"), which ends a Node process by default; the stream then
    // delivers nothing more, so every later append on it waits for ever.
    const uncaught: unknown[] = [];
    const record = (error: unknown) => void uncaught.push(error);
    process.on('uncaughtException', record);
    process.on('unhandledRejection', record);
    let thirdOutcome: unknown;
    try {
      onSecond.succeed(0, 4242);
      // One more append on the same connection: its answer comes after the one above.
      const third = settle(store.append('s-c', [event(3)], 'no_stream'));
      thirdOutcome = await within(server.appendTo('s-c').then((append) => (append.succeed(0, 4343), third))).catch((error: unknown) => ({ error }));
    } finally {
      process.off('uncaughtException', record);
      process.off('unhandledRejection', record);
    }
    expect(uncaught.map(String)).toEqual([]);
    expect(thirdOutcome).toEqual({ value: { nextRevision: 0, position: 4343 } });
    expect(await within(second)).toEqual({ value: { nextRevision: 0, position: 4242 } });
    // The failed call's own append is a retryable failure (it may have been stored: the retry
    // with the same ids and revision finds it).
    expect('error' in firstOutcome && firstOutcome.error).toBeInstanceOf(StoreUnavailableError);
  }, 20_000);
});

describe('EventStoreDB appends: a client-side deadline', () => {
  it('an append the server never answers fails at the append deadline with a retryable deadline_exceeded', async () => {
    const server = await standInServer();
    const store = new EsdbEventStore(server.url, { appendDeadlineMs: 200 });
    stores.push(store);
    const outcome = await within(settle(store.append('s-a', [event(1)], 'no_stream')));
    expect('error' in outcome && outcome.error).toBeInstanceOf(StoreUnavailableError);
    expect('error' in outcome && outcome.error).toMatchObject({ reason: 'deadline_exceeded', retryable: true });
  }, 20_000);

  it('setting $maxAge on a server that never answers its metadata write fails at the append deadline', async () => {
    const server = await standInServer();
    const store = new EsdbEventStore(server.url, { appendDeadlineMs: 200 });
    stores.push(store);
    // The metadata read finds nothing; the write of `$$batchlog` is an append the server never answers.
    const outcome = await within(settle(store.setMaxAge('batchlog', 2_592_000)));
    expect('error' in outcome && outcome.error).toMatchObject({ reason: 'deadline_exceeded', retryable: true });
  }, 20_000);
});
