/**
 * Ticket QR codes holding text beyond ASCII (a customer's own barcode `Café-12`, `票-7`): the symbol
 * says its bytes are UTF-8 (ECI designator 26), so a scanner that follows ISO/IEC 18004 (byte mode
 * is ISO-8859-1 unless an ECI says otherwise) reads the code, not `CafÃ©-12`. docs/tickets.md.
 */
import jsQRModule from 'jsqr';
import QRCode from 'qrcode';
import { describe, expect, it } from 'vitest';
import { code128Image, qrImage, qrQuietZoneModules } from '../../src/comms/code-images.js';
import { pngPixels } from '../support/decode-codes.js';

interface Chunk {
  type: string;
  assignmentNumber?: number;
  bytes?: number[];
}
type JsQr = (data: Uint8ClampedArray, width: number, height: number) => { data: string; version: number; chunks: Chunk[]; location: { topLeftCorner: { x: number } } } | null;
const jsQR = ((jsQRModule as unknown as { default?: JsQr }).default ?? jsQRModule) as unknown as JsQr;

function read(png: Buffer) {
  const pixels = pngPixels(png);
  const result = jsQR(pixels.data, pixels.width, pixels.height);
  expect(result).not.toBeNull();
  return { ...result!, pixels };
}

describe('QR codes of text beyond ASCII carry the UTF-8 ECI designator', () => {
  it.each(['Café-12', '票-7', 'Zoë ^ 100 % ^^', 'é'.repeat(40), 'Łódź 😀'])('%s: ECI 26, then its UTF-8 bytes; reads back exactly', async (code) => {
    const { data, chunks } = read((await qrImage(code, 't')).content);
    expect(chunks[0]).toMatchObject({ type: 'eci', assignmentNumber: 26 });
    const bytes = chunks.filter((c) => c.type === 'byte').flatMap((c) => c.bytes ?? []);
    expect(Buffer.from(bytes)).toEqual(Buffer.from(code, 'utf8'));
    expect(data).toBe(code);
  });

  it('the symbol keeps the level-M size, the 4-module quiet zone and 8 px a module shown at 4 CSS px', async () => {
    const code = 'Café-12';
    const image = await qrImage(code, 't');
    const { version, pixels, location } = read(image.content);
    const modules = 17 + 4 * version;
    // The designator costs 12 bits: still the version qrcode picks at level M for these bytes.
    expect(version).toBe(QRCode.create(code, { errorCorrectionLevel: 'M' }).version);
    expect(pixels.width).toBe((modules + 2 * qrQuietZoneModules) * 8);
    expect(image).toMatchObject({ width: pixels.width / 2, height: pixels.width / 2, token: 'qrCode', cid: 'qrcode.t', alt: `Ticket code: ${code}` });
    expect(Math.round(location.topLeftCorner.x)).toBe(qrQuietZoneModules * 8);
  });

  it('{{barcodeImage}} of such a code (Code 128 cannot hold it) is the same QR code, designator included', async () => {
    const image = await code128Image('Café-12', 't');
    expect(image).toMatchObject({ token: 'barcodeImage', cid: 'barcode.t' });
    expect(read(image.content).chunks[0]).toMatchObject({ type: 'eci', assignmentNumber: 26 });
  });

  it('an ASCII code (every signed ticket) has no designator: it reads the same under any default', async () => {
    const { chunks, data } = read((await qrImage('GALA-0001', 't')).content);
    expect(chunks.some((c) => c.type === 'eci')).toBe(false);
    expect(data).toBe('GALA-0001');
  });

  it('a code beyond what the symbol holds fails as qrcode says it (render_failed), at 2,331 bytes of UTF-8', async () => {
    const fits = `é${'x'.repeat(2328)}`;
    expect(Buffer.byteLength(fits)).toBe(2330);
    expect(read((await qrImage(fits, 't')).content).data).toBe(fits);
    await expect(qrImage(`${fits}x`, 't')).rejects.toThrow(/The amount of data is too big to be stored in a QR Code/);
  });
});
