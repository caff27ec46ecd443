import { Router } from 'express';
import { ApiError, loginSchema, type LoginResponse } from '@ap/contract';
import { parseOrThrow } from '../http/validate';
import type { Db } from '@ap/db';
import { signSessionToken } from '../http/auth';
import type { LoginThrottle } from '../http/login-throttle';
import { verifyLogin } from '@ap/accounts';

export function authRouter(db: Db, sessionSecret: string, throttle: LoginThrottle): Router {
  const router = Router();
  router.post('/login', async (req, res) => {
    const { email, password } = parseOrThrow(loginSchema, req.body ?? {});
    // Counted before the hash is computed: a throttled guess costs no CPU.
    const attempt = await throttle.attempt(req, email);
    const user = await verifyLogin(db, email, password);
    if (!user) throw new ApiError('UNAUTHORIZED', 'wrong email or password');
    await attempt.succeeded();
    res.json({ success: true, token: await signSessionToken(user.id, sessionSecret) } satisfies LoginResponse);
  });
  return router;
}
