// The soak's invariants as pure checks over what the harness recorded: each returns its
// report line (docs/guarantees.md#soak says what each one means).
import { isWorded } from './plan';

export interface Verdict {
  name: string;
  ok: boolean;
  detail: string;
}

const verdict = (name: string, problems: string[], summary: string): Verdict => ({
  name,
  ok: problems.length === 0,
  detail: problems.length ? `${problems.length} problem(s): ${problems.slice(0, 5).join('; ')}` : summary,
});

export interface JobEnd {
  id: string;
  /** The last status read; null when the job was deleted before it ended. */
  /** Kind of job, for the report. */
  label: string;
  status: string | null;
  /** The job's `errors` (job, bin and URL errors, each an `error` string). */
  errors: string[];
  /** Its inputs were all served well: it must complete (after one retry at most, once faults end). */
  healthy: boolean;
}

/** Every job ended (completed or failed), failures worded, and jobs of healthy inputs completed. */
export function jobsEnded(jobs: readonly JobEnd[]): Verdict {
  const problems: string[] = [];
  for (const j of jobs) {
    if (j.status === null) continue;
    if (j.status !== 'completed' && j.status !== 'failed') problems.push(`job ${j.id} (${j.label}) still ${j.status}`);
    if (j.status === 'failed' && j.errors.length === 0) problems.push(`job ${j.id} (${j.label}) failed without a reason`);
    for (const e of j.errors) if (!isWorded(e)) problems.push(`job ${j.id} (${j.label}) error ${JSON.stringify(e)}`);
    if (j.healthy && j.status === 'failed') problems.push(`job ${j.id} (${j.label}) of healthy inputs failed: ${j.errors.join(' / ')}`);
  }
  const done = jobs.filter((j) => j.status === 'completed').length;
  return verdict('jobs end', problems, `${done} completed, ${jobs.filter((j) => j.status === 'failed').length} failed, all worded`);
}

export interface EntryDigest {
  name: string;
  sha256: string;
}

/**
 * What one reader found in a job's ZIPs against the job's files: every entry one of the job's
 * names with bytes the origin served for it (`allowed`), and every name either present or
 * among the URL errors reported.
 */
export function entriesMatch(allowed: ReadonlyMap<string, ReadonlySet<string>>, found: readonly EntryDigest[], reportedMissing: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const e of found) {
    if (e.name.endsWith('/')) continue;
    if (seen.has(e.name)) problems.push(`entry ${e.name} twice`);
    seen.add(e.name);
    const shas = allowed.get(e.name);
    if (!shas) problems.push(`unexpected entry ${e.name}`);
    else if (!shas.has(e.sha256)) problems.push(`entry ${e.name}: bytes differ from the origin's`);
  }
  for (const name of allowed.keys()) if (!seen.has(name) && !reportedMissing.has(name)) problems.push(`entry ${name} missing and not reported`);
  return problems;
}

export interface StoreState {
  /** Keys in the service's bucket. */
  objects: readonly string[];
  /** Object keys of completed ZIPs of jobs neither deleted nor expired. */
  liveKeys: ReadonlySet<string>;
  /** Keys the store may still hold for a moment (jobs expired within the sweeper's interval). */
  sweepable: ReadonlySet<string>;
  /** Multipart uploads open in the bucket (and in destinations). */
  openUploads: readonly string[];
  /** Upload ids a failed bin of a live job keeps for a retry from checkpoint. */
  resumableUploads: ReadonlySet<string>;
}

export function storeMatches(s: StoreState): Verdict {
  const problems: string[] = [];
  const held = new Set(s.objects);
  for (const key of s.objects) if (!s.liveKeys.has(key) && !s.sweepable.has(key)) problems.push(`object ${key} of no live job`);
  for (const key of s.liveKeys) if (!held.has(key)) problems.push(`live ZIP ${key} missing`);
  for (const id of s.openUploads) if (!s.resumableUploads.has(id)) problems.push(`multipart upload ${id} left open`);
  return verdict('store', problems, `${s.objects.length} objects = ${s.liveKeys.size} live ZIPs; ${s.openUploads.length} open uploads, all kept for a retry`);
}

export interface UsageSide {
  user: string;
  reportedStreamBytes: number;
  receivedStreamBytes: number;
  /** Bytes received by downloads in flight on an API process killed with SIGKILL (usage it held). */
  killedInFlightBytes: number;
  /** Bytes of responses hung up on or cut before their end: the server counts what it handed to TCP, which the client may never have read. */
  unreceivedBytes: number;
  /** The largest single stream download: the tolerance, one download in flight. */
  oneDownload: number;
  reportedGbDays: number;
  expectedGbDays: number;
}

