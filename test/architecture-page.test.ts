// docs/architecture.md, the one page on the code's layout, held to the dependency rules
// `pnpm lint:deps` keeps (.dependency-cruiser.cjs): its layers table names the packages of each
// layer, lowest first, and the clients, exactly as the rules do; every package and service of the
// repository is on the page.
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const page = readFileSync(path.join(root, 'docs', 'architecture.md'), 'utf8');
type Rule = { name: string; from: { path: string }; to: { path: string } };
const rules = (createRequire(import.meta.url)(path.join(root, '.dependency-cruiser.cjs')) as { forbidden: Rule[] }).forbidden;

/** The package names in a rule's `^packages/(a|b)/` path. */
const packagesOf = (pattern: string) => /^\^packages\/\(([^)]+)\)\/$/.exec(pattern)![1]!.split('|').sort();

/** The rows of the page's layers table: each row's package names, in the page's order. */
function layersTable(): string[][] {
  const section = page.slice(page.indexOf('\n## Layers'), page.indexOf('\n## ', page.indexOf('\n## Layers') + 1));
  return section
    .split('\n')
    .filter((line) => /^\| [^-|]/.test(line) && !line.startsWith('| layer'))
    .map((line) => [...line.split('|')[2]!.matchAll(/`([\w-]+)`/g)].map((m) => m[1]!).sort());
}

describe('docs/architecture.md', () => {
  it('names the layers of the dependency rules, lowest first, and the clients', () => {
    const upward = rules.filter((r) => r.name.endsWith('-imports-upward'));
    expect(upward.length).toBeGreaterThan(2);
    // Each rule's `from` is one layer; the last rule's `to` is the top layer.
    const layers = [...upward.map((r) => packagesOf(r.from.path)), packagesOf(upward.at(-1)!.to.path)];
    const clients = packagesOf(rules.find((r) => r.name === 'client-imports-server')!.from.path);
    expect(layersTable()).toEqual([...layers, clients]);
  });

  it('puts every package of the repository in the table, and names every service', () => {
    const listed = layersTable().flat().sort();
    expect(listed).toEqual(readdirSync(path.join(root, 'packages')).sort());
    for (const service of readdirSync(path.join(root, 'services'))) expect(page).toContain(`\`services/${service}\``);
  });
});
