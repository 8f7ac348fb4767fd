import { isIP } from 'node:net';

/** One DNS label: letters, digits and inner hyphens, at most 63 characters. */
const dnsLabel = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

/**
 * A plausible public DNS name for a sending domain: at least two labels, each a valid label,
 * at most 253 characters (a trailing dot allowed), not an IP address, and a TLD that is not all
 * digits. `localhost`, `not a domain` and `192.0.2.10` are not.
 */
export function isPublicDomainName(input: string): boolean {
  const domain = input.trim().replace(/\.$/, '');
  const labels = domain.split('.');
  return (
    domain.length <= 253 &&
    labels.length >= 2 &&
    labels.every((part) => dnsLabel.test(part)) &&
    isIP(domain) === 0 &&
    !/^\d+$/.test(labels[labels.length - 1]!)
  );
}
