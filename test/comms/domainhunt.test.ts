import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSendGridDouble, type SendGridDouble } from '../support/sendgrid-double.js';
import { createClient, startTestService, type TestService } from '../support/service.js';

/** The custom sending domain against SendGrid's domain authentication API as it behaves (the double). */
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
const heldAtSendGrid = (domain: string) => [...sendgrid.domains.values()].filter((d) => d.domain === domain);

describe('custom sending domain against SendGrid as it behaves', () => {
  it('adopts the domain a create whose answer was lost left at SendGrid, so the retry succeeds instead of 422', async () => {
    const client = await commsClient();
    sendgrid.loseNextAnswer(502);
    const lost = await client.call('POST', `${api}/domain`, { domain: 'lost.example.com', subdomain: 'mail' });
    expect(lost.status).toBe(503);
    expect(heldAtSendGrid('lost.example.com')).toHaveLength(1); // SendGrid created it anyway

    const retry = await client.call('POST', `${api}/domain`, { domain: 'lost.example.com', subdomain: 'mail' });
    expect(retry.status).toBe(200);
    const [atSendGrid] = heldAtSendGrid('lost.example.com');
    expect(retry.body).toMatchObject({ id: String(atSendGrid!.id), domain: 'lost.example.com', subdomain: 'mail' });
    expect(retry.body.dnsRecords.map((r: { host: string }) => r.host)).toContain('mail.lost.example.com');
    expect(heldAtSendGrid('lost.example.com')).toHaveLength(1);

    sendgrid.publishDns(atSendGrid!.id);
    expect((await client.call('POST', `${api}/domain/verify`)).body).toMatchObject({ valid: true, enableCustomDomain: true });
    const history = await service.platform.eventStore.readStream(`domain-${client.id}`);
    expect(history.map((e) => e.type)).toEqual(['DomainCreateUnanswered', 'DomainConfigured', 'DomainVerificationChecked', 'CustomDomainActivated']);
  });

  it('never adopts what another client’s unanswered create left: that retry is the other client’s (422)', async () => {
    const first = await commsClient();
    sendgrid.loseNextAnswer(504);
    expect((await first.call('POST', `${api}/domain`, { domain: 'orphan.example.com', subdomain: 'mail' })).status).toBe(503);
    const second = await commsClient();
    const refused = await second.call('POST', `${api}/domain`, { domain: 'orphan.example.com', subdomain: 'Mail' });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('sendgrid_create_failed');
    expect((await second.call('GET', `${api}/domain`)).status).toBe(404);
    expect((await first.call('POST', `${api}/domain`, { domain: 'orphan.example.com', subdomain: 'mail' })).status).toBe(200);
  });

  it('still refuses (422) a domain and subdomain another client holds, without taking it over', async () => {
    const owner = await commsClient();
    const mine = await owner.call('POST', `${api}/domain`, { domain: 'held.example.com', subdomain: 'mail' });
    expect(mine.status).toBe(200);
    const other = await commsClient();
    const refused = await other.call('POST', `${api}/domain`, { domain: 'held.example.com', subdomain: 'mail' });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ code: 'sendgrid_create_failed', message: expect.stringContaining('already exists') });
    expect((await other.call('GET', `${api}/domain`)).status).toBe(404);
  });

  it('does not adopt an authentication already validated at SendGrid (someone’s working one): 422, nothing stored', async () => {
    // Made and validated in the shared SendGrid account outside this service (the operator's own, say).
    const headers = { authorization: `Bearer ${sendgrid.apiKey}`, 'content-type': 'application/json' };
    const made = await fetch(`${sendgrid.url}/v3/whitelabel/domains`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ domain: 'operator.example.com', subdomain: 'mail', automatic_security: true }),
    });
    const { id } = (await made.json()) as { id: number };
    sendgrid.publishDns(id);
    expect((await fetch(`${sendgrid.url}/v3/whitelabel/domains/${id}/validate`, { method: 'POST', headers })).status).toBe(200);

    const client = await commsClient();
    sendgrid.loseNextAnswer(502); // the client's own create went unanswered too
    expect((await client.call('POST', `${api}/domain`, { domain: 'operator.example.com', subdomain: 'mail' })).status).toBe(503);
    const taken = await client.call('POST', `${api}/domain`, { domain: 'operator.example.com', subdomain: 'mail' });
    expect(taken.status).toBe(422);
    expect(taken.body.code).toBe('sendgrid_create_failed');
    expect((await client.call('GET', `${api}/domain`)).status).toBe(404);
  });

  it('answers SendGrid refusing our API key (403, no whitelabel scope) as a service fault (503), not as the client’s domain refused (422)', async () => {
    const client = await commsClient();
    sendgrid.failNext(403, 'access forbidden');
    const create = await client.call('POST', `${api}/domain`, { domain: 'scopes.example.com' });
    expect(create.status).toBe(503);
    expect(create.body.code).toBe('provider_misconfigured');
    expect(create.body.code).not.toBe('sendgrid_create_failed');

    sendgrid.failNext(401);
    const again = await client.call('POST', `${api}/domain`, { domain: 'scopes.example.com' });
    expect(again.status).toBe(503);
    expect(again.body.code).toBe('provider_misconfigured');
    expect((await client.call('GET', `${api}/domain`)).status).toBe(404);
  });

  it('passes SendGrid’s rate limit (429, X-RateLimit-Reset) on to the client as Retry-After on the 503', async () => {
    const client = await commsClient();
    expect((await client.call('POST', `${api}/domain`, { domain: 'limited.example.com' })).status).toBe(200);
    sendgrid.failNext(429);
    const limited = await client.call('POST', `${api}/domain/verify`);
    expect(limited.status).toBe(503);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('reports a partly published domain as not valid, record by record, and does not enable it', async () => {
    const client = await commsClient();
    const created = await client.call('POST', `${api}/domain`, { domain: 'partial.example.com' });
    sendgrid.publishDns(Number(created.body.id), ['mail_cname', 'dkim1']);
    const checked = await client.call('POST', `${api}/domain/verify`);
    expect(checked.body).toMatchObject({ valid: false, enableCustomDomain: false });
    const byPurpose = Object.fromEntries(checked.body.dnsRecords.map((r: { purpose: string; valid: boolean }) => [r.purpose, r.valid]));
    expect(byPurpose).toEqual({ mail_cname: true, dkim1: true, dkim2: false });
    // SendGrid says why (validation_results.<purpose>.reason); the client sees it on that record only.
    const dkim2 = checked.body.dnsRecords.find((r: { purpose: string }) => r.purpose === 'dkim2');
    expect(dkim2.reason).toContain('s2._domainkey.partial.example.com');
    expect(checked.body.dnsRecords.filter((r: { reason?: string }) => r.reason !== undefined)).toHaveLength(1);
    expect((await client.call('POST', `${api}/domain/activate`)).body.code).toBe('domain_not_verified');
  });

  it('refuses (400) a sending address that is no email address, which SendGrid would refuse as the From of every send', async () => {
    const client = await commsClient();
    for (const sendingAddress of ['invites,ops', 'in"vites', 'invites..team', '.invites', 'in(v)ites@from.example.com']) {
      const refused = await client.call('POST', `${api}/domain`, { domain: 'from.example.com', sendingAddress });
      expect(refused.status, sendingAddress).toBe(400);
      expect(refused.body.errors[0].path, sendingAddress).toBe('sendingAddress');
    }
    expect((await client.call('GET', `${api}/domain`)).status).toBe(404);
    const fine = await client.call('POST', `${api}/domain`, { domain: 'from.example.com', sendingAddress: 'Guest.Desk+2026' });
    expect(fine.body.sendingAddress).toBe('guest.desk+2026@from.example.com');
  });

  it('publishes the 64-character bound of the sending address it enforces (RFC 5321), and names it when refusing', async () => {
    const document = await (await fetch(`${service.url}/openapi.json`)).json();
    const body = document.paths['/comms/v1/api/comms/domain'].post.requestBody.content['application/json'].schema;
    const schema = body.$ref ? document.components.schemas[body.$ref.split('/').pop()] : body;
    expect(schema.properties.sendingAddress.maxLength).toBe(64);
    const client = await commsClient();
    const refused = await client.call('POST', `${api}/domain`, { domain: 'from.example.com', sendingAddress: '0'.repeat(65) });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatchObject({ path: 'sendingAddress', message: expect.stringContaining('at most 64') });
    expect((await client.call('POST', `${api}/domain`, { domain: 'from.example.com', sendingAddress: '0'.repeat(64) })).status).toBe(200);
  });
});
