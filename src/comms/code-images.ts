import bwipjs from 'bwip-js';
import QRCode from 'qrcode';
import { tokensUsed } from './merge-tokens.js';

/**
 * The guest's code as an image, for the `{{qrCode}}` and `{{barcodeImage}}` merge tokens
 * (docs/tickets.md, "Sizes"). Both are PNGs drawn with well-kept libraries (qrcode, bwip-js),
 * no network. The email carries them as inline attachments referenced by `cid:` (mail clients
 * block `data:` images); the PDF embeds the same PNGs.
 *
 * Sizes, chosen to scan from a phone screen and from paper:
 * - QR: error correction level M (15% of the symbol may be damaged), quiet zone 4 modules
 *   (ISO/IEC 18004), drawn at 8 pixels a module and shown at 4 CSS px (= 3 pt in the PDF,
 *   about 1.06 mm) a module: a 119-character signed ticket (version 7, 45 modules) is
 *   about 212 px / 56 mm wide with its quiet zone.
 * - Code 128: quiet zone 10 modules each side (ISO/IEC 15417), bars 12 mm high, drawn at 3
 *   pixels a module and shown at 1.5 CSS px a module (0.4 mm in the PDF), at most 600 px
 *   wide: right for short codes (a customer's own barcode up to about 30 characters). A signed
 *   ticket is too long for a 1D barcode on a page; use {{qrCode}} for those.
 */
export type CodeImageToken = 'qrCode' | 'barcodeImage';

export interface CodeImage {
  token: CodeImageToken;
  /** Content-ID of the inline attachment (without angle brackets). */
  cid: string;
  filename: string;
  contentType: 'image/png';
  content: Buffer;
  /** Display size in CSS pixels. */
  width: number;
  height: number;
  /** What the plain-text part and screen readers say instead of the picture. */
  alt: string;
}

export const qrErrorCorrection = 'M';
export const qrQuietZoneModules = 4;
const qrPixelsPerModule = 8;
const qrShownPerModule = 4;
export const code128QuietZoneModules = 10;
const code128PixelsPerModule = 3;
const code128ShownPerModule = 1.5;
const code128BarHeightMm = 12;
const code128MaxWidth = 600;

/** Which code tokens a template's html names (so a template without them renders no image). */
export function codeTokensIn(source: string): CodeImageToken[] {
  const used = tokensUsed(source);
  return (['qrCode', 'barcodeImage'] as const).filter((token) => used.has(token));
}

/** "Ticket code: …", the words that stand for the image in the plain-text part. */
export const codeInWords = (code: string): string => `Ticket code: ${code}`;

export async function qrImage(code: string, cidSuffix: string): Promise<CodeImage> {
  if (!asciiOnly(code)) return qrImageUtf8(code, cidSuffix);
  const qr = QRCode.create(code, { errorCorrectionLevel: qrErrorCorrection });
  const modules = qr.modules.size + 2 * qrQuietZoneModules;
  const content = await QRCode.toBuffer(code, {
    type: 'png',
    errorCorrectionLevel: qrErrorCorrection,
    margin: qrQuietZoneModules,
    scale: qrPixelsPerModule,
    color: { dark: '#000000ff', light: '#ffffffff' },
  });
  const size = modules * qrShownPerModule;
  return { token: 'qrCode', cid: `qrcode.${cidSuffix}`, filename: 'ticket-qr.png', contentType: 'image/png', content, width: size, height: size, alt: codeInWords(code) };
}

const asciiOnly = (code: string): boolean => /^[\x00-\x7f]*$/.test(code);

/**
 * A code with text beyond ASCII as a QR code that says its bytes are UTF-8: an ECI designator 26
 * before them (ISO/IEC 18004 §6.4.2). Without it a reader takes byte-mode data as ISO-8859-1 (the
 * standard's default) or guesses: `qrcode` writes the UTF-8 bytes with no designator (it has no ECI),
 * which a door scanner that follows the standard reads as `CafÃ©`. bwip-js writes the designator;
 * the symbol has the same level, quiet zone and pixels a module as `qrcode`'s. ASCII reads the same
 * either way, so ASCII codes (every signed ticket) keep the designator-free symbol.
 */
