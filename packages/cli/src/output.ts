// Where the CLI writes: results on stdout (with --json only one JSON object, as the last line),
// messages and progress bars on stderr, bars only on a terminal and never with --json.
import cliProgress from 'cli-progress';
import { formatBytes } from '@ap/contract/sizes';

/** "1 ZIP", "2 ZIPs", "1 entry", "3 entries". */
export function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

export class Output {
  readonly json: boolean;
  readonly showProgress: boolean;
  private readonly stdout: NodeJS.WritableStream;
  private readonly stderr: NodeJS.WriteStream;
  private bar: cliProgress.SingleBar | null = null;

  constructor(options: { json: boolean; stdout?: NodeJS.WritableStream; stderr?: NodeJS.WriteStream }) {
    this.json = options.json;
    this.stdout = options.stdout ?? process.stdout;
    this.stderr = options.stderr ?? process.stderr;
    this.showProgress = !options.json && this.stderr.isTTY === true;
  }

  /** A result line for people (nothing with --json). */
  line(text: string): void {
    this.stopBar();
    if (!this.json) this.stdout.write(`${text}\n`);
  }

  /** A message (stderr; kept with --json too, stdout stays parseable). */
  note(text: string): void {
    this.stopBar();
    this.stderr.write(`${text}\n`);
  }

  /** The final JSON object (with --json). */
  result(value: Record<string, unknown>): void {
    this.stopBar();
    if (this.json) this.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** The job's progress bar: its bytes written (`progress`), or its ZIPs ready while sizes are unknown. */
  waitBar(status: string): void {
    if (!this.showProgress) return;
    this.stopBar();
    this.bar = new cliProgress.SingleBar(
      { format: 'waiting  [{bar}] {percentage}% | {ready}/{zips} ZIPs ready | {files} files | {status}', stream: this.stderr, hideCursor: true, clearOnComplete: false },
      cliProgress.Presets.shades_classic,
    );
    this.bar.start(1000, 0, { status, files: 0, ready: 0, zips: 0 });
  }

  updateWait(job: { progress: number | null; ready: number; zips: number; files: number; status: string }): void {
    if (!this.bar) return;
    const share = job.progress ?? job.ready / Math.max(job.zips, 1);
    this.bar.update(Math.round(share * 1000), { status: job.status, files: job.files, ready: job.ready, zips: job.zips });
  }

  downloadBar(label: string, total: number | null, start: number): void {
    if (!this.showProgress) return;
    this.stopBar();
    this.bar = new cliProgress.SingleBar(
      {
        format: `${label} [{bar}] {percentage}% | {done} of {size}`,
        stream: this.stderr,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
    const size = total ?? 0;
    this.bar.start(Math.max(size, 1), start, { done: formatBytes(start), size: total === null ? '?' : formatBytes(total) });
  }

  updateDownload(bytes: number, total: number | null): void {
    if (!this.bar) return;
    if (total !== null) this.bar.setTotal(Math.max(total, 1));
    this.bar.update(bytes, { done: formatBytes(bytes), size: total === null ? '?' : formatBytes(total) });
  }

  stopBar(): void {
    if (this.bar) {
      this.bar.stop();
      this.bar = null;
    }
  }
}
