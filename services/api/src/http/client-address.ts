import type { Request } from 'express';

/** Express's `req.ip` honours X-Forwarded-For only from the proxies `trust proxy` names (TRUSTED_PROXIES). */
export const clientAddress = (req: Request): string => req.ip ?? req.socket.remoteAddress ?? 'unknown';