export function usageMatches(users: readonly UsageSide[]): Verdict {
  const problems: string[] = [];
  let received = 0;
  let lost = 0;
  let unread = 0;
  let off = 0;
  for (const u of users) {
    unread += u.unreceivedBytes;
    off = Math.max(off, Math.abs(u.reportedStreamBytes - u.receivedStreamBytes));
    received += u.receivedStreamBytes;
    lost += u.killedInFlightBytes;
    const low = u.receivedStreamBytes - u.killedInFlightBytes - u.oneDownload;
    const high = u.receivedStreamBytes + u.unreceivedBytes + u.oneDownload;
    if (u.reportedStreamBytes < low || u.reportedStreamBytes > high)
      problems.push(`${u.user}: stream_bytes ${u.reportedStreamBytes}, received ${u.receivedStreamBytes} (one download ${u.oneDownload}, SIGKILLed in flight ${u.killedInFlightBytes}, not read of cut responses ${u.unreceivedBytes})`);
    if (Math.abs(u.reportedGbDays - u.expectedGbDays) > 1e-9 * Math.max(1, u.expectedGbDays)) problems.push(`${u.user}: stored_gb_days ${u.reportedGbDays}, completed ZIPs sum to ${u.expectedGbDays}`);
  }
  return verdict('usage', problems, `stream bytes = received ${received} B within one download (largest difference ${off} B; ${unread} B of cut responses not read, ${lost} B in flight on APIs SIGKILLed); stored GB-days = sum over completed ZIPs`);
}

export interface HookEvent {
  /** The user whose receiver path got it. */
  user: string;
  event: string;
  jobId: string;
  zipId?: string;
  complete?: boolean;
  signatureValid: boolean;
}

export interface HookExpectations {
  /** job id -> its user. */
  owner: ReadonlyMap<string, string>;
  /** job id -> the event its last end must have sent (job.completed / job.failed). */
  ends: ReadonlyMap<string, string>;
  /** zip ids whose whole download the harness received. */
  downloads: ReadonlySet<string>;
}

export function webhooksMatch(events: readonly HookEvent[], expect: HookExpectations): Verdict {
  const problems: string[] = [];
  const got = new Set<string>();
  const downloaded = new Set<string>();
  for (const e of events) {
    if (!e.signatureValid) problems.push(`${e.event} of job ${e.jobId}: signature invalid`);
    const owner = expect.owner.get(e.jobId);
    if (owner !== undefined && owner !== e.user) problems.push(`${e.event} of ${owner}'s job ${e.jobId} delivered to ${e.user}`);
    if (owner === undefined) problems.push(`${e.event} of unknown job ${e.jobId} delivered to ${e.user}`);
    got.add(`${e.jobId} ${e.event}`);
    if (e.event === 'download.completed' && e.complete && e.zipId) downloaded.add(e.zipId);
  }
  for (const [jobId, event] of expect.ends) if (!got.has(`${jobId} ${event}`)) problems.push(`no ${event} for job ${jobId}`);
  for (const zipId of expect.downloads) if (!downloaded.has(zipId)) problems.push(`no download.completed for ${zipId}`);
  return verdict('webhooks', problems, `${events.length} deliveries: ${expect.ends.size} job ends and ${expect.downloads.size} whole downloads each at least once, signed, none to another user`);
}

export interface ProcessState {
  name: string;
  /** Exits the harness did not cause. */
  crashes: number;
  /** "unhandled rejection" lines logged. */
  unhandled: number;
  rssMB: number;
  budgetMB: number;
}

export function processesHealthy(processes: readonly ProcessState[]): Verdict {
  const problems: string[] = [];
  for (const p of processes) {
    if (p.crashes) problems.push(`${p.name} crashed ${p.crashes} time(s)`);
    if (p.unhandled) problems.push(`${p.name} logged ${p.unhandled} unhandled rejection(s)`);
    if (p.rssMB > p.budgetMB) problems.push(`${p.name} RSS ${p.rssMB.toFixed(0)} MB over its ${p.budgetMB} MB`);
  }
  const largest = Math.max(0, ...processes.map((p) => p.rssMB));
  return verdict('processes', problems, `${processes.length} processes, no crash, largest RSS ${largest.toFixed(0)} MB`);
}
