// `./dev test` where no PostgreSQL answers and none can be installed: runs the command given
// (`pnpm test`) beside an embedded PostgreSQL under .data/test-postgres, as TEST_DATABASE_URL.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { startEmbeddedPostgres } from './embedded';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('usage: tsx scripts/with-test-postgres.ts <command...>');
  process.exit(2);
}
const root = new URL('../', import.meta.url).pathname;
const pg = await startEmbeddedPostgres(path.join(root, '.data', 'test-postgres'), 'postgres');
console.error(`[test] embedded PostgreSQL at ${new URL(pg.url).host}`);
const child = spawn(command, args, { stdio: 'inherit', env: { ...process.env, TEST_DATABASE_URL: pg.url } });
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
const code = await new Promise<number>((resolve) => child.once('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
await pg.stop();
process.exit(code);
