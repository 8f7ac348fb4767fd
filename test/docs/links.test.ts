import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Every relative markdown link in README.md and docs/*.md points at a file of the repository, and
 * every `#anchor` at a heading of that file (GitHub's rule: lower-case, punctuation other than
 * hyphens and underscores removed, each space a hyphen, repeats numbered -1, -2...). Nothing
 * links outside the repository.
 */
const root = path.join(__dirname, '..', '..');
const pages = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** Text without fenced code blocks and inline code, where a `[x](y)` is an example, not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, '').replace(/`[^`\n]*`/g, '');
}

export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link in a heading counts by its text
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const markdown = fs.readFileSync(file, 'utf8').replace(/^(```|~~~)[\s\S]*?^\1/gm, '');
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const match of markdown.matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const base = slug(match[1]!.replace(/`/g, ''));
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const match of markdown.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) found.add(match[1]!);
  return found;
}

function links(page: string): string[] {
  const text = prose(fs.readFileSync(path.join(root, page), 'utf8'));
  const targets = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!);
  const references = [...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((match) => match[1]!);
  return [...targets, ...references];
}

describe('markdown links in README.md and docs/', () => {
  it('slugs headings the way GitHub does', () => {
    expect(slug('Read models: what analysts see')).toBe('read-models-what-analysts-see');
    expect(slug('GET /events/{eventId}/stats')).toBe('get-eventseventidstats');
    expect(slug('Retries & back-off (v2)')).toBe('retries--back-off-v2');
    expect(slug('snake_case names')).toBe('snake_case-names');
  });

  it.each(pages)('%s: every relative link and anchor resolves inside the repository', (page) => {
    const broken: string[] = [];
    for (const target of links(page)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
        // The repository stands on its own: no link leads out of it (http:, https:, mailto:...).
        broken.push(`${target}: a link outside the repository`);
        continue;
      }
      const [file, anchor] = target.split('#', 2) as [string, string | undefined];
      const resolved = file === '' ? path.join(root, page) : path.resolve(path.dirname(path.join(root, page)), decodeURIComponent(file));
      if (path.isAbsolute(file) || !resolved.startsWith(root + path.sep)) {
        broken.push(`${target}: outside the repository`);
        continue;
      }
      if (!fs.existsSync(resolved)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(decodeURIComponent(anchor).toLowerCase())) {
        broken.push(`${target}: no heading with that anchor in ${path.relative(root, resolved)}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
