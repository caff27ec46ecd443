// The `archive-packager` command (docs/service.md#api-description-and-clients): commands,
// flags, environment, exit codes (0 success, 1 failed job or refused operation, 2 bad usage,
// 130 interrupted) and the `--json` result line. The commands are in their groups' modules
// (job-commands.ts, account-commands.ts, sources.ts); here the program, its global options and
// how an error becomes an exit code and a result line.
import { Command, CommanderError, Option } from 'commander';
import { ApiRequestError, ArchiveClient, DownloadError, ZipVerificationError } from '@ap/sdk';
import { registerAccountCommands } from './account-commands';
import { EXIT, JobFailed, UsageError, type CliIo, type CommandContext } from './context';
import { registerJobCommands } from './job-commands';
import { Output } from './output';
import { registerSourceCommands } from './sources';

export { EXIT, UsageError, type CliIo } from './context';

interface GlobalOptions {
  url?: string;
  key?: string;
  json?: boolean;
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

  const ctx: CommandContext = { io, clientOf, out: () => out, knowJob: (id) => void (knownJobId = id) };
  registerJobCommands(program, ctx);
  registerAccountCommands(program, ctx);
  registerSourceCommands(program, ctx);

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
