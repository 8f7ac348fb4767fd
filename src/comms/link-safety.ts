import net from 'node:net';
import { parseDocument, DomUtils } from 'htmlparser2';
import { hostOf } from '../shared/url-guard.js';

/**
 * The spec's 422 spam_check_failed: "template HTML contains URLs flagged as unsafe".
 * A template is checked when it is stored; merge tokens in a URL (`https://x.test/r/{{attendeeId}}`)
 * are judged with a neutral stand-in, since the guest's values are only known at send time.
 */
export interface LinkPolicy {
  /** A host equal to or under one of these is refused (`evil.test` also refuses `a.evil.test`). */
  blockedDomains: string[];
}

export interface UnsafeLink {
  url: string;
  reason: string;
}

type DomNode = ReturnType<typeof parseDocument>['children'][number];

const urlAttributes = ['href', 'src', 'action', 'formaction', 'background', 'poster', 'xlink:href'];
const allowedSchemes = new Set(['http', 'https', 'mailto', 'tel', 'cid']);
const dangerousSchemes = new Set(['javascript', 'data', 'vbscript', 'file']);
const mergeTokenPattern = /\{\{\{?[^{}]*\}?\}\}/g;
const mergeTokenStandIn = 'mergetoken';
/** Browsers drop tabs and line breaks anywhere in a URL and C0 controls and spaces around it. */
const ignoredInUrl = /[\t\n\r]/g;
const trimmedAroundUrl = /^[\u0000-\u0020]+|[\u0000-\u0020]+$/g;

/** The unsafe URLs of the html with why each is unsafe, one entry per URL, in document order. */
export function unsafeLinks(html: string, policy: LinkPolicy): UnsafeLink[] {
  const blocked = policy.blockedDomains.map(domainForm).filter((d) => d !== '');
  const unsafe: UnsafeLink[] = [];
  for (const url of new Set(urlsIn(html))) {
    const reason = unsafeReason(url, blocked);
    if (reason) unsafe.push({ url, reason });
  }
  return unsafe;
}

/** Every URL the html names: in URL attributes, CSS url(...) (style attributes and <style>), bare in text. */
function urlsIn(html: string): string[] {
  const urls: string[] = [];
  const walk = (nodes: DomNode[]): void => {
    for (const node of nodes) {
      if (DomUtils.isTag(node)) {
        for (const name of urlAttributes) {
          const value = node.attribs[name];
          if (value !== undefined) urls.push(value.trim());
        }
        if (node.attribs.srcset) urls.push(...srcsetUrls(node.attribs.srcset));
        if (node.attribs.style) urls.push(...cssUrls(node.attribs.style));
        if (node.name === 'style') urls.push(...cssUrls(DomUtils.textContent(node)));
        if (node.name !== 'script' && node.name !== 'style') walk(node.children);
      } else if (DomUtils.isText(node)) {
        urls.push(...bareUrls(node.data));
      } else if (DomUtils.isComment(node)) {
        // Outlook renders markup in conditional comments (<!--[if mso]><v:roundrect href=…>).
        walk(parseDocument(node.data).children);
      }
    }
  };
  walk(parseDocument(html).children);
  return urls.filter((url) => url !== '');
}

function srcsetUrls(srcset: string): string[] {
  return srcset.split(',').map((candidate) => candidate.trim().split(/\s+/)[0] ?? '');
}

function cssUrls(css: string): string[] {
  return [...css.matchAll(/url\(\s*(['"]?)(.*?)\1\s*\)/gi)].map((m) => m[2]!.trim());
}

function bareUrls(text: string): string[] {
  // Trailing punctuation belongs to the sentence, not the URL.
  return [...text.matchAll(/\bhttps?:\/\/[^\s<>"'`]+/gi)].map((m) => m[0].replace(/[.,;:!?)\]}'"]+$/, ''));
}

function unsafeReason(raw: string, blocked: string[]): string | undefined {
  if (raw.replace(mergeTokenPattern, '').trim() === '') return undefined; // resolved at send time
  const url = raw.replace(mergeTokenPattern, mergeTokenStandIn).replace(trimmedAroundUrl, '').replace(ignoredInUrl, '');
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    // Relative: harmless (and useless) in an email, except a scheme-relative //host.
    return url.startsWith('//') || url.startsWith('\\') ? webUrlReason(`https:${url}`, blocked) : undefined;
  }
  if (dangerousSchemes.has(scheme)) return `${scheme}: URL`;
  if (!allowedSchemes.has(scheme)) return `unsupported scheme ${scheme}:`;
  if (scheme === 'http' || scheme === 'https') return webUrlReason(url, blocked);
  if (scheme === 'mailto') return mailtoReason(url, blocked);
  return undefined;
}

function webUrlReason(text: string, blocked: string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'malformed URL';
  }
  if (url.username !== '' || url.password !== '') return 'user name in URL (disguises the real host)';
  const host = hostOf(url);
  if (host === '') return 'malformed URL';
  if (net.isIP(host)) return 'IP address host';
  return blockedReason(host, blocked);
}

/** A mailto: to an address under a blocked domain. */
function mailtoReason(text: string, blocked: string[]): string | undefined {
  const to = decodeURIComponentSafe(text.slice('mailto:'.length).split('?')[0]!);
  for (const address of to.split(',')) {
    const domain = address.trim().split('@').pop() ?? '';
    const reason = domain.includes('.') ? blockedReason(domainForm(domain), blocked) : undefined;
    if (reason) return reason;
  }
  return undefined;
}

function blockedReason(host: string, blocked: string[]): string | undefined {
  const name = host.replace(/\.$/, '');
  const hit = blocked.find((domain) => name === domain || name.endsWith(`.${domain}`));
  return hit ? `blocked domain ${hit}` : undefined;
}

/** The domain as `new URL().hostname` writes it (lower case, punycode), without a trailing dot; '' when it is no host. */
function domainForm(domain: string): string {
  try {
    return new URL(`http://${domain.trim()}`).hostname.replace(/\.$/, '');
  } catch {
    return '';
  }
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
