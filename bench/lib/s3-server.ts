// s3rver in its own process for the benches: prints {"endpoint"} once the bucket exists, then
// {"completed": key, "ms": n} for every CompleteMultipartUpload, timed here (s3rver joins the
// parts into one file there, which S3 and MinIO do not: the benches report it apart).
import { rmSync } from 'node:fs';
import { startEmbeddedS3 } from '../../scripts/embedded';

const dir = process.argv[2]!;
const s3 = await startEmbeddedS3(dir, process.argv[3] ?? 'bench');
s3.httpServer.on('request', (req, res) => {
  if (req.method !== 'POST' || !/[?&]uploadId=/.test(req.url ?? '')) return;
  const t0 = performance.now();
  const key = decodeURIComponent(new URL(req.url!, 'http://s3').pathname.split('/').slice(2).join('/'));
  res.once('finish', () => process.stdout.write(`${JSON.stringify({ completed: key, ms: performance.now() - t0 })}\n`));
});
// With --traffic: {"uploaded": n} per UploadPart body, {"copied": n} per UploadPartCopy, {"read": n} per GET body (bench:s3).
if (process.argv[4] === '--traffic') {
  s3.httpServer.on('request', (req, res) => {
    const isPart = req.method === 'PUT' && /[?&]partNumber=/.test(req.url ?? '');
    if (isPart && !req.headers['x-amz-copy-source']) process.stdout.write(`${JSON.stringify({ uploaded: Number(req.headers['content-length'] ?? 0) })}\n`);
    if (isPart && req.headers['x-amz-copy-source']) {
      const range = /bytes=(\d+)-(\d+)/.exec(String(req.headers['x-amz-copy-source-range'] ?? ''));
      if (range) process.stdout.write(`${JSON.stringify({ copied: Number(range[2]) - Number(range[1]) + 1 })}\n`);
    }
    if (req.method === 'GET') res.once('finish', () => process.stdout.write(`${JSON.stringify({ read: Number(res.getHeader('content-length') ?? 0) })}\n`));
  });
}
process.stdout.write(`${JSON.stringify({ endpoint: s3.endpoint })}\n`);
process.on('SIGTERM', () => {
  void s3.close().finally(() => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
});
