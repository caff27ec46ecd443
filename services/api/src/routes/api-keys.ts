import { Router, type RequestHandler } from 'express';
import { ApiError, apiKeyCreateSchema, type ApiKeyView, type CreateApiKeyResponse, type ListApiKeysResponse, type MessageResponse } from '@ap/contract';
import { parseOrThrow } from '../http/validate';
import type { Db } from '@ap/db';
import { generateApiKey, hashApiKey } from '@ap/tokens';
import { authOf } from '../http/auth';
import { isUuid, iso } from '../http/serialize';

interface ApiKeyRow {
  id: string;
  name: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
}

const apiKeyView = (k: ApiKeyRow): ApiKeyView => ({
  id: k.id,
  name: k.name,
  created_at: iso(k.createdAt),
  expires_at: k.expiresAt ? iso(k.expiresAt) : null,
  last_used_at: k.lastUsedAt ? iso(k.lastUsedAt) : null,
});

const select = { id: true, name: true, createdAt: true, expiresAt: true, lastUsedAt: true } as const;

/** `idempotent`: the Idempotency-Key middleware of create routes. */
export function apiKeysRouter(db: Db, idempotent: RequestHandler): Router {
  const router = Router();

  // Revoked keys are gone for the user; expired ones are still listed (they show expires_at).
  router.get('/', async (req, res) => {
    const keys = await db.apiKey.findMany({
      where: { userId: authOf(req).user.id, revokedAt: null },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      select,
    });
    res.json({ success: true, api_keys: keys.map(apiKeyView) } satisfies ListApiKeysResponse);
  });

  router.post('/', idempotent, async (req, res) => {
    const body = parseOrThrow(apiKeyCreateSchema(new Date()), req.body ?? {});
    const plain = generateApiKey();
    const key = await db.apiKey.create({
      data: {
        userId: authOf(req).user.id,
        name: body.name ?? '',
        keyHash: hashApiKey(plain),
        expiresAt: body.expires_at ? new Date(body.expires_at) : null,
      },
      select,
    });
    res.status(201).json({ success: true, api_key: { ...apiKeyView(key), key: plain } } satisfies CreateApiKeyResponse);
  });

  router.delete('/:id', async (req, res) => {
    const id = req.params.id;
    const { count } = isUuid(id)
      ? await db.apiKey.updateMany({ where: { id, userId: authOf(req).user.id, revokedAt: null }, data: { revokedAt: new Date() } })
      : { count: 0 };
    if (count === 0) throw new ApiError('NOT_FOUND', 'API key not found');
    res.json({ success: true, message: 'API key revoked' } satisfies MessageResponse);
  });

  return router;
}
