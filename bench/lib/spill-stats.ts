// The spill areas of the services under FETCH_SPILL_DIR (docs/engine.md#spilling-ahead-to-disk),
// sampled every 100 ms: each process's most bytes on disk at once, and about how many it wrote
// (each file's largest size seen; a file's last 100 ms before its removal may be missed).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface SpillFigures {
  peakBytes: number;
  spilledBytes: number;
}

/** Samples the spill area of process `pid` under `root` until stopped. */
export function sampleSpill(root: string, pid: number): { stop(): SpillFigures } {
  const base = join(root, 'ap-fetch-spill');
  const largest = new Map<string, number>();
  let peakBytes = 0;
  const sample = () => {
    let now = 0;
    let dirs: string[] = [];
    try {
      dirs = readdirSync(base).filter((name) => name.startsWith(`${pid}-`));
    } catch {
      return;
    }
    for (const dir of dirs) {
      let files: string[] = [];
      try {
        files = readdirSync(join(base, dir));
      } catch {
        continue;
      }
      for (const file of files) {
        const path = join(base, dir, file);
        const size = (() => {
          try {
            return statSync(path).size;
          } catch {
            return 0;
          }
        })();
        now += size;
        largest.set(path, Math.max(largest.get(path) ?? 0, size));
      }
    }
    peakBytes = Math.max(peakBytes, now);
  };
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      sample();
      let spilledBytes = 0;
      for (const size of largest.values()) spilledBytes += size;
      return { peakBytes, spilledBytes };
    },
  };
}

export const spillFigure = (f: SpillFigures) => `spilled ~${(f.spilledBytes / 2 ** 20).toFixed(0)} MiB, peak ${(f.peakBytes / 2 ** 20).toFixed(0)} MiB on disk`;
