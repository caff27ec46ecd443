// `pnpm soak` (docs/guarantees.md#soak): the whole stack as deployed under a mixed workload from
// several users and a seeded schedule of faults, then checked against its invariants. Its last
// lines are the report; exit 0 only when every invariant holds.
//   SOAK_MINUTES (20)  SOAK_SEED (random, printed)  SOAK_JOBS_PER_MINUTE (30)  SOAK_BOUND_MINUTES (5)
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createUserWithKey } from '@ap/accounts';
import { createDb } from '@ap/db';
import { verifySignature } from '@ap/webhooks';
import { EMBEDDED_S3_CREDENTIALS } from '../../scripts/embedded';
import { startReceiver } from '../../test/webhook-receiver';
import { call, type Download } from './client';
import { jobsEnded, processesHealthy, storeMatches, usageMatches, webhooksMatch, type HookEvent, type Verdict } from './invariants';
import { bodySha256, bodySlice, faultSchedule, JOB_WEIGHTS, jobSpec, pick, rng, type Fault } from './plan';
import { startSoakOrigin } from './origin';
import { INSTANCES, startSoakStack } from './stack';
import { openUploads } from './uploads';
import { runJob, type JobRecord, type SoakUser, type Workload } from './workload';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 20);
const SEED = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
const JOBS_PER_MINUTE = Number(process.env.SOAK_JOBS_PER_MINUTE ?? 30);
const BOUND_MS = Number(process.env.SOAK_BOUND_MINUTES ?? 5) * 60_000;
const RSS_BUDGET_MB = 200;
const say = (line: string) => process.stdout.write(`[soak] ${line}\n`);
say(`seed ${SEED} (SOAK_SEED=${SEED} SOAK_MINUTES=${MINUTES} replays this schedule), ${MINUTES} minutes, ${JOBS_PER_MINUTE} jobs a minute; the machine is shared: timings vary with its load`);

const runDir = path.join(tmpdir(), `ap-soak-${SEED}-${process.pid}`);
mkdirSync(path.join(runDir, 'downloads'), { recursive: true });
const r = rng(SEED);
const origin = await startSoakOrigin();
const receiver = await startReceiver();
const stack = await startSoakStack(runDir, {});
const db = createDb(stack.env.DATABASE_URL!);
const s3Client = (endpoint: string) =>
  new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: EMBEDDED_S3_CREDENTIALS, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
const store = s3Client(stack.s3.endpoint);
const customer = s3Client(stack.customerS3.endpoint);
say(`stack up: APIs ${stack.apiUrls.join(', ')}; logs in ${stack.logDir}`);

// --- the customer's bucket: objects under a prefix (prefix entries) and a bucket for destinations ---
await customer.send(new CreateBucketCommand({ Bucket: 'exports' }));
const prefixObjects = new Map<string, string>();
for (const [i, name] of ['a.bin', 'sub/b.bin', 'c.bin'].entries()) {
  const size = 20_000 + i * 70_001;
  await customer.send(new PutObjectCommand({ Bucket: 'customer', Key: `photos/2026/${name}`, Body: bodySlice('n', 900 + i, 0, size) }));
  prefixObjects.set(name, bodySha256('n', 900 + i, size));
}

// --- users on several plans, each with a webhook (and a source for prefixes and destinations) ---
const users: SoakUser[] = [];
const secrets = new Map<string, string[]>();
for (const [i, plan] of (['free', 'starter', 'pro', 'scale', 'pro', 'starter'] as const).entries()) {
  const { apiKey } = await createUserWithKey(db, { email: `soak-${i}-${SEED}@example.test`, plan, overage: plan !== 'free' });
  const user: SoakUser = { name: `user${i}-${plan}`, key: apiKey, plan, streamReceived: 0, largestStream: 0, killedInFlight: 0, unreceived: 0, hasSource: plan === 'pro' || plan === 'scale' };
  users.push(user);
  await registerWebhook(user, 0);
  if (user.hasSource) {
    const src = await call(stack.apiUrls, 'POST', '/sources', apiKey, { name: 'cust', type: 's3', region: 'us-east-1', access_key_id: 'S3RVER', secret_access_key: 'S3RVER', endpoint: stack.customerS3.endpoint, force_path_style: true });
    if (src.status !== 201) throw new Error(`POST /sources: ${src.status} ${JSON.stringify(src.body)}`);
  }
}
async function registerWebhook(user: SoakUser, n: number): Promise<void> {
  const url = receiver.set(`/hook/${user.name}/${n}`, [200]);
  const made = await call(stack.apiUrls, 'POST', '/webhooks', user.key, { url, events: ['job.completed', 'job.failed', 'download.completed'] });
  if (made.status !== 201) throw new Error(`POST /webhooks: ${made.status} ${JSON.stringify(made.body)}`);
  secrets.set(`${user.name}/${n}`, [made.body.webhook.secret]);
}

