import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { handleCommand, handleCommands, type CommandContext } from '../../src/commands/handle-command.js';
import { DomainError, type Decider } from '../../src/domain/decider.js';

/** A counter that refuses to pass a maximum: enough to see lost or doubled updates. */
type Counted = { type: 'Counted'; data: { by: number } };
const counter: Decider<number, { type: 'Count'; by: number; max: number }, Counted> = {
  initialState: () => 0,
  evolve: (n, e) => n + e.data.by,
  decide: (c, n) => {
    if (n + c.by > c.max) throw new DomainError('conflict', 'over the maximum');
    return [{ type: 'Counted', data: { by: c.by } }];
  },
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'handle-'));
const store = new SqliteEventStore(path.join(dir, 'events.sqlite'));
afterAll(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
const context: CommandContext = {
  tenantId: 't',
  actor: { type: 'system', id: 'test' },
  correlationId: 'c',
  now: new Date('2026-11-21T10:00:00Z'),
};

describe('the command loop', () => {
  it('decides on the current stream even when another writer changed it behind its cache', async () => {
    const stream = 'count-a';
    await handleCommand(store, counter, stream, { type: 'Count', by: 1, max: 3 }, context);
    // Another writer (another process, a batch) appends without going through the cache.
    await store.append(stream, [{ id: crypto.randomUUID(), type: 'Counted', data: { by: 2 }, metadata: { ...context, occurredAt: 'x' } }], 0);
    // The cache still says 1; the stream says 3: one more would pass the maximum.
    await expect(handleCommand(store, counter, stream, { type: 'Count', by: 1, max: 3 }, context)).rejects.toThrow('over the maximum');
    await expect(handleCommand(store, counter, stream, { type: 'Count', by: 1, max: 4 }, context)).resolves.toMatchObject({ state: 4 });
    expect(await store.readStream(stream)).toHaveLength(3);
  });

  it('does not refuse on a stale cache what the stream allows', async () => {
    const stream = 'count-e';
    await handleCommand(store, counter, stream, { type: 'Count', by: 3, max: 3 }, context);
    // Another writer takes 3 back; the cache still says 3.
    await store.append(stream, [{ id: crypto.randomUUID(), type: 'Counted', data: { by: -3 }, metadata: { ...context, occurredAt: 'x' } }], 0);
    await expect(handleCommand(store, counter, stream, { type: 'Count', by: 2, max: 3 }, context)).resolves.toMatchObject({ state: 2 });
  });

  it('retries racing commands on a conflict so none is lost and the rule holds', async () => {
    const stream = 'count-b';
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => handleCommand(store, counter, stream, { type: 'Count', by: 1, max: 4 }, context, { maxAttempts: 20 })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(4);
    expect((await store.readStream(stream)).length).toBe(4);
  });

  it('applies nothing of a batch when one command is refused', async () => {
    await expect(
      handleCommands(
        store,
        [
          { streamName: 'count-c', decider: counter, command: { type: 'Count', by: 1, max: 5 } },
          { streamName: 'count-d', decider: counter, command: { type: 'Count', by: 9, max: 5 } },
        ],
        context,
      ),
    ).rejects.toThrow('over the maximum');
    expect(await store.readStream('count-c')).toEqual([]);
  });

  it('a batch item assumed new (assumeNew) that has a stream after all is decided again on the stream, whole batch, nothing lost', async () => {
    await handleCommand(store, counter, 'count-g', { type: 'Count', by: 3, max: 9 }, context);
    // Believed new: decided on 0 without a read, refused by the store (no_stream), then re-read: 3 + 4 > 5.
    await expect(
      handleCommands(store, [{ streamName: 'count-g', decider: counter, command: { type: 'Count', by: 4, max: 5 }, assumeNew: true }], context),
    ).rejects.toThrow('over the maximum');
    const [ok, fresh] = await handleCommands(
      store,
      [
        { streamName: 'count-g', decider: counter, command: { type: 'Count', by: 2, max: 5 }, assumeNew: true },
        { streamName: 'count-h', decider: counter, command: { type: 'Count', by: 1, max: 5 }, assumeNew: true },
      ],
      context,
    );
    expect(ok!.state).toBe(5);
    expect(fresh!.state).toBe(1);
    expect((await store.readStream('count-g')).map((e) => e.data.by)).toEqual([3, 2]);
    expect((await store.readStream('count-h')).map((e) => e.data.by)).toEqual([1]);
  });

  it('decides nothing for a command whose caller-chosen ids are already in the stream, even after other writes', async () => {
    const stream = 'count-f';
    const id = crypto.randomUUID();
    const first = await handleCommand(store, counter, stream, { type: 'Count', by: 1, max: 9 }, context, { eventIds: () => id });
    expect(first.events).toHaveLength(1);
    // Another writer moves the stream on: a retry now decides at another revision, where
    // EventStoreDB's own id check would not see the first write.
    await store.append(stream, [{ id: crypto.randomUUID(), type: 'Counted', data: { by: 1 }, metadata: { ...context, occurredAt: 'x' } }], 0);
    const again = await handleCommand(store, counter, stream, { type: 'Count', by: 1, max: 9 }, context, { eventIds: () => id });
    expect(again.events).toEqual([]);
    expect(again.state).toBe(2);
    expect((await store.readStream(stream)).filter((e) => e.id === id)).toHaveLength(1);
  });
});
