// bench:jobs, the many-files case (issue 49): jobs of 1,000, 5,000 and 20,000 files of 1 KB
// from a local origin, stored and stream, then two jobs at once at the largest count. The real
// services run as processes (bench/lib/env.ts); for each case it prints each service's peak RSS
// (VmHWM, reset before the case), preparing time, job time and, for stream jobs, the download
// time per file beside `curl --parallel --parallel-max 64` of the same URLs into /dev/null.
//   MANY_FILES=1000,5000,20000 MANY_MODES=stored,stream MANY_PAIR=20000 (0: no pair) FILE_BYTES=1024
import type { ChildProcess } from 'node:child_process';
import { createUserWithKey } from '@ap/accounts';
import { createDb } from '@ap/db';
import { curlToNull } from './lib/baselines';
import { drain, ms, peakRssMiB, resetPeakRss, startApiAndServices, startOrigin, type BenchEnv } from './lib/env';

const COUNTS = (process.env.MANY_FILES ?? '1000,5000,20000').split(',').map(Number);
const PAIR = Number(process.env.MANY_PAIR ?? COUNTS[COUNTS.length - 1]);
const FILE_BYTES = Number(process.env.FILE_BYTES ?? 1024);
const MODES = (process.env.MANY_MODES ?? 'stored,stream').split(',') as Mode[];
const SERVICES = ['api', 'preparer', 'packer'] as const;
type Mode = 'stored' | 'stream';

export interface ManyFilesCase {
  files: number;
  mode: Mode;
  jobs: number;
  peakRssMiB: Record<(typeof SERVICES)[number], number>;
  prepareS: number;
  jobS: number;
  jobViewBytes: number;
  streamS?: number;
  curlS?: number;
}

export async function manyFilesCase(bench: BenchEnv): Promise<ManyFilesCase[]> {
  const origin = await startOrigin();
  const { apiUrl, children } = await startApiAndServices(bench, ['preparer', 'packer']);
  const processes = Object.fromEntries(SERVICES.map((name, i) => [name, children[i]!])) as Record<(typeof SERVICES)[number], ChildProcess>;
  const db = createDb(bench.env.DATABASE_URL!);
  const results: ManyFilesCase[] = [];
  try {
    const { apiKey } = await createUserWithKey(db, { email: `many-${Date.now()}@example.test`, plan: 'scale', overage: true });
    const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
    const urlsOf = (files: number, tag: string) => Array.from({ length: files }, (_, i) => `${origin.url}/blob/${FILE_BYTES}/${i}/${tag}-${i}.bin`);
    const post = async (mode: Mode, urls: string[]) => {
      const res = await fetch(`${apiUrl}/jobs`, { method: 'POST', headers, body: JSON.stringify({ mode, files: urls.map((url) => ({ url })) }) });
      if (res.status !== 201) throw new Error(`POST /jobs: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { job_id: string }).job_id;
    };
    // Status through the job list (a small read); the full job is read once, at the end.
    const statusOf = async (ids: string[]) => {
      const res = await fetch(`${apiUrl}/jobs?limit=${ids.length}`, { headers });
      const { jobs } = (await res.json()) as { jobs: { id: string; status: string }[] };
      return ids.map((id) => jobs.find((j) => j.id === id)?.status ?? 'missing');
    };
    const waitUntil = async (ids: string[], done: (s: string) => boolean) => {
      while (!(await statusOf(ids)).every(done)) await new Promise((r) => setTimeout(r, 100));
    };

    const run = async (files: number, mode: Mode, jobs: number) => {
      const tag = `${mode}${files}x${jobs}-${Date.now()}`;
      const urls = Array.from({ length: jobs }, (_, j) => urlsOf(files, `${tag}-${j}`));
      for (const p of Object.values(processes)) resetPeakRss(p.pid!);
      const t0 = process.hrtime.bigint();
      const ids = await Promise.all(urls.map((u) => post(mode, u)));
      await waitUntil(ids, (s) => s !== 'preparing' && s !== 'pending');
      const prepareS = ms(t0) / 1000;
      await waitUntil(ids, (s) => s === 'completed' || s === 'failed' || s === 'partial');
      const jobS = ms(t0) / 1000;
      const views = await Promise.all(ids.map(async (id) => {
        const text = await (await fetch(`${apiUrl}/jobs/${id}`, { headers })).text();
        return { bytes: Buffer.byteLength(text), job: (JSON.parse(text) as { job: { status: string; zips: { size: number; download_url: string | null }[] } }).job };
      }));
      for (const v of views) if (v.job.status !== 'completed') throw new Error(`a ${mode} job of ${files} files ended ${v.job.status}`);
      const result: ManyFilesCase = { files, mode, jobs, peakRssMiB: { api: 0, preparer: 0, packer: 0 }, prepareS, jobS, jobViewBytes: views[0]!.bytes };
      if (mode === 'stream') {
        const t1 = process.hrtime.bigint();
        const got = await Promise.all(views.map((v) => drain(v.job.zips[0]!.download_url!)));
        result.streamS = ms(t1) / 1000;
        got.forEach((g, i) => {
          if (g.status !== 200 || g.bytes !== views[i]!.job.zips[0]!.size) throw new Error(`stream download: ${g.status}, ${g.bytes} of ${views[i]!.job.zips[0]!.size} bytes`);
        });
      }
      for (const name of SERVICES) result.peakRssMiB[name] = peakRssMiB(processes[name].pid!);
      if (mode === 'stream') result.curlS = (await curlToNull(urls.flat(), { parallel: 64 })) / 1000;
      results.push(result);
      const perFile = (s: number) => `${((s * 1e6) / (files * jobs)).toFixed(0)} µs/file`;
      const rss = SERVICES.map((n) => `${n} ${result.peakRssMiB[n].toFixed(0)}`).join(', ');
      const stream = result.streamS === undefined ? '' : `; download ${result.streamS.toFixed(2)} s (${perFile(result.streamS)}), curl -Z 64 ${result.curlS!.toFixed(2)} s, ratio ${(result.curlS! / result.streamS).toFixed(2)}`;
      console.log(
        `  ${jobs} x ${String(files).padStart(6)} ${mode.padEnd(6)}: peak RSS MiB ${rss}; preparing ${prepareS.toFixed(2)} s (${perFile(prepareS)}), job ${jobS.toFixed(2)} s (${perFile(jobS)}); GET /jobs/:id ${(result.jobViewBytes / 1e6).toFixed(2)} MB${stream}`,
      );
    };

    const idle = SERVICES.map((n) => `${n} ${peakRssMiB(processes[n].pid!).toFixed(0)}`).join(', ');
    console.log(`many files of ${FILE_BYTES} B; peak RSS MiB before the first job: ${idle}`);
    console.log(`many files of ${FILE_BYTES} B (peak RSS since the case began; download ratio = curl time / stream time):`);
    for (const files of COUNTS) for (const mode of MODES) await run(files, mode, 1);
    if (PAIR > 0) for (const mode of MODES) await run(PAIR, mode, 2);
  } finally {
    await db.$disconnect();
    for (const c of [...children, origin.child]) c.kill();
  }
  return results;
}
