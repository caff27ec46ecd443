// Operator CLI. `pnpm admin users create --email E [--password P] [--plan free|starter|pro|scale] [--overage]`
// prints one JSON line {"user_id", "api_key"} on stdout and exits 0; problems go to stderr, exit 2.
// `pnpm admin secrets rotate` re-seals every stored secret under SECRETS_KEY (admin-secrets.ts).
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { createDb, ensureDatabase, migrate } from '@ap/db';
import { createUserWithKey } from '@ap/accounts';
import { DEFAULT_DATABASE_URL, readRuntimeInfo } from './dev-env';
import { rotateSecretsCommand } from './admin-secrets';

// Resolved from this file, so the bundle dist/admin.js in the image finds them the same way.
const MIGRATIONS_DIR = fileURLToPath(new URL('../prisma/migrations', import.meta.url));
const USAGE = 'usage: pnpm admin users create --email E [--password P] [--plan free|starter|pro|scale] [--overage]';

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
if (args[0] === 'secrets' && args[1] === 'rotate') process.exit(await rotateSecretsCommand());
if (args[0] !== 'users' || args[1] !== 'create') fail(`${USAGE}\n       pnpm admin secrets rotate`);

let values: Record<string, string | boolean | undefined>;
try {
  ({ values } = parseArgs({
    args: args.slice(2),
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      plan: { type: 'string', default: 'free' },
      overage: { type: 'boolean', default: false },
    },
    strict: true,
  }));
} catch (err) {
  fail(`${(err as Error).message}\n${USAGE}`);
}

const input = z
  .object({
    email: z.email({ error: '--email must be an email address' }),
    password: z.string().min(8, { error: '--password must be at least 8 characters' }).optional(),
    plan: z.enum(['free', 'starter', 'pro', 'scale'], { error: '--plan must be one of free, starter, pro, scale' }),
    overage: z.boolean(),
  })
  .safeParse(values);
if (!input.success) fail(`${input.error.issues.map((i) => i.message).join('\n')}\n${USAGE}`);

const databaseUrl = process.env.DATABASE_URL || readRuntimeInfo().DATABASE_URL || DEFAULT_DATABASE_URL;
try {
  await ensureDatabase(databaseUrl);
  await migrate(databaseUrl, MIGRATIONS_DIR);
} catch (err) {
  fail(`cannot reach the database at ${new URL(databaseUrl).host}: ${(err as Error).message}`);
}
const db = createDb(databaseUrl, 1);
try {
  const { userId, apiKey } = await createUserWithKey(db, input.data);
  process.stdout.write(`${JSON.stringify({ user_id: userId, api_key: apiKey })}\n`);
} catch (err) {
  const code = (err as { code?: string }).code;
  fail(code === 'P2002' ? `a user with email ${input.data.email} already exists` : `could not create the user: ${(err as Error).message}`);
} finally {
  await db.$disconnect();
}
process.exit(0);
