import { Router, type RequestHandler } from 'express';
import { ApiError, MAX_ACTIVE_API_KEYS_PER_USER, apiKeyCreateSchema, type ApiKeyView, type CreateApiKeyResponse, type ListApiKeysResponse, type MessageResponse } from '@ap/contract';
import { parseOrThrow } from '../http/validate';
import { createApiKey, listApiKeys, revokeApiKey, type ApiKeyRow, type Db } from '@ap/db';
import { generateApiKey, hashApiKey } from '@ap/tokens';
import { authOf } from '../http/auth';
import { iso } from '../http/serialize';

const apiKeyView = (k: ApiKeyRow): ApiKeyView => ({
  id: k.id,
  name: k.name,
  created_at: iso(k.createdAt),
  expires_at: k.expiresAt ? iso(k.expiresAt) : null,
  last_used_at: k.lastUsedAt ? iso(k.lastUsedAt) : null,
});

/** `idempotent`: the Idempotency-Key middleware of create routes. */
export function apiKeysRouter(db: Db, idempotent: RequestHandler): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const keys = await listApiKeys(db, authOf(req).user.id);
    res.json({ success: true, api_keys: keys.map(apiKeyView) } satisfies ListApiKeysResponse);
  });

  router.post('/', idempotent, async (req, res) => {
    const body = parseOrThrow(apiKeyCreateSchema(new Date()), req.body ?? {});
    const plain = generateApiKey();
    const key = await createApiKey(
      db,
      authOf(req).user.id,
      { name: body.name ?? '', keyHash: hashApiKey(plain), expiresAt: body.expires_at ? new Date(body.expires_at) : null },
      MAX_ACTIVE_API_KEYS_PER_USER,
    );
    if (key === 'limit') throw new ApiError('PLAN_LIMIT_EXCEEDED', `at most ${MAX_ACTIVE_API_KEYS_PER_USER} active API keys per user; revoke one first`);
    res.status(201).json({ success: true, api_key: { ...apiKeyView(key), key: plain } } satisfies CreateApiKeyResponse);
  });

  router.delete('/:id', async (req, res) => {
    if (!(await revokeApiKey(db, authOf(req).user.id, req.params.id))) throw new ApiError('NOT_FOUND', 'API key not found');
    res.json({ success: true, message: 'API key revoked' } satisfies MessageResponse);
  });

  return router;
}
