import type { Db, Plan } from '@ap/db';
import { generateApiKey, hashApiKey } from '@ap/tokens';
import { hashPassword, verifyPassword } from './passwords';

export interface CreateUserInput {
  email: string;
  password?: string;
  plan: Plan;
  overage: boolean;
}

/** Creates a user and its first API key; the plain key is returned once and never stored. */
export async function createUserWithKey(db: Db, input: CreateUserInput): Promise<{ userId: string; apiKey: string }> {
  const passwordHash = input.password ? await hashPassword(input.password) : null;
  const apiKey = generateApiKey();
  const user = await db.user.create({
    data: {
      email: input.email.trim().toLowerCase(),
      passwordHash,
      plan: input.plan,
      // The free plan never has overage (docs/product-rules.md#accounts-plans-sessions).
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
    dummyHash ??= hashPassword('not-a-real-password');
    await verifyPassword(password, await dummyHash);
    return null;
  }
  return (await verifyPassword(password, user.passwordHash)) ? { id: user.id } : null;
}
