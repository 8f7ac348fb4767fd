import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedDomainAuthenticator, type DnsResolver } from '../../src/adapters/domains/embedded.js';
import type { AuthenticatedDomain, DnsRecord, DomainProviderError } from '../../src/adapters/domains/port.js';
import { SendGridDomainAuthenticator } from '../../src/adapters/domains/sendgrid.js';
import { domainsContract } from '../contract/domains.contract.js';
import { startSendGridDouble, type DnsPurpose, type SendGridDouble } from '../support/sendgrid-double.js';
import { refusedPort } from '../support/ports.js';

const doubles: SendGridDouble[] = [];
afterAll(async () => {
  await Promise.all(doubles.map((double) => double.close()));
});

// ---------------------------------------------------------------- embedded

/** DNS as the embedded adapter sees it: host → answers; a missing host is NXDOMAIN. */
class FakeDns implements DnsResolver {
  readonly cnames = new Map<string, string[]>();
  readonly txts = new Map<string, string[][]>();
  /** Hosts whose lookups fail with this code instead. */
  readonly failures = new Map<string, string>();

  publish(domain: AuthenticatedDomain, purposes?: string[]): void {
    for (const record of domain.records) {
      if (purposes && !purposes.includes(record.purpose)) continue;
      if (record.type === 'cname') this.cnames.set(record.host, [record.data]);
      if (record.type === 'txt') this.txts.set(record.host, [...(this.txts.get(record.host) ?? []), [record.data]]);
    }
  }

  async resolveCname(host: string): Promise<string[]> {
    return this.answer(host, this.cnames);
  }

  async resolveTxt(host: string): Promise<string[][]> {
    return this.answer(host, this.txts);
  }

  private answer<T>(host: string, answers: Map<string, T[]>): T[] {
    const failure = this.failures.get(host);
    if (failure) throw dnsError(failure, host);
    const found = answers.get(host);
    if (!found) throw dnsError(this.cnames.has(host) || this.txts.has(host) ? 'ENODATA' : 'ENOTFOUND', host);
    return found;
  }
}

/** The shape node:dns rejects with. */
function dnsError(code: string, host: string): Error {
  return Object.assign(new Error(`query ${code} ${host}`), { code, hostname: host });
}

domainsContract('embedded', async () => {
  const dns = new FakeDns();
  return { authenticator: new EmbeddedDomainAuthenticator({ resolver: dns }), publish: (domain, purposes) => dns.publish(domain, purposes) };
});

