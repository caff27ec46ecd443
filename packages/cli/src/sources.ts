// `sources list|create|delete`, and the private-source flags of `create` (docs/private-sources.md#the-rules): `--source NAME` for s3:// URLs, `--header 'Name: value'` for http(s) ones.
import { Command, InvalidArgumentError } from 'commander';
import type { JobCreateRequest } from '@ap/sdk';
import { UsageError, type CommandContext } from './context';

type FileEntry = JobCreateRequest['files'][number];

/** `Name: value` -> [name, value]; the value is kept as given (it is a secret: never echoed). */
export function headerArg(value: string, previous: [string, string][] = []): [string, string][] {
  const m = /^([^:\s]+):\s?(.*)$/s.exec(value);
  if (!m) throw new InvalidArgumentError('expected "Name: value"');
  return [...previous, [m[1]!, m[2]!]];
}

/** Adds the private-source options to `create`. */
export function withPrivateSourceOptions(command: Command): Command {
  return command
    .option('--source <name>', 'the source (POST /sources) whose credentials read the s3://bucket/key URLs (and s3://bucket/prefix/ ones: every object under the prefix)')
    .option('--header <line>', 'a request header sent with every http(s) URL, "Name: value" (repeatable)', headerArg)
    .option('--destination <s3url>', 'write the ZIPs to s3://bucket/prefix in your bucket (stored jobs), with the --source credentials or --destination-source')
    .option('--destination-source <name>', 'the source whose credentials write --destination (default: --source)');
}

/** `destination` of the request from `--destination s3://bucket/prefix` and its source. */
export function destinationOption(opts: { source?: string; destination?: string; destinationSource?: string }): JobCreateRequest['destination'] {
  if (opts.destination === undefined) return undefined;
  const m = /^s3:\/\/([^/]+)\/?(.*)$/s.exec(opts.destination);
  if (!m) throw new UsageError('--destination must be s3://bucket or s3://bucket/prefix');
  const source = opts.destinationSource ?? opts.source;
  if (!source) throw new UsageError('--destination needs --destination-source (or --source) naming the source that writes it');
  return { source, bucket: m[1]!, ...(m[2] ? { prefix: m[2] } : {}) };
}

/** The files with `source` on s3:// URLs and `headers` on http(s) ones. */
export function applyPrivateSourceOptions(files: FileEntry[], opts: { source?: string; header?: [string, string][] }): FileEntry[] {
  const headers = opts.header?.length ? Object.fromEntries(opts.header) : undefined;
  return files.map((file) => {
    if (file.url.startsWith('s3://')) return opts.source ? { ...file, source: opts.source } : file;
    return headers ? { ...file, headers } : file;
  });
}

export function registerSourceCommands(program: Command, ctx: CommandContext): void {
  const { clientOf, out } = ctx;
  const env = ctx.io.env;
  const sources = program.command('sources').description('S3 buckets whose credentials are stored (encrypted) for s3:// URLs');
  sources.command('list').description('list sources').action(async (_opts: unknown, cmd: Command) => {
    const client = clientOf(cmd);
    const { sources: list } = await client.listSources();
    for (const s of list) out().line(`${s.id}  ${s.name}  ${s.region}  ${s.endpoint ?? 'AWS S3'}  ${s.access_key_id}`);
    out().result({ success: true, sources: list });
  });
  sources
    .command('create')
    .description('store an S3-compatible bucket\'s credentials (the secret from ARCHIVE_SOURCE_SECRET; never shown again)')
    .argument('<name>', 'source name (1-64 of A-Z a-z 0-9 _ -)')
    .requiredOption('--region <region>', 'region, e.g. us-east-1 (R2: auto)')
    .requiredOption('--access-key-id <id>', 'access key id')
    .option('--endpoint <url>', 'S3-compatible endpoint (R2, MinIO, ...); omitted: AWS S3 of --region')
    .option('--force-path-style', 'bucket in the path instead of the host name (MinIO)')
    .option('--secret-access-key <secret>', 'secret access key (prefer the ARCHIVE_SOURCE_SECRET environment variable: arguments show in ps)')
    .action(async (name: string, opts: { region: string; accessKeyId: string; endpoint?: string; forcePathStyle?: boolean; secretAccessKey?: string }, cmd: Command) => {
      const client = clientOf(cmd);
      const secret = opts.secretAccessKey ?? env.ARCHIVE_SOURCE_SECRET;
      if (!secret) throw new UsageError('no secret: set ARCHIVE_SOURCE_SECRET or pass --secret-access-key');
      const { source } = await client.createSource({
        name,
        type: 's3',
        region: opts.region,
        access_key_id: opts.accessKeyId,
        secret_access_key: secret,
        ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
        ...(opts.forcePathStyle ? { force_path_style: true } : {}),
      });
      out().line(`created source ${source.name} (${source.id})`);
      out().result({ success: true, source });
    });
  sources.command('delete').description('delete a source (later reads of its objects fail)').argument('<id>', 'source id').action(async (id: string, _opts: unknown, cmd: Command) => {
    const client = clientOf(cmd);
    const res = await client.deleteSource(id);
    out().line(res.message);
    out().result({ success: true, id, message: res.message });
  });
}
