/** Building blocks of the operations tests: an account with an event, a template and guests. */
import { expect } from 'vitest';
import { createClient, type Client } from './service.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

export const commsApi = '/comms/v1/api/comms';

export interface CommsSetup {
  client: Client;
  eventId: string;
  templateId: string;
}

export async function commsSetup(service: { url: string }): Promise<CommsSetup> {
  const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const event = await client.call('POST', '/checkin/v1/api/event', {
    title: 'Operations Night',
    startTime: '2026-12-12T18:00:00Z',
    endTime: '2026-12-12T23:00:00Z',
    timeZoneId: 'Europe/Amsterdam',
  });
  if (event.status !== 200) throw new Error(`event create: ${event.status} ${JSON.stringify(event.body)}`);
  const template = await client.call('POST', `${commsApi}/template`, {
    eventId: event.body.id,
    name: 'Ops invitation',
    subject: 'Welcome {{firstName}}',
    html: '<p>Dear {{fullName}}, your code: {{barcode}}</p>',
  });
  if (template.status !== 200) throw new Error(`template create: ${template.status} ${JSON.stringify(template.body)}`);
  return { client, eventId: event.body.id, templateId: template.body.id };
}

/**
 * Creates `count` guests with distinct emails, 200 a batch (the bulk limit); returns their ids.
 * The answer lists the guests the read models show once the write waited for them (2 s at most):
 * when the projections lag more (a loaded machine, a real read store), the ids come from the list.
 */
export async function addGuests(setup: CommsSetup, count: number, prefix = 'guest'): Promise<string[]> {
  let answered = 0;
  for (let start = 0; start < count; start += 200) {
    const batch = Array.from({ length: Math.min(200, count - start) }, (_, i) => ({
      firstName: `G${start + i}`,
      email: `${prefix}-${start + i}@example.com`,
    }));
    const reply = await setup.client.call('POST', `/checkin/v1/api/guests/${setup.eventId}`, batch);
    if (reply.status !== 200) throw new Error(`guests create: ${reply.status} ${JSON.stringify(reply.body).slice(0, 300)}`);
    answered += (reply.body as unknown[]).length;
  }
  return until(async () => {
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await setup.client.call('GET', `/checkin/v1/api/guests/${setup.eventId}?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      for (const guest of page.body.items as { id: string; email: string | null }[]) if (guest.email?.startsWith(`${prefix}-`)) ids.push(guest.id);
      cursor = page.body.nextCursor;
    } while (cursor);
    return ids.length === count ? ids : undefined;
  }, `${count} guests ${prefix}-* listed (${answered} in the create answers)`, 300_000);
}

/** Asks for one invitation per guest, 200 a request; returns the attendee invitation ids. */
export async function sendTo(setup: CommsSetup, attendeeIds: string[]): Promise<string[]> {
  const invitations: string[] = [];
  for (let start = 0; start < attendeeIds.length; start += 200) {
    const reply = await setup.client.call('POST', `${commsApi}/send`, { templateId: setup.templateId, attendeeIds: attendeeIds.slice(start, start + 200) });
    if (reply.status !== 200) throw new Error(`send: ${reply.status} ${JSON.stringify(reply.body).slice(0, 300)}`);
    invitations.push(...(reply.body.invitations as { attendeeInvitationId: string }[]).map((i) => i.attendeeInvitationId));
  }
  return invitations;
}

/** Polls `probe` until it returns a value (hang guard: `timeoutMs`). */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (last error: ${(last as Error).message})` : ''}`);
}

/**
 * A new account with a webhook receiver (added to `receivers`, for closing), an event, a template,
 * and one guest invited by it at `email`: the send starts as the guest is created.
 */
export async function invitedGuest(service: { url: string }, email: string, receivers: Receiver[]): Promise<{ client: Client; receiver: Receiver; guestId: string }> {
  const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const receiver = await startReceiver();
  receivers.push(receiver);
  receiver.secret = (await client.call('POST', `${commsApi}/webhook`, { url: receiver.url })).body.secret;
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Expo', startTime: '2026-12-01T09:00:00Z', endTime: '2026-12-01T17:00:00Z' });
  const template = await client.call('POST', `${commsApi}/template`, { eventId: event.body.id, name: 'Pass', subject: 'Your pass', html: '<p>Hello {{firstName}}</p>' });
  const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId: event.body.id, firstName: 'Ann', email, commsTemplateId: template.body.id });
  expect(guest.status).toBe(200);
  return { client, receiver, guestId: guest.body.id };
}
