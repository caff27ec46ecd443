// `prisma generate` needs no schema engine, but Prisma's CLI insists that one exists and would
// try to download it (impossible offline). Point it at a placeholder file; generate never runs it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const placeholder = path.resolve('node_modules/.cache/prisma-schema-engine-placeholder');
if (!process.env.PRISMA_SCHEMA_ENGINE_BINARY && !existsSync(placeholder)) {
  mkdirSync(path.dirname(placeholder), { recursive: true });
  writeFileSync(placeholder, '');
}
const result = spawnSync('prisma', ['generate'], {
  stdio: 'inherit',
  env: { PRISMA_SCHEMA_ENGINE_BINARY: placeholder, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1', ...process.env },
});
process.exit(result.status ?? 1);
