import { Router } from 'express';
import { ApiError, loginSchema, type LoginResponse } from '@ap/contract';
import { parseOrThrow } from '../http/validate';
import type { Db } from '@ap/db';
import { signSessionToken } from '../http/auth';
import { verifyLogin } from '../domain/users';

export function authRouter(db: Db, sessionSecret: string): Router {
  const router = Router();
  router.post('/login', async (req, res) => {
    const { email, password } = parseOrThrow(loginSchema, req.body ?? {});
    const user = await verifyLogin(db, email, password);
    if (!user) throw new ApiError('UNAUTHORIZED', 'wrong email or password');
    res.json({ success: true, token: await signSessionToken(user.id, sessionSecret) } satisfies LoginResponse);
  });
  return router;
}
