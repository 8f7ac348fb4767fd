/**
 * An erasure while the guest's invitation is being handed to the embedded outbox: the send worker
 * read the address before the erasure and writes the `.eml` after the erasure cleaned the outbox.
 * The file must not stay (issue 14, item 2: the guest's email appears nowhere in DATA_DIR).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppendResult, EventStore, NewEvent } from '../../src/adapters/eventstore/port.js';
import { startTestService, type TestService } from '../support/service.js';
import { invitedGuest } from '../support/flows.js';
import { filesHolding } from '../support/files-holding.js';
import { eventually, type Receiver } from '../webhooks/receiver.js';

let service: TestService;
const receivers: Receiver[] = [];
/** Holds the send worker right after it recorded the start of its attempt (SendStarted), until released. */
let hold: { reached: () => void; release: Promise<void> } | undefined;

function holdingAfterSendStarted(inner: EventStore): EventStore {
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property !== 'append') return Reflect.get(target, property, receiver);
      return async (streamName: string, events: NewEvent[], expected: Parameters<EventStore['append']>[2]): Promise<AppendResult> => {
        const result = await target.append(streamName, events, expected);
        const held = hold;
        if (held && events.some((event) => event.type === 'SendStarted')) {
          hold = undefined;
          held.reached();
          await held.release;
        }
        return result;
      };
    },
  });
}

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true' }, { wrapEventStore: holdingAfterSendStarted });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service?.close();
});

describe('a guest erased while its invitation is being written to the outbox', () => {
  it('leaves no .eml with the guest’s address: the worker removes the file it wrote after the erasure', async () => {
    let release!: () => void;
    const reached = new Promise<void>((resolve) => {
      hold = { reached: resolve, release: new Promise<void>((r) => (release = r)) };
    });
    const email = `erased.mid.send.${Date.now()}@example.com`;
    const { client, guestId } = await invitedGuest(service, email, receivers);
    await reached; // the worker has the address and is about to hand the email over
    const erased = await client.call('POST', `/checkin/v1/api/guest/${guestId}/erase`, { reason: 'art. 17' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    release();
    // Hang guard only, far above any real figure: the attempt ends with the email handed over.
    const invitation = await eventually(async () => {
      const [item] = (await client.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${guestId}`)).body.items;
      return item?.status === 'sent' ? item : undefined;
    }, 30_000, 'invitation sent');
    expect(invitation.status).toBe('sent');
    expect(filesHolding(path.join(service.dataDir, 'outbox'), [email])).toEqual([]);
  });
});
