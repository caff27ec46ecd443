// s3rver in its own process for the benches: prints {"endpoint"} once the bucket exists.
import { rmSync } from 'node:fs';
import { startEmbeddedS3 } from '../../scripts/embedded';

const dir = process.argv[2]!;
const s3 = await startEmbeddedS3(dir, process.argv[3] ?? 'bench');
process.stdout.write(`${JSON.stringify({ endpoint: s3.endpoint })}\n`);
process.on('SIGTERM', () => {
  void s3.close().finally(() => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
});
