// `pnpm install` warns about every package whose `engines.node` excludes the running Node. The
// project declares Node >= 24 (package.json) and ships 24 (Dockerfile, CI), so every
// package in the lockfile must admit both; docs/operations.md#the-rules has the choice.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import semver from 'semver';

const root = new URL('../', import.meta.url);
const read = (p: string) => readFileSync(new URL(p, root), 'utf8');

const declared = JSON.parse(read('package.json')).engines.node as string;
const shipped = /^ARG NODE_IMAGE=node:(\d+\.\d+\.\d+)-/m.exec(read('Dockerfile'))![1]!;
const lock = yaml.load(read('pnpm-lock.yaml')) as { packages: Record<string, { engines?: { node?: string } }> };

/** Packages of the lockfile whose engines exclude `version`. */
function excluding(version: string): string[] {
  return Object.entries(lock.packages)
    .filter(([, p]) => p.engines?.node && !semver.satisfies(version, p.engines.node))
    .map(([name, p]) => `${name} (node ${p.engines!.node})`);
}

describe('engines', () => {
  it('the lockfile has engine ranges to check', () => {
    expect(Object.values(lock.packages).filter((p) => p.engines?.node).length).toBeGreaterThan(100);
    // The check itself: a package that wants Node 22 would be reported.
    expect(semver.satisfies('20.19.0', '>=22.0.0')).toBe(false);
  });

  it('every package admits the lowest Node the project declares, the Node the image ships and the one running here', () => {
    const lowest = semver.minVersion(declared)!.version;
    expect({ lowest: excluding(lowest), shipped: excluding(shipped), running: excluding(process.versions.node) }).toEqual({ lowest: [], shipped: [], running: [] });
    expect(semver.satisfies(shipped, declared)).toBe(true);
  });

  it('@prisma/streams-local (Node >= 22, only for `prisma dev`) stays out of the install', () => {
    expect(Object.keys(lock.packages).filter((name) => name.startsWith('@prisma/streams-local'))).toEqual([]);
  });
});
