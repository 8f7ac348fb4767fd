import Handlebars from 'handlebars';
import { LRUCache } from 'lru-cache';
import { parseDocument, DomUtils, Parser } from 'htmlparser2';
import { imageTag, type CodeImage } from './code-images.js';

/**
 * Merge tokens of invitation templates (spec: Comms template; the spec leaves the list to
 * us). A template writes them in double braces, `{{firstName}}`, rendered by Handlebars.
 * Only plain tokens and `if`/`unless` blocks over tokens are allowed: a template is
 * customer-written text, not a program (see `checkTemplate`).
 */
export const mergeTokens = [
  { token: 'firstName', description: "The guest's first name" },
  { token: 'otherNames', description: "The guest's other (middle) names" },
  { token: 'lastName', description: "The guest's last name" },
  { token: 'fullName', description: 'First, other and last names joined by single spaces' },
  { token: 'email', description: "The guest's email address" },
  { token: 'barcode', description: "The guest's barcode value" },
  { token: 'customId', description: 'The caller-chosen identifier of the guest' },
  { token: 'additionalInfo', description: 'Free text stored with the guest' },
  { token: 'plusOnes', description: 'How many plus ones the guest may bring' },
  { token: 'tags', description: "The guest's tags, separated by commas" },
  { token: 'validFrom', description: 'Earliest time the guest can be admitted' },
  { token: 'validTo', description: 'Latest time the guest can be admitted' },
  { token: 'eventTitle', description: 'Title of the event' },
  { token: 'eventStart', description: 'Start time of the event' },
  { token: 'eventEnd', description: 'End time of the event' },
  { token: 'eventTimeZone', description: 'Zone of the times shown: the event’s, else the client’s, else UTC (IANA name)' },
  { token: 'attendeeId', description: "The guest's id (GUID)" },
  { token: 'attendeeInvitationId', description: 'Tracking id (GUID) of this send, as in the comms webhooks' },
  { token: 'companyName', description: 'Company name of the sending account' },
  { token: 'qrCode', description: "The guest's code (barcode or signed ticket) as a QR code image; html only" },
  { token: 'barcodeImage', description: "The guest's code as a Code 128 barcode image (short codes); html only" },
] as const;

/** Tokens that render an image: only in html, never in the subject. */
const imageTokens: ReadonlySet<string> = new Set(['qrCode', 'barcodeImage']);

export type MergeToken = (typeof mergeTokens)[number]['token'];

/** A missing value renders as empty text. */
export type MergeValues = Partial<Record<MergeToken, string | number | undefined>>;

export interface Template {
  subject?: string;
  html: string;
}

export interface TemplateError {
  path: 'subject' | 'html';
  message: string;
}

/** Used when a template has no subject of its own. */
export const defaultSubject = 'Your invitation to {{eventTitle}}';

const tokenNames: ReadonlySet<string> = new Set(mergeTokens.map((t) => t.token));
const allowedBlocks = new Set(['if', 'unless']);

/** Every problem in the template; an empty list means it can be stored and rendered. */
export function checkTemplate(template: Template): TemplateError[] {
  const errors: TemplateError[] = [];
  if (template.subject !== undefined) errors.push(...checkSource(template.subject, 'subject'));
  errors.push(...checkSource(template.html, 'html'));
  return errors;
}

function checkSource(source: string, path: TemplateError['path']): TemplateError[] {
  let program: hbs.AST.Program;
  try {
    program = Handlebars.parse(source);
  } catch (error) {
    return [{ path, message: syntaxErrorMessage(error) }];
  }
  return checkStatements(program.body, path).map((message) => ({ path, message }));
}

/** Handlebars' parser reports "Parse error on line N:\n<excerpt>\n---^\nExpecting ..."; other errors carry lineNumber. */
function syntaxErrorMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const parse = /^Parse error on line (\d+):\n(.*)\n-*\^\n(.*)$/s.exec(text);
  if (parse) return `syntax error on line ${parse[1]} near "${parse[2]!.trim()}": ${parse[3]!.trim()}`;
  const line = (error as { lineNumber?: unknown }).lineNumber;
  return typeof line === 'number' ? `syntax error on line ${line}: ${text}` : `syntax error: ${text}`;
}

