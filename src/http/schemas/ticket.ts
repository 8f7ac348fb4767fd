import { z } from 'zod';
import { registry } from '../openapi.js';
import { DateTime, PageQuery, Timestamp } from './common.js';
import { ex } from './example-values.js';

/** Issue 16: signed tickets (docs/tickets.md). */

const exampleKeyId = '9c41e07a';
const exampleCode = 'T1.AZxB4HoAAT8rjB5dSk57nB0qO0xdbn8dYB8b7pZQ2X3k0TnP8jQb3xq8l6hVu1n9xv3aX7ZxGQ0jU9QmQk8J2s6tLh4bV1Nw5rR8cE3yT6uI0oP2aS4dF6gH8jK0lZ';

const TicketKey = z.object({
  keyId: z.string().openapi({ description: 'Key id (8 hex digits); bytes 1-4 of a ticket code name it' }),
  algorithm: z.literal('Ed25519'),
  publicKeyJwk: z
    .object({ kty: z.literal('OKP'), crv: z.literal('Ed25519'), x: z.string() })
    .openapi({ description: 'The public key as a JWK (RFC 8037); `x` is the raw 32-byte key, base64url' }),
  status: z.enum(['current', 'retired']).openapi({ description: '`current` signs new tickets; a `retired` key still verifies until `verifiesUntil`' }),
  createdAt: Timestamp,
  retiredAt: Timestamp.optional(),
  verifiesUntil: z.string().optional().openapi({ description: 'For a retired key: the end of the event; after it the key verifies nothing' }),
});

export const TicketKeysResponse = registry.register(
  'TicketKeys',
  z
    .object({
      eventId: z.string(),
      keys: z.array(TicketKey).openapi({ description: 'Oldest first; empty until the event’s first ticket is issued. Never any private key.' }),
    })
    .openapi({
      example: {
        eventId: ex.eventId,
        keys: [
          {
            keyId: exampleKeyId,
            algorithm: 'Ed25519',
            publicKeyJwk: { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' },
            status: 'current',
            createdAt: ex.created,
          },
        ],
      },
    }),
);

export const TicketResponse = registry.register(
  'Ticket',
  z
    .object({
      guestId: z.string(),
      eventId: z.string(),
      code: z.string().openapi({ description: 'What the guest shows at the door (check-in `barcode`) and what {{qrCode}} draws' }),
      kind: z.enum(['barcode', 'signed']).openapi({ description: '`barcode`: the guest’s own barcode; `signed`: a ticket the service issued' }),
      keyId: z.string().optional(),
      serial: z.number().int().optional().openapi({ description: '1 for the first ticket, one more on every reissue' }),
      issuedAt: Timestamp.optional(),
    })
    .openapi({
      example: { guestId: ex.guestId, eventId: ex.eventId, code: exampleCode, kind: 'signed', keyId: exampleKeyId, serial: 2, issuedAt: ex.created },
    }),
);

export const TicketSyncQuery = PageQuery.extend({
  changedSince: DateTime.optional().openapi({ description: 'Offline sync: only guests changed after this time (the newest `updated` of the last sync)' }),
});

export const TicketSyncItem = registry.register(
  'TicketSyncItem',
  z
    .object({
      guestId: z.string(),
      kind: z.enum(['signed', 'barcode', 'none']).openapi({
        description: '`signed`: only the signed ticket with this `serial` admits (older serials are revoked); `barcode`: the guest’s own barcode; `none`: no code admits (revoked)',
      }),
      code: z.string().optional(),
      keyId: z.string().optional(),
      serial: z.number().int().optional(),
      barcode: z.string().optional().openapi({
        description: '`signed` only: the guest’s own barcode, given after its ticket was issued; it admits too (and is what its invitation draws)',
      }),
      updated: Timestamp.openapi({ description: 'The guest’s last change; the newest one is the next `changedSince`' }),
    })
    .openapi({ example: { guestId: ex.guestId, kind: 'signed', code: exampleCode, keyId: exampleKeyId, serial: 2, updated: ex.created } }),
);