async function qrImageUtf8(code: string, cidSuffix: string): Promise<CodeImage> {
  const content = await bwipjs.toBuffer({
    bcid: 'qrcode',
    // bwip-js writes the text as UTF-8; `parsefnc` reads `^ECI000026`, so a `^` of the code is `^^`.
    text: `^ECI000026${code.replace(/\^/g, '^^')}`,
    parsefnc: true,
    eclevel: qrErrorCorrection,
    // bwip-js draws a QR module 2 units wide and scales units (padding too) by `scale`.
    scale: qrPixelsPerModule / 2,
    padding: qrQuietZoneModules * 2,
    backgroundcolor: 'FFFFFF',
  } as Parameters<typeof bwipjs.toBuffer>[0]).catch((error: unknown) => {
    // Too long (2,330 bytes of UTF-8 at level M, the designator included): said as `qrcode` says it.
    throw new Error(`The amount of data is too big to be stored in a QR Code (${(error as Error).message})`);
  });
  const size = (pngSize(content).width / qrPixelsPerModule) * qrShownPerModule;
  return { token: 'qrCode', cid: `qrcode.${cidSuffix}`, filename: 'ticket-qr.png', contentType: 'image/png', content, width: size, height: size, alt: codeInWords(code) };
}

/** Code 128 holds ASCII (0-127) as itself; bwip-js would write other text as UTF-8 bytes in FNC4, which scans as other characters. */
const code128Holds = asciiOnly;

/**
 * The guest's code as Code 128, or, when Code 128 cannot hold it exactly (text beyond ASCII, or
 * too long for bwip-js), as the QR code of `{{qrCode}}`: never bars that scan as another value.
 */
export async function code128Image(code: string, cidSuffix: string): Promise<CodeImage> {
  const bars = code128Holds(code) ? await code128Bars(code).catch(() => undefined) : undefined;
  if (!bars) return { ...(await qrImage(code, cidSuffix)), token: 'barcodeImage', cid: `barcode.${cidSuffix}` };
  return { ...bars, cid: `barcode.${cidSuffix}` };
}

async function code128Bars(code: string): Promise<Omit<CodeImage, 'cid'>> {
  const content = await bwipjs.toBuffer({
    bcid: 'code128',
    text: code,
    scale: code128PixelsPerModule,
    height: code128BarHeightMm,
    includetext: false,
    paddingwidth: code128QuietZoneModules,
    paddingheight: 2,
    backgroundcolor: 'FFFFFF',
  });
  const { width: pixelWidth, height: pixelHeight } = pngSize(content);
  const shown = (pixelWidth / code128PixelsPerModule) * code128ShownPerModule;
  const width = Math.round(Math.min(shown, code128MaxWidth));
  // A capped width narrows the bars only; the bars keep their height.
  const height = Math.round((pixelHeight / code128PixelsPerModule) * code128ShownPerModule);
  return {
    token: 'barcodeImage',
    filename: 'ticket-barcode.png',
    contentType: 'image/png',
    content,
    width,
    height,
    alt: codeInWords(code),
  };
}

/** Width and height from a PNG's IHDR chunk. */
export function pngSize(png: Buffer): { width: number; height: number } {
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** The images for the tokens a template uses, or none when the guest has no code. */
export async function codeImages(code: string | undefined, tokens: CodeImageToken[], cidSuffix: string): Promise<CodeImage[]> {
  if (!code) return [];
  return Promise.all(tokens.map((token) => (token === 'qrCode' ? qrImage(code, cidSuffix) : code128Image(code, cidSuffix))));
}

const escapeAttribute = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The `<img>` a token renders to; `data-ticket-code` lets the plain-text part say the code in words. */
export function imageTag(image: CodeImage, src = `cid:${image.cid}`): string {
  const alt = escapeAttribute(image.alt);
  return (
    `<img src="${escapeAttribute(src)}" alt="${alt}" data-ticket-code="${alt}" width="${image.width}" height="${image.height}" ` +
    `style="width:${image.width}px;height:${image.height}px;max-width:100%;display:block">`
  );
}

/** The html with each `cid:` image of `images` replaced by an embedded PNG, for the PDF. */
export function withEmbeddedImages(html: string, images: { cid?: string; content: Buffer; contentType: string }[]): string {
  let out = html;
  for (const image of images) {
    if (!image.cid) continue;
    out = out.split(`src="cid:${image.cid}"`).join(`src="data:${image.contentType};base64,${image.content.toString('base64')}"`);
  }
  return out;
}