function checkStatements(body: hbs.AST.Statement[], path: TemplateError['path']): string[] {
  return body.flatMap((statement) => checkStatement(statement, path));
}

function checkStatement(statement: hbs.AST.Statement, path: TemplateError['path']): string[] {
  const at = `(line ${statement.loc.start.line})`;
  switch (statement.type) {
    case 'ContentStatement':
    case 'CommentStatement':
      return [];
    case 'MustacheStatement': {
      const mustache = statement as hbs.AST.MustacheStatement;
      if (hasArguments(mustache)) return [`helpers are not allowed, only plain tokens like {{firstName}} ${at}`];
      const problems = checkTokenPath(mustache.path, at);
      if (path === 'subject' && mustache.path.type === 'PathExpression' && imageTokens.has((mustache.path as hbs.AST.PathExpression).original)) {
        problems.push(`{{${(mustache.path as hbs.AST.PathExpression).original}}} renders an image: it is only allowed in html ${at}`);
      }
      if (!mustache.escaped && path === 'subject') problems.push(`raw output {{{…}}} is only allowed in html ${at}`);
      return problems;
    }
    case 'BlockStatement': {
      const block = statement as hbs.AST.BlockStatement;
      const name = block.path.original;
      if (!allowedBlocks.has(name) || block.path.type !== 'PathExpression' || block.program === undefined) {
        return [`only {{#if token}} and {{#unless token}} blocks are allowed, not "${name}" ${at}`];
      }
      if (block.params.length !== 1 || (block.hash?.pairs.length ?? 0) > 0) {
        return [`{{#${name}}} takes exactly one token ${at}`];
      }
      return [
        ...checkTokenPath(block.params[0]!, at),
        ...checkStatements(block.program.body, path),
        ...checkStatements(block.inverse?.body ?? [], path),
      ];
    }
    case 'PartialStatement':
    case 'PartialBlockStatement':
      return [`partials are not allowed ${at}`];
    default:
      // Decorators ({{* x}}, {{#* x}}) and anything a later Handlebars adds.
      return [`"${statement.type}" is not allowed ${at}`];
  }
}

function hasArguments(node: { params: unknown[]; hash?: hbs.AST.Hash }): boolean {
  return node.params.length > 0 || (node.hash?.pairs.length ?? 0) > 0;
}

/** A token reference must be a bare known name: no literals, `this`, `../`, `@root` or `a.b`. */
function checkTokenPath(expression: hbs.AST.Expression, at: string): string[] {
  if (expression.type !== 'PathExpression') return [`only merge tokens can be output, not literals or sub-expressions ${at}`];
  const path = expression as hbs.AST.PathExpression;
  if (path.data || path.depth > 0 || path.parts.length !== 1 || path.original !== path.parts[0]) {
    return [`"${path.original}" is not a merge token: write a token name alone, like {{firstName}} ${at}`];
  }
  if (tokenNames.has(path.original)) return [];
  const suggestion = closestToken(path.original);
  return [`unknown merge token "${path.original}"${suggestion ? ` (did you mean "${suggestion}"?)` : ''} ${at}`];
}

function closestToken(name: string): string | undefined {
  let best: { token: string; distance: number } | undefined;
  for (const token of tokenNames) {
    const distance = editDistance(name.toLowerCase(), token.toLowerCase());
    if (!best || distance < best.distance) best = { token, distance };
  }
  // A third of the length catches typos and snake_case without suggesting unrelated names.
  return best && best.distance <= Math.max(1, Math.floor(best.token.length / 3)) ? best.token : undefined;
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

const usedCache = new LRUCache<string, ReadonlySet<string>>({ max: 500 });

/**
 * The merge tokens a template source names (output or block condition); none for a source that
 * does not parse. Kept per source: every send of a template asks again.
 */
export function tokensUsed(source: string): ReadonlySet<string> {
  let used = usedCache.get(source);
  if (!used) usedCache.set(source, (used = parsedTokens(source)));
  return used;
}

function parsedTokens(source: string): Set<string> {
  const used = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    const typed = node as { type?: string; original?: unknown };
    if (typed.type === 'PathExpression' && typeof typed.original === 'string') used.add(typed.original);
    for (const [key, value] of Object.entries(node)) if (key !== 'loc') visit(value);
  };
  try {
    visit(Handlebars.parse(source));
  } catch {
    // An unparsable template is refused at render time; it uses nothing.
  }
  return used;
}

