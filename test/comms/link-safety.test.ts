import { describe, expect, it } from 'vitest';
import { unsafeLinks, type LinkPolicy } from '../../src/comms/link-safety.js';

const policy: LinkPolicy = { blockedDomains: ['evil.test', 'Bad.Example.', 'bücher.test'] };
const flagged = (html: string, p: LinkPolicy = policy) => unsafeLinks(html, p);
const link = (url: string) => `<a href="${url}">x</a>`;

describe('links a template may contain', () => {
  it('allows http, https, mailto, tel and cid URLs on ordinary hosts', () => {
    const html = [
      link('https://example.com/path?q=1#top'),
      link('http://sub.example.org'),
      link('mailto:info@example.com?subject=Hi'),
      link('tel:+31201234567'),
      '<img src="cid:logo@example.com">',
      link('#section'),
      link('/relative/path'),
    ].join('');
    expect(flagged(html)).toEqual([]);
  });

  it('allows merge tokens in a URL and a URL that is only a merge token, as they are resolved at send time', () => {
    const html = [link('https://x.test/r/{{attendeeId}}'), link('{{customId}}'), link('{{{additionalInfo}}}'), link('mailto:{{email}}')].join('');
    expect(flagged(html)).toEqual([]);
  });

  it('allows a domain that only ends like a blocked one', () => {
    expect(flagged(link('https://notevil.test/') + link('https://evil.test.example.com/'))).toEqual([]);
  });
});

describe('links flagged as unsafe', () => {
  it('flags javascript:, data:, vbscript: and file: URLs, also disguised by case, entities, whitespace and tabs', () => {
    const html = [
      link('javascript:alert(1)'),
      link('JaVaScRiPt:alert(2)'),
      link('&#106;avascript:alert(3)'),
      link('  java\tscript:alert(4)'),
      '<iframe src="data:text/html;base64,PHNjcmlwdD4="></iframe>',
      link('vbscript:msgbox(1)'),
      link('file:///etc/passwd'),
    ].join('');
    expect(flagged(html).map((l) => l.reason)).toEqual([
      'javascript: URL',
      'javascript: URL',
      'javascript: URL',
      'javascript: URL',
      'data: URL',
      'vbscript: URL',
      'file: URL',
    ]);
  });

  it('flags schemes other than http, https, mailto, tel and cid', () => {
    expect(flagged(link('ftp://example.com/a') + link('smb://host/share'))).toEqual([
      { url: 'ftp://example.com/a', reason: 'unsupported scheme ftp:' },
      { url: 'smb://host/share', reason: 'unsupported scheme smb:' },
    ]);
  });

  it('flags hosts that are IP addresses, in any IPv4 spelling and IPv6', () => {
    const urls = ['http://127.0.0.1:8080/x', 'https://203.0.113.9/', 'http://2130706433/', 'http://0x7f.1/', 'https://[::1]/', 'https://[2001:db8::1]:443/'];
    expect(flagged(urls.map(link).join(''))).toEqual(urls.map((url) => ({ url, reason: 'IP address host' })));
  });

  it('flags URLs with a user name, which disguise the real host', () => {
    expect(flagged(link('https://paypal.com@evil2.test/login') + link('https://user:pw@example.com/'))).toEqual([
      { url: 'https://paypal.com@evil2.test/login', reason: 'user name in URL (disguises the real host)' },
      { url: 'https://user:pw@example.com/', reason: 'user name in URL (disguises the real host)' },
    ]);
  });

  it('flags hosts equal to or under a blocked domain, ignoring case, trailing dots and unicode spelling', () => {
    const urls = [
      'https://evil.test/',
      'https://WWW.EVIL.TEST./x',
      'https://a.b.bad.example/',
      'https://bücher.test/',
      'https://xn--bcher-kva.test/',
      'https://shop.BÜCHER.test/',
      'mailto:boss@evil.test',
      '//evil.test/scheme-relative',
    ];
    expect(flagged(urls.map(link).join(''))).toEqual([
      { url: urls[0], reason: 'blocked domain evil.test' },
      { url: urls[1], reason: 'blocked domain evil.test' },
      { url: urls[2], reason: 'blocked domain bad.example' },
      { url: urls[3], reason: 'blocked domain xn--bcher-kva.test' },
      { url: urls[4], reason: 'blocked domain xn--bcher-kva.test' },
      { url: urls[5], reason: 'blocked domain xn--bcher-kva.test' },
      { url: urls[6], reason: 'blocked domain evil.test' },
      { url: urls[7], reason: 'blocked domain evil.test' },
    ]);
  });

  it('flags malformed URLs', () => {
    expect(flagged(link('https://exa mple.com/') + link('http://[::1/'))).toEqual([
      { url: 'https://exa mple.com/', reason: 'malformed URL' },
      { url: 'http://[::1/', reason: 'malformed URL' },
    ]);
  });

  it('judges a merge token in the host by what is around it', () => {
    expect(flagged(link('https://{{customId}}.evil.test/'))).toEqual([{ url: 'https://{{customId}}.evil.test/', reason: 'blocked domain evil.test' }]);
  });
});

describe('where URLs are found', () => {
  it('finds URLs in src, action, formaction, background, poster, srcset, style url() and <style>', () => {
    const html = `
      <img src="http://10.0.0.1/a.png">
      <form action="https://evil.test/post"><button formaction="javascript:x()">go</button></form>
      <table background="http://10.0.0.2/bg.png"><tr><td style="background-image: url('http://10.0.0.3/c.png')">x</td></tr></table>
      <video poster="http://10.0.0.4/p.png"></video>
      <img srcset="https://example.com/ok.png 1x, http://10.0.0.5/b.png 2x">
      <style>body { background: url(http://10.0.0.6/d.png) }</style>`;
    expect(flagged(html).map((l) => l.url)).toEqual([
      'http://10.0.0.1/a.png',
      'https://evil.test/post',
      'javascript:x()',
      'http://10.0.0.2/bg.png',
      'http://10.0.0.3/c.png',
      'http://10.0.0.4/p.png',
      'http://10.0.0.5/b.png',
      'http://10.0.0.6/d.png',
    ]);
  });

  it('finds bare URLs in text, without the sentence punctuation after them', () => {
    expect(flagged('<p>Visit http://192.168.1.1/admin. Or https://evil.test/x, or https://example.com.</p>')).toEqual([
      { url: 'http://192.168.1.1/admin', reason: 'IP address host' },
      { url: 'https://evil.test/x', reason: 'blocked domain evil.test' },
    ]);
  });

  it('finds links in Outlook conditional comments', () => {
    const html = '<!--[if mso]><v:roundrect href="https://evil.test/button"></v:roundrect><![endif]-->';
    expect(flagged(html)).toEqual([{ url: 'https://evil.test/button', reason: 'blocked domain evil.test' }]);
  });

  it('reports each URL once', () => {
    expect(flagged(link('https://evil.test/') + link('https://evil.test/') + '<p>https://evil.test/</p>')).toHaveLength(1);
  });

  it('with no blocked domains, still flags by scheme and host form', () => {
    expect(flagged(link('https://evil.test/') + link('http://127.0.0.1/'), { blockedDomains: [] })).toEqual([
      { url: 'http://127.0.0.1/', reason: 'IP address host' },
    ]);
  });
});
