// Every tracked file cites the decision it follows as `docs/<page>.md#<section>` (Markdown pages
// link `page.md#section`): each such citation names a page and one of its headings, so a moved
// or renamed section breaks this test, not a reader. The contract is docs/api.md: a citation of
// a page outside the repository (`api.md "Limits"`) is refused.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { anchorOf } from './markdown-anchors';

const root = path.resolve(import.meta.dirname, '..');


const anchors = new Map<string, Set<string>>();
function anchorsOf(page: string): Set<string> {
  let found = anchors.get(page);
  if (!found) {
    const text = readFileSync(path.join(root, page), 'utf8');
    found = new Set(text.split('\n').filter((l) => /^#{1,4} /.test(l)).map((l) => anchorOf(l.replace(/^#+ /, ''))));
    anchors.set(page, found);
  }
  return found;
}

/** Every tracked text file (lock files and binaries aside), with its text. */
const files = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file && !file.endsWith('pnpm-lock.yaml') && existsSync(path.join(root, file)) && statSync(path.join(root, file)).size < 2_000_000)
  .map((file) => ({ file, text: readFileSync(path.join(root, file), 'utf8') }))
  .filter(({ text }) => !text.includes('\u0000'));

interface Citation {
  file: string;
  /** The page, relative to the repository's root. */
  page: string;
  anchor: string | null;
}

const citations: Citation[] = files.flatMap(({ file, text }) => {
  const fromRoot = [...text.matchAll(/(?<![\w/.-])((?:docs|bench)\/[a-z0-9-]+\.md)#([a-z0-9_-]+)/g)].map((m) => ({ file, page: m[1]!, anchor: m[2]! }));
  // Markdown links between pages: relative to the page that holds them.
  const links = file.endsWith('.md')
    ? [...text.matchAll(/\]\(((?:\.\.\/|[\w-]+\/)*[\w.-]+\.md)(?:#([\w-]+))?\)/g)]
        .filter((m) => !/^https?:/.test(m[1]!))
        .map((m) => ({ file, page: path.normalize(path.join(path.dirname(file), m[1]!)), anchor: m[2] ?? null }))
    : [];
  return [...fromRoot, ...links];
});

describe('citations of docs in every tracked file', () => {
  it('are many (the patterns match what code and pages write)', () => {
    expect(files.length).toBeGreaterThan(400);
    expect(citations.filter((c) => !c.file.endsWith('.md')).length).toBeGreaterThan(100);
    expect(citations.filter((c) => c.file.endsWith('.md')).length).toBeGreaterThan(50);
  });

  it('each name a page of the repository and one of its sections', () => {
    const broken = citations.filter(({ page, anchor }) => !existsSync(path.join(root, page)) || (anchor !== null && !anchorsOf(page).has(anchor)));
    expect(broken.map(({ file, page, anchor }) => `${file}: ${page}#${anchor}`)).toEqual([]);
  });

  it('cite the contract and the decisions by page and section, never a page outside the repository or a quoted section name', () => {
    // `api.md` or `decisions.md` stands only as the repository's page (`docs/api.md`, a link, a
    // path) or `docs/<page>.md#<section>`: never bare, which meant the contract outside the
    // repository, nor followed by a quoted section name.
    const loose = files.flatMap(({ file, text }) =>
      [...text.matchAll(/(?<![\w(/'.-])(?:api|decisions)\.md(?![#)\]'])|docs\/(?:api|decisions)\.md \\?"/g)]
        .filter((m) => text[m.index - 1] !== '[' && !file.endsWith('doc-citations.test.ts'))
        .map((m) => `${file}: …${text.slice(Math.max(0, m.index - 30), m.index + m[0].length + 20).replace(/\n/g, ' ')}…`),
    );
    expect(loose).toEqual([]);
  });
});
