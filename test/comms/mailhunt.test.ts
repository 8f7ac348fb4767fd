import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseDocument, DomUtils } from 'htmlparser2';
import { afterAll, describe, expect, it } from 'vitest';
import { OutboxMailer } from '../../src/adapters/mailer/outbox.js';
import { invitationMessage, type InvitationParts } from '../../src/comms/invitation-message.js';
import { readOutbox } from '../support/mail-readers.js';

/** The invitation email as a mail client reads it back from the outbox's .eml file. */
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

async function delivered(overrides: { guest?: Partial<InvitationParts['guest']>; template?: Partial<InvitationParts['template']> }) {
  const parts: InvitationParts = {
    attendeeInvitationId: '2b8c0f0e-8d1c-4f43-9a55-3f1f7e3c1a10',
    clientId: 'client-1',
    guest: { id: '7d7b3a52-2f55-4d0e-8b9e-0c6f7f0d3c11', email: 'guest@example.org', firstName: 'Ann', ...overrides.guest },
    template: { html: '<p>Hello {{firstName}}</p>', ...overrides.template },
    event: { title: 'Gala', startTime: '2026-12-12T19:00:00Z', endTime: '2026-12-12T23:00:00Z' },
    account: { companyName: 'Example Events' },
  };
  const message = await invitationMessage(parts, { address: 'invites@example.com' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailhunt-'));
  dirs.push(dir);
  await new OutboxMailer(dir).send(message);
  const [mail] = await readOutbox(dir);
  return mail!;
}

const hrefs = (html: string): string[] =>
  DomUtils.findAll((node) => node.name === 'a', parseDocument(html).children).map((a) => a.attribs.href ?? '');

describe('merge tokens inside a link (the guest’s link must say what the guest’s data says)', () => {
  it('a value written into a URL after its start is percent-encoded: +, &, #, spaces survive the round trip', async () => {
    const mail = await delivered({
      guest: { firstName: 'Tom & Jerry #1', email: 'ada+gala@example.org', customId: 'a/b?c' },
      template: { html: '<p>Hi {{firstName}}: <a href="https://rsvp.example.com/r/{{customId}}?email={{email}}&amp;name={{firstName}}">RSVP</a></p>' },
    });
    const url = new URL(hrefs(mail.html)[0]!);
    expect(url.searchParams.get('email')).toBe('ada+gala@example.org');
    expect(url.searchParams.get('name')).toBe('Tom & Jerry #1');
    expect(decodeURIComponent(url.pathname)).toBe('/r/a/b?c');
    expect(url.hash).toBe('');
    // The text stays text, and the plain-text part shows the same link.
    expect(mail.html).toContain('Hi Tom &amp; Jerry #1:');
    expect(mail.text).toContain(`RSVP (${hrefs(mail.html)[0]})`);
  });

  it('the same holds in an Outlook conditional comment (a VML button’s href)', async () => {
    const mail = await delivered({
      guest: { email: 'ada+gala@example.org' },
      template: { html: '<!--[if mso]><v:roundrect href="https://rsvp.example.com/?email={{email}}">RSVP</v:roundrect><![endif]-->' },
    });
    expect(mail.html).toContain('href="https://rsvp.example.com/?email=ada%2Bgala@example.org"');
  });

  it('a value that is the whole link, and raw {{{token}}}, are left as written (only HTML-escaped)', async () => {
    const mail = await delivered({
      guest: { additionalInfo: 'https://maps.example.com/?q=a b&z=1', customId: 'x y' },
      template: { html: '<a href="{{additionalInfo}}">Map</a> <a href="https://example.com/{{{customId}}}">raw</a> {{#if customId}}yes{{/if}}' },
    });
    expect(hrefs(mail.html)).toEqual(['https://maps.example.com/?q=a b&z=1', 'https://example.com/x y']);
    expect(mail.html).toContain('yes');
  });
});

describe('display names are one line of header text (RFC 5322: no line breaks or controls in a header)', () => {
  it('a guest name and a template fromName with line breaks arrive as one-line names', async () => {
    const mail = await delivered({
      guest: { firstName: 'Ann\r\nBcc: victim@example.net', lastName: 'Lee\u0007' },
      template: { fromName: 'Gala\nTeam' },
    });
    expect(mail.to).toEqual({ email: 'guest@example.org', name: 'Ann Bcc: victim@example.net Lee' });
    expect(mail.from).toEqual({ email: 'invites@example.com', name: 'Gala Team' });
  });

  it('a Unicode line break (NEL) or C1 control in the subject or a name does not survive the encoded word', async () => {
    const mail = await delivered({
      guest: { firstName: 'Zoë\u0085Bcc: x@example.net', lastName: 'Ø\u009b' },
      template: { subject: 'Willkommen {{firstName}}', fromName: 'Gäste\u0085Team' },
    });
    expect(mail.subject).toBe('Willkommen Zoë Bcc: x@example.net');
    expect(mail.to.name).toBe('Zoë Bcc: x@example.net Ø');
    expect(mail.from.name).toBe('Gäste Team');
  });
});

describe('plain-text alternative of a merged mailto link', () => {
  it('shows a mailto: link whose text is the merged address once, as the html shows it', async () => {
    const mail = await delivered({
      guest: { email: 'ada+gala@example.org' },
      template: { html: '<p>Write to <a href="mailto:{{email}}">{{email}}</a></p>' },
    });
    expect(new URL(hrefs(mail.html)[0]!).pathname).toBe('ada%2Bgala@example.org');
    expect(mail.text).toBe('Write to ada+gala@example.org');
  });
});