// --- faults on the seeded schedule ---
const startedAt = Date.now();
const endAt = startedAt + MINUTES * 60_000;
const schedule = faultSchedule(SEED, MINUTES * 60_000 - 15_000, INSTANCES.map(([name]) => name));
const faultCounts = new Map<string, number>();
let lastFaultEnd = startedAt;
let hangUpUntil = 0;
const inFlight = new Set<Download>();
const killedBeforeEvent = new Set<string>();
async function inject(f: Fault): Promise<void> {
  faultCounts.set(f.kind, (faultCounts.get(f.kind) ?? 0) + 1);
  say(`fault at ${((Date.now() - startedAt) / 1000).toFixed(0)} s: ${f.kind}${f.target ? ` ${f.target}` : ''} (${(f.durationMs / 1000).toFixed(1)} s)`);
  switch (f.kind) {
    case 'kill9':
    case 'sigterm': {
      const api = stack.instances.find((i) => i.name === f.target && i.service === 'api');
      if (api && f.kind === 'kill9') {
        const origin_ = `http://127.0.0.1:${api.port}`;
        for (const d of inFlight) if (d.api === origin_) d.killed = true;
        // A download that ended a moment ago may not have written its event yet: SIGKILL loses it.
        for (const [zipId, d] of w.downloaded) if (d.api === origin_ && d.at > Date.now() - 2_000) killedBeforeEvent.add(zipId);
      }
      await stack.signal(f.target!, f.kind === 'kill9' ? 'SIGKILL' : 'SIGTERM');
      break;
    }
    case 'redis-restart':
      await stack.redis.kill();
      await new Promise((res) => setTimeout(res, f.durationMs));
      await stack.redis.start();
      break;
    case 'postgres-restart':
      await stack.postgres.stop();
      await new Promise((res) => setTimeout(res, f.durationMs));
      await stack.postgres.start();
      break;
    case 's3-restart':
      await stack.s3.restart(f.durationMs);
      break;
    case 'origin-reset':
      origin.fault('reset', f.durationMs);
      await new Promise((res) => setTimeout(res, f.durationMs));
      break;
    case 'origin-stall':
      origin.fault('stall', f.durationMs);
      await new Promise((res) => setTimeout(res, f.durationMs));
      break;
    case 'client-hangup':
      hangUpUntil = Date.now() + f.durationMs;
      await new Promise((res) => setTimeout(res, f.durationMs));
      break;
  }
  lastFaultEnd = Math.max(lastFaultEnd, Date.now());
}
const faultsDone = Promise.all(schedule.map((f) => new Promise<void>((res) => setTimeout(() => void inject(f).catch((err) => say(`fault ${f.kind} failed: ${(err as Error).message}`)).finally(res), f.atMs))));
// Killed downloads' bytes are usage the killed API held in memory: counted apart (see usage).
const killedTally = setInterval(() => {
  for (const d of inFlight) if (d.killed && d.tag?.stream) (d.tag.user.killedInFlight += d.bytes), (d.bytes = 0);
}, 200);

// Peak RSS of each service process over the run (the invariant holds the end's to the budget).
const peakRss = new Map<string, number>();
const startRss = new Map(stack.rss().map(({ name, mb }) => [name, mb]));
const rssSampler = setInterval(() => {
  for (const { name, mb } of stack.rss()) if (mb > (peakRss.get(name) ?? 0)) peakRss.set(name, mb);
}, 2_000);

