// Independent tar readers for tests: GNU tar, bsdtar (libarchive), Python's tarfile and 7-Zip
// each extract the archive; every one must give the same names, kinds and bytes.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** A folder's name ends in "/" (size 0, no sha256); a file's has its size and SHA-256. */
export interface TarEntryDigest {
  name: string;
  size: number;
  sha256: string | null;
}

const PY_READ = `
import hashlib, json, sys, tarfile
out = []
with tarfile.open(sys.argv[1], 'r:*') as t:
    for m in t.getmembers():
        body = t.extractfile(m).read() if m.isfile() else None
        out.append({"name": m.name + ("/" if m.isdir() else ""), "size": m.size, "sha256": hashlib.sha256(body).hexdigest() if body is not None else None,
                    "mode": m.mode, "mtime": m.mtime, "uid": m.uid, "gid": m.gid, "uname": m.uname, "gname": m.gname, "type": m.type.decode()})
print(json.dumps(out))
`;

export interface PythonTarMember extends TarEntryDigest {
  mode: number;
  mtime: number;
  uid: number;
  gid: number;
  uname: string;
  gname: string;
  type: string;
}

/** Python's view of every member, headers included (modes, times, owners). */
export async function pythonTarMembers(file: string): Promise<PythonTarMember[]> {
  const { stdout } = await execFileAsync('python3', ['-c', PY_READ, file], { encoding: 'utf8', maxBuffer: 1 << 28 });
  return JSON.parse(stdout) as PythonTarMember[];
}

function walk(root: string, dir = root): TarEntryDigest[] {
  const out: TarEntryDigest[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    const rel = path.relative(root, full).split(path.sep).join('/');
    if (statSync(full).isDirectory()) {
      out.push({ name: `${rel}/`, size: 0, sha256: null }, ...walk(root, full));
    } else {
      const bytes = readFileSync(full);
      out.push({ name: rel, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
    }
  }
  return out;
}

const sorted = (list: TarEntryDigest[]) => [...list].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

/**
 * Extracts the archive with GNU tar, bsdtar and (plain tars) 7-Zip, and reads it with Python's
 * tarfile; throws unless all agree. Returns the entries, sorted by name (folders implied by a
 * path appear in the extracted trees, so they are compared as extracted).
 */
export async function readTar(bytes: Buffer, options: { gzip?: boolean } = {}): Promise<{ entries: TarEntryDigest[]; members: PythonTarMember[] }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-tar-'));
  const file = path.join(dir, options.gzip ? 'a.tar.gz' : 'a.tar');
  try {
    writeFileSync(file, bytes);
    const trees: Record<string, TarEntryDigest[]> = {};
    const extract = async (reader: string, command: string, args: (into: string) => string[]) => {
      const into = path.join(dir, reader);
      await execFileAsync('mkdir', ['-p', into]);
      await execFileAsync(command, args(into), { maxBuffer: 1 << 26 });
      trees[reader] = sorted(walk(into));
    };
    await extract('gnu', 'tar', (into) => ['-xf', file, '-C', into]);
    await extract('bsdtar', 'bsdtar', (into) => ['-xf', file, '-C', into]);
    if (!options.gzip) await extract('7z', '7z', (into) => ['x', '-y', '-bd', `-o${into}`, file]);
    const members = await pythonTarMembers(file);
    const gnu = JSON.stringify(trees.gnu);
    for (const [reader, tree] of Object.entries(trees)) {
      if (JSON.stringify(tree) !== gnu) throw new Error(`${reader} extracted ${JSON.stringify(tree)}, GNU tar ${gnu}`);
    }
    // Python's members are the archive's own entries; each must be in the extracted tree as it.
    const byName = new Map(trees.gnu!.map((e) => [e.name, e]));
    for (const m of members) {
      const seen = byName.get(m.name);
      if (!seen || seen.size !== (m.sha256 === null ? 0 : m.size) || seen.sha256 !== m.sha256) throw new Error(`tarfile read ${m.name} (${m.size} bytes) otherwise than GNU tar extracted it`);
    }
    return { entries: trees.gnu!, members };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
