import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

/** The custom sending domain over HTTP, with the real @sendgrid/client against the SendGrid double. */
const api = '/comms/v1/api/comms';
let service: TestService;
let sendgrid: SendGridDouble;

beforeAll(async () => {
  sendgrid = await startSendGridDouble();
  service = await startTestService({
    SENDGRID_API_KEY: sendgrid.apiKey,
    SENDGRID_BASE_URL: sendgrid.url,
    INVITES_SENDING_ADDRESS: 'invites@checkin.test',
  });
});
afterAll(async () => {
  await service.close();
  await sendgrid.close();
});

const commsClient = () => createClient(service, { commsApiEnabled: true, senderTrusted: true });

/** Creates a guest with a template naming no From, and returns the From its email went out with. */
async function fromOfNextSend(client: Client, email: string): Promise<string> {
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Fair', startTime: '2026-12-01T09:00:00Z', endTime: '2026-12-01T17:00:00Z' });
  const template = await client.call('POST', `${api}/template`, { eventId: event.body.id, name: 'Invite', html: '<p>Hi {{firstName}}</p>' });
  await client.call('POST', '/checkin/v1/api/guest', { eventId: event.body.id, firstName: 'Mo', email, commsTemplateId: template.body.id });
  return eventually(async () => sendgrid.accepted.find((a) => a.body.personalizations[0]!.to[0]!.email === email)?.body.from.email, 60_000, `mail to ${email}`);
}

