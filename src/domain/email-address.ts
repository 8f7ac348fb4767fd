import { domainToASCII, domainToUnicode } from 'node:url';

/**
 * What the service takes to be an email address it can send to. Account, team member and
 * template addresses are checked against it when given; a guest's `email` is any string (the
 * spec types it so), and an invitation to one that is not an address fails at send time.
 *
 * The domain may be internationalized (`ada@bücher.de`): a label may hold characters beyond
 * ASCII, and the address is sent with the domain's ASCII form (`ada@xn--bcher-kva.de`, UTS #46
 * as WHATWG URLs convert it: `domainToASCII`). The local part (before the `@`) is ASCII: one with
 * other characters needs SMTPUTF8 (RFC 6531) all the way to the mailbox, which SendGrid and many
 * SMTP relays do not offer (docs/invitations.md). The pattern is published (OpenAPI) as it is, so
 * it is written without Unicode classes and reads the same with or without the `u` flag (JSON
 * Schema validators differ): a label takes characters from U+00A1 to U+FFFF but no surrogates,
 * so a character beyond the BMP (an emoji domain) is refused either way, by clients and server alike.
 */
const LOCAL = String.raw`([A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]`;
const LABEL = String.raw`[A-Za-z0-9\u00A1-\uD7FF\uE000-\uFFFF][A-Za-z0-9\u00A1-\uD7FF\uE000-\uFFFF-]*`;
const TLD = String.raw`(?:[A-Za-z]{2,}|[Xx][Nn]--[A-Za-z0-9-]+|[A-Za-z0-9-]*[\u00A1-\uD7FF\uE000-\uFFFF][A-Za-z0-9\u00A1-\uD7FF\uE000-\uFFFF-]*)`;
export const EMAIL_PATTERN = new RegExp(`^${LOCAL}@(${LABEL}\\.)+${TLD}$`);

/** The ASCII-only form the pattern takes once the domain is converted: what a provider gets. */
const ASCII_PATTERN = /^([A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+(?:[A-Za-z]{2,}|xn--[a-z0-9-]+)$/;

const splitAt = (address: string): [string, string] | undefined => {
  const at = address.lastIndexOf('@');
  return at < 0 ? undefined : [address.slice(0, at), address.slice(at + 1)];
};

/**
 * The address with its domain in ASCII form (punycode, lower case: `ada@xn--bcher-kva.de` for
 * `ada@BÜCHER.de`), trimmed; the local part as given. An address whose domain does not convert
 * is returned trimmed, unchanged.
 */
export function asciiEmailAddress(value: string): string {
  const address = value.trim();
  const parts = splitAt(address);
  if (!parts) return address;
  const domain = domainToASCII(parts[1]);
  return domain ? `${parts[0]}@${domain}` : address;
}

/**
 * Why a text is not an address the service can send to, or undefined when it is one. The local
 * part with characters beyond ASCII is named as such (SMTPUTF8), as is a domain that does not
 * convert to its ASCII form (an `xn--` label that is not punycode, a label IDNA refuses).
 */
export function emailAddressProblem(value: string): string | undefined {
  const address = value.trim();
  if (value.length > 320) return 'must be an email address of at most 320 characters';
  const parts = splitAt(address);
  if (parts && /[^\x00-\x7F]/.test(parts[0])) {
    return 'must be an email address whose local part (before the @) is ASCII: one with other characters needs SMTPUTF8 (RFC 6531), which SendGrid and many SMTP servers do not offer; the domain may be internationalized';
  }
  if (!EMAIL_PATTERN.test(address)) return 'must be an email address';
  // An ASCII domain is taken as before; an internationalized one must convert (UTS #46) to a name the ASCII rule takes.
  if (!/[^\x00-\x7F]/.test(parts![1])) return undefined;
  const domain = domainToASCII(parts![1]);
  if (!domain || !ASCII_PATTERN.test(`${parts![0]}@${domain}`)) {
    return 'must be an email address: its domain is not a valid internationalized domain name (IDNA, UTS #46)';
  }
  return undefined;
}

export const isEmailAddress = (value: string): boolean => emailAddressProblem(value) === undefined;

/**
 * The one form an address is keyed and compared by (the suppression list, the access document,
 * erasure): trimmed, lower case, the domain in ASCII form, so `ada@bücher.de`, `ada@BÜCHER.de`
 * and `ada@xn--bcher-kva.de` are one address (a provider reports the form it sent to).
 */
export const addressKeyText = (value: string): string => asciiEmailAddress(value).toLowerCase();

/** Both forms of an address's domain (as given, ASCII, Unicode), lower case: what a text about the address may quote. */
export function addressForms(value: string): string[] {
  const ascii = addressKeyText(value);
  const parts = splitAt(ascii);
  const forms = new Set([value.trim().toLowerCase(), ascii]);
  if (parts) {
    const unicode = domainToUnicode(parts[1]);
    if (unicode) forms.add(`${parts[0]}@${unicode}`.toLowerCase());
  }
  return [...forms];
}

/** The part of EMAIL_PATTERN before the `@`: dot-separated atoms, no quotes, commas or brackets. */
const LOCAL_PART_PATTERN = new RegExp(`^${LOCAL}$`);

/** Whether `value` is a local part this service sends from (the domain is checked on its own). */
export const isEmailLocalPart = (value: string): boolean => value.length <= 64 && LOCAL_PART_PATTERN.test(value);
