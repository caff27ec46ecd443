// The soak's seeded choices, pure: a PRNG, the fault schedule, the workload's job kinds and
// the bodies the origin serves (so the harness knows every byte a ZIP must hold).
import { createHash } from 'node:crypto';

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const int = (r: () => number, min: number, max: number) => min + Math.floor(r() * (max - min + 1));

/** One of `weights`' keys, with probability proportional to its weight. */
export function pick<K extends string>(r: () => number, weights: Record<K, number>): K {
  const entries = Object.entries(weights) as Array<[K, number]>;
  let x = r() * entries.reduce((s, [, w]) => s + w, 0);
  for (const [k, w] of entries) if ((x -= w) < 0) return k;
  return entries.at(-1)![0];
}

export const FAULT_WEIGHTS = {
  kill9: 4,
  sigterm: 3,
  'redis-restart': 1,
  'postgres-restart': 1,
  's3-restart': 1,
  'origin-reset': 1,
  'origin-stall': 1,
  'client-hangup': 1,
} as const;
export type FaultKind = keyof typeof FAULT_WEIGHTS;

export interface Fault {
  atMs: number;
  kind: FaultKind;
  /** The service instance signalled (kill9, sigterm). */
  target?: string;
  /** How long the fault lasts (restarts: the time the part stays down; origin faults: their window). */
  durationMs: number;
}

/**
 * Faults from `gapMs[0]` after the start to `endMs`, each `gapMs[0]..gapMs[1]` after the one
 * before (so at least one a minute when gapMs[1] <= 60 s), targets among `instances`.
 */
export function faultSchedule(seed: number, endMs: number, instances: readonly string[], gapMs: [number, number] = [10_000, 50_000]): Fault[] {
  const r = rng(seed ^ 0x5eed);
  const faults: Fault[] = [];
  for (let at = int(r, ...gapMs); at <= endMs; at += int(r, ...gapMs)) {
    const kind = pick(r, FAULT_WEIGHTS);
    const fault: Fault = { atMs: at, kind, durationMs: kind.startsWith('origin') ? int(r, 3_000, 12_000) : int(r, 1_000, 6_000) };
    if (kind === 'kill9' || kind === 'sigterm') fault.target = instances[int(r, 0, instances.length - 1)]!;
    faults.push(fault);
  }
  return faults;
}

export const JOB_WEIGHTS = {
  stored: 6,
  stream: 5,
  deflate: 3,
  'aes-stored': 2,
  'aes-stream': 2,
  split: 2,
  faulty: 3,
  prefix: 2,
  destination: 1,
  segments: 0.3,
  'big-split': 0.2,
} as const;
export type JobKind = keyof typeof JOB_WEIGHTS;

/** What the origin serves at /<kind>/<size>/<seed>/<name>: n normal, t text, s slow, f flaky (every other GET cut), c changing, e endless. */
export type BodyKind = 'n' | 't' | 's' | 'f' | 'c' | 'e';

export interface FileSpec {
  url: string;
  filename: string;
  body: BodyKind;
  size: number;
  seed: number;
  /** s3:// prefix entry (its objects are listed as files `<filename>/<key below the prefix>`). */
  source?: string;
}

export interface JobSpec {
  kind: JobKind;
  body: Record<string, unknown>;
  files: FileSpec[];
  password?: string;
  /** The files the origin serves badly on purpose: the job may fail or leave them out. */
  mayFail: boolean;
}

const KiB = 1024;
const MiB = 1024 * KiB;

