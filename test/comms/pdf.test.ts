import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderPdf } from '../../src/comms/pdf.js';
import { pdfPageText } from '../support/decode-codes.js';

/** A 1×1 PNG. */
const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const latin1 = (pdf: Buffer) => pdf.toString('latin1');

/** The Info dictionary's Title: PDFKit writes it as an indirect literal string, UTF-16BE with a BOM when not ASCII. */
function titleOf(pdf: Buffer): string | undefined {
  const text = latin1(pdf);
  const ref = /\/Title (\d+) 0 R/.exec(text)?.[1];
  const literal = ref && new RegExp(`\\n${ref} 0 obj\\n\\(((?:\\\\.|[^\\\\)])*)\\)`).exec(text)?.[1];
  if (literal === undefined || literal === '') return undefined;
  const bytes = Buffer.from(literal.replace(/\\(.)/g, '$1'), 'latin1');
  return bytes[0] === 0xfe && bytes[1] === 0xff ? bytes.subarray(2).swap16().toString('utf16le') : bytes.toString('latin1');
}

/** The text of every page, as pdf.js reads it (the fonts are embedded subsets: the content streams hold glyph ids, not characters). */
async function shownText(pdf: Buffer): Promise<string> {
  const pages = (latin1(pdf).match(/\/Type \/Page\b/g) ?? []).length;
  const texts = [];
  for (let page = 1; page <= pages; page++) texts.push((await pdfPageText(pdf, page)).replace(/\|/g, ''));
  return texts.join('');
}

const imageCount = (pdf: Buffer) => (latin1(pdf).match(/\/Subtype \/Image/g) ?? []).length;

/** An invitation-like page of about `size` characters: headings, paragraphs, a table and links. */
function invitationHtml(size: number): string {
  const section = (i: number) => `
    <h2>Programme part ${i}</h2>
    <p style="font-family: Georgia, serif; color: #333">Dear <b>Ann</b>, we are delighted to invite you to the <i>Summer Gala</i>.
      Doors open at 19:00 and dinner is served at 20:00. Please bring this invitation with you.</p>
    <table width="100%" style="border: 1px solid #ccc"><tr><td>Date</td><td>12 July 2026</td></tr>
      <tr><td>Venue</td><td>Grand Hotel, Amsterdam</td></tr></table>
    <ul><li>Dress code: black tie</li><li>Plus ones: 1</li></ul>
    <p><a href="https://example.com/rsvp/${i}">RSVP here</a> &middot; <a href="mailto:gala@example.com">Contact us</a></p>`;
  let html = '<html><head><style>body { font-family: Arial }</style></head><body><h1>Summer Gala</h1>';
  for (let i = 1; html.length < size; i++) html += section(i);
  return `${html}</body></html>`;
}

describe('invitation PDF', () => {
  it('is a PDF with the title in its metadata', async () => {
    const pdf = await renderPdf('<p>Hello</p>', { title: 'Summer Gala (invitation)' });
    expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(titleOf(pdf)).toBe('Summer Gala (invitation)');
    expect(titleOf(await renderPdf('<p>Hello</p>', { title: 'Café Ball – 2026' }))).toBe('Café Ball – 2026');
  });

  it('shows the text of the html, not its scripts or styles, in the Roboto pdfmake ships (embedded)', async () => {
    const pdf = await renderPdf(
      '<style>p { color: red }</style><h1 style="font-family: Comic Sans MS">Welcome Zoë</h1><p>Dinner &amp; drinks</p><script>alert("boo")</script>',
      { title: 't' },
    );
    const text = await shownText(pdf);
    expect(text).toContain('Welcome Zoë');
    expect(text).toContain('Dinner & drinks');
    expect(text).not.toMatch(/boo|color/);
    expect(latin1(pdf)).toMatch(/\/BaseFont \/[A-Z]{6}\+Roboto-Regular/); // a subset, embedded
    expect(latin1(pdf)).toMatch(/\/FontFile2/);
    expect(latin1(pdf)).not.toMatch(/\/BaseFont \/Helvetica/);
  });

  it('keeps web and mail links and drops links with other schemes', async () => {
    const pdf = latin1(await renderPdf('<a href="https://example.com/rsvp">RSVP</a> <a href="javascript:alert(1)">x</a>', { title: 't' }));
    expect(pdf).toContain('/URI (https://example.com/rsvp)');
    expect(pdf).not.toContain('javascript');
  });

  it('embeds PNG and JPEG data: images and drops other data: images without failing', async () => {
    const pdf = await renderPdf(
      `<img src="data:image/png;base64,${png}" width="10"><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><img src="data:image/png;base64,bm90IGEgcG5n">`,
      { title: 't' },
    );
    expect(imageCount(pdf)).toBe(2); // the PNG and its alpha mask
  });

  describe('never loads what the html names', () => {
    let server: http.Server;
    let requests: string[];
    let origin: string;
    let localImage: string;

    beforeAll(async () => {
      requests = [];
      server = http.createServer((req, res) => {
        requests.push(req.url ?? '');
        res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from(png, 'base64'));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      localImage = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pdf-test-')), 'secret.png');
      fs.writeFileSync(localImage, Buffer.from(png, 'base64'));
    });

    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(path.dirname(localImage), { recursive: true, force: true });
    });

    it('requests no image URL, and renders the rest of the page', async () => {
      const html = `<p>Before</p><img src="${origin}/tracker.png"><img src="//127.0.0.1:1/x.png">
        <table background="${origin}/bg.png"><tr><td style="background-image: url(${origin}/cell.png)">Cell</td></tr></table>
        <picture><source srcset="${origin}/source.png"><img src="${origin}/picture.png"></picture><p>After</p>`;
      const pdf = await renderPdf(html, { title: 't' });
      expect(requests).toEqual([]);
      expect(imageCount(pdf)).toBe(0);
      expect(await shownText(pdf)).toMatch(/Before.*Cell.*After/);
    });

    it('reads no local file, named by an image, an SVG image or a data-pdfmake attribute', async () => {
      const html = `<p>Text</p><img src="${localImage}"><img src="file://${localImage}">
        <svg width="10" height="10"><image href="${localImage}" width="10" height="10"/></svg>
        <p data-pdfmake='{"image":"${localImage}"}'>x</p>`;
      const pdf = await renderPdf(html, { title: 't' });
      expect(imageCount(pdf)).toBe(0);
      expect(await shownText(pdf)).toContain('Text');
    });
  });

  // Speed is measured by `npm run bench -- sends` (PDF sends); a test asserts no render time (a loaded CI machine is slow).
  // The timeout is only a hang guard, far above any real figure (a loaded CI machine is slow).
  it('renders a typical 5 KB invitation and a 100 KB one in full', { timeout: 120_000 }, async () => {
    for (const size of [5_000, 100_000]) {
      const pdf = await renderPdf(invitationHtml(size), { title: 'Summer Gala' });
      expect(await shownText(pdf)).toContain('Grand Hotel, Amsterdam');
    }
  });
});
