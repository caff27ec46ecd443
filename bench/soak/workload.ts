// One job of the soak's workload, from POST to its checks: created (with an Idempotency-Key, so
// a retry across a fault makes one job), polled to its end, retried when it failed, deleted now
// and then, and each completed ZIP downloaded (whole, hung up and resumed, or in sampled
// ranges for stream ZIPs) and read by two readers against the origin's bytes.
import { randomUUID } from 'node:crypto';
import { createWriteStream, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { call, download, type Download } from './client';
import { entriesMatch } from './invariants';
import { bodySha256, changedSeed, int, type JobSpec } from './plan';
import { readTwice } from './readers';

export interface SoakUser {
  name: string;
  key: string;
  plan: string;
  streamReceived: number;
  largestStream: number;
  killedInFlight: number;
  /** Bytes of stream responses the client hung up on or lost before their end (the server may count what it handed to TCP). */
  unreceived: number;
  hasSource: boolean;
}

export interface JobRecord {
  n: number;
  id: string | null;
  user: SoakUser;
  spec: JobSpec;
  refused?: string;
  status: string | null;
  urlErrors: Array<{ url: string; error: string }>;
  deleted: boolean;
  retries: number;
  mode: string;
  /** Bytes of its completed ZIPs and its retention, once completed. */
  totalSize: number;
  expiresIn: number;
  destination: boolean;
}

export interface Workload {
  apis: string[];
  runDir: string;
  r: () => number;
  /** Verifying and polling stop trying to outwait faults after this. */
  deadline: () => number;
  inFlight: Set<Download>;
  hangUps: () => boolean;
  versions: Map<number, Set<number>>;
  prefixObjects: Map<string, string>;
  customer: S3Client;
  counts: { rangesCut: number; ifRangeWhole: number; unservable: number; downloads: number; wholeDownloads: number; resumed: number; hungUp: number; ranges: number; verified: number; deletes: number; retries: number };
  /** zip ids downloaded whole (200), by which API and when: each owes a download.completed event. */
  downloaded: Map<string, { api: string; at: number }>;
  problems: { archives: string[]; ranges: string[] };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runJob(w: Workload, rec: JobRecord): Promise<void> {
  const { user, spec } = rec;
  const created = await call(w.apis, 'POST', '/jobs', user.key, spec.body, { 'idempotency-key': randomUUID() });
  if (created.status !== 201) {
    rec.refused = `${created.status} ${created.body?.error?.code}: ${created.body?.error?.message}`;
    return;
  }
  rec.id = created.body.job_id as string;
  const deleteWhileRunning = w.r() < 0.03;
  for (;;) {
    const job = await poll(w, rec, deleteWhileRunning);
    if (!job) return;
    if (rec.status === 'failed') {
      const retry = !spec.mayFail || w.r() < 0.3;
      if (!retry || rec.retries >= 3 || Date.now() > w.deadline()) return;
      await sleep(2_000 + rec.retries * 5_000);
      const answer = await call(w.apis, 'POST', `/jobs/${rec.id}/retry`, user.key, { from_checkpoint: w.r() < 0.8 }, { 'idempotency-key': randomUUID() });
      if (answer.status !== 200) throw new Error(`retry of ${rec.id}: ${answer.status} ${JSON.stringify(answer.body)}`);
      rec.retries++;
      w.counts.retries++;
      continue;
    }
    await verify(w, rec, job);
    if (w.r() < 0.15) {
      const del = await call(w.apis, 'DELETE', `/jobs/${rec.id}`, user.key);
      if (del.status === 200) {
        rec.deleted = true;
        w.counts.deletes++;
      }
    }
    return;
  }
}

/** Polls until the job ends (the full job) or was deleted (null). */
async function poll(w: Workload, rec: JobRecord, deleteWhileRunning: boolean): Promise<any | null> {
  for (let i = 0; ; i++) {
    await sleep(1_000 + w.r() * 1_000);
    if (deleteWhileRunning && i === 2) {
      const del = await call(w.apis, 'DELETE', `/jobs/${rec.id}`, rec.user.key);
      if (del.status === 200) {
        rec.deleted = true;
        w.counts.deletes++;
        return null;
      }
    }
    const got = await call(w.apis, 'GET', `/jobs/${rec.id}`, rec.user.key).catch(() => null);
    if (!got) continue;
    const job = got.body.job;
    rec.status = job.status;
    // `errors` holds the job's, its bins' and its URLs' errors (each bin's also under zips[]).
    rec.urlErrors = job.errors ?? [];
    rec.mode = job.mode ?? rec.mode;
    if (job.status === 'completed') {
      rec.totalSize = job.total_size;
      rec.expiresIn = Math.round((Date.parse(job.expires_at) - Date.parse(job.created_at)) / 1000);
    }
    if (job.status === 'completed' || job.status === 'failed') return job;
    if (Date.now() > w.deadline()) return null;
  }
}

/** The names a job's ZIPs may hold, each with the SHA-256 values the origin served for it. */
function allowedEntries(w: Workload, spec: JobSpec): Map<string, Set<string>> {
  const allowed = new Map<string, Set<string>>();
  for (const f of spec.files) {
    if (f.source) {
      for (const [name, sha] of w.prefixObjects) allowed.set(`${f.filename}/${name}`, new Set([sha]));
      continue;
    }
    const shas = new Set<string>();
    if (f.body === 'c') for (const v of w.versions.get(f.seed) ?? []) shas.add(bodySha256('n', changedSeed(f.seed, v), f.size));
    else if (f.body !== 'e') shas.add(bodySha256(f.body === 't' ? 't' : 'n', f.seed, f.size));
    allowed.set(f.filename, shas);
  }
  return allowed;
}

async function verify(w: Workload, rec: JobRecord, job: any): Promise<void> {
  const stream = job.mode === 'stream' || rec.spec.body.mode === 'stream';
  const byReader = new Map<string, Array<{ name: string; sha256: string }>>();
  const errorsByUrl = new Map(rec.urlErrors.map((e) => [e.url, e.error]));
  const reportedMissing = new Set(rec.spec.files.filter((f) => errorsByUrl.has(f.url)).map((f) => f.filename));
  for (const zip of job.zips) {
    if (zip.status !== 'completed') continue;
    const file = path.join(w.runDir, 'downloads', `${zip.id}.zip`);
    try {
      if (zip.location) await fromDestination(w, zip.location, file);
      else if (!(await fetchZip(w, rec, zip, file, stream))) return;
      for (const { reader, entries } of await readTwice(file, rec.spec.password)) {
        byReader.set(reader, [...(byReader.get(reader) ?? []), ...entries]);
      }
    } catch (err) {
      w.problems.archives.push(`job ${rec.id} (${rec.spec.kind}) ${zip.id}: ${(err as Error).message.split('\n')[0]}`);
      return;
    } finally {
      rmSync(file, { force: true });
    }
  }
  const allowed = allowedEntries(w, rec.spec);
  for (const [reader, entries] of byReader) {
    for (const p of entriesMatch(allowed, entries, reportedMissing)) w.problems.archives.push(`job ${rec.id} (${rec.spec.kind}) by ${reader}: ${p}`);
  }
  w.counts.verified++;
}

async function fromDestination(w: Workload, location: string, file: string): Promise<void> {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(location)!;
  const got = await w.customer.send(new GetObjectCommand({ Bucket: m[1], Key: m[2] }));
  await pipeline(got.Body as Readable, createWriteStream(file));
}

/**
 * Downloads one ZIP whole into `file`: at once, or hung up part-way and resumed by Range with
 * If-Range; stream ZIPs also answer sampled ranges, compared with the whole. False when the
 * download could not be had before the deadline (reported as a problem).
 */
async function fetchZip(w: Workload, rec: JobRecord, zip: any, file: string, stream: boolean): Promise<boolean> {
  const url = () => `${w.apis[int(w.r, 0, w.apis.length - 1)]}${new URL(zip.download_url).pathname}`;
  const counted = (n: number) => {
    if (stream) rec.user.streamReceived += n;
  };
  const tracked = { inFlight: w.inFlight, tag: { user: rec.user, stream }, onBytes: counted };
  const hangUp = w.hangUps() || w.r() < 0.15;
  // A stream ZIP holding an endless body, or a body whose ETag changes after the probe, can
  // never be sent whole (each download ends cut at that body: docs/guarantees.md#soak): it is
  // tried once, its bytes counted, and not read.
  const unservable = stream && rec.spec.files.some((f) => f.body === 'e' || f.body === 'c');
  let have = 0;
  let etag: string | undefined;
  for (let attempt = 0; Date.now() < w.deadline() + 60_000; attempt++) {
    w.counts.downloads++;
    const first = have === 0;
    const cut = first && hangUp ? int(w.r, 1, Math.max(1, (zip.size ?? 2) - 1)) : undefined;
    const url0 = url();
    const res = await download(url0, file, { range: first ? undefined : `bytes=${have}-`, ifRange: first ? undefined : etag, hangUpAfter: cut, append: !first, ...tracked });
    if (stream) rec.user.largestStream = Math.max(rec.user.largestStream, res.bytes);
    if (stream) rec.user.unreceived += res.unsent ?? 0;
    if (res.status === 200 && !first) {
      // If-Range no longer matched (a stream ZIP whose origin changed): the whole ZIP from byte 0.
      have = 0;
      etag = undefined;
      w.counts.ifRangeWhole++;
    }
    if (res.status === 200 || res.status === 206) {
      have += res.bytes;
      etag ??= res.etag;
      if (cut !== undefined) w.counts.hungUp++;
      if (!first) w.counts.resumed++;
      if (res.status === 200 && res.whole) {
        w.counts.wholeDownloads++;
        w.downloaded.set(zip.id, { api: new URL(url0).origin, at: Date.now() });
      }
      if (have === zip.size || (zip.size === null && res.whole)) break;
      if (unservable) {
        w.counts.unservable++;
        return false;
      }
      if (zip.size !== null && have > zip.size) throw new Error(`downloaded ${have} bytes of a ${zip.size}-byte ZIP`);
    } else if (res.status !== 0 && res.status < 500) {
      throw new Error(`download answered ${res.status}`);
    }
    await sleep(500 + attempt * 500);
  }
  if (have !== zip.size && !(zip.size === null && have > 0)) {
    w.problems.archives.push(`job ${rec.id} ${zip.id}: only ${have} of ${zip.size} bytes downloaded before the deadline`);
    return false;
  }
  if (stream) await sampleRanges(w, rec, zip, file, url, tracked);
  return true;
}

async function sampleRanges(w: Workload, rec: JobRecord, zip: any, file: string, url: () => string, tracked: { inFlight: Set<Download>; tag: Download['tag']; onBytes: (n: number) => void }): Promise<void> {
  const whole = readFileSync(file);
  for (let i = 0; i < 2; i++) {
    const start = int(w.r, 0, whole.length - 1);
    const end = int(w.r, start, Math.min(whole.length - 1, start + 256 * 1024));
    const part = `${file}.range`;
    const res = await download(url(), part, { range: `bytes=${start}-${end}`, ...tracked });
    w.counts.ranges++;
    if (res.status === 0 || res.status >= 500 || (res.status === 206 && !res.whole)) {
      // A fault (a killed API, an origin reset) cut it: nothing to compare.
      w.counts.rangesCut++;
      rmSync(part, { force: true });
      continue;
    }
    const got = res.status === 206 ? readFileSync(part) : Buffer.alloc(0);
    rmSync(part, { force: true });
    if (res.status !== 206 || !res.whole) w.problems.ranges.push(`job ${rec.id} ${zip.id}: range ${start}-${end} answered ${res.status} with ${res.bytes} bytes`);
    else if (!got.equals(whole.subarray(start, end + 1))) w.problems.ranges.push(`job ${rec.id} ${zip.id}: range ${start}-${end} differs from the whole download`);
  }
}
