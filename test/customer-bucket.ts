// A second S3 server standing for a customer's own bucket, with its own key pair. s3rver knows
// access key ids but does not check SigV4 signatures, so every request is verified here first
// (a wrong secret is refused with SignatureDoesNotMatch, as S3 does). Its default S3RVER key is
// revoked in this process; the service's own store runs in the jest global setup's process.
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startEmbeddedS3 } from '../scripts/embedded';

const require = createRequire(import.meta.url);

export interface CustomerBucket {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  put(key: string, body: Buffer): Promise<void>;
  /** Every request the server answered, as "METHOD /path?query". */
  requests: string[];
  /** Body bytes of UploadPart requests (copies send none). */
  uploadedPartBytes: number;
  /** Answer UploadPartCopy 501 NotImplemented, as some S3-compatible services do. */
  refuseCopies: boolean;
  /** UploadPartCopy requests refused so far. */
  copiesRefused: number;
  /** Awaited before an UploadPartCopy request is answered, with its x-amz-copy-source. */
  beforeCopy: ((copySource: string) => Promise<void>) | null;
  /** Awaited before any signed request is answered, with its method and URL (a test holds one there). */
  beforeRequest: ((method: string, url: string) => Promise<void>) | null;
  /** Multipart uploads the bucket holds (s3rver's upload area: one folder per upload id). */
  uploadsInProgress(): string[];
  close(): Promise<void>;
}

export async function startCustomerBucket(keys: { accessKeyId: string; secretAccessKey: string }, bucket = 'customer-data'): Promise<CustomerBucket> {
  const account = (require('s3rver/lib/models/account') as { DUMMY_ACCOUNT: { createKeyPair(id: string, secret: string): void; revokeAccessKey(id: string): void } }).DUMMY_ACCOUNT;
  account.createKeyPair(keys.accessKeyId, keys.secretAccessKey);
  account.revokeAccessKey('S3RVER');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-customer-s3-'));
  const server = await startEmbeddedS3(dir, `${bucket}-unused`);
  const handlers = server.httpServer.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.httpServer.removeAllListeners('request');
  const requests: string[] = [];
  let created = false;
  server.httpServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
    requests.push(`${req.method} ${req.url}`);
    const isPart = req.method === 'PUT' && /[?&]partNumber=/.test(req.url ?? '');
    if (isPart && req.headers['x-amz-copy-source'] && bucketOf.refuseCopies) {
      bucketOf.copiesRefused++;
      res.writeHead(501, { 'content-type': 'application/xml' });
      return void res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>UploadPartCopy is not implemented</Message></Error>');
    }
    if (isPart && !req.headers['x-amz-copy-source']) bucketOf.uploadedPartBytes += Number(req.headers['content-length'] ?? 0);
    const secret = signatureProblem(req, keys);
    if (secret) {
      res.writeHead(403, { 'content-type': 'application/xml' });
      return void res.end(req.method === 'HEAD' ? undefined : `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${secret}</Code><Message>refused by the test's SigV4 check</Message></Error>`);
    }
    // (bucketOf exists once the bucket is created: its CreateBucket passes before.)
    if (created && bucketOf.beforeRequest) {
      return void bucketOf.beforeRequest(req.method!, req.url ?? '/').then(() => {
        for (const handler of handlers) handler(req, res);
      });
    }
    const copySource = req.headers['x-amz-copy-source'];
    if (isPart && typeof copySource === 'string' && bucketOf.beforeCopy) {
      return void bucketOf.beforeCopy(copySource).then(() => {
        for (const handler of handlers) handler(req, res);
      });
    }
    for (const handler of handlers) handler(req, res);
  });
  const client = new S3Client({
    endpoint: server.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: keys,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  const bucketOf: CustomerBucket = {
    endpoint: server.endpoint,
    bucket,
    ...keys,
    requests,
    uploadedPartBytes: 0,
    refuseCopies: false,
    copiesRefused: 0,
    beforeCopy: null,
    beforeRequest: null,
    uploadsInProgress() {
      const bucketDir = path.join(dir, bucket);
      return readdirSync(bucketDir)
        .filter((name) => name.endsWith('uploads'))
        .flatMap((name) => readdirSync(path.join(bucketDir, name)));
    },
    async put(key, body) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    async close() {
      client.destroy();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  created = true;
  return bucketOf;
}

const rfc3986 = (value: string) => encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

/** Why a request's SigV4 signature is refused (an S3 error code), or null when it verifies. */
function signatureProblem(req: IncomingMessage, keys: { accessKeyId: string; secretAccessKey: string }): string | null {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]+)$/.exec(String(req.headers.authorization ?? ''));
  if (!auth) return 'AccessDenied';
  const [, accessKeyId, scope, signedHeaders, signature] = auth as unknown as [string, string, string, string, string];
  if (accessKeyId !== keys.accessKeyId) return 'InvalidAccessKeyId';
  const [path, query = ''] = (req.url ?? '/').split('?') as [string, string?];
  const canonicalQuery = query
    .split('&')
    .filter((p) => p !== '')
    .map((p) => p.split('=').map((v) => rfc3986(decodeURIComponent(v))) as [string, string?])
    .sort(([a, av = ''], [b, bv = '']) => (a === b ? (av < bv ? -1 : 1) : a < b ? -1 : 1))
    .map(([k, v = '']) => `${k}=${v}`)
    .join('&');
  const names = signedHeaders.split(';');
  const canonicalHeaders = names.map((n) => `${n}:${String(req.headers[n] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const request = [req.method, path, canonicalQuery, canonicalHeaders, signedHeaders, String(req.headers['x-amz-content-sha256'] ?? 'UNSIGNED-PAYLOAD')].join('\n');
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(request).digest('hex')].join('\n');
  const [date, region, service, terminator] = scope.split('/') as [string, string, string, string];
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${keys.secretAccessKey}`, date), region), service), terminator);
  return createHmac('sha256', signingKey).update(toSign).digest('hex') === signature ? null : 'SignatureDoesNotMatch';
}
