/**
 * A process's spill area (docs/engine.md#spilling-ahead-to-disk): bodies fetched ahead beyond
 * the memory budget write their bytes to files here and read them back in order (body-spill.ts).
 * Each process has a directory of its own under `<root>/ap-fetch-spill/`, named after its pid
 * and start time; at start it removes the directories of processes no longer running (a packer
 * killed with SIGKILL leaves its files behind), never a running one's.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const AREA_DIR = 'ap-fetch-spill';

/** A process's start time in clock ticks since boot (Linux), telling it from a later process with its pid. */
function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command (which may hold spaces and parentheses): start time is the 22nd field.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function isRunning(pid: number, started: string): boolean {
  const now = startTimeOf(pid);
  if (now !== null) return now === started;
  if (started !== '-') return false; // /proc says no such process
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class SpillArea {
  private used = 0;
  /** Most bytes held at once, and bytes written in all (benches, tests). */
  peakBytes = 0;
  spilledBytes = 0;
  private files = 0;
  private readonly waiting = new Set<() => void>();

  private constructor(
    /** This process's own directory. */
    readonly dir: string,
    /** Bytes the files may hold together (FETCH_SPILL_BYTES). */
    readonly bytes: number,
  ) {}

  /**
   * Removes the directories of processes no longer running under `root`, then makes this
   * process's own (at a process's start: synchronous, as reading its config is).
   */
  static open(root: string, bytes: number): SpillArea {
    const base = join(root, AREA_DIR);
    mkdirSync(base, { recursive: true });
    for (const name of readdirSync(base)) {
      const m = /^(\d+)-([0-9]+|-)-[0-9a-f]+$/.exec(name);
      if (m && !isRunning(Number(m[1]), m[2]!)) rmSync(join(base, name), { recursive: true, force: true });
    }
    const dir = join(base, `${process.pid}-${startTimeOf(process.pid) ?? '-'}-${randomBytes(4).toString('hex')}`);
    mkdirSync(dir);
    return new SpillArea(dir, bytes);
  }

  /** Bytes the files hold now. */
  get usedBytes(): number {
    return this.used;
  }

  room(): number {
    return this.bytes - this.used;
  }

  /** A new file's path in this area. */
  nextPath(): string {
    return join(this.dir, `${++this.files}.spill`);
  }

  /** Bytes written (may pass `bytes` by one chunk: a chunk that arrived is never dropped). */
  take(bytes: number): void {
    this.used += bytes;
    this.spilledBytes += bytes;
    this.peakBytes = Math.max(this.peakBytes, this.used);
  }

  /** A file removed: its bytes are room again; bodies waiting for room are told. */
  give(bytes: number): void {
    this.used -= bytes;
    if (bytes <= 0 || this.waiting.size === 0) return;
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const wake of waiting) wake();
  }

  /** `wake` runs once, the next time room is given back. */
  wakeOnRoom(wake: () => void): void {
    this.waiting.add(wake);
  }

  /** Removes this process's directory (a clean shutdown; files still open are gone with it). */
  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