/** A job of `kind`: its request body and the files it names. */
export function jobSpec(r: () => number, kind: JobKind, origin: string, n: number, prefixes: { source: string; url: string } | null, destination: { source: string; bucket: string } | null): JobSpec {
  const file = (body: BodyKind, size: number, i: number): FileSpec => {
    const seed = int(r, 1, 1_000_000);
    const filename = `f${i}-${body}${seed}.bin`;
    return { url: `${origin}/${body}/${size}/${seed}/${filename}`, filename, body, size, seed };
  };
  const small = () => int(r, 1, 4 * 256) * 2 * KiB - int(r, 0, 999);
  const count = int(r, 1, 5);
  const normal = (body: BodyKind = 'n') => Array.from({ length: count }, (_, i) => file(body, small(), i));
  const spec: JobSpec = { kind, body: {}, files: [], mayFail: false };
  const name = { zip_filename: `soak-${n}-${kind}.zip`, expires_in: r() < 0.1 ? 300 : 3600 };
  switch (kind) {
    case 'stored':
    case 'split':
      spec.files = normal(r() < 0.5 ? 'n' : 't');
      if (kind === 'split') Object.assign(spec.body, { max_zip_size_bytes: 104_857_600 });
      break;
    case 'stream':
      spec.files = normal();
      spec.body.mode = 'stream';
      break;
    case 'deflate':
      spec.files = normal('t');
      Object.assign(spec.body, { compression: 'deflate', compression_level: int(r, 1, 9) });
      break;
    case 'aes-stored':
    case 'aes-stream':
      spec.files = normal(kind === 'aes-stored' && r() < 0.5 ? 't' : 'n');
      spec.password = `pw-${int(r, 100_000, 999_999)}-soak`;
      spec.body.encryption = { method: 'aes-256', password: spec.password };
      if (kind === 'aes-stream') spec.body.mode = 'stream';
      else if (r() < 0.5) spec.body.compression = 'deflate';
      break;
    case 'faulty': {
      const kinds: BodyKind[] = ['n', 's', 'f', 'c', 'e'];
      spec.files = Array.from({ length: count + 1 }, (_, i) => file(kinds[int(r, 0, kinds.length - 1)]!, i === 0 ? 512 * KiB : small(), i));
      spec.mayFail = true;
      spec.body.fail_on_url_error = r() < 0.5;
      if (r() < 0.3) spec.body.mode = 'stream';
      break;
    }
    case 'prefix':
      spec.files = normal();
      if (prefixes) spec.files.push({ url: prefixes.url, filename: 'listed', body: 'n', size: 0, seed: 0, source: prefixes.source });
      break;
    case 'destination':
      spec.files = normal();
      if (destination) spec.body.destination = { source: destination.source, bucket: destination.bucket, prefix: `soak/${n}/` };
      break;
    case 'segments':
      spec.files = [file('n', 36 * MiB, 0), file('n', 36 * MiB + 12_345, 1)];
      break;
    case 'big-split':
      spec.files = [file('n', 56 * MiB, 0), file('t', 55 * MiB, 1)];
      spec.body.max_zip_size_bytes = 104_857_600;
      break;
  }
  spec.body = {
    ...name,
    ...spec.body,
    files: spec.files.map((f) => (f.source ? { url: f.url, filename: f.filename, source: f.source } : { url: f.url, filename: f.filename })),
  };
  return spec;
}

// --- the origin's bytes: blocks rotated by seed, so any range is cheap and the harness can hash any body ---

function xorshiftBlock(seed: number, length: number): Buffer {
  const words = new Int32Array(length / 4);
  let x = seed | 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x;
  }
  return Buffer.from(words.buffer);
}

const BLOCK_BYTES = 4 * MiB;
const RANDOM = xorshiftBlock(0x50a4, BLOCK_BYTES);
const TEXT = (() => {
  const lines: string[] = [];
  for (let i = 0, size = 0; size < BLOCK_BYTES; i++) {
    const line = `${i},customer-${(i * 7919) % 9973},${((i * 104_729) % 1_000_000) / 100},2026-11-${(i % 28) + 1},ok\n`;
    lines.push(line);
    size += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, BLOCK_BYTES);
})();

/** Bytes [start, end) of the body with `seed` (text bodies from the text block). */
export function bodySlice(body: BodyKind, seed: number, start: number, end: number): Buffer {
  const block = body === 't' ? TEXT : RANDOM;
  const out = Buffer.allocUnsafe(end - start);
  for (let at = start; at < end; ) {
    const offset = (at + seed * 4099) % BLOCK_BYTES;
    const n = Math.min(end - at, BLOCK_BYTES - offset);
    block.copy(out, at - start, offset, offset + n);
    at += n;
  }
  return out;
}

/** The seed a changing body has in its `version`-th period. */
export const changedSeed = (seed: number, version: number) => seed + version * 7919;

export function bodySha256(body: BodyKind, seed: number, size: number): string {
  const hash = createHash('sha256');
  for (let at = 0; at < size; at += MiB) hash.update(bodySlice(body, seed, at, Math.min(size, at + MiB)));
  return hash.digest('hex');
}

/**
 * A job or URL error in words: a sentence a user can read, not a stack, a class name, an
 * errno alone or a stringified object.
 */
export function isWorded(message: unknown): boolean {
  if (typeof message !== 'string') return false;
  const m = message.trim();
  if (m.length < 8 || m.length > 1000) return false;
  if (/\n\s+at |\[object |\bundefined\b|\bNaN\b|^[A-Z_]+$|^(Type|Reference|Range|Syntax)Error\b|Internal server error|INTERNAL_ERROR/.test(m)) return false;
  return /[A-Za-z]{2,}\s+[A-Za-z]{2,}/.test(m);
}
