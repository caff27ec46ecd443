// The S3 stand-in as its own tests drive it: started in a temporary folder, with a client that
// sends no checksum unless an operation needs one (so each test says which checksums it sends).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { EMBEDDED_S3_CREDENTIALS, startEmbeddedS3, type EmbeddedS3 } from '../scripts/embedded';

export interface StandInS3 {
  s3: EmbeddedS3;
  client: S3Client;
  close(): Promise<void>;
}

export async function startStandInS3(bucket: string): Promise<StandInS3> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `ap-s3-${bucket}-`));
  const s3 = await startEmbeddedS3(dir, bucket);
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: EMBEDDED_S3_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    s3,
    client,
    async close() {
      client.destroy();
      await s3.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
