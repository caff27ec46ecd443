// Archive options bench. Prints two figures, each beside its baseline from the same run on the
// same loopback origin (its own process), the API, preparer and packer as their own processes:
//   (a) AES-256 stream download over the plain stream download of the same files (goal >= 0.8),
//       MACs (and CRCs) learned by a first download of each, then ROUNDS alternating rounds
//   (b) stored jobs on text, POST -> completed, as input MB/s: deflate level 1 and 6 beside store,
//       with the ZIP's size against the input
//   pnpm bench:archive   (FILES=8 FILE_MIB=32 ROUNDS=9 TEXT_FILES=8 TEXT_MIB=16; ONLY=a|b; PROFILE=<dir>)
import type { ChildProcess } from 'node:child_process';
import { createUserWithKey } from '@ap/accounts';
import { loadConfig } from '@ap/config';
import { createDb } from '@ap/db';
import { drain, MBps, ms, pct, startApiAndServices, startBenchEnv, startOrigin } from './lib/env';
import { writeResults } from './lib/report';

const MiB = 1024 * 1024;
const FILES = Number(process.env.FILES ?? 8);
const FILE_BYTES = Number(process.env.FILE_MIB ?? 32) * MiB;
const TEXT_FILES = Number(process.env.TEXT_FILES ?? 8);
const TEXT_BYTES = Number(process.env.TEXT_MIB ?? 16) * MiB;
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const ONLY = process.env.ONLY;

const origin = await startOrigin();
const bench = await startBenchEnv();
const config = loadConfig();
const children: ChildProcess[] = [origin.child];
const db = createDb(config.DATABASE_URL);
const figures: Record<string, unknown> = {};

try {
  const services = await startApiAndServices(bench, ['preparer', 'packer']);
  const { apiUrl } = services;
  children.push(...services.children);
  const { apiKey } = await createUserWithKey(db, { email: `bench-${Date.now()}@example.test`, plan: 'scale', overage: true });
  /** POST -> completed: the first ZIP and the milliseconds it took. */
  const job = async (body: Record<string, unknown>) => {
    const t0 = process.hrtime.bigint();
    const res = await fetch(`${apiUrl}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`POST /jobs: ${res.status} ${await res.text()}`);
    const { job_id } = (await res.json()) as { job_id: string };
    for (;;) {
      const r = await fetch(`${apiUrl}/jobs/${job_id}`, { headers: { 'x-api-key': apiKey } });
      const { job: j } = (await r.json()) as { job: { status: string; zips: { size: number; download_url: string }[] } };
      if (j.status === 'failed') throw new Error(`job failed: ${JSON.stringify(j)}`);
      if (j.status === 'completed') return { zip: j.zips[0]!, took: ms(t0) };
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  if (!ONLY || ONLY === 'a') {
    const files = Array.from({ length: FILES }, (_, i) => ({ url: `${origin.url}/blob/${FILE_BYTES}/${i}/f${i}.bin` }));
    const plain = (await job({ mode: 'stream', files })).zip;
    const aes = (await job({ mode: 'stream', files, encryption: { method: 'aes-256', password: 'bench-password-1' } })).zip;
    for (const zip of [plain, aes]) if ((await drain(zip.download_url)).bytes !== zip.size) throw new Error('short download');
    const times: [number[], number[]] = [[], []];
    for (let r = 0; r < ROUNDS; r++) {
      for (const k of r % 2 ? [1, 0] : [0, 1]) {
        const zip = k ? aes : plain;
        const t0 = process.hrtime.bigint();
        if ((await drain(zip.download_url)).bytes !== zip.size) throw new Error('short download');
        times[k as 0 | 1].push(ms(t0));
      }
    }
    const ratios = times[1].map((t, r) => (aes.size / t) / (plain.size / times[0][r]!));
    console.log(`(a) stream download, ${FILES} x ${FILE_BYTES / MiB} MiB, median of ${ROUNDS} rounds:`);
    console.log(`    plain  ${MBps(plain.size, pct(times[0], 50))}`);
    console.log(`    AES-256 ${MBps(aes.size, pct(times[1], 50))}`);
    console.log(`    per round ${ratios.map((x) => x.toFixed(2)).join(' ')}`);
    console.log(`    ratio ${pct(ratios, 50).toFixed(2)} AES over plain  (goal >= 0.80)`);
    figures.a = { plainMs: times[0], aesMs: times[1], plainBytes: plain.size, aesBytes: aes.size, ratios, ratio: pct(ratios, 50) };
  }

  if (!ONLY || ONLY === 'b') {
    const input = TEXT_FILES * TEXT_BYTES;
    const files = Array.from({ length: TEXT_FILES }, (_, i) => ({ url: `${origin.url}/text/${TEXT_BYTES}/${i}/t${i}.csv` }));
    console.log(`(b) stored job of ${TEXT_FILES} x ${TEXT_BYTES / MiB} MiB of text, POST -> completed, input MB/s (median of 3):`);
    for (const [name, options] of [
      ['store', {}],
      ['deflate 1', { compression: 'deflate', compression_level: 1 }],
      ['deflate 6', { compression: 'deflate' }],
    ] as const) {
      const runs = [];
      for (let r = 0; r < 3; r++) runs.push(await job({ files, ...options }));
      const took = pct(runs.map((x) => x.took), 50);
      console.log(`    ${name.padEnd(10)} ${MBps(input, took)}  (${took.toFixed(0)} ms; ZIP ${(runs[0]!.zip.size / input).toFixed(3)} of the input)`);
      figures[`b ${name}`] = { inputBytes: input, medianMs: took, zipBytes: runs[0]!.zip.size };
    }
  }
  writeResults({ bench: 'archive-options', params: { FILES, FILE_BYTES, ROUNDS, TEXT_FILES, TEXT_BYTES, ONLY: ONLY ?? 'all' }, figures });
} finally {
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : (c.once('exit', r), c.kill())))));
  await db.$disconnect();
  await bench.close();
}
process.exit(0);
