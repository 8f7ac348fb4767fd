import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import { handleCommand } from '../../src/commands/handle-command.js';
import { recordProviderReports } from '../../src/commands/invitations.js';
import type { Services } from '../../src/commands/services.js';
import { invitationDecider, invitationStream } from '../../src/domain/invitation.js';
import { systemClock } from '../../src/shared/clock.js';
import { loggedLines } from '../support/log-lines.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';

/**
 * SendGrid's Event Webhook as SendGrid posts it (Event Webhook reference, "Troubleshooting the Event
 * Webhook"): batches of events, which may arrive out of order and more than once, retried for 24 hours
 * only when the answer is not 2xx.
 */
const api = '/comms/v1/api/comms';
const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const sendgridKey = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: sendgridKey });
});
afterAll(async () => {
  await service.close();
});

function postEvents(events: unknown[]) {
  return postSendGridEvents(service.url, privateKey, events);
}

/** A guest sent an invitation (through the outbox): its client, id and attendeeInvitationId. */
async function sentInvitation(email: string): Promise<{ client: Client; guestId: string; invitationId: string }> {
  const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' });
  const template = await client.call('POST', `${api}/template`, { eventId: event.body.id, name: 'Invite', html: '<p>Dear {{firstName}}</p>' });
  const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId: event.body.id, firstName: 'Ana', email, commsTemplateId: template.body.id });
  const invitation = await eventually(async () => {
    const [item] = (await client.call('GET', `${api}/invitations?attendeeId=${guest.body.id}`)).body.items;
    return item?.status === 'sent' ? item : undefined;
  }, 60_000, 'invitation sent');
  return { client, guestId: guest.body.id, invitationId: invitation.attendeeInvitationId };
}

async function historyOf(client: Client, guestId: string, steps: number) {
  return eventually(async () => {
    const [item] = (await client.call('GET', `${api}/invitations?attendeeId=${guestId}`)).body.items;
    return item.history.filter((h: { type: string }) => ['delivered', 'opened', 'bounced'].includes(h.type)).length === steps ? item : undefined;
  }, 15_000, `${steps} provider reports in the history`);
}

describe('SendGrid events out of order', () => {
  it('an open, or a bounce, posted before its delivered stays the providerStatus; the late delivered is still recorded', async () => {
    const at = Math.floor(Date.now() / 1000);
    const opened = await sentInvitation('opened-first@example.com');
    const openedReport = { email: 'opened-first@example.com', attendeeInvitationId: opened.invitationId };
    // SendGrid posts the open's batch first; the delivered (a second earlier) comes in a later batch.
    expect((await postEvents([{ ...openedReport, event: 'open', timestamp: at + 1, sg_event_id: `o-${randomUUID()}` }])).status).toBe(200);
    expect((await postEvents([{ ...openedReport, event: 'delivered', timestamp: at, sg_event_id: `d-${randomUUID()}` }])).status).toBe(200);
    const afterOpen = await historyOf(opened.client, opened.guestId, 2);
    expect(afterOpen.providerStatus).toBe('opened');
    expect(afterOpen.opens).toBe(1);

    const bounced = await sentInvitation('bounced-first@example.com');
    const bouncedReport = { email: 'bounced-first@example.com', attendeeInvitationId: bounced.invitationId };
    expect(
      (
        await postEvents([
          { ...bouncedReport, event: 'bounce', type: 'bounce', reason: '550 5.1.1 no such user', timestamp: at + 60, sg_event_id: `b-${randomUUID()}` },
          { ...bouncedReport, event: 'delivered', timestamp: at, sg_event_id: `d-${randomUUID()}` },
        ])
      ).status,
    ).toBe(200);
    const afterBounce = await historyOf(bounced.client, bounced.guestId, 2);
    expect(afterBounce.providerStatus).toBe('bounced');
    expect(afterBounce.history.map((h: { type: string }) => h.type)).toContain('delivered');
  });
});

describe('SendGrid events for an invitation the read model does not show yet', () => {
  it('are recorded from the invitation stream, not answered 200 as unknown (SendGrid would never post them again)', async () => {
    const eventStore = new SqliteEventStore(':memory:', { pollIntervalMs: 20 });
    const readStore = new EmbeddedReadStore(':memory:');
    try {
      // No projections run: the read models lag the event store, as during a rebuild.
      const services: Services = { eventStore, readStore, clock: systemClock, logger: loggedLines().logger, readYourWrites: async () => {} };
      const invitationId = randomUUID();
      const ids = { attendeeInvitationId: invitationId, clientId: 'client-1', attendeeId: randomUUID(), eventId: 'gala', templateId: randomUUID() };
      const context = { tenantId: 'client-1', actor: { type: 'system' as const, id: 'test' }, correlationId: invitationId, now: new Date() };
      await handleCommand(eventStore, invitationDecider, invitationStream(invitationId), { type: 'RequestSend', ids, at: new Date().toISOString() }, context);
      const report = { attendeeInvitationId: invitationId, event: 'bounced' as const, providerEventId: 'sg-b-1', email: 'ana@example.com', at: new Date().toISOString() };

      expect(await recordProviderReports(services, [report])).toEqual({ recorded: 1, ignored: 0 });
      const stream = await eventStore.readStream(invitationStream(invitationId));
      expect(stream.map((e) => e.type)).toEqual(['SendRequested', 'ProviderEventReceived']);
      expect(stream[1]!.metadata.tenantId).toBe('client-1');
      // SendGrid's retry of the same batch records nothing twice; an invitation nobody requested is ignored.
      expect(await recordProviderReports(services, [report, { ...report, attendeeInvitationId: randomUUID(), providerEventId: 'sg-x' }])).toEqual({ recorded: 0, ignored: 1 });
    } finally {
      await readStore.close();
      await eventStore.close();
    }
  });
});
