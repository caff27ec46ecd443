// The `archive-packager` command (decisions.md "API description and clients"): commands,
// flags, environment, exit codes (0 success, 1 failed job or refused operation, 2 bad usage,
// 130 interrupted) and the `--json` result line.
import { readFile } from 'node:fs/promises';
import { mkdir } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ApiRequestError, ArchiveClient, DownloadError, ZipVerificationError, type Job, type JobCreateRequest, type WebhookEvent } from '@ap/sdk';
import { archiveOptionFields, compressOption, passwordFileOption, type ArchiveOptionFlags } from './archive-options';
import { count, Output } from './output';
import { formatBytes, parseSize } from '@ap/contract/sizes';
import { parseUrlList } from '@ap/contract/url-list';
import { applyPrivateSourceOptions, registerSourceCommands, withPrivateSourceOptions } from './sources';

export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

export class UsageError extends Error {
  override name = 'UsageError';
}

/** The job ended `failed`: exit 1, with the job's id in the result. */
class JobFailed extends Error {
  override name = 'JobFailed';
  constructor(readonly job: Job) {
    super(`job ${job.id} failed`);
  }
}

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WriteStream;
  /** Aborted on Ctrl-C. */
  signal: AbortSignal;
  readStdin?: () => Promise<string>;
}

interface GlobalOptions {
  url?: string;
  key?: string;
  json?: boolean;
}

const JOB_STATUS_FILTERS = ['pending', 'processing', 'completed', 'failed'];
const WEBHOOK_EVENTS: readonly WebhookEvent[] = ['job.completed', 'job.failed', 'download.completed'];

function sizeArg(value: string): number {
  const bytes = parseSize(value);
  if (bytes === null) throw new InvalidArgumentError('expected a size such as 104857600, 500MB or 2GiB');
  return bytes;
}

