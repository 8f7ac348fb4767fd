/**
 * Contract every domain-authentication adapter passes (DESIGN.md §2, §7; spec: Domain
 * authentication record). Each adapter's test supplies `publish`, which makes records visible
 * the way that adapter checks them (a fake resolver, the SendGrid double's DNS switch), so the
 * same "publish, then validate" story holds for all of them.
 */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { DomainProviderError, type AuthenticatedDomain, type DomainAuthenticator } from '../../src/adapters/domains/port.js';

export interface DomainAuthenticatorUnderTest {
  authenticator: DomainAuthenticator;
  /** Publishes the records of `domain` with these purposes (all when omitted) in DNS. */
  publish(domain: AuthenticatedDomain, purposes?: string[]): void;
}

/** A fresh name per test: providers refuse a domain that is already being authenticated. */
const freshDomain = () => `events-${randomBytes(4).toString('hex')}.example.org`;

export function domainsContract(name: string, make: () => Promise<DomainAuthenticatorUnderTest>): void {
  describe(`domain authentication contract: ${name}`, () => {
    let subject: DomainAuthenticatorUnderTest;

    beforeAll(async () => {
      subject = await make();
    });

    it('create returns the records to publish, none valid yet, and a provider id', async () => {
      const domain = freshDomain();
      const created = await subject.authenticator.create({ domain });

      expect(created).toMatchObject({ domain, valid: false });
      expect(created.providerId).toEqual(expect.any(String));
      expect(created.providerId).not.toBe('');
      expect(created.records.length).toBeGreaterThan(0);
      for (const record of created.records) {
        expect(record).toEqual({ purpose: expect.any(String), type: expect.stringMatching(/^(cname|txt|mx)$/), host: expect.any(String), data: expect.any(String), valid: false });
        expect(record.host.endsWith(`.${domain}`)).toBe(true);
      }
      expect(new Set(created.records.map((record) => record.purpose)).size).toBe(created.records.length);
    });

    it('the mail CNAME sits at <subdomain>.<domain>, with the requested subdomain or a generated one', async () => {
      const domain = freshDomain();
      const chosen = await subject.authenticator.create({ domain, subdomain: 'mail' });
      const generated = await subject.authenticator.create({ domain: freshDomain() });

      expect(chosen.subdomain).toBe('mail');
      expect(chosen.records).toContainEqual(expect.objectContaining({ purpose: 'mail_cname', type: 'cname', host: `mail.${domain}` }));
      expect(generated.subdomain).toMatch(/^[a-z0-9-]+$/);
      expect(generated.records).toContainEqual(expect.objectContaining({ purpose: 'mail_cname', host: `${generated.subdomain}.${generated.domain}` }));
    });

    it('create lower-cases the domain', async () => {
      const domain = freshDomain();
      const created = await subject.authenticator.create({ domain: domain.toUpperCase() });
      expect(created.domain).toBe(domain);
    });

    it('nothing published: validate finds no record and the domain is not valid', async () => {
      const created = await subject.authenticator.create({ domain: freshDomain() });
      const checked = await subject.authenticator.validate(created);

      expect(checked.valid).toBe(false);
      expect(checked.records.map((record) => record.valid)).toEqual(created.records.map(() => false));
      expect(checked).toMatchObject({ providerId: created.providerId, domain: created.domain, subdomain: created.subdomain });
    });

    it('some records published: those are valid, the domain is not', async () => {
      const created = await subject.authenticator.create({ domain: freshDomain() });
      const [first] = created.records;
      subject.publish(created, [first.purpose]);
      const checked = await subject.authenticator.validate(created);

      expect(checked.valid).toBe(false);
      expect(validity(checked)).toEqual(Object.fromEntries(created.records.map((record) => [record.purpose, record.purpose === first.purpose])));
    });

    it('every record published: every record and the domain are valid', async () => {
      const created = await subject.authenticator.create({ domain: freshDomain() });
      subject.publish(created);
      const checked = await subject.authenticator.validate(created);

      expect(checked.valid).toBe(true);
      expect(checked.records.every((record) => record.valid)).toBe(true);
      expect(checked.records.map(({ purpose, type, host, data }) => ({ purpose, type, host, data }))).toEqual(
        created.records.map(({ purpose, type, host, data }) => ({ purpose, type, host, data })),
      );
    });

    it("publishing one domain's records validates no other domain", async () => {
      const published = await subject.authenticator.create({ domain: freshDomain() });
      const other = await subject.authenticator.create({ domain: freshDomain() });
      subject.publish(published);

      expect((await subject.authenticator.validate(other)).valid).toBe(false);
    });

    it.each(['', 'not a domain', 'localhost', '192.0.2.10', '-bad.example.org', 'under_score.example.org', 'a..example.org'])(
      'refuses %j permanently',
      async (domain) => {
        const error = await subject.authenticator.create({ domain }).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(DomainProviderError);
        expect(error).toMatchObject({ permanent: true });
        expect((error as Error).message).not.toBe('');
      },
    );

    it('remove succeeds, and removing again is fine', async () => {
      const created = await subject.authenticator.create({ domain: freshDomain() });
      await expect(subject.authenticator.remove(created)).resolves.toBeUndefined();
      await expect(subject.authenticator.remove(created)).resolves.toBeUndefined();
    });
  });
}

function validity(domain: AuthenticatedDomain): Record<string, boolean> {
  return Object.fromEntries(domain.records.map((record) => [record.purpose, record.valid]));
}
