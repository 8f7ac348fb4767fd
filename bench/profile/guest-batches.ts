/**
 * The events an upsert of 200 new guests appends, for the codec benches (codec-cpu.ts, codec-import.ts):
 * a GuestRegistered in a stream of its own and a KeyReserved under an HMAC-named reservation (or the
 * legacy name with the customId in it, RESERVATION_NAMES=legacy), per guest.
 */
import { randomBytes } from 'node:crypto';
import type { NewEvent, StreamAppend } from '../../src/adapters/eventstore/port.js';
import { guestStream } from '../../src/domain/guest.js';
import { newSortableId } from '../../src/shared/ids.js';

export const benchClient = '7bf5afb6-3eb6-4af8-86e2-3c8beb9f0845';
export const benchEventId = 'fb289026-2f1f-4383-aa68-14a5e96cd52b';

/** Guests `start` to `start + 199`. */
export function guestBatch(start: number): StreamAppend[] {
  const client = benchClient;
  const eventId = benchEventId;
  const metadata = { tenantId: client, actor: { type: 'client', id: client }, correlationId: newSortableId(), occurredAt: new Date().toISOString() } as unknown as NewEvent['metadata'];
  const appends: StreamAppend[] = [];
  for (let k = 0; k < 200; k++) {
    const i = start + k;
    const guestId = newSortableId();
    const data = { guestId, eventId, clientId: client, firstName: `First${i % 997}`, lastName: `Last${i % 1009}`, email: `guest${i}@example.com`, plusOnes: i % 3, additionalInfo: 'Table 12', barcode: `BC-${i}`, customId: `crm-${i}`, createdBy: client, tags: [] };
    appends.push({ streamName: guestStream(client, guestId), events: [{ id: newSortableId(), type: 'GuestRegistered', data, metadata }], expectedRevision: 'no_stream' });
    appends.push({
      streamName: process.env.RESERVATION_NAMES === 'legacy' ? `guestcustomid-${client}:${eventId}:crm-${i}` : `guestcustomid-${client}:${eventId}:#n1.${randomBytes(32).toString('base64url')}`,
      events: [{ id: newSortableId(), type: 'KeyReserved', data: { ownerType: 'guest', ownerId: guestId }, metadata }],
      expectedRevision: 'no_stream',
    });
  }
  return appends;
}
