import type { NextFunction, Request, Response } from 'express';
import { jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { ApiError } from '@ap/contract';
import type { Db, Plan } from '@ap/db';
import { hashApiKey } from '@ap/tokens';
import { isUuid } from './serialize';

export interface AuthUser {
  id: string;
  plan: Plan;
  overageEnabled: boolean;
}

export interface AuthContext {
  user: AuthUser;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      auth?: AuthContext;
    }
  }
}

const SESSION_TTL_SECONDS = 12 * 3600;
const LAST_USED_WRITE_INTERVAL_MS = 60_000;
const JWT_ISSUER = 'archive-packager';

export async function signSessionToken(userId: string, secret: string): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(userId)
    .setIssuer(JWT_ISSUER)
    .setIssuedAt()
    .setExpirationTime(`${SESSION_TTL_SECONDS}s`)
    .sign(new TextEncoder().encode(secret));
}

/** The authenticated user of a request that passed `authenticate`. */
export function authOf(req: Request): AuthContext {
  if (!req.auth) throw new Error('authenticate middleware did not run');
  return req.auth;
}

const unauthorized = (message: string) => new ApiError('UNAUTHORIZED', message);

/** The claims `signSessionToken` writes, and only those. */
const ISSUED_CLAIMS = new Set(['sub', 'iss', 'iat', 'exp']);

/**
 * The user id of a verified session payload when its claims are exactly what the API issues
 * (a UUID `sub`, whole-second `iat` and `exp` at most the session lifetime apart); null for
 * anything else. A token signed with the real secret but made elsewhere (a leaked secret, a
 * test tool) must not reach the database with a value Postgres cannot take.
 */
function issuedSubject(payload: JWTPayload): string | null {
  if (Object.keys(payload).some((claim) => !ISSUED_CLAIMS.has(claim))) return null;
  const { sub, iat, exp } = payload;
  if (typeof sub !== 'string' || !isUuid(sub)) return null;
  if (!Number.isInteger(iat) || !Number.isInteger(exp)) return null;
  if (exp! <= iat! || exp! - iat! > SESSION_TTL_SECONDS) return null;
  return sub;
}

/**
 * `X-API-Key` (hashed lookup) or `Authorization: Bearer <session JWT>`. `last_used_at` is
 * written at most once a minute per key: an in-process clock skips the write on hot keys,
 * and the conditional UPDATE keeps replicas from writing more often than that either.
 */
export function authenticate(db: Db, sessionSecret: string) {
  const lastWritten = new Map<string, number>();
  const secretKey = new TextEncoder().encode(sessionSecret);

  async function fromApiKey(plain: string): Promise<AuthContext> {
    const key = await db.apiKey.findUnique({
      where: { keyHash: hashApiKey(plain) },
      select: { id: true, revokedAt: true, expiresAt: true, user: { select: { id: true, plan: true, overageEnabled: true } } },
    });
    const now = Date.now();
    if (!key || key.revokedAt) throw unauthorized('invalid API key');
    if (key.expiresAt && key.expiresAt.getTime() <= now) throw unauthorized('API key has expired');
    if (now - (lastWritten.get(key.id) ?? 0) >= LAST_USED_WRITE_INTERVAL_MS) {
      lastWritten.set(key.id, now);
      if (lastWritten.size > 100_000) lastWritten.clear();
      await db.apiKey.updateMany({
        where: { id: key.id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: new Date(now - LAST_USED_WRITE_INTERVAL_MS) } }] },
        data: { lastUsedAt: new Date(now) },
      });
    }
    return { user: key.user };
  }

  async function fromSession(token: string): Promise<AuthContext> {
    let userId: string | null;
    try {
      const { payload } = await jwtVerify(token, secretKey, {
        algorithms: ['HS256'],
        issuer: JWT_ISSUER,
        typ: 'JWT',
        requiredClaims: ['sub', 'iat', 'exp'],
        maxTokenAge: SESSION_TTL_SECONDS,
      });
      userId = issuedSubject(payload);
    } catch {
      throw unauthorized('invalid or expired session token');
    }
    const user = userId
      ? await db.user.findUnique({ where: { id: userId }, select: { id: true, plan: true, overageEnabled: true } })
      : null;
    if (!user) throw unauthorized('invalid or expired session token');
    return { user };
  }

  return async (req: Request, _res: Response, next: NextFunction) => {
    const apiKey = req.get('x-api-key');
    const authorization = req.get('authorization');
    if (apiKey !== undefined) {
      req.auth = await fromApiKey(apiKey);
    } else if (authorization !== undefined) {
      const match = /^Bearer\s+(\S+)$/i.exec(authorization);
      if (!match?.[1]) throw unauthorized('Authorization header must be "Bearer <session token>"');
      req.auth = await fromSession(match[1]);
    } else {
      throw unauthorized('missing API key (send the X-API-Key header)');
    }
    next();
  };
}
