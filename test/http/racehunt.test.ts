import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { StreamByStreamStore } from '../support/stream-by-stream-store.js';

/**
 * Integrators' concurrent requests, over HTTP, many rounds each (docs/guests.md, Concurrent
 * requests): every outcome must be one that some order of the same requests one after the other
 * gives. Run on the embedded store and on EventStoreDB's write semantics (stream by stream, every
 * append yielding so the racers' appends interleave).
 */
const rounds = 10;

describe.each(['embedded store', 'stream by stream, interleaved'] as const)('on the %s', (mode) => {
  let service: TestService;
  let alice: Client;
  let eventId: string;
  beforeAll(async () => {
    service = await startTestService(
      {},
      mode === 'embedded store'
        ? {}
        : {
            wrapEventStore: (inner) => {
              const store = new StreamByStreamStore(inner);
              store.beforeAppend = () => new Promise((resolve) => setImmediate(resolve));
              return store;
            },
          },
    );
    alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    eventId = await newEvent(alice);
  });
  afterAll(() => service.close());

  const guestsWith = async (customId: string) =>
    ((await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=100&q=${encodeURIComponent(customId)}`)).body.items as Record<string, any>[]).filter(
      (g) => g.customId === customId,
    );
  const upsert = (records: Record<string, unknown>[]) => alice.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, records);

  describe('two CRM syncs upserting one new guest at once', () => {
    it('by customId both: both 204, one guest with both changes', async () => {
      for (let round = 0; round < rounds; round++) {
        const customId = `sync-${randomUUID().slice(0, 8)}`;
        const replies = await Promise.all([upsert([{ customId, firstName: 'Ada' }]), upsert([{ customId, lastName: 'Lovelace' }])]);
        expect(replies.map((r) => r.status), JSON.stringify(replies.map((r) => r.body))).toEqual([204, 204]);
        const found = await guestsWith(customId);
        expect(found).toHaveLength(1);
        expect(found[0]).toMatchObject({ firstName: 'Ada', lastName: 'Lovelace' });
      }
    });

    it('one by id and customId, one by customId only: both 204, the guest of that id has both changes', async () => {
      for (let round = 0; round < rounds; round++) {
        const customId = `sync-${randomUUID().slice(0, 8)}`;
        const id = randomUUID();
        const replies = await Promise.all([upsert([{ id, customId, firstName: 'Ada' }]), upsert([{ customId, lastName: 'Lovelace' }])]);
        // The order is the server's: the customId-only record either created the guest (then the
        // record with the id names another guest: 409) or updated the guest of the id.
        const statuses = replies.map((r) => r.status);
        const found = await guestsWith(customId);
        expect(found).toHaveLength(1);
        if (statuses[0] === 204) {
          expect(statuses[1]).toBe(204);
          expect(found[0]).toMatchObject({ id, firstName: 'Ada', lastName: 'Lovelace' });
        } else {
          expect(replies[0]!.body.code).toBe('custom_id_taken');
          expect(statuses[1]).toBe(204);
        }
      }
    });
  });

  describe('two creates with one customId at once', () => {
    it('with the same content (a create and its retry): both 200 with the one guest', async () => {
      for (let round = 0; round < rounds; round++) {
        const customId = `crm-${randomUUID().slice(0, 8)}`;
        const record = { eventId, customId, firstName: 'Grace', email: 'grace@example.com' };
        const replies = await Promise.all([0, 1].map(() => alice.call('POST', '/checkin/v1/api/guest', record)));
        expect(replies.map((r) => r.status), JSON.stringify(replies.map((r) => r.body))).toEqual([200, 200]);
        expect(replies[0]!.body.id).toBe(replies[1]!.body.id);
        expect(await guestsWith(customId)).toHaveLength(1);
      }
    });

    it('with other content: exactly one 200, the other 409 custom_id_taken, never two guests', async () => {
      for (let round = 0; round < rounds; round++) {
        const customId = `crm-${randomUUID().slice(0, 8)}`;
        const replies = await Promise.all(['Grace', 'Alan'].map((firstName) => alice.call('POST', '/checkin/v1/api/guest', { eventId, customId, firstName })));
        expect(replies.map((r) => r.status).sort()).toEqual([200, 409]);
        expect(replies.find((r) => r.status === 409)!.body.code).toBe('custom_id_taken');
        const found = await guestsWith(customId);
        expect(found).toHaveLength(1);
        expect(found[0]!.id).toBe(replies.find((r) => r.status === 200)!.body.id);
      }
    });
  });
  describe('the door, comms and the domain under concurrent calls (pinned as they are)', () => {
    it('three devices scanning one guest at once: exactly one admission, the others already_admitted', async () => {
      for (let round = 0; round < rounds; round++) {
        const barcode = `door-${randomUUID().slice(0, 8)}`;
        expect((await alice.call('POST', '/checkin/v1/api/guest', { eventId, barcode, firstName: 'Door' })).status).toBe(200);
        const scans = await Promise.all([0, 1, 2].map(() => alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode })));
        expect(scans.map((s) => s.status)).toEqual([200, 200, 200]);
        expect(scans.filter((s) => s.body.result === 'admitted')).toHaveLength(1);
        expect(scans.filter((s) => s.body.reason === 'already_admitted')).toHaveLength(2);
      }
    });

    it('a bulk block racing a scan of that guest: the guest ends blocked, and is admitted only if the scan came first', async () => {
      for (let round = 0; round < rounds; round++) {
        const barcode = `blk-${randomUUID().slice(0, 8)}`;
        const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId, barcode, firstName: 'Blocked' });
        const [blocked, scan] = await Promise.all([
          alice.call('POST', `/checkin/v1/api/guests/${eventId}/block`, { barcodes: [barcode], reason: 'unpaid' }),
          alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode }),
        ]);
        expect(blocked.status).toBe(200);
        const after = (await alice.call('GET', `/checkin/v1/api/guest/${guest.body.id}`)).body;
        expect(after.blockedReason).toBe('unpaid');
        if (scan.body.result === 'admitted') expect(after.admitted).toEqual(expect.any(String));
        else expect([scan.body.reason, after.admitted]).toEqual(['blocked', null]);
      }
    });

    it('one POST /send repeated at once with one Idempotency-Key: one invitation; the others 409 in progress or the first answer', async () => {
      const template = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hi</p>' });
      for (let round = 0; round < rounds; round++) {
        const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Mail', email: `mail${round}@example.com` });
        const key = { 'idempotency-key': randomUUID() };
        const body = { templateId: template.body.id, attendeeIds: [guest.body.id] };
        const replies = await Promise.all([0, 1, 2].map(() => alice.call('POST', '/comms/v1/api/comms/send', body, key)));
        const answered = replies.filter((r) => r.status === 200);
        expect(replies.every((r) => r.status === 200 || r.body.code === 'idempotency_key_in_progress')).toBe(true);
        expect(new Set(answered.map((r) => r.body.invitations[0].attendeeInvitationId)).size).toBe(1);
        const history = (await alice.call('GET', `/checkin/v1/api/guest/${guest.body.id}/history?limit=100`)).body.events as { type: string }[];
        expect(history.filter((e) => e.type === 'InvitationRequested')).toHaveLength(1);
      }
    });

    it('a domain configured twice at once: exactly one 200, the other 409 domain_already_configured', async () => {
      for (let round = 0; round < 4; round++) {
        const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
        const replies = await Promise.all(['a', 'b'].map((n) => client.call('POST', '/comms/v1/api/comms/domain', { domain: `${n}${round}.example.com` })));
        expect(replies.map((r) => r.status).sort()).toEqual([200, 409]);
        expect(replies.find((r) => r.status === 409)!.body.code).toBe('domain_already_configured');
      }
    });
  });
});
