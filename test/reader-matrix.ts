// The reader matrix (docs/readers.md): the readers people meet, each asked to give back every
// entry of one ZIP, byte for byte, with the job's time. Central-directory readers (Info-ZIP
// unzip -t, Python's zipfile, yauzl, 7-Zip, Java's ZipFile, The Unarchiver's unar and lsar) and forward-only ones (bsdtar from a pipe, Java's ZipInputStream,
// commons-compress's ZipArchiveInputStream), and Info-ZIP extracting in two time zones
// other than UTC. All at once: each reader is its own process.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { readWithYauzl } from '../packages/zip/src/testing';
import type { ZipEntryDigest } from './zip-readers';

const execFileAsync = promisify(execFile);
const COMMONS_COMPRESS = '/usr/share/java/commons-compress.jar';
const JAVA_SOURCE = path.join(import.meta.dirname, 'readers', 'ZipRead.java');
/** Time zones whose offsets from UTC go both ways: a file time from DOS time alone is hours off. */
export const OTHER_TIME_ZONES = ['Asia/Tokyo', 'America/New_York'];

/** What the ZIP is made of: which readers can read it at all. */
export type ZipKind =
  /** STORE entries with data descriptors (stored and stream ZIPs today). */
  | 'store'
  /** DEFLATE entries (stored jobs with `compression: "deflate"`). */
  | 'deflate'
  /** WinZip AES-256 (AE-2). */
  | 'aes';

export type Reader =
  | 'unzip -t'
  | 'python zipfile'
  | 'yauzl'
  | '7z'
  | 'bsdtar-pipe'
  | 'java-zipfile'
  | 'java-zipinputstream'
  | 'commons-compress'
  | 'lsar'
  | 'unar'
  | `unzip TZ=${string}`;

/**
 * The readers held to a ZIP of this kind (the table in docs/readers.md). Python, yauzl, unzip
 * and Java have no WinZip AES, nor has Debian's unar 1.10 (it refuses 7-Zip's own AES ZIPs
 * too); Java's ZipInputStream and commons-compress's stream refuse a STORE entry followed by a
 * data descriptor (they cannot find its end).
 */
export function readersFor(kind: ZipKind): Reader[] {
  const tz = OTHER_TIME_ZONES.map((zone) => `unzip TZ=${zone}` as const);
  if (kind === 'aes') return ['7z', 'bsdtar-pipe'];
  const all: Reader[] = ['unzip -t', 'python zipfile', 'yauzl', '7z', 'bsdtar-pipe', 'java-zipfile', 'lsar', 'unar', ...tz];
  return kind === 'deflate' ? [...all, 'java-zipinputstream', 'commons-compress'] : all;
}

let compiled: Promise<string> | null = null;

/** ZipRead.java compiled once per test process, into a temp dir (removed at exit). */
function javaClasses(): Promise<string> {
  compiled ??= (async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-java-readers-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    await execFileAsync('javac', ['-cp', COMMONS_COMPRESS, '-d', dir, JAVA_SOURCE]);
    return dir;
  })();
  return compiled;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Every file under `dir`, as entries (names with "/"), sorted by name. */