export class InvalidTemplateError extends Error {
  override readonly name = 'InvalidTemplateError';
  constructor(readonly errors: TemplateError[]) {
    super(`invalid template: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`);
  }
}

/**
 * The subject, html and a plain-text alternative with the values merged in. Throws
 * InvalidTemplateError for a template `checkTemplate` refuses (it should have been refused
 * when it was stored). `images` are what `{{qrCode}}` and `{{barcodeImage}}` render to
 * (src/comms/code-images.ts): an `<img src="cid:…">` each; without one the token is empty.
 */
export function renderTemplate(
  template: Template,
  values: MergeValues,
  images: CodeImage[] = [],
): { subject: string; html: string; text: string } {
  const context: Record<string, unknown> = { ...values, qrCode: undefined, barcodeImage: undefined };
  for (const image of images) context[image.token] = new Handlebars.SafeString(imageTag(image));
  const html = renderHtml(template.html, context);
  const subject = headerText(compiled(template.subject ?? defaultSubject, 'subject')(context));
  // A subject that says nothing (white space as written, or once merged) gets the default one:
  // the providers refuse an email without a subject (a template's subject is any string).
  return { subject: subject || headerText(compiled(defaultSubject, 'subject')(context)), html, text: plainText(html) };
}

/**
 * Marks one output of a value in the html: `E` escaped ({{token}}), `R` raw ({{{token}}}), then the
 * occurrence's number. Private-use characters, which Handlebars' escaping leaves alone.
 */
const marker = /\uE000([ER])(\d+)\uE001/g;

/**
 * The html with the values merged in. A value written into a link after its start
 * (`href="https://x.test/rsvp?email={{email}}"`) is percent-encoded as a URL component as well as
 * HTML-escaped: a `+`, `&`, `#`, `?` or space of a guest's data would otherwise change what the
 * link says (`ada+gala@x.test` read back as "ada gala@x.test", "Tom & Jerry" cut at the `&`).
 * A value that is the whole attribute (`href="{{additionalInfo}}"`) is the URL itself and is only
 * escaped; raw `{{{token}}}` is never changed. Each output of a value is rendered as a marker
 * first, then the html is read to see where each marker landed.
 */
function renderHtml(source: string, context: Record<string, unknown>): string {
  const template = compiled(source, 'html');
  if (source.includes('\uE000')) return template(context); // a template that writes the marker character itself
  const outputs: string[] = [];
  const marked: Record<string, unknown> = { ...context };
  for (const [name, value] of Object.entries(context)) {
    // Only values that render text: empty ones keep their falsiness for {{#if}}, images stay SafeStrings.
    if (!value || value instanceof Handlebars.SafeString || (typeof value !== 'string' && typeof value !== 'number')) continue;
    const text = String(value);
    marked[name] = {
      toHTML: () => `\uE000E${outputs.push(text) - 1}\uE001`,
      toString: () => `\uE000R${outputs.push(text) - 1}\uE001`,
    };
  }
  const html = template(marked);
  const inUrls = new Set<number>();
  const scan = (markup: string): void =>
    new Parser({
      onattribute(name, value) {
        if (!urlAttributes.has(name.toLowerCase())) return;
        for (const match of value.matchAll(marker)) {
          if (value.slice(0, match.index).trim() !== '') inUrls.add(Number(match[2]));
        }
      },
      // Outlook renders markup in conditional comments (<!--[if mso]><v:roundrect href=…>), the usual email button.
      oncomment: scan,
    }).end(markup);
  scan(html);
  return html.replace(marker, (_, kind: string, index: string) => {
    const text = outputs[Number(index)]!;
    if (kind === 'R') return text;
    return Handlebars.escapeExpression(inUrls.has(Number(index)) ? urlComponent(text) : text);
  });
}

/** Attributes whose value is a URL (as src/comms/link-safety.ts reads them). */
const urlAttributes: ReadonlySet<string> = new Set(['href', 'src', 'action', 'formaction', 'background', 'poster', 'xlink:href', 'cite']);

