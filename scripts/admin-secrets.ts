// `pnpm admin secrets rotate`: every stored secret re-sealed under SECRETS_KEY, the values under
// SECRETS_KEY_PREVIOUS read on the way (docs/private-sources.md#the-rules). Run it with both set,
// then drop SECRETS_KEY_PREVIOUS. Prints one JSON line per sealed column; exit 0, or 2 with why.
import { createDb } from '@ap/db';
import { rotateSealedColumns } from '@ap/jobs';
import { keyringFrom, secretBox } from '@ap/secrets';
import { DEFAULT_DATABASE_URL, devSecrets, readRuntimeInfo } from './dev-env';

export async function rotateSecretsCommand(): Promise<number> {
  const current = process.env.SECRETS_KEY || devSecrets().SECRETS_KEY;
  let box;
  try {
    box = secretBox(keyringFrom(current, process.env.SECRETS_KEY_PREVIOUS || undefined));
  } catch (err) {
    process.stderr.write(`SECRETS_KEY or SECRETS_KEY_PREVIOUS ${(err as Error).message}\n`);
    return 2;
  }
  const databaseUrl = process.env.DATABASE_URL || readRuntimeInfo().DATABASE_URL || DEFAULT_DATABASE_URL;
  const db = createDb(databaseUrl, 1);
  try {
    for (const report of await rotateSealedColumns(db, box)) process.stdout.write(`${JSON.stringify({ ...report, key_id: box.currentKeyId })}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`rotation stopped: ${(err as Error).message}\n`);
    return 2;
  } finally {
    await db.$disconnect();
  }
}