function intArg(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a whole number');
  return Number(value);
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let out = new Output({ json: argv.includes('--json'), stdout: io.stdout, stderr: io.stderr });
  let knownJobId: string | undefined;

  const program = new Command('archive-packager')
    .description('Create ZIP archives of remote files with the Archive Packaging Service, wait for them and download them (resumable, verified).')
    .addOption(new Option('--url <url>', 'API base URL').env('ARCHIVE_API_URL'))
    .addOption(new Option('--key <key>', 'API key').env('ARCHIVE_API_KEY'))
    .option('--json', 'print one JSON object as the last line on stdout; no progress bars')
    .showHelpAfterError('(run archive-packager --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: (s) => (io.stdout ?? process.stdout).write(s), writeErr: (s) => (io.stderr ?? process.stderr).write(s) });

  const globals = (cmd: Command): GlobalOptions => cmd.optsWithGlobals() as GlobalOptions;
  const clientOf = (cmd: Command): ArchiveClient => {
    const g = globals(cmd);
    out = new Output({ json: g.json === true, stdout: io.stdout, stderr: io.stderr });
    const url = g.url ?? io.env.ARCHIVE_API_URL;
    const key = g.key ?? io.env.ARCHIVE_API_KEY;
    if (!url) throw new UsageError('no API URL: pass --url or set ARCHIVE_API_URL');
    if (!/^https?:\/\/[^/]/.test(url)) throw new UsageError(`--url must be an http(s) URL (got ${JSON.stringify(url)})`);
    if (!key) throw new UsageError('no API key: pass --key or set ARCHIVE_API_KEY');
    return new ArchiveClient({ baseUrl: url, apiKey: key, userAgent: 'archive-packager-cli/0.1.0' });
  };

  async function waitFor(client: ArchiveClient, jobId: string): Promise<Job> {
    let barStarted = false;
    const job = await client.waitForJob(jobId, {
      intervalMs: Number(io.env.ARCHIVE_POLL_MS ?? 1000),
      signal: io.signal,
      onUpdate: (j) => {
        const ready = j.zips.filter((z) => z.status === 'completed').length;
        if (!barStarted) {
          out.waitBar(j.status);
          barStarted = true;
        }
        out.updateWait({ progress: j.progress, ready, zips: Math.max(j.zip_count, j.zips.length), files: j.file_count, status: j.status });
      },
    });
    out.stopBar();
    return job;
  }

  function describeJob(job: Job): void {
    out.line(`job ${job.id}: ${job.status}, ${job.file_count}/${count(job.url_count, 'file')}, ${count(job.zips.length, 'ZIP')}${job.total_size ? `, ${formatBytes(job.total_size)}` : ''}`);
    for (const z of job.zips) out.line(`  ${z.sequence}. ${z.filename}  ${z.status}  ${count(z.file_count, 'file')}${z.size !== null ? `  ${formatBytes(z.size)}` : ''}`);
    for (const e of job.errors ?? []) out.line(`  error: ${e.url ? `${e.url}: ` : ''}${e.error}`);
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
        signal: io.signal,
        onProgress: ({ bytes, total }) => {
          if (!started) {
            out.downloadBar(label, total, bytes);
            started = true;
          } else out.updateDownload(bytes, total);
        },
      });
      out.stopBar();
      const how = result.alreadyComplete ? 'already complete' : result.resumedFrom > 0 ? `resumed at ${formatBytes(result.resumedFrom)}` : 'downloaded';
      out.line(`${result.path}  ${formatBytes(result.bytes)}, ${count(result.check.entries, 'entry', 'entries')} verified${result.check.crcChecked ? ' (CRC-32)' : ''} (${how})`);
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
    .action(async (urls: string[], opts: { from?: string; mode?: 'stored' | 'stream'; split?: number; name?: string; wait?: boolean; download?: string; crc?: boolean; source?: string; header?: [string, string][] } & ArchiveOptionFlags, cmd: Command) => {
      const client = clientOf(cmd);
      const files: { url: string; filename?: string }[] = urls.map((url) => ({ url }));
      if (opts.from) {
        const text = opts.from === '-' ? await (io.readStdin?.() ?? Promise.resolve('')) : await readFile(opts.from, 'utf8').catch((err: Error) => {
          throw new UsageError(`cannot read --from ${opts.from}: ${err.message}`);
        });
        files.push(...parseUrlList(text));
      }
      if (files.length === 0) throw new UsageError('no URLs: give them as arguments or with --from FILE');
      const body: JobCreateRequest = { files: applyPrivateSourceOptions(files, opts) };
      if (opts.mode) body.mode = opts.mode;
      if (opts.split !== undefined) body.max_zip_size_bytes = opts.split;
      if (opts.name !== undefined) body.zip_filename = opts.name;
      Object.assign(body, await archiveOptionFields(opts, (message) => new UsageError(message)));
      const { job_id } = await client.createJob(body);
      knownJobId = job_id;
      out.line(`created job ${job_id}`);
      if (!opts.wait && !opts.download) return void out.result({ success: true, job_id });
      const job = await waitFor(client, job_id);
      describeJob(job);
      if (job.status === 'failed') throw new JobFailed(job);
      const paths = opts.download ? await downloadAll(client, job, opts.download, opts.crc === true) : undefined;
      out.result({ success: true, job_id, status: job.status, zips: job.zips, ...(paths ? { paths } : {}) });
    });

  const jobs = program.command('jobs').description('list, read and retry jobs');
  jobs
    .command('list')
    .description('list jobs, newest first')
    .addOption(new Option('--status <status>', 'only jobs with this status').choices(JOB_STATUS_FILTERS))
    .option('--limit <n>', 'jobs per page (1-100)', intArg)
    .option('--cursor <cursor>', 'next page (meta.next_cursor of the previous page)')
    .action(async (opts: { status?: 'pending' | 'processing' | 'completed' | 'failed'; limit?: number; cursor?: string }, cmd: Command) => {
      const client = clientOf(cmd);
      const page = await client.listJobs({ status: opts.status, limit: opts.limit, cursor: opts.cursor });
      for (const j of page.jobs) out.line(`${j.id}  ${j.status.padEnd(10)}  ${String(j.file_count).padStart(5)}/${count(j.url_count, 'file')}  ${count(j.zip_count, 'ZIP')}  ${j.created_at}`);
      out.line(`${page.jobs.length} of ${page.meta.total}${page.meta.has_more ? `; next page: --cursor ${page.meta.next_cursor}` : ''}`);
      out.result({ success: true, jobs: page.jobs, meta: page.meta });
    });
  jobs
    .command('get')
    .description('show a job')
    .argument('<id>', 'job id')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const client = clientOf(cmd);
      knownJobId = id;
      const job = await client.getJob(id);
      describeJob(job);
      out.result({ success: true, job_id: job.id, status: job.status, job });
    });
  jobs
    .command('retry')
    .description('retry a failed job (from its checkpoint unless --from-scratch)')
    .argument('<id>', 'job id')
    .option('--from-scratch', 'delete everything and start again from probing')
    .action(async (id: string, opts: { fromScratch?: boolean }, cmd: Command) => {
      const client = clientOf(cmd);
      knownJobId = id;
      const res = await client.retryJob(id, { from_checkpoint: !opts.fromScratch });
      out.line(`job ${res.job_id} queued again${opts.fromScratch ? ' from scratch' : ' from its checkpoint'}`);
      out.result({ success: true, job_id: res.job_id });
    });

  program
    .command('delete')
    .description('delete a job and its ZIPs; its download links stop working at once')
    .argument('<id>', 'job id')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const client = clientOf(cmd);
      knownJobId = id;
      const res = await client.deleteJob(id);
      out.line(`job ${id}: ${res.message}`);
      out.result({ success: true, job_id: id, message: res.message });
    });

  program
    .command('download')
    .description('download every ZIP of a completed job (a partial file in DIR is resumed; each ZIP is verified)')
    .argument('<id>', 'job id')
    .option('--out <dir>', 'directory to write into', '.')
    .option('--crc', 'also check every entry\'s CRC-32')
    .action(async (id: string, opts: { out: string; crc?: boolean }, cmd: Command) => {
      const client = clientOf(cmd);
      knownJobId = id;
      const job = await client.getJob(id, io.signal);
      if (job.status === 'failed') throw new JobFailed(job);
      if (job.status !== 'completed') throw new DownloadError(`job ${id} is ${job.status}, not completed yet (create --wait, or try again later)`);
      const paths = await downloadAll(client, job, opts.out, opts.crc === true);
      out.result({ success: true, job_id: id, status: job.status, paths });
    });

  const keys = program.command('keys').description('API keys');
  keys.command('list').description('list API keys').action(async (_opts: unknown, cmd: Command) => {
    const client = clientOf(cmd);
    const { api_keys } = await client.listApiKeys();
    for (const k of api_keys) out.line(`${k.id}  ${k.name || '(no name)'}  created ${k.created_at}  expires ${k.expires_at ?? 'never'}  last used ${k.last_used_at ?? 'never'}`);
    out.result({ success: true, api_keys });
  });
  keys
    .command('create')
    .description('create an API key (its value is shown once)')
    .option('--name <name>', 'label')
    .option('--expires-at <datetime>', 'ISO 8601 date and time, e.g. 2030-01-31T12:00:00Z')
    .action(async (opts: { name?: string; expiresAt?: string }, cmd: Command) => {
      const client = clientOf(cmd);
      const { api_key } = await client.createApiKey({ name: opts.name, expires_at: opts.expiresAt });
      out.line(`created key ${api_key.id}${api_key.name ? ` (${api_key.name})` : ''}; its value, shown only now:`);
      out.line(api_key.key);
      out.result({ success: true, api_key });
    });
  keys.command('revoke').description('revoke an API key').argument('<id>', 'key id').action(async (id: string, _opts: unknown, cmd: Command) => {
    const client = clientOf(cmd);
    const res = await client.revokeApiKey(id);
    out.line(res.message);
    out.result({ success: true, id, message: res.message });
  });

  // Webhook routes (decisions.md "Webhooks").
  const hooks = program.command('webhooks').description('webhooks');
  hooks.command('list').description('list webhooks').action(async (_opts: unknown, cmd: Command) => {
    const client = clientOf(cmd);
    const { webhooks } = await client.listWebhooks();
    for (const w of webhooks) out.line(`${w.id}  ${w.url}  ${w.events.join(',')}${w.description ? `  ${w.description}` : ''}`);
    out.result({ success: true, webhooks });
  });
  hooks
    .command('create')
    .description('create a webhook (its signing secret is shown once)')
    .argument('<url>', 'https URL that receives the events')
    .option('--events <list>', `comma-separated: ${WEBHOOK_EVENTS.join(', ')}`)
    .option('--description <text>', 'description')
    .action(async (url: string, opts: { events?: string; description?: string }, cmd: Command) => {
      const client = clientOf(cmd);
      const names = opts.events?.split(',').map((e) => e.trim()).filter(Boolean);
      const isEvent = (e: string): e is WebhookEvent => (WEBHOOK_EVENTS as readonly string[]).includes(e);
      for (const e of names ?? []) if (!isEvent(e)) throw new UsageError(`unknown event ${JSON.stringify(e)} (allowed: ${WEBHOOK_EVENTS.join(', ')})`);
      const events = names?.filter(isEvent);
      const { webhook } = await client.createWebhook({ url, ...(events ? { events } : {}), ...(opts.description ? { description: opts.description } : {}) });
      out.line(`created webhook ${webhook.id}; its signing secret, shown only now:`);
      out.line(webhook.secret);
      out.result({ success: true, webhook });
    });
  hooks.command('delete').description('delete a webhook').argument('<id>', 'webhook id').action(async (id: string, _opts: unknown, cmd: Command) => {
    const client = clientOf(cmd);
    const res = await client.deleteWebhook(id);
    out.line(res.message);
    out.result({ success: true, id, message: res.message });
  });

  registerSourceCommands(program, clientOf, () => out, io.env);

  const fail = (code: number, message: string, error: Record<string, unknown>): number => {
    out.stopBar();
    out.note(message);
    out.result({ success: false, ...(knownJobId ? { job_id: knownJobId } : {}), error });
    return code;
  };

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return EXIT.ok;
      if (err.code === 'commander.executeSubCommandAsync') return EXIT.ok;
      // Commander already printed the message.
      out.result({ success: false, error: { code: 'USAGE', message: err.message } });
      return EXIT.usage;
    }
    if (io.signal.aborted) {
      return fail(EXIT.interrupted, 'interrupted; a partial download is kept and the same command resumes it', { code: 'INTERRUPTED', message: 'interrupted' });
    }
    if (err instanceof UsageError) return fail(EXIT.usage, `error: ${err.message}`, { code: 'USAGE', message: err.message });
    if (err instanceof JobFailed) {
      const reasons = (err.job.errors ?? []).map((e) => `  ${e.url ? `${e.url}: ` : ''}${e.error}`).join('\n');
      out.stopBar();
      out.note(`error: job ${err.job.id} failed${reasons ? `:\n${reasons}` : ''}`);
      out.result({ success: false, job_id: err.job.id, status: 'failed', errors: err.job.errors ?? [] });
      return EXIT.failed;
    }
    if (err instanceof ApiRequestError) {
      const hint =
        err.code === 'UNAUTHORIZED' ? ' (check --key / ARCHIVE_API_KEY)'
          : err.code === 'RATE_LIMITED' && err.retryAfterSeconds ? ` (retry in ${err.retryAfterSeconds} s)`
            : err.code === 'NOT_FOUND' ? '' : '';
      const status = err.status ? `HTTP ${err.status} ` : '';
      // Input the API refuses is bad usage; anything else is a failure.
      return fail(err.code === 'INVALID_REQUEST' ? EXIT.usage : EXIT.failed, `error: ${status}${err.code}: ${err.message}${hint}`, { code: err.code, message: err.message, status: err.status });
    }
    if (err instanceof DownloadError || err instanceof ZipVerificationError) {
      return fail(EXIT.failed, `error: ${err.message}`, { code: err instanceof ZipVerificationError ? 'VERIFICATION_FAILED' : (err.code ?? 'DOWNLOAD_FAILED'), message: err.message });
    }
    return fail(EXIT.failed, `error: ${(err as Error).message}`, { code: 'ERROR', message: (err as Error).message });
  }
}