describe('embedded domain authenticator', () => {
  const record = (domain: AuthenticatedDomain, type: DnsRecord['type']) => domain.records.find((candidate) => candidate.type === type)!;

  it('generates a mail CNAME to the relay target and a TXT verification token, em#### by default', async () => {
    const created = await new EmbeddedDomainAuthenticator().create({ domain: 'Example.ORG' });

    expect(created.domain).toBe('example.org');
    expect(created.subdomain).toMatch(/^em\d{4}$/);
    expect(created.providerId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(created.records).toEqual([
      { purpose: 'mail_cname', type: 'cname', host: `${created.subdomain}.example.org`, data: expect.stringMatching(/^[a-z0-9]+\.mail\.checkin\.invalid$/), valid: false },
      { purpose: 'domain_verification', type: 'txt', host: '_checkin-verification.example.org', data: expect.stringMatching(/^checkin-domain-verification=[A-Za-z0-9]{32}$/), valid: false },
    ]);
  });

  it('points the mail CNAME at the configured target, and every domain gets its own token', async () => {
    const authenticator = new EmbeddedDomainAuthenticator({ target: 'relay.example.net' });
    const [one, two] = await Promise.all([authenticator.create({ domain: 'a.example.org' }), authenticator.create({ domain: 'a.example.org' })]);

    expect(record(one, 'cname').data).toMatch(/\.relay\.example\.net$/);
    expect(record(one, 'txt').data).not.toBe(record(two, 'txt').data);
    expect(one.providerId).not.toBe(two.providerId);
  });

  it('refuses a subdomain that is not a DNS label, permanently', async () => {
    await expect(new EmbeddedDomainAuthenticator().create({ domain: 'example.org', subdomain: 'a.b' })).rejects.toMatchObject({ name: 'DomainProviderError', permanent: true });
  });

  it('a CNAME answered in upper case with a trailing dot is valid', async () => {
    const dns = new FakeDns();
    const authenticator = new EmbeddedDomainAuthenticator({ resolver: dns });
    const created = await authenticator.create({ domain: 'example.org' });
    const cname = record(created, 'cname');
    dns.cnames.set(cname.host, [`${cname.data.toUpperCase()}.`]);

    expect(record(await authenticator.validate(created), 'cname').valid).toBe(true);
  });

  it('a CNAME pointing elsewhere is not valid', async () => {
    const dns = new FakeDns();
    const authenticator = new EmbeddedDomainAuthenticator({ resolver: dns });
    const created = await authenticator.create({ domain: 'example.org' });
    dns.cnames.set(record(created, 'cname').host, ['u1.wl.sendgrid.net']);

    expect(record(await authenticator.validate(created), 'cname').valid).toBe(false);
  });

  it('a TXT record split into chunks, among other TXT records, is valid', async () => {
    const dns = new FakeDns();
    const authenticator = new EmbeddedDomainAuthenticator({ resolver: dns });
    const created = await authenticator.create({ domain: 'example.org' });
    const txt = record(created, 'txt');
    dns.txts.set(txt.host, [['v=spf1 -all'], [txt.data.slice(0, 10), txt.data.slice(10)]]);

    expect(record(await authenticator.validate(created), 'txt').valid).toBe(true);
  });

  it('a TXT record that only starts with the token is not valid', async () => {
    const dns = new FakeDns();
    const authenticator = new EmbeddedDomainAuthenticator({ resolver: dns });
    const created = await authenticator.create({ domain: 'example.org' });
    const txt = record(created, 'txt');
    dns.txts.set(txt.host, [[`${txt.data}x`]]);

    expect(record(await authenticator.validate(created), 'txt').valid).toBe(false);
  });

  it.each(['ENOTFOUND', 'ENODATA', 'ETIMEOUT', 'ESERVFAIL'])('a lookup failing with %s leaves the record not valid, without an error', async (code) => {
    const dns = new FakeDns();
    const authenticator = new EmbeddedDomainAuthenticator({ resolver: dns });
    const created = await authenticator.create({ domain: 'example.org' });
    dns.publish(created);
    dns.failures.set(record(created, 'cname').host, code);

    const checked = await authenticator.validate(created);
    expect(checked.valid).toBe(false);
    expect(record(checked, 'cname').valid).toBe(false);
    expect(record(checked, 'txt').valid).toBe(true);
  });

  it('remove is a no-op', async () => {
    const authenticator = new EmbeddedDomainAuthenticator({ resolver: new FakeDns() });
    await expect(authenticator.remove(await authenticator.create({ domain: 'example.org' }))).resolves.toBeUndefined();
  });
});

// ---------------------------------------------------------------- sendgrid

async function startDouble(): Promise<SendGridDouble> {
  const double = await startSendGridDouble();
  doubles.push(double);
  return double;
}

const authenticatorFor = (double: SendGridDouble, options: { timeoutMs?: number } = {}) =>
  new SendGridDomainAuthenticator({ apiKey: double.apiKey, baseUrl: double.url, ...options });

domainsContract('sendgrid', async () => {
  const double = await startDouble();
  return {
    authenticator: authenticatorFor(double),
    publish: (domain, purposes) => double.publishDns(domain.providerId, purposes as DnsPurpose[] | undefined),
  };
});

describe('sendgrid domain authenticator', () => {
  it("creates with automated security, not as the default domain, and returns SendGrid's three CNAMEs", async () => {
    const double = await startDouble();
    const created = await authenticatorFor(double).create({ domain: 'example.org', subdomain: 'mail' });
    const stored = double.domains.get(Number(created.providerId))!;

    expect(stored).toMatchObject({ domain: 'example.org', subdomain: 'mail', automatic_security: true, default: false });
    expect(created).toEqual({
      providerId: String(stored.id),
      domain: 'example.org',
      subdomain: 'mail',
      valid: false,
      records: (['mail_cname', 'dkim1', 'dkim2'] as const).map((purpose) => ({ purpose, ...stored.dns[purpose] })),
    });
  });

  it("validate reports SendGrid's per-record results", async () => {
    const double = await startDouble();
    const authenticator = authenticatorFor(double);
    const created = await authenticator.create({ domain: 'example.org' });
    double.publishDns('example.org', ['dkim1', 'dkim2']);
    const checked = await authenticator.validate(created);

    expect(checked.valid).toBe(false);
    expect(checked.records.map(({ purpose, valid }) => [purpose, valid])).toEqual([['mail_cname', false], ['dkim1', true], ['dkim2', true]]);
  });

  it('the same domain created again is another authenticated domain with its own generated subdomain, as SendGrid makes it', async () => {
    const double = await startDouble();
    const authenticator = authenticatorFor(double);
    const first = await authenticator.create({ domain: 'example.org' });
    const second = await authenticator.create({ domain: 'example.org' });

    expect(second.providerId).not.toBe(first.providerId);
    expect([first.subdomain, second.subdomain]).toEqual([expect.stringMatching(/^em\d{4}$/), expect.stringMatching(/^em\d{4}$/)]);
    expect(second.subdomain).not.toBe(first.subdomain);
  });

  it("a refused create is permanent and carries SendGrid's messages (the 422 sendgrid_create_failed message)", async () => {
    const double = await startDouble();
    const authenticator = authenticatorFor(double);
    const refused = (await authenticator.create({ domain: 'not a domain' }).catch((error: unknown) => error)) as DomainProviderError;
    expect(refused).toMatchObject({ name: 'DomainProviderError', permanent: true, statusCode: 400 });

    double.failNext(400, 'domain is on a block list');
    await expect(authenticator.create({ domain: 'other.example.org' })).rejects.toMatchObject({
      permanent: true,
      statusCode: 400,
      message: expect.stringContaining('domain is on a block list'),
    });
  });

  it.each([429, 500, 503])('a create answered %i is transient', async (status) => {
    const double = await startDouble();
    double.failNext(status);
    await expect(authenticatorFor(double).create({ domain: 'example.org' })).rejects.toMatchObject({ name: 'DomainProviderError', permanent: false, statusCode: status });
  });

  it('an unreachable provider, or one that does not answer within timeoutMs, is transient', async () => {
    const unreachable = new SendGridDomainAuthenticator({ apiKey: 'SG.unused', baseUrl: `http://127.0.0.1:${refusedPort}` });
    await expect(unreachable.create({ domain: 'example.org' })).rejects.toMatchObject({ name: 'DomainProviderError', permanent: false });

    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as net.AddressInfo;
      const slow = new SendGridDomainAuthenticator({ apiKey: 'SG.unused', baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 200 });
      await expect(slow.create({ domain: 'example.org' })).rejects.toMatchObject({ name: 'DomainProviderError', permanent: false });
    } finally {
      silent.close();
    }
  });

  it('no error message ever contains the API key, whatever the failure', async () => {
    const double = await startDouble();
    const authenticator = authenticatorFor(double);
    const created = await authenticator.create({ domain: 'example.org' });
    const errors: unknown[] = [];
    for (const status of [400, 401, 403, 429, 500]) {
      double.failNext(status);
      errors.push(await authenticator.create({ domain: 'other.example.org' }).catch((error: unknown) => error));
      double.failNext(status);
      errors.push(await authenticator.validate(created).catch((error: unknown) => error));
      double.failNext(status);
      errors.push(await authenticator.remove(created).catch((error: unknown) => error));
    }
    errors.push(await authenticator.create({ domain: 'not a domain' }).catch((error: unknown) => error));
    errors.push(await new SendGridDomainAuthenticator({ apiKey: double.apiKey, baseUrl: `http://127.0.0.1:${refusedPort}` }).create({ domain: 'example.org' }).catch((error: unknown) => error));

    expect(errors.every((error) => error instanceof Error && error.name === 'DomainProviderError')).toBe(true);
    for (const error of errors) expect(`${(error as Error).message} ${(error as Error).stack} ${JSON.stringify(error)}`).not.toContain(double.apiKey);
  });

  it('validating a domain SendGrid no longer has is a permanent error', async () => {
    const double = await startDouble();
    const authenticator = authenticatorFor(double);
    const created = await authenticator.create({ domain: 'example.org' });
    double.domains.clear();
    await expect(authenticator.validate(created)).rejects.toMatchObject({ permanent: true, statusCode: 404 });
  });

  it('remove deletes the domain at SendGrid; a 404 is fine, a 500 is a transient error', async () => {
    const double = await startDouble();
    const authenticator = authenticatorFor(double);
    const created = await authenticator.create({ domain: 'example.org' });
    await authenticator.remove(created);
    expect(double.domains.has(Number(created.providerId))).toBe(false);
    await expect(authenticator.remove(created)).resolves.toBeUndefined();

    const kept = await authenticator.create({ domain: 'example.org' });
    double.failNext(500);
    await expect(authenticator.remove(kept)).rejects.toMatchObject({ name: 'DomainProviderError', permanent: false, statusCode: 500 });
    expect(double.domains.has(Number(kept.providerId))).toBe(true);
  });
});

// ---------------------------------------------------------------- helpers

