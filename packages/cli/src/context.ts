// What every command group of the CLI shares: exit codes, the errors that choose them, the
// process's I/O, and the context a group's commands run in (client, output, the job in hand).
import { Command, InvalidArgumentError } from 'commander';
import type { ArchiveClient, Job } from '@ap/sdk';
import { parseSize } from '@ap/contract/sizes';
import type { Output } from './output';

export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

export class UsageError extends Error {
  override name = 'UsageError';
}

/** The job ended `failed`: exit 1, with the job's id in the result. */
export class JobFailed extends Error {
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

/** What a command group's actions use. */
export interface CommandContext {
  io: CliIo;
  /** The API client from the global options (--url, --key) or the environment; also sets the output mode (--json). */
  clientOf(cmd: Command): ArchiveClient;
  /** The output, as the command's global options made it. */
  out(): Output;
  /** The job a failure is about, named in the result line. */
  knowJob(jobId: string): void;
}

export function sizeArg(value: string): number {
  const bytes = parseSize(value);
  if (bytes === null) throw new InvalidArgumentError('expected a size such as 104857600, 500MB or 2GiB');
  return bytes;
}

export function intArg(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a whole number');
  return Number(value);
}
