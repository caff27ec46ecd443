// The soak's S3 stand-in in its own process, so the soak can kill it and start it again on the
// same port and files: `<dir> <bucket> <port>`; prints {"endpoint"} once the bucket exists.
// Unlike bench/lib/s3-server.ts it leaves its files when it stops: they are the store.
import { startEmbeddedS3 } from '../../scripts/embedded';

const s3 = await startEmbeddedS3(process.argv[2]!, process.argv[3]!, Number(process.argv[4] ?? 0));
process.stdout.write(`${JSON.stringify({ endpoint: s3.endpoint })}\n`);
process.on('SIGTERM', () => void s3.close().finally(() => process.exit(0)));