function extracted(dir: string): (ZipEntryDigest & { mtime: number })[] {
  const out: (ZipEntryDigest & { mtime: number })[] = [];
  const walk = (sub: string) => {
    for (const name of readdirSync(path.join(dir, sub))) {
      const rel = sub ? `${sub}/${name}` : name;
      const full = path.join(dir, rel);
      const stat = statSync(full);
      if (stat.isDirectory()) walk(rel);
      else {
        const body = readFileSync(full);
        out.push({ name: rel, size: body.length, sha256: sha256(body), mtime: Math.floor(stat.mtimeMs / 1000) });
      }
    }
  };
  walk('');
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** Runs `command` with the file on its stdin (a pipe: no seeking back); rejects on a non-zero exit. */
function withFileOnStdin(file: string, command: string, args: string[], zone: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'pipe'], env: { ...process.env, TZ: zone } });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdin.on('error', () => undefined);
    createReadStream(file).pipe(child.stdin);
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${stderr.trim()}`))));
  });
}

interface Seen {
  entries: ZipEntryDigest[];
  /** Unix seconds each reader gives each file, where it gives any. */
  mtimes: number[];
}

async function read(reader: Reader, file: string, dir: string, password: string | undefined): Promise<Seen> {
  const out = path.join(dir, reader.replace(/[^a-z0-9]+/gi, '-'));
  mkdirSync(out);
  const fromDir = (withTimes: boolean): Seen => {
    const files = extracted(out);
    return { entries: files.map(({ name, size, sha256: hash }) => ({ name, size, sha256: hash })), mtimes: withTimes ? files.map((f) => f.mtime) : [] };
  };
  switch (reader) {
    case 'unzip -t':
      await execFileAsync('unzip', ['-tqq', file]);
      return { entries: [], mtimes: [] };
    case 'python zipfile': {
      // z.read checks each entry's CRC; date_time is the DOS time (Python reads no UT field).
      const { stdout } = await execFileAsync('python3', ['-c', PYTHON_READER, file], { maxBuffer: 1 << 24 });
      return { entries: sortByName(JSON.parse(stdout) as ZipEntryDigest[]), mtimes: [] };
    }
    case 'yauzl':
      return { entries: sortByName((await readWithYauzl(readFileSync(file))).map((e) => ({ name: e.name, size: e.data.length, sha256: sha256(e.data) }))), mtimes: [] };
    case '7z':
      await execFileAsync('7z', ['x', '-y', `-o${out}`, `-p${password ?? ''}`, file]);
      return fromDir(false);
    case 'bsdtar-pipe':
      // In another time zone too: its file times come from the UT field.
      await withFileOnStdin(file, 'bsdtar', ['-xf', '-', '-C', out, ...(password ? ['--passphrase', password] : [])], OTHER_TIME_ZONES[1]!);
      return fromDir(true);
    case 'unar':
      await execFileAsync('unar', ['-q', '-D', '-o', out, ...(password ? ['-p', password] : []), file], { env: { ...process.env, TZ: OTHER_TIME_ZONES[1] } });
      return fromDir(true);
    case 'lsar': {
      // -t tests every entry's checksum; a parse failure still exits 0, so the count is read.
      const { stdout } = await execFileAsync('lsar', ['-t', ...(password ? ['-p', password] : []), file]);
      const passed = /^(\d+) passed, (\d+) failed\.$/m.exec(stdout);
      if (!passed || passed[2] !== '0' || /failed|error/i.test(stdout.replace(passed[0], ''))) throw new Error(`lsar -t: ${stdout.trim()}`);
      return { entries: [], mtimes: [], passedCount: Number(passed[1]) } as Seen & { passedCount: number };
    }
    case 'java-zipfile':
    case 'java-zipinputstream':
    case 'commons-compress': {
      const mode = { 'java-zipfile': 'zipfile', 'java-zipinputstream': 'zis', 'commons-compress': 'commons' }[reader];
      // In another time zone: Java's entry time must come from the UT field, not the DOS time.
      const { stdout } = await execFileAsync('java', ['-cp', `${await javaClasses()}:${COMMONS_COMPRESS}`, 'ZipRead', mode, file], { env: { ...process.env, TZ: OTHER_TIME_ZONES[0] }, maxBuffer: 1 << 24 });
      const rows = stdout.trim() === '' ? [] : stdout.trim().split('\n').map((line) => /^(\S+) (\d+) (-?\d+) (.*)$/.exec(line)!);
      return { entries: sortByName(rows.map((m) => ({ name: m[4]!, size: Number(m[2]), sha256: m[1]! }))), mtimes: rows.map((m) => Number(m[3])) };
    }
    default: {
      const zone = reader.slice('unzip TZ='.length);
      await execFileAsync('unzip', ['-qq', '-o', file, '-d', out], { env: { ...process.env, TZ: zone } });
      return fromDir(true);
    }
  }
}

const PYTHON_READER = `
import hashlib, json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(json.dumps([{"name": i.filename, "size": i.file_size, "sha256": hashlib.sha256(z.read(i)).hexdigest()} for i in z.infolist()]))
`;

const sortByName = (entries: ZipEntryDigest[]) => [...entries].sort((a, b) => (a.name < b.name ? -1 : 1));

/**
 * Reads the ZIP with every reader held to its kind, at once; resolves with each reader's
 * failure (empty: every cell green). A reader fails when it errs, when an entry it gives back
 * differs from `expected`, or when a file time it gives is not `mtime` (to the second).
 */
export async function readWithEveryReader(bytes: Buffer, options: { kind: ZipKind; expected: ZipEntryDigest[]; mtime: Date; password?: string }): Promise<Record<string, string>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-reader-matrix-'));
  const file = path.join(dir, 'archive.zip');
  writeFileSync(file, bytes);
  const expected = sortByName(options.expected);
  const seconds = Math.floor(options.mtime.getTime() / 1000);
  try {
    const readers = readersFor(options.kind);
    const outcomes = await Promise.allSettled(readers.map((r) => read(r, file, dir, options.password)));
    const failures: Record<string, string> = {};
    outcomes.forEach((outcome, i) => {
      const reader = readers[i]!;
      if (outcome.status === 'rejected') return void (failures[reader] = (outcome.reason as Error).message.split('\n').slice(0, 3).join(' '));
      const seen = outcome.value as Seen & { passedCount?: number };
      if (reader === 'unzip -t') return;
      if (seen.passedCount !== undefined) {
        if (seen.passedCount !== expected.length) failures[reader] = `tested ${seen.passedCount} entries, not ${expected.length}`;
        return;
      }
      if (JSON.stringify(seen.entries) !== JSON.stringify(expected)) failures[reader] = `entries differ: ${JSON.stringify(seen.entries)}`;
      else {
        // unar sets the DOS time (the UTC wall clock, 2 s steps), read as UTC in every zone.
        const want = reader === 'unar' ? seconds - (seconds % 2) : seconds;
        if (seen.mtimes.some((t) => t !== want)) failures[reader] = `file times ${seen.mtimes.join(', ')}, not ${want}`;
      }
    });
    return failures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
