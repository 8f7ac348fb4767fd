import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { JSDOM, type DOMWindow } from 'jsdom';
import pdfmake, { type Content } from 'pdfmake';

/**
 * The spec's attachPdf: a PDF of the merge-resolved invitation HTML. The HTML is written by
 * the account, so the PDF never fetches or reads anything it names: images other than
 * embedded PNG/JPEG data are dropped before conversion, and pdfmake refuses every URL and
 * every local file except the Roboto font files pdfmake ships.
 */

type HtmlToPdfmake = (html: string, options: { window: DOMWindow; ignoreStyles?: string[] }) => Content;
// html-to-pdfmake is CommonJS without type declarations.
const htmlToPdfmake = createRequire(import.meta.url)('html-to-pdfmake') as HtmlToPdfmake;

/**
 * Roboto, the font pdfmake ships, embedded (subset) in each PDF: it has Latin with every European
 * accent, Greek, Cyrillic and combining marks. The standard PDF fonts (Helvetica) hold only
 * Windows-1252: PDFKit wrote any other character's UTF-16 code as two Latin-1 bytes, so `Łukasz`
 * or `Иван` printed as other letters (`票` as `yh`). A character Roboto lacks (CJK, Arabic, Hebrew,
 * emoji) prints as its missing-glyph box, never as another letter.
 */
const fontDirectory = join(dirname(createRequire(import.meta.url).resolve('pdfmake/package.json')), 'fonts', 'Roboto');
const robotoFile = (name: string): string => join(fontDirectory, `Roboto-${name}.ttf`);
const roboto = { normal: robotoFile('Regular'), bold: robotoFile('Medium'), italics: robotoFile('Italic'), bolditalics: robotoFile('MediumItalic') };
const fontFiles: ReadonlySet<string> = new Set(Object.values(roboto));

// pdfmake's Node entry is one shared instance; this module is its only user.
pdfmake.setFonts({ Roboto: roboto });
pdfmake.setUrlAccessPolicy(() => false);
pdfmake.setLocalAccessPolicy((path) => fontFiles.has(path));

/** A DOM for html-to-pdfmake. It never loads resources (JSDOM's default) and is reused: creating one takes ~50 ms. */
let domWindow: DOMWindow | undefined;

export async function renderPdf(html: string, options: { title: string }): Promise<Buffer> {
  domWindow ??= new JSDOM('').window;
  // NFC: a letter and its combining accent (`e` + U+0301, as macOS and some CRMs write names) become the one accented letter.
  const document = printableDocument(domWindow, html.normalize('NFC'));
  try {
    return await pdfOf(domWindow, document.body.innerHTML, options.title);
  } catch (error) {
    // A PNG or JPEG that PDFKit cannot read (truncated, corrupt) fails the whole PDF, and with it
    // the email and the ticket it carries: such an image is left out, as a mail client shows none.
    const unreadable = await unreadableImages(document);
    if (unreadable.length === 0) throw error;
    for (const image of unreadable) image.remove();
    return pdfOf(domWindow, document.body.innerHTML, options.title);
  }
}

function pdfOf(window: DOMWindow, html: string, title: string): Promise<Buffer> {
  const content = htmlToPdfmake(html, { window, ignoreStyles: ['font-family'] });
  return pdfmake.createPdf({ content, info: { title }, defaultStyle: { font: 'Roboto', fontSize: 11 } }).getBuffer();
}

/** The images pdfmake cannot draw, each tried alone. */
async function unreadableImages(document: Document): Promise<Element[]> {
  const unreadable: Element[] = [];
  for (const image of document.querySelectorAll('img')) {
    try {
      await pdfmake.createPdf({ content: [{ image: image.getAttribute('src')!.trim() }] }).getBuffer();
    } catch {
      unreadable.push(image);
    }
  }
  return unreadable;
}

/** Elements that print nothing useful, or that html-to-pdfmake would hand to pdfmake to load (svg). */
const unprintable = 'script, style, template, svg, math, iframe, frame, object, embed, video, audio, link, meta, base';
const linkSchemes = /^(https?|mailto|tel):/i;

/** The html with what the PDF must not load or act on removed. */
function printableDocument(window: DOMWindow, html: string): Document {
  const document = new window.DOMParser().parseFromString(html, 'text/html');
  for (const element of document.querySelectorAll(unprintable)) element.remove();
  for (const image of document.querySelectorAll('img')) {
    if (!isEmbeddedImage(image.getAttribute('src') ?? '')) image.remove();
  }
  // data-pdfmake is JSON merged into the pdfmake document: it could name images or files to load.
  for (const element of document.querySelectorAll('[data-pdfmake]')) element.removeAttribute('data-pdfmake');
  for (const link of document.querySelectorAll('a[href]')) {
    const href = link.getAttribute('href')!.trim();
    if (!href.startsWith('#') && !linkSchemes.test(href)) link.removeAttribute('href');
  }
  return document;
}

/** A data: URL holding a PNG or JPEG, the formats PDFKit embeds (anything else would fail the whole render). */
function isEmbeddedImage(src: string): boolean {
  const match = /^data:image\/(png|jpe?g);base64,/i.exec(src.trim());
  if (!match) return false;
  const head = Buffer.from(src.trim().slice(match[0].length, match[0].length + 12), 'base64');
  const png = head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const jpeg = head[0] === 0xff && head[1] === 0xd8;
  return png || jpeg;
}
