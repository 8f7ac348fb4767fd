import { lookup as dnsLookup } from 'node:dns/promises';
import net from 'node:net';

/**
 * Where the service may send outgoing requests (webhooks), against server-side request
 * forgery (docs/webhooks.md): `https://` only, and never to an address inside the
 * host or its networks. The check runs on the literal URL and again on every address
 * its host name resolves to; the caller then connects to exactly the addresses checked
 * (see `pinnedLookup`) so a second DNS answer cannot swap in another one (rebinding).
 */
export interface UrlPolicy {
  /** Development and tests only: also allow `http://`, loopback and private networks. */
  allowInsecure: boolean;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The URL breaks a rule; retrying does not help. */
export class UrlRefusedError extends Error {
  override readonly name = 'UrlRefusedError';
}

/** Ranges a development setup may reach; refused in production. */
const insecureOnly: [string, number, 'ipv4' | 'ipv6'][] = [
  ['127.0.0.0', 8, 'ipv4'], // loopback
  ['10.0.0.0', 8, 'ipv4'], // private
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT (also some clouds' metadata, e.g. 100.100.100.200)
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['::1', 128, 'ipv6'], // loopback
  ['fc00::', 7, 'ipv6'], // unique local (includes fd00:ec2::254, a metadata address)
];

/** Ranges nothing may reach: this host, link-local (cloud metadata), multicast, reserved, documentation. */
const alwaysRefused: [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'], // "this network", includes 0.0.0.0
  ['169.254.0.0', 16, 'ipv4'], // link-local, includes 169.254.169.254
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['192.0.2.0', 24, 'ipv4'], // documentation
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, includes 255.255.255.255
  ['::', 128, 'ipv6'], // unspecified
  ['fe80::', 10, 'ipv6'], // link-local
  ['fec0::', 10, 'ipv6'], // site-local (deprecated)
  ['ff00::', 8, 'ipv6'], // multicast
  ['100::', 64, 'ipv6'], // discard
  ['2001:db8::', 32, 'ipv6'], // documentation
];

const blockList = (ranges: typeof alwaysRefused): net.BlockList => {
  const list = new net.BlockList();
  for (const [network, prefix, type] of ranges) list.addSubnet(network, prefix, type);
  return list;
};

const refusedAlways = blockList(alwaysRefused);
const refusedUnlessInsecure = blockList(insecureOnly);

/**
 * Why `address` may not be reached under `policy`, or undefined when it may.
 * IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible,
 * NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by that IPv4 address.
 */
export function refusalOf(address: string, policy: UrlPolicy): string | undefined {
  const family = net.isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  if (family === 6) {
    const embedded = embeddedIpv4(address);
    if (embedded) return refusalOf(embedded, policy);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (refusedAlways.check(address, type)) return `${address} is a link-local, unspecified, multicast or reserved address`;
  if (!policy.allowInsecure && refusedUnlessInsecure.check(address, type)) return `${address} is a loopback or private address`;
  return undefined;
}

const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
/** The last label starts with a letter: a DNS name, never an IPv4 address in disguise. */
const TOP_LABEL = '[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
/** A scheme is case-insensitive (RFC 3986 section 3.1): `HTTPS://` too. Spelled out, since a JSON Schema pattern has no flags. */
const HTTPS = '[Hh][Tt][Tt][Pp][Ss]';
const PORT = '(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';

/**
 * The form of a webhook receiver's URL (outside development): https, a DNS name (no IP
 * literal, no user info), an optional port, and a path and query of URL characters (no fragment,
 * nothing to percent-encode left unencoded). The OpenAPI document states this same pattern, so a
 * URL the document allows is one the service takes, and the other way round.
 */
export const WEBHOOK_URL_PATTERN = new RegExp(`^${HTTPS}://(?:${LABEL}\\.)+${TOP_LABEL}\\.?(?::${PORT})?(?:/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$`);

/** Checks the URL's form and, when its host is an IP literal, the address. Returns the parsed URL. */
export function checkUrlForm(raw: string, policy: UrlPolicy): URL {
  if (!policy.allowInsecure && !WEBHOOK_URL_PATTERN.test(raw)) {
    throw new UrlRefusedError(
      'url must be https:// with a DNS name (not an IP address; an internationalised name in its ASCII form, xn--…), an optional port, ' +
        'and a path of URL characters (percent-encode others; no #fragment)',
    );
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlRefusedError('url is not an absolute URL');
  }
  const schemes = policy.allowInsecure ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) throw new UrlRefusedError('url must use https://');
  const host = hostOf(url);
  if (host === '') throw new UrlRefusedError('url has no host');
  if (net.isIP(host)) {
    const refusal = refusalOf(host, policy);
    if (refusal) throw new UrlRefusedError(`url points to a refused address: ${refusal}`);
  } else if (!policy.allowInsecure && /(^|\.)localhost\.?$/i.test(host)) {
    throw new UrlRefusedError('url points to localhost');
  }
  url.hash = '';
  return url;
}

export const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/**
 * The URL and the addresses a request to it must connect to, every one of them allowed.
 * A host that does not resolve rejects with the resolver's error (worth a retry later);
 * a refused address rejects with UrlRefusedError.
 */
export async function resolveUrl(
  raw: string,
  policy: UrlPolicy,
  resolver: Resolver = systemResolver,
): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
  const url = checkUrlForm(raw, policy);
  const host = hostOf(url);
  const literal = net.isIP(host);
  const addresses: ResolvedAddress[] = literal ? [{ address: host, family: literal === 6 ? 6 : 4 }] : await resolver(host);
  if (addresses.length === 0) throw new Error(`${host} has no address`);
  for (const { address } of addresses) {
    const refusal = refusalOf(address, policy);
    // One refused answer refuses the host: an attacker could mix a public and a private one.
    if (refusal) throw new UrlRefusedError(`url host ${host} resolves to a refused address: ${refusal}`);
  }
  return { url, addresses };
}

/** The host as a request needs it: IPv6 literals without their brackets. */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

/** A `lookup` for http.request that answers with the already checked addresses only. */
export function pinnedLookup(addresses: ResolvedAddress[]): net.LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, addresses.map((a) => ({ address: a.address, family: a.family })));
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  }) as unknown as net.LookupFunction;
}

/** The IPv4 address carried inside an IPv6 address, if it is one of the forms that carry one. */
function embeddedIpv4(address: string): string | undefined {
  const groups = ipv6Groups(address);
  if (!groups) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible; :: and ::1 themselves are judged as IPv6)
  if (zeros(0, 5) && groups[5] === 0xffff) return v4(groups[6]!, groups[7]!);
  if (zeros(0, 6) && (groups[6] !== 0 || groups[7]! > 1)) return v4(groups[6]!, groups[7]!);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return v4(groups[6]!, groups[7]!); // NAT64
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!); // 6to4
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address (with `::` and a trailing dotted IPv4 expanded). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const fill = tail === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...new Array<number>(Math.max(0, fill)).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}
