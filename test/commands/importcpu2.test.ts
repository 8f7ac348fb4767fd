/**
 * The import's CPU, second pass (docs/benchmarks.md): what the three changes rely on.
 * - A merge that registers a guest builds its GuestRegistered data in place: the events, their
 *   order and their JSON text (key order included) stay what the spreads made.
 * - A batch's results fold their state when a caller first reads it: the same state as the fold
 *   made at once, read once, not changed by later appends to the stream.
 * - planGuests reads a record's customId holder once when the record named its guest by it: the
 *   record still changes that guest, and a record naming another guest by id is still refused.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { handleCommands, type CommandContext } from '../../src/commands/handle-command.js';
import type { Decider } from '../../src/domain/decider.js';
import { guestDecider, type GuestCommand } from '../../src/domain/guest.js';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';

describe('a merge that registers a guest', () => {
  const merge = (extra: Record<string, unknown>): GuestCommand =>
    ({ type: 'MergeGuest', guestId: 'g1', clientId: 'c1', eventId: 'e1', replaceTags: false, invitationId: 'inv1', ...extra }) as GuestCommand;

  it('gives the events in their order, with the data’s keys in the spreads’ order and no null or undefined field', () => {
    const command = merge({
      details: { lastName: 'Lovelace', firstName: 'Ada', email: null, validFrom: undefined, commsTemplateId: 't1', plusOnes: 2, correlationId: 'corr', createdBy: 'u1' },
      tags: ['vip', 'b'],
      guestIdAsSent: 'G1',
      templateIdAsSent: 'T1',
      imported: { admitted: '2026-01-01T10:00:00.000Z', admittedPlusOnes: 1, blockedReason: 'late', receivedAt: '2026-01-02T00:00:00.000Z' },
      ticket: { code: 'code', keyId: 'k1', serial: 1, at: '2026-01-02T00:00:00.000Z' },
    });
    expect(JSON.stringify(guestDecider.decide(command, guestDecider.initialState()))).toBe(
      '[{"type":"GuestRegistered","data":{"guestId":"g1","eventId":"e1","clientId":"c1","lastName":"Lovelace","firstName":"Ada","commsTemplateId":"t1","plusOnes":2,' +
        '"correlationId":"corr","createdBy":"u1","tags":["vip","b"],"guestIdAsSent":"G1"}},' +
        '{"type":"TicketIssued","data":{"guestId":"g1","eventId":"e1","code":"code","keyId":"k1","serial":1,"at":"2026-01-02T00:00:00.000Z","reissued":false}},' +
        '{"type":"GuestAdmissionImported","data":{"guestId":"g1","eventId":"e1","admitted":"2026-01-01T10:00:00.000Z","admittedPlusOnes":1,"inside":true}},' +
        '{"type":"GuestBlocked","data":{"guestId":"g1","eventId":"e1","reason":"late","at":"2026-01-02T00:00:00.000Z"}},' +
        '{"type":"InvitationRequested","data":{"guestId":"g1","eventId":"e1","attendeeInvitationId":"inv1","templateId":"t1","guestIdAsSent":"G1","templateIdAsSent":"T1","correlationId":"corr","noEmail":true}}]',
    );
  });

  it('without tags or spelling: an empty tag list, no guestIdAsSent; a details key named like an id replaces it where it stands', () => {
    const plain = guestDecider.decide(merge({ details: { email: 'a@b.c' } }), guestDecider.initialState());
    expect(JSON.stringify(plain)).toBe('[{"type":"GuestRegistered","data":{"guestId":"g1","eventId":"e1","clientId":"c1","email":"a@b.c","tags":[]}}]');
    const odd = guestDecider.decide(merge({ details: { zeta: 1, clientId: 'other', alpha: 2 }, guestIdAsSent: '' }), guestDecider.initialState());
    expect(JSON.stringify(odd)).toBe('[{"type":"GuestRegistered","data":{"guestId":"g1","eventId":"e1","clientId":"other","zeta":1,"alpha":2,"tags":[]}}]');
  });

  it('leaves the command’s details as they were', () => {
    const details = { firstName: 'Ada', email: null };
    const [registered] = guestDecider.decide(merge({ details }), guestDecider.initialState());
    expect(details).toEqual({ firstName: 'Ada', email: null });
    expect(registered!.data).not.toBe(details);
  });
});

describe('a batch’s results', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'importcpu2-'));
  const store = new SqliteEventStore(path.join(dir, 'events.sqlite'));
  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const context: CommandContext = { tenantId: 't', actor: { type: 'system', id: 'test' }, correlationId: 'c', now: new Date('2026-12-07T10:00:00Z') };
  let evolved = 0;
  type Added = { type: 'Added'; data: { item: string } };
  const list: Decider<{ items: string[] }, { type: 'Add'; item: string }, Added> = {
    initialState: () => ({ items: [] }),
    evolve: (state, event) => {
      evolved++;
      return { items: [...state.items, event.data.item] };
    },
    decide: (command) => [{ type: 'Added', data: { item: command.item } }],
  };

  it('hold the state after their events, folded once when first read, whatever was appended since', async () => {
    const batch = (item: string) => [
      { streamName: 'list-a', decider: list, command: { type: 'Add' as const, item: `${item}-a` } },
      { streamName: 'list-b', decider: list, command: { type: 'Add' as const, item: `${item}-b` } },
    ];
    await handleCommands(store, batch('1'), context);
    evolved = 0;
    const results = await handleCommands(store, batch('2'), context);
    // Decided on the streams as read (one event each): nothing folded after the append yet.
    expect(evolved).toBe(2);
    await handleCommands(store, batch('3'), context);
    evolved = 0;
    expect(results.map((r) => r.state)).toEqual([{ items: ['1-a', '2-a'] }, { items: ['1-b', '2-b'] }]);
    expect(evolved).toBe(2);
    expect(results[0]!.state).toBe(results[0]!.state);
    expect(evolved).toBe(2);
    // A copy of a result (a spread, structuredClone, JSON) has the state too.
    expect({ ...results[1]! }).toMatchObject({ state: { items: ['1-b', '2-b'] }, events: [{ type: 'Added', data: { item: '2-b' } }] });
    expect(JSON.parse(JSON.stringify(results[1]))).toMatchObject({ state: { items: ['1-b', '2-b'] }, revision: 1 });
    expect(results.map((r) => r.revision)).toEqual([1, 1]);
    expect(results[1]!.position).toBeGreaterThan(results[0]!.position);
  });
});

describe('an upsert record named by its customId', () => {
  let service: TestService;
  let alice: Client;
  beforeAll(async () => {
    service = await startTestService();
    alice = await createClient(service);
  });
  afterAll(() => service.close());

  it('changes the guest holding it; a record naming another guest by id with that customId is refused', async () => {
    const eventId = await newEvent(alice);
    const upsert = (records: Record<string, unknown>[]) => alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, records);
    expect((await upsert([{ customId: 'CRM-1', firstName: 'Ada' }, { customId: 'CRM-2', firstName: 'Bob' }])).status).toBe(204);
    expect((await upsert([{ customId: 'crm-1', firstName: 'Adele' }])).status).toBe(204);
    const listed = (await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=10`)).body.items as Record<string, unknown>[];
    // The same guest, its customId now spelled as the record spells it; no third guest.
    expect(listed.map((g) => [g.customId, g.firstName]).sort()).toEqual([
      ['CRM-2', 'Bob'],
      ['crm-1', 'Adele'],
    ]);
    const bob = listed.find((g) => g.customId === 'CRM-2')!;
    const refused = await upsert([{ id: bob.id, customId: 'CRM-1' }]);
    expect(refused.status).toBe(409);
    // Refused by the plan (the holder read), not only by the reservation's claim in the event store.
    expect(refused.body).toMatchObject({ code: 'custom_id_taken', errors: [{ path: '0.customId', message: 'already used by another guest of this event' }] });
  });
});
