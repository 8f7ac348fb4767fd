import * as grpc from '@grpc/grpc-js';
import { StreamsService } from '@eventstore/db-client/generated/streams_grpc_pb.js';
import { ReadReq, ReadResp } from '@eventstore/db-client/generated/streams_pb.js';
import { StreamIdentifier, UUID } from '@eventstore/db-client/generated/shared_pb.js';
import { afterEach, describe, expect, it } from 'vitest';
import { EsdbEventStore } from '../../src/adapters/eventstore/esdb.js';
import { loadConfig } from '../../src/config.js';
import { announce24_10 } from '../support/esdb-stand-in.js';

/**
 * The EventStoreDB adapter in a cluster, through the real @eventstore/db-client 6.2.1 and
 * grpc-js, against two stand-in nodes speaking the 24.10 gRPC protocol (no EventStoreDB server
 * can run here). What a 24.10 follower does with a read (ClusterVNodeController.cs,
 * HandleAsNonLeader): without the `requires-leader` header it serves it from its own copy, which
 * can lag behind what the leader acknowledged; with it, it refuses with NotLeader and the
 * leader's address (RpcExceptions.LeaderInfo: NotFound, `exception: not-leader`,
 * `leader-endpoint-host`/`-port`). It forwards an append to the leader instead of refusing it,
 * so a client left on a node that became a follower never gets an error that moves it on.
 */

interface Recorded {
  stream: string;
  revision: number;
  position: number;
  type: string;
}

const servers: grpc.Server[] = [];
const stores: EsdbEventStore[] = [];
afterEach(async () => {
  await Promise.allSettled(stores.splice(0).map((s) => s.close()));
  for (const server of servers.splice(0)) server.forceShutdown();
});

const readEvent = (e: Recorded) =>
  new ReadResp().setEvent(
    new ReadResp.ReadEvent()
      .setCommitPosition(String(e.position))
      .setEvent(
        new ReadResp.ReadEvent.RecordedEvent()
          .setId(new UUID().setString(`00000000-0000-4000-8000-${String(e.position).padStart(12, '0')}`))
          .setStreamIdentifier(new StreamIdentifier().setStreamName(Buffer.from(e.stream)))
          .setStreamRevision(String(e.revision))
          .setCommitPosition(String(e.position))
          .setPreparePosition(String(e.position))
          .setData(Buffer.from(JSON.stringify({ n: e.position })))
          .setCustomMetadata(Buffer.from(JSON.stringify({ tenantId: 't', actor: { type: 'system', id: 'x' }, correlationId: 'c', occurredAt: 'x' }))),
      ),
  );

/** A node holding `events` (in log order); a follower refuses reads that require the leader. */
async function standInNode(events: Recorded[], leader?: { port: () => number }) {
  const requests: { requiresLeader: boolean }[] = [];
  const server = new grpc.Server();
  announce24_10(server);
  server.addService(StreamsService, {
    read: (call: grpc.ServerWritableStream<ReadReq, ReadResp>) => {
      const requiresLeader = call.metadata.get('requires-leader')[0] === 'true';
      requests.push({ requiresLeader });
      if (leader && requiresLeader) {
        const metadata = new grpc.Metadata();
        metadata.set('exception', 'not-leader');
        metadata.set('leader-endpoint-host', '127.0.0.1');
        metadata.set('leader-endpoint-port', String(leader.port()));
        call.emit('error', { code: grpc.status.NOT_FOUND, details: 'Leader info available', metadata });
        return;
      }
      const options = call.request.getOptions()!;
      const backwards = options.getReadDirection() === ReadReq.Options.ReadDirection.BACKWARDS;
      const count = Number(options.getCount());
      let found: Recorded[];
      if (options.hasStream()) {
        const stream = Buffer.from(options.getStream()!.getStreamIdentifier()!.getStreamName()).toString('utf8');
        found = events.filter((e) => e.stream === stream);
        if (found.length === 0) {
          call.write(new ReadResp().setStreamNotFound(new ReadResp.StreamNotFound().setStreamIdentifier(new StreamIdentifier().setStreamName(Buffer.from(stream)))));
          call.end();
          return;
        }
      } else {
        // Only what these cases read: $all from its end, backwards.
        found = [...events];
      }
      if (backwards) found.reverse();
      for (const e of found.slice(0, count)) call.write(readEvent(e));
      call.end();
    },
  } as never);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  servers.push(server);
  return { port, requests };
}

/** A hang guard far above anything these cases take. */
const within = <T>(promise: Promise<T>, ms = 5_000) =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms))]);

describe('EventStoreDB in a cluster: reads a decision or a wait depends on go to the leader', () => {
  // The leader acknowledged an append to guest-1 at position 300 (the client's node, now a
  // follower, forwarded it); the follower's copy ends at 200, before it.
  const before: Recorded[] = [
    { stream: 'guest-1', revision: 0, position: 100, type: 'GuestCreated' },
    { stream: 'guest-2', revision: 0, position: 200, type: 'GuestCreated' },
  ];
  const written: Recorded = { stream: 'guest-1', revision: 1, position: 300, type: 'GuestUpdated' };

  async function cluster() {
    const leader = await standInNode([...before, written]);
    const follower = await standInNode(before, { port: () => leader.port });
    // The client's connection is on the follower (the leader it discovered lost an election).
    const store = new EsdbEventStore(`esdb://127.0.0.1:${follower.port}?tls=false`);
    stores.push(store);
    return { leader, follower, store };
  }

  it('the head of $all read-your-writes waits for is the leader\'s, not a follower\'s older one', async () => {
    const { store, follower } = await cluster();
    // Before: 200 from the follower, and a request that wrote at 300 waited only for its
    // projections to reach 200 (runner.waitFor: min(written, head)), then answered without its write.
    expect(await within(store.headPosition({ streamPrefixes: ['guest-'] }))).toBe(300);
    expect(follower.requests[0]).toEqual({ requiresLeader: true });
  }, 20_000);

  it('a stream read the command loop decides on shows the acknowledged append', async () => {
    const { store } = await cluster();
    const events = await within(store.readStream('guest-1'));
    expect(events.map((e) => e.revision)).toEqual([0, 1]);
    // The client now talks to the leader: the next read goes there at once.
    expect((await within(store.readStream('guest-1', { direction: 'backwards', maxCount: 1 })))[0]?.position).toBe(300);
  }, 20_000);

  it('the end of $all a checkpoint is compared with is the leader\'s', async () => {
    const { store } = await cluster();
    expect(await within(store.endPosition())).toBe(300);
  }, 20_000);
});

describe('EVENTSTORE_MAX_APPEND_SIZE within what a server can be configured with', () => {
  // 24.10 refuses to start with a MaxAppendSize over TFConsts.EffectiveMaxLogRecordSize (16 MiB
  // less 10,000 bytes, ClusterVNodeOptionsValidator.cs): a larger setting here matched no server,
  // and the adapter cut intents into parts the server would refuse.
  it('refuses a limit no server has, and takes the largest one', () => {
    expect(() => loadConfig({ EVENTSTORE_MAX_APPEND_SIZE: '33554432' })).toThrow(/EVENTSTORE_MAX_APPEND_SIZE must be at least 65536 and at most 16767216/);
    expect(loadConfig({ EVENTSTORE_MAX_APPEND_SIZE: '16767216' }).eventStoreMaxAppendBytes).toBe(16_767_216);
  });
});