/** A value as one URL component; `@` stays as written (it is allowed in paths and queries, RFC 3986 pchar). */
function urlComponent(text: string): string {
  return encodeURIComponent(text).replace(/%40/g, '@');
}

/**
 * A subject or a display name is mail header text: a line break in it (from a value or the template)
 * would start a new header, and control characters have no place in one (RFC 5322 §2.2, 3.2.5).
 */
export function headerText(subject: string): string {
  // U+0085 (NEL) is a line break too once a client decodes the encoded word; C1 controls are controls.
  return subject.replace(/[\r\n\u0085\u2028\u2029]+/g, ' ').replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u0084\u0086-\u009f]/g, '').trim();
}

const cacheLimit = 500;
const cache = new Map<string, Handlebars.TemplateDelegate>();

/** Compiled templates by source, least recently used first; a template is checked once, when first compiled. */
function compiled(source: string, path: TemplateError['path']): Handlebars.TemplateDelegate {
  const key = `${path}:${source}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const errors = checkSource(source, path);
  if (errors.length > 0) throw new InvalidTemplateError(errors);
  // knownHelpersOnly: a name Handlebars does not know is always a value lookup, never a helper call.
  const template = Handlebars.compile(source, { strict: false, knownHelpersOnly: true, noEscape: path === 'subject' });
  cache.set(key, template);
  if (cache.size > cacheLimit) cache.delete(cache.keys().next().value!);
  return template;
}

type DomNode = ReturnType<typeof parseDocument>['children'][number];

const skipped = new Set(['script', 'style', 'head', 'title', 'template']);
const paragraphs = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'ul', 'ol', 'blockquote', 'pre', 'hr']);
const lines = new Set(['div', 'li', 'tr', 'dt', 'dd', 'section', 'article', 'header', 'footer', 'address', 'center']);

/**
 * The plain-text alternative of rendered html: text content without scripts and styles,
 * links as "text (url)", paragraphs, <br> and list items as line breaks.
 */
export function plainText(html: string): string {
  const out: string[] = [];
  let owedBreaks = 0; // block boundaries merge: the end of one <li> and the start of the next make one break
  const write = (text: string): void => {
    if (text.trim() === '' && (owedBreaks > 0 || out.length === 0)) return;
    if (owedBreaks > 0 && out.length > 0) out.push('\n'.repeat(owedBreaks));
    owedBreaks = 0;
    out.push(text);
  };
  const walk = (nodes: DomNode[]): void => {
    for (const node of nodes) {
      if (DomUtils.isText(node)) write(node.data.replace(/\s+/g, ' '));
      if (!DomUtils.isTag(node) || skipped.has(node.name)) continue;
      const breaks = paragraphs.has(node.name) ? 2 : lines.has(node.name) ? 1 : 0;
      owedBreaks = Math.max(owedBreaks, breaks);
      // A code image ({{qrCode}}, {{barcodeImage}}) is said in words: "Ticket code: …".
      if (node.name === 'img' && node.attribs['data-ticket-code']) {
        owedBreaks = Math.max(owedBreaks, 1);
        write(node.attribs['data-ticket-code']);
        owedBreaks = Math.max(owedBreaks, 1);
      }
      if (node.name === 'br') out.push('\n');
      else if (node.name === 'li') write('- ');
      else if (node.name === 'td' || node.name === 'th') write(' ');
      walk(node.children);
      if (node.name === 'a') write(linkTarget(node.attribs.href, DomUtils.textContent(node)));
      owedBreaks = Math.max(owedBreaks, breaks);
    }
  };
  walk(parseDocument(html).children);
  return out
    .join('')
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** " (url)" after a link's text, unless the text already is the url or the link goes nowhere. */
function linkTarget(href: string | undefined, text: string): string {
  const url = href?.trim();
  if (!url || url.startsWith('#')) return '';
  const shown = text.replace(/\s+/g, ' ').trim();
  // A merged address is percent-encoded in the link (`mailto:ada%2Bgala@x.test`, renderHtml) but shown as written.
  const target = decodedUrl(url);
  if (shown === url || shown === target || `mailto:${shown}` === url || `mailto:${shown}` === target) return '';
  return shown ? ` (${url})` : url;
}

function decodedUrl(url: string): string {
  try {
    return decodeURIComponent(url);
  } catch {
    return url;
  }
}
