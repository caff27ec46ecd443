// Where a bench leaves its figures: bench/results/<bench>.json (what was run, where, on which
// commit, and every figure) and bench/charts/<name>.svg, which bench/README.md shows.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './env';
import { lineChart, type Chart } from './svg';

export interface Run {
  bench: string;
  /** The parameters the run took (sizes, counts, concurrencies). */
  params: Record<string, unknown>;
  figures: Record<string, unknown>;
}

function commit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head}+changes` : head;
  } catch {
    return 'unknown';
  }
}

/** The commit the run measures: taken when the bench starts, not when it ends. */
const STARTED_ON = commit();

/** Writes the run's JSON; returns its path. */
export function writeResults(run: Run): string {
  const dir = path.join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${run.bench}.json`);
  const record = {
    ...run,
    date: new Date().toISOString(),
    commit: STARTED_ON,
    machine: { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, loadAverage: os.loadavg().map((l) => Number(l.toFixed(1))), node: process.version },
  };
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
  console.log(`results: ${path.relative(ROOT, file)}`);
  return file;
}

/** Writes bench/charts/<name>.svg; returns its path. */
export function writeChart(name: string, chart: Chart): string {
  const dir = path.join(ROOT, 'bench/charts');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.svg`);
  writeFileSync(file, lineChart(chart));
  console.log(`chart: ${path.relative(ROOT, file)}`);
  return file;
}

/** Samples a process's resident set (VmRSS, in MB as the 200 MB target) every `everyMs` until stopped: [seconds, MB] pairs. */
export function sampleRss(pid: number, everyMs = 100): { stop(): Array<[number, number]> } {
  const t0 = Date.now();
  const points: Array<[number, number]> = [];
  const read = () => {
    try {
      const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
      if (Number.isFinite(kib)) points.push([(Date.now() - t0) / 1000, (kib * 1024) / 1e6]);
    } catch {
      // the process has gone
    }
  };
  read();
  const timer = setInterval(read, everyMs);
  return {
    stop() {
      clearInterval(timer);
      read();
      return points;
    },
  };
}
