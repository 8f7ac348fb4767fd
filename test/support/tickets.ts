import { expect } from 'vitest';
import { newEvent, type Client } from './service.js';

/** An event that ends long after today, so its signed tickets stay valid whenever the tests run. */
export const newTicketEvent = (client: Client): Promise<string> => newEvent(client, { title: 'Gala', endTime: '2099-12-12T23:00:00Z' });

/** A guest of `eventId` (Ann Lee, `fields` on top) and its signed ticket code. */
export async function newTicketedGuest(client: Client, eventId: string, fields: Record<string, unknown> = {}): Promise<{ id: string; code: string }> {
  const reply = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', lastName: 'Lee', ...fields });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  const ticket = await client.call('GET', `/checkin/v1/api/guest/${reply.body.id}/ticket`);
  return { id: reply.body.id, code: ticket.body.code };
}
