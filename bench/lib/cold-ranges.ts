// bench:stream (d): what a download manager meets on a cold stream ZIP, timed with the tools
// users run: curl (time to first byte of one range, or of 8 ranges at once) and aria2c -x8 -s8
// (8 connections, when installed), each against the stream ZIP and a plain proxy of the same bytes.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Timed {
  /** Seconds to the first byte (the slowest range's, for several). */
  ttfb: number;
  /** Seconds to the last byte. */
  total: number;
  bytes: number;
}

/** One `curl -r` range (`a-b`, `a-` or `-n`), read to its end into nothing. */
export async function curlRange(url: string, range: string): Promise<Timed> {
  const { stdout } = await run('curl', ['-s', '-o', '/dev/null', '-r', range, '-w', '%{http_code} %{time_starttransfer} %{time_total} %{size_download}', url], { maxBuffer: 1 << 20 });
  const [code, ttfb, total, bytes] = stdout.trim().split(' ');
  if (code !== '206') throw new Error(`curl -r ${range} ${url}: HTTP ${code}`);
  return { ttfb: Number(ttfb), total: Number(total), bytes: Number(bytes) };
}

/** `connections` curl ranges at once that split [0, size) evenly, as a download manager's first requests. */
export async function parallelRanges(url: string, size: number, connections: number): Promise<Timed> {
  const cuts = Array.from({ length: connections + 1 }, (_, i) => Math.floor((size * i) / connections));
  const t0 = performance.now();
  const all = await Promise.all(cuts.slice(0, -1).map((a, i) => curlRange(url, `${a}-${cuts[i + 1]! - 1}`)));
  return { ttfb: Math.max(...all.map((r) => r.ttfb)), total: (performance.now() - t0) / 1000, bytes: all.reduce((n, r) => n + r.bytes, 0) };
}

export const hasAria2 = (() => {
  try {
    execFileSync('aria2c', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** `aria2c -x8 -s8` into a scratch directory (removed after): seconds to the whole file. */
export async function aria2(url: string): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-aria2-'));
  const t0 = performance.now();
  try {
    await run('aria2c', ['-x8', '-s8', '-k1M', '--file-allocation=none', '--allow-overwrite=true', '--auto-file-renaming=false', '-q', '-d', dir, '-o', 'out.zip', url]);
    return (performance.now() - t0) / 1000;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
