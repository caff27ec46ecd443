// `create`, `jobs list|get|retry` and `download`: making a job, following it and fetching its ZIPs.
import { readFile } from 'node:fs/promises';
import { mkdir } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { DownloadError, type ArchiveClient, type Job, type JobCreateRequest } from '@ap/sdk';
import { formatBytes } from '@ap/contract/sizes';
import { parseUrlList } from '@ap/contract/url-list';
import { archiveOptionFields, compressOption, formatOption, manifestOption, passwordFileOption, type ArchiveOptionFlags } from './archive-options';
import { intArg, JobFailed, sizeArg, UsageError, type CommandContext } from './context';
import { count } from './output';
import { applyPrivateSourceOptions, destinationOption, withPrivateSourceOptions } from './sources';

const JOB_STATUS_FILTERS = ['pending', 'processing', 'completed', 'failed'];

export function registerJobCommands(program: Command, ctx: CommandContext): void {
  async function waitFor(client: ArchiveClient, jobId: string): Promise<Job> {
    let barStarted = false;
    const job = await client.waitForJob(jobId, {
      intervalMs: Number(ctx.io.env.ARCHIVE_POLL_MS ?? 1000),
      signal: ctx.io.signal,
      onUpdate: (j) => {
        const ready = j.zips.filter((z) => z.status === 'completed').length;
        if (!barStarted) {
          ctx.out().waitBar(j.status);
          barStarted = true;
        }
        ctx.out().updateWait({ progress: j.progress, ready, zips: Math.max(j.zip_count, j.zips.length), files: j.file_count, status: j.status });
      },
    });
    ctx.out().stopBar();
    return job;
  }

  function describeJob(job: Job): void {
    ctx.out().line(`job ${job.id}: ${job.status}, ${job.file_count}/${count(job.url_count, 'file')}, ${count(job.zips.length, 'ZIP')}${job.total_size ? `, ${formatBytes(job.total_size)}` : ''}`);
    for (const z of job.zips) ctx.out().line(`  ${z.sequence}. ${z.filename}  ${z.status}  ${count(z.file_count, 'file')}${z.size !== null ? `  ${formatBytes(z.size)}` : ''}`);
    for (const e of job.errors ?? []) ctx.out().line(`  error: ${e.url ? `${e.url}: ` : ''}${e.error}`);
  }

  async function downloadAll(client: ArchiveClient, job: Job, dir: string, crc: boolean): Promise<string[]> {
    if (job.status !== 'completed') throw new JobFailed(job);
    await mkdir(dir, { recursive: true });
    const zips = job.zips.filter((z) => z.status === 'completed' && z.download_url);
    if (zips.length === 0) throw new DownloadError(`job ${job.id} has no downloadable ZIP (expired?)`);
    const paths: string[] = [];
    for (const [i, zip] of zips.entries()) {
      const label = `${zip.filename} (${i + 1}/${zips.length})`;
      let started = false;
      const result = await client.download(zip, {
        dir,
        crc,
        signal: ctx.io.signal,
        onProgress: ({ bytes, total }) => {
          if (!started) {
            ctx.out().downloadBar(label, total, bytes);
            started = true;
          } else ctx.out().updateDownload(bytes, total);
        },
      });
      ctx.out().stopBar();
      const how = result.alreadyComplete ? 'already complete' : result.resumedFrom > 0 ? `resumed at ${formatBytes(result.resumedFrom)}` : 'downloaded';
      ctx.out().line(`${result.path}  ${formatBytes(result.bytes)}, ${count(result.check.entries, 'entry', 'entries')} verified${result.check.crcChecked ? ' (CRC-32)' : ''} (${how})`);
      paths.push(result.path);
    }
    return paths;
  }

  withPrivateSourceOptions(program
    .command('create'))
    .description('create a job from URLs (arguments or --from FILE, one "URL [filename]" per line; - reads stdin)')
    .argument('[urls...]', 'file URLs')
    .option('--from <file>', 'read URLs from a file')
    .addOption(new Option('--mode <mode>', 'stored or stream').choices(['stored', 'stream']))
    .option('--split <size>', 'split into ZIPs of at most this size (e.g. 500MB, 2GiB)', sizeArg)
    .option('--name <template>', 'ZIP file name or template, e.g. "photos-{n}-of-{total}.zip"')
    .option('--wait', 'wait until the job is completed or failed')
    .option('--download <dir>', 'wait, then download every ZIP into DIR (implies --wait)')
    .option('--crc', 'also check every entry\'s CRC-32 after downloading')
    .addOption(compressOption()).addOption(passwordFileOption())
    .addOption(formatOption()).addOption(manifestOption())
    .action(async (urls: string[], opts: { from?: string; mode?: 'stored' | 'stream'; split?: number; name?: string; wait?: boolean; download?: string; crc?: boolean; source?: string; header?: [string, string][]; destination?: string; destinationSource?: string } & ArchiveOptionFlags, cmd: Command) => {
      const client = ctx.clientOf(cmd);
      const files: { url: string; filename?: string }[] = urls.map((url) => ({ url }));
      if (opts.from) {
        const text = opts.from === '-' ? await (ctx.io.readStdin?.() ?? Promise.resolve('')) : await readFile(opts.from, 'utf8').catch((err: Error) => {
          throw new UsageError(`cannot read --from ${opts.from}: ${err.message}`);
        });
        files.push(...parseUrlList(text));
      }
      if (files.length === 0) throw new UsageError('no URLs: give them as arguments or with --from FILE');
      const destination = destinationOption(opts);
      const body: JobCreateRequest = { files: applyPrivateSourceOptions(files, opts), ...(destination ? { destination } : {}) };
      if (opts.mode) body.mode = opts.mode;
      if (opts.split !== undefined) body.max_zip_size_bytes = opts.split;
      if (opts.name !== undefined) body.zip_filename = opts.name;
      Object.assign(body, await archiveOptionFields(opts, (message) => new UsageError(message)));
      const { job_id } = await client.createJob(body);
      ctx.knowJob(job_id);
      ctx.out().line(`created job ${job_id}`);
      if (!opts.wait && !opts.download) return void ctx.out().result({ success: true, job_id });
      const job = await waitFor(client, job_id);
      describeJob(job);
      if (job.status === 'failed') throw new JobFailed(job);
      const paths = opts.download ? await downloadAll(client, job, opts.download, opts.crc === true) : undefined;
      ctx.out().result({ success: true, job_id, status: job.status, zips: job.zips, ...(paths ? { paths } : {}) });
    });

  const jobs = program.command('jobs').description('list, read and retry jobs');
  jobs
    .command('list')
    .description('list jobs, newest first')
    .addOption(new Option('--status <status>', 'only jobs with this status').choices(JOB_STATUS_FILTERS))
    .option('--limit <n>', 'jobs per page (1-100)', intArg)
    .option('--cursor <cursor>', 'next page (meta.next_cursor of the previous page)')
    .action(async (opts: { status?: 'pending' | 'processing' | 'completed' | 'failed'; limit?: number; cursor?: string }, cmd: Command) => {
      const client = ctx.clientOf(cmd);
      const page = await client.listJobs({ status: opts.status, limit: opts.limit, cursor: opts.cursor });
      for (const j of page.jobs) ctx.out().line(`${j.id}  ${j.status.padEnd(10)}  ${String(j.file_count).padStart(5)}/${count(j.url_count, 'file')}  ${count(j.zip_count, 'ZIP')}  ${j.created_at}`);
      ctx.out().line(`${page.jobs.length} of ${page.meta.total}${page.meta.has_more ? `; next page: --cursor ${page.meta.next_cursor}` : ''}`);
      ctx.out().result({ success: true, jobs: page.jobs, meta: page.meta });
    });
  jobs
    .command('get')
    .description('show a job')
    .argument('<id>', 'job id')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const client = ctx.clientOf(cmd);
      ctx.knowJob(id);
      const job = await client.getJob(id);
      describeJob(job);
      ctx.out().result({ success: true, job_id: job.id, status: job.status, job });
    });
  jobs
    .command('retry')
    .description('retry a failed job (from its checkpoint unless --from-scratch)')
    .argument('<id>', 'job id')
    .option('--from-scratch', 'delete everything and start again from probing')
    .action(async (id: string, opts: { fromScratch?: boolean }, cmd: Command) => {
      const client = ctx.clientOf(cmd);
      ctx.knowJob(id);
      const res = await client.retryJob(id, { from_checkpoint: !opts.fromScratch });
      ctx.out().line(`job ${res.job_id} queued again${opts.fromScratch ? ' from scratch' : ' from its checkpoint'}`);
      ctx.out().result({ success: true, job_id: res.job_id });
    });

  program
    .command('delete')
    .description('delete a job and its ZIPs; its download links stop working at once')
    .argument('<id>', 'job id')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const client = ctx.clientOf(cmd);
      ctx.knowJob(id);
      const res = await client.deleteJob(id);
      ctx.out().line(`job ${id}: ${res.message}`);
      ctx.out().result({ success: true, job_id: id, message: res.message });
    });

  program
    .command('download')
    .description('download every ZIP of a completed job (a partial file in DIR is resumed; each ZIP is verified)')
    .argument('<id>', 'job id')
    .option('--out <dir>', 'directory to write into', '.')
    .option('--crc', 'also check every entry\'s CRC-32')
    .action(async (id: string, opts: { out: string; crc?: boolean }, cmd: Command) => {
      const client = ctx.clientOf(cmd);
      ctx.knowJob(id);
      const job = await client.getJob(id, ctx.io.signal);
      if (job.status === 'failed') throw new JobFailed(job);
      if (job.status !== 'completed') throw new DownloadError(`job ${id} is ${job.status}, not completed yet (create --wait, or try again later)`);
      const paths = await downloadAll(client, job, opts.out, opts.crc === true);
      ctx.out().result({ success: true, job_id: id, status: job.status, paths });
    });
}