describe('custom sending domain (spec: Domain authentication record, Comms rule 5)', () => {
  it('walks the states: configure, verify (first success enables), deactivate, activate without re-verifying', async () => {
    const client = await commsClient();
    expect((await client.call('GET', `${api}/domain`)).status).toBe(404);

    const created = await client.call('POST', `${api}/domain`, { domain: 'Events.Example.com' });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ id: expect.any(String), domain: 'events.example.com', valid: false, enableCustomDomain: false, sendingAddress: 'invites@events.example.com' });
    expect(created.body.dnsRecords.length).toBeGreaterThan(0);
    expect(created.body.dnsRecords.every((r: { valid: boolean; host: string }) => r.valid === false && r.host.endsWith('events.example.com'))).toBe(true);
    expect((await client.call('GET', `${api}/domain`)).body).toEqual(created.body);

    const again = await client.call('POST', `${api}/domain`, { domain: 'other.example.com' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('domain_already_configured');

    const early = await client.call('POST', `${api}/domain/activate`);
    expect(early.status).toBe(409);
    expect(early.body.code).toBe('domain_not_verified');

    const unpublished = await client.call('POST', `${api}/domain/verify`);
    expect(unpublished.body).toMatchObject({ valid: false, enableCustomDomain: false });
    expect(await fromOfNextSend(client, 'before@example.com')).toBe('invites@checkin.test');

    sendgrid.publishDns(created.body.id);
    const verified = await client.call('POST', `${api}/domain/verify`);
    expect(verified.body).toMatchObject({ valid: true, enableCustomDomain: true, lastVerifiedAt: expect.any(String) });
    expect(verified.body.dnsRecords.every((r: { valid: boolean }) => r.valid)).toBe(true);
    expect(await fromOfNextSend(client, 'during@example.com')).toBe('invites@events.example.com');

    const off = await client.call('POST', `${api}/domain/deactivate`);
    expect(off.body).toMatchObject({ valid: true, enableCustomDomain: false });
    expect(off.body.dnsRecords).toEqual(verified.body.dnsRecords);
    expect(await fromOfNextSend(client, 'after@example.com')).toBe('invites@checkin.test');

    const on = await client.call('POST', `${api}/domain/activate`);
    expect(on.body).toMatchObject({ enableCustomDomain: true });
    const history = await service.platform.eventStore.readStream(`domain-${client.id}`);
    expect(history.map((e) => e.type)).toEqual([
      'DomainConfigured',
      'DomainVerificationChecked',
      'DomainVerificationChecked',
      'CustomDomainActivated',
      'CustomDomainDeactivated',
      'CustomDomainActivated',
    ]);
  });

  it('answers a provider refusal with 422 sendgrid_create_failed and its message, storing nothing', async () => {
    const client = await commsClient();
    sendgrid.failNext(400, 'domain is not a valid domain name');
    const refused = await client.call('POST', `${api}/domain`, { domain: 'example.org' });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ code: 'sendgrid_create_failed', message: expect.stringContaining('not a valid domain') });
    expect(JSON.stringify(refused.body)).not.toContain(sendgrid.apiKey);
    expect((await client.call('GET', `${api}/domain`)).status).toBe(404);
  });

  it('answers a provider that is down with 503, storing nothing', async () => {
    const client = await commsClient();
    sendgrid.failNext(503);
    const down = await client.call('POST', `${api}/domain`, { domain: 'down.example.org' });
    expect(down.status).toBe(503);
    expect((await client.call('GET', `${api}/domain`)).status).toBe(404);
  });

  it('refuses a sending address outside the domain (400)', async () => {
    const client = await commsClient();
    const reply = await client.call('POST', `${api}/domain`, { domain: 'mine.example.net', sendingAddress: 'me@elsewhere.example' });
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([{ path: 'sendingAddress', message: expect.stringContaining('mine.example.net') }]);
  });

  it('keeps each client’s domain to itself, and needs comms access', async () => {
    const owner = await commsClient();
    const other = await commsClient();
    await owner.call('POST', `${api}/domain`, { domain: 'owner.example.com' });
    expect((await other.call('GET', `${api}/domain`)).status).toBe(404);
    expect((await other.call('POST', `${api}/domain/deactivate`)).status).toBe(404);
    const closed = await createClient(service);
    expect((await closed.call('GET', `${api}/domain`)).body.code).toBe('comms_api_not_enabled');
  });

  it('keeps a domain one account verified to it: no other account configures, verifies or sends from it', async () => {
    const owner = await commsClient();
    const squatter = await commsClient();
    // Claimed before the owner verifies (a domain under the owner's): an unverified claim blocks no one.
    const theirs = await squatter.call('POST', `${api}/domain`, { domain: 'mail.verified-owner.example.org' });
    expect(theirs.status).toBe(200);
    const mine = await owner.call('POST', `${api}/domain`, { domain: 'verified-owner.example.org' });
    sendgrid.publishDns(mine.body.id);
    expect((await owner.call('POST', `${api}/domain/verify`)).body).toMatchObject({ valid: true });

    // The owner's proof of DNS control wins from now on, whatever the provider would say.
    sendgrid.publishDns(theirs.body.id);
    const verify = await squatter.call('POST', `${api}/domain/verify`);
    expect(verify.status).toBe(409);
    expect(verify.body).toMatchObject({ code: 'domain_in_use', message: expect.stringContaining('verified-owner.example.org') });
    expect((await squatter.call('GET', `${api}/domain`)).body).toMatchObject({ valid: false, enableCustomDomain: false });
    const late = await commsClient();
    const configure = await late.call('POST', `${api}/domain`, { domain: 'news.verified-owner.example.org' });
    expect(configure.status).toBe(409);
    expect(configure.body.code).toBe('domain_in_use');

    // A template From at the owner's domain (or under it) is refused for anyone else, kept for the owner.
    const event = await squatter.call('POST', '/checkin/v1/api/event', { title: 'Fair', startTime: '2026-12-01T09:00:00Z', endTime: '2026-12-01T17:00:00Z' });
    for (const fromAddress of ['ceo@verified-owner.example.org', 'ceo@News.Verified-Owner.example.org']) {
      const spoof = await squatter.call('POST', `${api}/template`, { eventId: event.body.id, name: 'Invite', html: '<p>Hi</p>', fromAddress });
      expect(spoof.status).toBe(400);
      expect(spoof.body.errors).toEqual([{ path: 'fromAddress', message: expect.stringContaining('verified-owner.example.org') }]);
    }
    const ownEvent = await owner.call('POST', '/checkin/v1/api/event', { title: 'Fair', startTime: '2026-12-01T09:00:00Z', endTime: '2026-12-01T17:00:00Z' });
    const own = await owner.call('POST', `${api}/template`, { eventId: ownEvent.body.id, name: 'Invite', html: '<p>Hi</p>', fromAddress: 'ceo@verified-owner.example.org' });
    expect(own.status).toBe(200);
  });

  it('fails a send whose template From is at a domain another account verified after the template was made', async () => {
    const owner = await commsClient();
    const sender = await commsClient();
    const event = await sender.call('POST', '/checkin/v1/api/event', { title: 'Fair', startTime: '2026-12-01T09:00:00Z', endTime: '2026-12-01T17:00:00Z' });
    const template = await sender.call('POST', `${api}/template`, { eventId: event.body.id, name: 'Invite', html: '<p>Hi</p>', fromAddress: 'news@later-owner.example.org' });
    expect(template.status).toBe(200);
    const domain = await owner.call('POST', `${api}/domain`, { domain: 'later-owner.example.org' });
    sendgrid.publishDns(domain.body.id);
    expect((await owner.call('POST', `${api}/domain/verify`)).body).toMatchObject({ valid: true });

    const guest = await sender.call('POST', '/checkin/v1/api/guest', { eventId: event.body.id, firstName: 'Mo', email: 'mo@example.com', commsTemplateId: template.body.id });
    const failed = await eventually(async () => {
      const list = await sender.call('GET', `${api}/invitations?attendeeId=${guest.body.id}`);
      const item = (list.body.items as { status: string; error?: string }[] | undefined)?.find((i) => i.status === 'failed');
      return item;
    }, 60_000, 'the failed invitation');
    expect(failed.error).toMatch(/^from_address_not_allowed/);
    expect(sendgrid.accepted.some((a) => a.body.from.email === 'news@later-owner.example.org')).toBe(false);
  });
});
