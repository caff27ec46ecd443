// Code cites the decision it follows as `docs/<page>.md#<section>`: every such citation names a
// page of docs/ and one of its headings, so a moved or renamed section breaks this test, not a reader.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');

/** GitHub's anchor of a Markdown heading. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_ -]/gu, '')
    .replace(/ /g, '-');

function anchorsOf(page: string): Set<string> {
  const text = readFileSync(path.join(root, page), 'utf8');
  return new Set(text.split('\n').filter((l) => /^#{1,4} /.test(l)).map((l) => anchorOf(l.replace(/^#+ /, ''))));
}

describe('citations of docs in code', () => {
  const files = execFileSync('git', ['ls-files', '*.ts', '*.tsx', '*.cjs', '*.sh'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
  const citations = files.flatMap((file) =>
    [...readFileSync(path.join(root, file), 'utf8').matchAll(/docs\/([a-z0-9-]+\.md)#([a-z0-9_-]+)/g)].map((m) => ({ file, page: `docs/${m[1]}`, anchor: m[2]! })),
  );

  it('are many (the pattern matches what code writes)', () => {
    expect(citations.length).toBeGreaterThan(50);
  });

  it('each name a page and one of its sections', () => {
    const broken = citations.filter(({ page, anchor }) => !existsSync(path.join(root, page)) || !anchorsOf(page).has(anchor));
    expect(broken.map(({ file, page, anchor }) => `${file}: ${page}#${anchor}`)).toEqual([]);
  });

  it('no longer cite decisions.md by a quoted section name', () => {
    const old = files.filter((file) => !file.endsWith('doc-citations.test.ts') && /decisions\.md "/.test(readFileSync(path.join(root, file), 'utf8')));
    expect(old).toEqual([]);
  });
});
