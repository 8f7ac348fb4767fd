import { describe, expect, it } from 'vitest';
import { checkUrlForm, pinnedLookup, refusalOf, resolveUrl, UrlRefusedError } from '../../src/shared/url-guard.js';

const production = { allowInsecure: false };
const development = { allowInsecure: true };

describe('addresses a webhook may not reach (DESIGN.md section 6)', () => {
  const loopbackOrPrivate = [
    '127.0.0.1', '127.255.255.254', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.0.1', '100.64.0.1',
    '100.100.100.200', '::1', 'fc00::1', 'fd00:ec2::254', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.1.2.3',
    '64:ff9b::a00:1', '2002:c0a8:101::1',
  ];
  const never = [
    '0.0.0.0', '0.1.2.3', '169.254.169.254', '169.254.0.1', '224.0.0.1', '255.255.255.255', '240.0.0.1', '192.0.2.1',
    '::', 'fe80::1', 'febf::1', 'ff02::1', '2001:db8::1', '::ffff:169.254.169.254', '::ffff:0.0.0.0',
  ];
  const publicAddresses = ['93.184.215.14', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'];

  it.each(loopbackOrPrivate)('refuses loopback/private %s in production, allows it in development', (address) => {
    expect(refusalOf(address, production)).toBeDefined();
    expect(refusalOf(address, development)).toBeUndefined();
  });

  it.each(never)('refuses %s even in development', (address) => {
    expect(refusalOf(address, production)).toBeDefined();
    expect(refusalOf(address, development)).toBeDefined();
  });

  it.each(publicAddresses)('allows public %s', (address) => {
    expect(refusalOf(address, production)).toBeUndefined();
  });
});

describe('URL form', () => {
  it('needs https:// in production; http:// only in development', () => {
    expect(() => checkUrlForm('http://example.com/', production)).toThrow(UrlRefusedError);
    expect(checkUrlForm('http://example.com/', development).href).toBe('http://example.com/');
    expect(() => checkUrlForm('file:///etc/passwd', development)).toThrow('https');
    expect(() => checkUrlForm('/relative', development)).toThrow('absolute');
    expect(() => checkUrlForm('/relative', production)).toThrow(UrlRefusedError);
  });

  it('takes in production exactly the form the OpenAPI document states: a DNS name, a port, URL characters', () => {
    for (const url of ['https://example.com/hooks/comms', 'https://1password.com/x?y=1', 'https://hooks.example.org:8443/a/b', 'https://xn--bcher-kva.example/']) {
      expect(checkUrlForm(url, production).href, url).toBe(new URL(url).href);
    }
    // schemathesis found the first one accepted: URL parsers take a `*` in a host name.
    for (const url of ['https://a2.example*', 'https://93.184.215.14/', 'https://[2606:4700::1111]/', 'https://user@example.com/', ' https://example.com/', 'https://example.com/a b', 'https://example.com/#frag', 'https://example.com:65536/']) {
      expect(() => checkUrlForm(url, production), url).toThrow(UrlRefusedError);
    }
  });

  it('sees through other spellings of an address', () => {
    for (const url of ['https://2130706433/', 'https://0x7f000001/', 'https://017700000001/', 'https://[0:0:0:0:0:ffff:7f00:1]/']) {
      expect(() => checkUrlForm(url, production), url).toThrow(UrlRefusedError);
    }
  });

  it('drops the fragment in development (production refuses one)', () => {
    expect(checkUrlForm('https://example.com/a?b=1#frag', development).href).toBe('https://example.com/a?b=1');
  });
});

describe('resolution', () => {
  it('refuses a host when any address it resolves to is refused', async () => {
    const mixed = async () => [
      { address: '93.184.215.14', family: 4 as const },
      { address: '10.0.0.5', family: 4 as const },
    ];
    await expect(resolveUrl('https://mixed.example/', production, mixed)).rejects.toThrow(UrlRefusedError);
    const rebinding = async () => [{ address: '::ffff:169.254.169.254', family: 6 as const }];
    await expect(resolveUrl('https://metadata.example/', development, rebinding)).rejects.toThrow('169.254.169.254');
  });

  it('returns the checked addresses, and a resolver failure as a plain (retryable) error', async () => {
    const ok = async () => [{ address: '93.184.215.14', family: 4 as const }];
    expect((await resolveUrl('https://ok.example/x', production, ok)).addresses).toEqual([{ address: '93.184.215.14', family: 4 }]);
    const failing = async () => {
      throw new Error('getaddrinfo ENOTFOUND');
    };
    const error = await resolveUrl('https://gone.example/', production, failing).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(UrlRefusedError);
  });

  it('refuses localhost in any spelling before asking DNS', async () => {
    const never = async () => {
      throw new Error('must not resolve');
    };
    for (const url of ['https://localhost/', 'https://LOCALHOST./', 'https://api.localhost/']) {
      await expect(resolveUrl(url, production, never), url).rejects.toThrow(UrlRefusedError);
    }
  });

  it('pins lookups to the checked addresses in both callback forms', () => {
    const lookup = pinnedLookup([{ address: '93.184.215.14', family: 4 }]) as unknown as (
      host: string,
      options: { all?: boolean },
      callback: (...args: unknown[]) => void,
    ) => void;
    lookup('evil.example', {}, (...args) => expect(args).toEqual([null, '93.184.215.14', 4]));
    lookup('evil.example', { all: true }, (...args) => expect(args).toEqual([null, [{ address: '93.184.215.14', family: 4 }]]));
  });
});
