import bcrypt from 'bcryptjs';
import type { Db, Plan } from '@ap/db';
import { generateApiKey, hashApiKey } from '@ap/tokens';

// bcrypt (decisions.md allows argon2 or bcrypt; argon2's prebuilt binary crashes on this platform).
const BCRYPT_COST = 12;

export interface CreateUserInput {
  email: string;
  password?: string;
  plan: Plan;
  overage: boolean;
}

/** Creates a user and its first API key; the plain key is returned once and never stored. */
export async function createUserWithKey(db: Db, input: CreateUserInput): Promise<{ userId: string; apiKey: string }> {
  const passwordHash = input.password ? await bcrypt.hash(input.password, BCRYPT_COST) : null;
  const apiKey = generateApiKey();
  const user = await db.user.create({
    data: {
      email: input.email.trim().toLowerCase(),
      passwordHash,
      plan: input.plan,
      // The free plan never has overage (decisions.md).
      overageEnabled: input.plan === 'free' ? false : input.overage,
      apiKeys: { create: { name: 'default', keyHash: hashApiKey(apiKey) } },
    },
  });
  return { userId: user.id, apiKey };
}

// Verifying against a real hash for unknown emails keeps login time independent of whether the email exists.
let dummyHash: Promise<string> | undefined;

export async function verifyLogin(db: Db, email: string, password: string): Promise<{ id: string } | null> {
  const user = await db.user.findUnique({ where: { email: email.trim().toLowerCase() }, select: { id: true, passwordHash: true } });
  if (!user?.passwordHash) {
    dummyHash ??= bcrypt.hash('not-a-real-password', BCRYPT_COST);
    await bcrypt.compare(password, await dummyHash);
    return null;
  }
  return (await bcrypt.compare(password, user.passwordHash)) ? { id: user.id } : null;
}