// --- the workload ---
const w: Workload = {
  apis: stack.apiUrls,
  runDir,
  r,
  deadline: () => Math.max(endAt, lastFaultEnd) + BOUND_MS,
  inFlight,
  hangUps: () => Date.now() < hangUpUntil,
  versions: origin.versions,
  prefixObjects,
  customer,
  counts: { rangesCut: 0, ifRangeWhole: 0, unservable: 0, downloads: 0, wholeDownloads: 0, resumed: 0, hungUp: 0, ranges: 0, verified: 0, deletes: 0, retries: 0 },
  downloaded: new Map(),
  problems: { archives: [], ranges: [] },
};
const jobs: JobRecord[] = [];
const tasks: Promise<void>[] = [];
const harnessErrors: string[] = [];
let registered = false;
for (let n = 0; Date.now() < endAt; n++) {
  const kind = pick(r, JOB_WEIGHTS);
  const needsSource = kind === 'prefix' || kind === 'destination';
  const candidates = users.filter((u) => !needsSource || u.hasSource);
  const user = candidates[Math.floor(r() * candidates.length)]!;
  const spec = jobSpec(r, kind, origin.url, n, user.hasSource ? { source: 'cust', url: 's3://customer/photos/2026/' } : null, user.hasSource ? { source: 'cust', bucket: 'exports' } : null);
  const rec: JobRecord = { n, id: null, user, spec, status: null, urlErrors: [], deleted: false, retries: 0, mode: String(spec.body.mode ?? 'stored'), totalSize: 0, expiresIn: 0, destination: kind === 'destination' };
  jobs.push(rec);
  tasks.push(runJob(w, rec).catch((err) => void harnessErrors.push(`job ${n} (${kind}): ${(err as Error).message}`)));
  if (!registered && Date.now() > startedAt + (MINUTES * 60_000) / 2) {
    registered = true;
    for (const u of users.slice(0, 3)) await registerWebhook(u, 1);
  }
  if (n % 25 === 0) say(`${((Date.now() - startedAt) / 60_000).toFixed(1)} min: ${jobs.length} jobs, ${w.counts.verified} verified, ${w.counts.downloads} downloads`);
  await new Promise((res) => setTimeout(res, (60_000 / JOBS_PER_MINUTE) * (0.5 + r())));
}
say(`workload done after ${jobs.length} jobs; waiting for the faults and the jobs to end (bound ${BOUND_MS / 60_000} min after the last fault)`);
await faultsDone;
await Promise.all(tasks);
clearInterval(killedTally);
clearInterval(rssSampler);

// --- the invariants ---
const verdicts: Verdict[] = [];
const live = jobs.filter((j) => j.id !== null && !j.deleted);
verdicts.push(
  jobsEnded(jobs.filter((j) => j.id !== null && !j.deleted).map((j) => ({ id: j.id!, label: j.spec.kind, status: j.status, errors: j.urlErrors.map((e) => e.error), healthy: !j.spec.mayFail }))),
);
verdicts.push({ name: 'archives', ok: w.problems.archives.length === 0, detail: w.problems.archives.length ? `${w.problems.archives.length} problem(s): ${w.problems.archives.slice(0, 5).join('; ')}` : `${w.counts.verified} jobs' ZIPs read by two readers, name for name and byte for byte` });
verdicts.push({ name: 'stream ranges', ok: w.problems.ranges.length === 0, detail: w.problems.ranges.length ? `${w.problems.ranges.length} problem(s): ${w.problems.ranges.slice(0, 5).join('; ')}` : `${w.counts.ranges} sampled ranges equal the whole download's bytes` });

