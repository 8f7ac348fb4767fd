/**
 * Regenerates docs/ticket-example.png: an invitation PDF page with a signed ticket as a QR code
 * (docs/tickets.md). Run: `npx tsx scripts/ticket-example.ts`. Uses a throwaway Ed25519 key and
 * the same code paths as a real send (merge tokens, code images, PDF), then renders page 1 with
 * pdf.js and checks the QR code on it reads back before writing the picture.
 */
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import { codeImages, withEmbeddedImages } from '../src/comms/code-images.js';
import { renderTemplate } from '../src/comms/merge-tokens.js';
import { renderPdf } from '../src/comms/pdf.js';
import { encodeTicket } from '../src/tickets/ticket-code.js';
import { decodeQr, renderPdfPage } from '../test/support/decode-codes.js';

const eventId = '6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b';
const guestId = '3f2b8c1e-5d4a-4e7b-9c1d-2a3b4c5d6e7f';
const { privateKey } = generateKeyPairSync('ed25519');
const code = encodeTicket({ guestId, keyId: '9c41e07a', serial: 1 }, eventId, privateKey);

const template = {
  subject: 'Your ticket for {{eventTitle}}',
  html: `<h1>{{eventTitle}}</h1>
<p>Dear {{fullName}},</p>
<p>We look forward to welcoming you on {{eventStart}}. Please bring this ticket: on your phone or printed.</p>
{{qrCode}}
<p>Doors open at 18:00. This ticket admits {{fullName}} and {{plusOnes}} guest(s).</p>`,
};
const images = await codeImages(code, ['qrCode'], 'example@checkin');
const rendered = renderTemplate(template, { eventTitle: 'Winter Gala', fullName: 'Ann Lee', eventStart: 'Saturday 12 December 2026 at 19:00', plusOnes: 1 }, images);
const pdf = await renderPdf(withEmbeddedImages(rendered.html, images), { title: 'Winter Gala invitation' });
const page = await renderPdfPage(pdf, 1, 1.5);
const read = decodeQr(page);
if (read !== code) throw new Error(`the QR code on the rendered page reads ${JSON.stringify(read)}, not the ticket`);
const out = new URL('../docs/ticket-example.png', import.meta.url);
fs.writeFileSync(out, page.png);
console.log(`wrote ${out.pathname} (${page.width}x${page.height}); the QR code reads back as ${code}`);
console.log(`plain-text part:\n${rendered.text}`);
