/**
 * A guest's registration builds its document in place (src/projections/guests.ts, for the import's
 * CPU): the document and its JSON text, key order included, stay what the spread of an object per
 * lower-cased key made, and the event's data is not changed.
 */
import { describe, expect, it } from 'vitest';
import { guestsProjection } from '../../src/projections/guests.js';
import type { StoredEvent } from '../../src/adapters/eventstore/port.js';

const registered = (data: Record<string, unknown>): StoredEvent =>
  ({
    id: 'e1',
    type: 'GuestRegistered',
    streamName: 'guest-client:g1',
    revision: 0,
    position: 1,
    recordedAt: '2026-12-07T10:00:00.000Z',
    data,
    metadata: { occurredAt: '2026-12-07T10:00:00.000Z', tenantId: 'client' },
  }) as unknown as StoredEvent;

describe('a registered guest’s document', () => {
  it('holds every field in the order the stored JSON text has always had', () => {
    const data = {
      guestId: 'g1', clientId: 'client', eventId: 'ev', firstName: 'Ädä', lastName: 'LOVELACE', otherNames: 'Augusta', email: 'Ada@Example.com',
      barcode: ' BC-1 ', customId: ' CRM-1 ', additionalInfo: 'Vegan', plusOnes: 1, tags: ['VIP', 'b'], guestIdAsSent: 'G1',
    };
    const before = JSON.stringify(data);
    const [op] = guestsProjection.apply(registered(data)) as Array<{ kind: string; doc: Record<string, unknown> }>;
    expect(op!.kind).toBe('replace');
    expect(JSON.stringify(op!.doc)).toBe(
      '{"guestId":"g1","clientId":"client","eventId":"ev","firstName":"Ädä","lastName":"LOVELACE","otherNames":"Augusta","email":"Ada@Example.com",' +
        '"barcode":" BC-1 ","customId":" CRM-1 ","additionalInfo":"Vegan","plusOnes":1,"guestIdAsSent":"G1",' +
        '"lastNameLower":"lovelace","firstNameLower":"ädä","otherNamesLower":"augusta","emailLower":"ada@example.com","customIdLower":"crm-1",' +
        '"additionalInfoLower":"vegan","barcodeTrimmed":"BC-1","tags":"VIP,b","tagList":["vip","b"],"admittedPlusOnes":0,"inside":false,' +
        '"created":"2026-12-07T10:00:00.000Z","updated":"2026-12-07T10:00:00.000Z"}',
    );
    // The event (which the store may share with other readers) is left as it was.
    expect(JSON.stringify(data)).toBe(before);
    expect(op!.doc).not.toBe(data);
  });

  it('without tags or text fields: no tags, no lower-cased keys', () => {
    const data = { guestId: 'g2', clientId: 'client', eventId: 'ev', plusOnes: 0, tags: [] };
    const [op] = guestsProjection.apply(registered(data)) as Array<{ doc: Record<string, unknown> }>;
    expect(JSON.stringify(op!.doc)).toBe(
      '{"guestId":"g2","clientId":"client","eventId":"ev","plusOnes":0,"tagList":[],"admittedPlusOnes":0,"inside":false,"created":"2026-12-07T10:00:00.000Z","updated":"2026-12-07T10:00:00.000Z"}',
    );
    expect(data).toEqual({ guestId: 'g2', clientId: 'client', eventId: 'ev', plusOnes: 0, tags: [] });
  });
});