// Jobs created once: every job a user's list holds is one the soak asked for, once (a create
// retried with its Idempotency-Key across a fault must not make a second job).
const unasked: string[] = [];
for (const u of users) {
  const known = new Set(jobs.filter((j) => j.user === u && j.id).map((j) => j.id));
  for (let cursor = ''; ; ) {
    const page = await call(stack.apiUrls, 'GET', `/jobs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, u.key);
    for (const j of page.body.jobs) if (!known.has(j.id)) unasked.push(`${u.name} ${j.id} (${j.status})`);
    if (!page.body.meta.has_more) break;
    cursor = page.body.meta.next_cursor;
  }
}
verdicts.push({ name: 'jobs created once', ok: unasked.length === 0, detail: unasked.length ? `${unasked.length} job(s) nobody was told of (created twice or unasked): ${unasked.slice(0, 5).join('; ')}` : `every listed job is one the soak created, once` });

// The store, once the sweeper (upkeep, every 10 s) has had two passes.
await new Promise((res) => setTimeout(res, 25_000));
const now = new Date();
const zips = await db.zip.findMany({ select: { objectKey: true, uploadId: true, status: true, job: { select: { expiresAt: true, destinationSourceId: true, mode: true, status: true } } } });
const objects: string[] = [];
for (let token: string | undefined; ; ) {
  const page = await store.send(new ListObjectsV2Command({ Bucket: 'soak-archives', ContinuationToken: token }));
  objects.push(...(page.Contents ?? []).map((o) => o.Key!));
  if (!page.IsTruncated) break;
  token = page.NextContinuationToken;
}
const isLive = (z: (typeof zips)[number]) => z.job.expiresAt > now;
const storeVerdict = storeMatches({
    objects,
    liveKeys: new Set(zips.filter((z) => isLive(z) && z.status === 'completed' && z.objectKey && z.job.destinationSourceId === null && z.job.mode === 'stored').map((z) => z.objectKey!)),
    sweepable: new Set(zips.filter((z) => !isLive(z) && z.job.expiresAt.getTime() > now.getTime() - 30_000 && z.objectKey).map((z) => z.objectKey!)),
    openUploads: [...openUploads(path.join(runDir, 's3'), 'soak-archives'), ...openUploads(path.join(runDir, 'customer-s3'), 'exports')],
    resumableUploads: new Set(zips.filter((z) => isLive(z) && z.status === 'failed' && z.uploadId).map((z) => z.uploadId!)),
});
if (!storeVerdict.ok) {
  // Whose each stray object is, as the harness saw it: the first step of finding why.
  const strays = objects.filter((k) => storeVerdict.detail.includes(k)).map((k) => {
    const j = jobs.find((x) => x.id && k.includes(x.id));
    return `${k.split('/')[1]}: ${j ? `${j.spec.kind}, ${j.deleted ? 'deleted' : j.status}` : 'not the soak\'s'}`;
  });
  storeVerdict.detail += ` [${strays.join('; ')}]`;
}
verdicts.push(storeVerdict);

// Webhooks: until every expected event arrived, or a minute.
const owner = new Map(jobs.filter((j) => j.id).map((j) => [j.id!, j.user.name]));
const owedDownloads = new Set([...w.downloaded.keys()].filter((z) => !killedBeforeEvent.has(z)));
const ends = new Map(live.filter((j) => j.status === 'completed' || j.status === 'failed').map((j) => [j.id!, `job.${j.status}`]));
const hookEvents = (): HookEvent[] =>
  [...secrets.keys()].flatMap((hook) =>
    receiver.received(`/hook/${hook}`).map((req) => ({
      user: hook.split('/')[0]!,
      event: req.body?.event,
      jobId: req.body?.job_id,
      zipId: req.body?.download?.zip_id,
      complete: req.body?.download?.complete,
      signatureValid: secrets.get(hook)!.some((s) => verifySignature(String(req.headers['x-signature']), s, req.raw, { now: new Date(req.at) })),
    })),
  );
for (let i = 0; i < 60 && !webhooksMatch(hookEvents(), { owner, ends, downloads: owedDownloads }).ok; i++) await new Promise((res) => setTimeout(res, 1_000));
const events = hookEvents();
const hooks = webhooksMatch(events, { owner, ends, downloads: owedDownloads });
if (killedBeforeEvent.size) hooks.detail += ` (${killedBeforeEvent.size} download(s) ended within 2 s before their API was SIGKILLed: not owed)`;
verdicts.push(hooks);

// Usage: stored GB-days over every completion seen (by reading the job or by its webhook).
const completedSize = new Map<string, number>();
for (const j of jobs) if (j.id && j.totalSize > 0 && j.mode === 'stored' && !j.destination) completedSize.set(j.id, j.totalSize);
for (const hook of secrets.keys())
  for (const req of receiver.received(`/hook/${hook}`)) {
    const j = jobs.find((x) => x.id === req.body?.job_id);
    if (req.body?.event === 'job.completed' && j && j.mode === 'stored' && !j.destination && !completedSize.has(j.id!))
      completedSize.set(j.id!, req.body.zips.filter((z: any) => z.status === 'completed').reduce((s: number, z: any) => s + z.size, 0));
  }
const usage = [];
for (const u of users) {
  const got = await call(stack.apiUrls, 'GET', '/usage', u.key);
  const expectedGbDays = jobs.filter((j) => j.user === u && completedSize.has(j.id ?? '')).reduce((s, j) => s + (completedSize.get(j.id!)! * (j.expiresIn || Number(j.spec.body.expires_in))) / (1e9 * 86_400), 0);
  usage.push({ user: u.name, reportedStreamBytes: got.body.usage.stream_bytes, receivedStreamBytes: u.streamReceived, killedInFlightBytes: u.killedInFlight, unreceivedBytes: u.unreceived, oneDownload: u.largestStream, reportedGbDays: got.body.usage.stored_gb_days, expectedGbDays });
}
verdicts.push(usageMatches(usage));

const rss = stack.rss();
verdicts.push(
  processesHealthy(
    stack.instances.map((i) => {
      let unhandled = 0;
      try {
        unhandled = (readFileSync(path.join(stack.logDir, `${i.name}.log`), 'utf8').match(/unhandled rejection/g) ?? []).length;
      } catch {
        // no log yet
      }
      return { name: i.name, crashes: i.crashes, unhandled, rssMB: rss.find((x) => x.name === i.name)!.mb, budgetMB: RSS_BUDGET_MB };
    }),
  ),
);
if (harnessErrors.length) verdicts.push({ name: 'harness', ok: false, detail: `${harnessErrors.length} job task(s) threw: ${harnessErrors.slice(0, 5).join('; ')}` });

// --- the report ---
const by = (s: string | null) => live.filter((j) => j.status === s).length;
const refused = jobs.filter((j) => j.refused);
const faults = [...faultCounts.values()].reduce((a, b) => a + b, 0);
const lines = [
  `soak report: seed ${SEED}, ${MINUTES} min, ${((Date.now() - startedAt) / 60_000).toFixed(1)} min in all`,
  `${jobs.length} jobs: ${by('completed')} completed, ${by('failed')} failed, ${jobs.filter((j) => j.deleted).length} deleted, ${refused.length} refused${refused.length ? ` (${[...new Set(refused.map((j) => j.refused))].slice(0, 3).join('; ')})` : ''}, ${w.counts.retries} retries; kinds ${Object.keys(JOB_WEIGHTS).map((k) => `${k} ${jobs.filter((j) => j.spec.kind === k).length}`).join(', ')}`,
  `${w.counts.downloads} downloads: ${w.counts.wholeDownloads} whole, ${w.counts.hungUp} hung up, ${w.counts.resumed} resumed, ${w.counts.ranges} sampled ranges (${w.counts.rangesCut} cut by a fault), ${w.counts.ifRangeWhole} resumes answered whole (If-Range changed), ${w.counts.unservable} stream ZIPs with an endless body tried once; ${events.length} webhook deliveries`,
  `${faults} faults: ${[...faultCounts].map(([k, n]) => `${k} ${n}`).join(', ')}; service exits ${stack.instances.map((i) => `${i.name} ${i.exits.length}`).join(', ')}`,
  `RSS at the start / end / peak (MB): ${rss.map(({ name, mb }) => `${name} ${(startRss.get(name) ?? NaN).toFixed(0)}/${mb.toFixed(0)}/${(peakRss.get(name) ?? mb).toFixed(0)}`).join(', ')}`,
  ...verdicts.map((v) => `${v.ok ? 'PASS' : 'FAIL'} ${v.name}: ${v.detail}`),
];
const ok = verdicts.every((v) => v.ok);
lines.push(ok ? `all ${verdicts.length} invariants hold (seed ${SEED})` : `FAILED (seed ${SEED}: SOAK_SEED=${SEED} SOAK_MINUTES=${MINUTES} pnpm soak replays the schedule); logs in ${stack.logDir}`);
writeFileSync(
  path.join(runDir, 'jobs.json'),
  JSON.stringify(jobs.map((j) => ({ n: j.n, id: j.id, user: j.user.name, kind: j.spec.kind, status: j.status, deleted: j.deleted, retries: j.retries, errors: j.urlErrors, body: { ...j.spec.body, encryption: undefined } })), null, 1),
);
await db.$disconnect().catch(() => undefined);
await stack.stop();
await origin.close();
await receiver.close();
if (ok) rmSync(runDir, { recursive: true, force: true });
process.stdout.write(`${lines.join('\n')}\n`);
process.exit(ok ? 0 : 1);
