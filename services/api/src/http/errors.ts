import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ApiError, errorEnvelope } from '@ap/contract';
import { redactUrl, type Logger } from '@ap/log';

export const notFoundHandler: RequestHandler = (req, _res, next) => {
  // A download token in a mistyped path is not echoed back.
  next(new ApiError('NOT_FOUND', `no route for ${req.method} ${redactUrl(req.path)}`));
};

interface BodyParserError {
  type?: string;
  status?: number;
}

/** Turns every error into the contract's envelope; internal faults never expose details. */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // A route may have set a ZIP's head before it failed (a download whose object read failed):
    // the envelope is JSON, not an attachment of that ZIP (res.json keeps a type already set).
    // A body left unread (refused before it was read: 401, 429) is not waited for: the connection closes after the answer.
    if (!req.complete) res.set('Connection', 'close');
    for (const name of ['Content-Type', 'Content-Disposition', 'Content-Range', 'Content-Length', 'ETag', 'Last-Modified', 'Accept-Ranges']) res.removeHeader(name);
    if (err instanceof ApiError) {
      res.set(err.headers);
      res.status(err.status).json(errorEnvelope(err.code, err.message));
      return;
    }
    const parserType = (err as BodyParserError).type;
    if (parserType === 'entity.parse.failed') {
      res.status(400).json(errorEnvelope('INVALID_REQUEST', 'request body is not valid JSON'));
      return;
    }
    if (parserType === 'entity.too.large') {
      res.status(413).json(errorEnvelope('INVALID_REQUEST', 'request body is larger than 10 MB'));
      return;
    }
    if (parserType === 'encoding.unsupported' || parserType === 'charset.unsupported') {
      res.status(415).json(errorEnvelope('INVALID_REQUEST', 'unsupported request body encoding'));
      return;
    }
    const status = (err as BodyParserError).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      res.status(status).json(errorEnvelope('INVALID_REQUEST', 'malformed request'));
      return;
    }
    log.error({ err, method: req.method, route: req.route?.path }, 'internal error');
    res.status(500).json(errorEnvelope('INTERNAL_ERROR', 'internal error'));
  };
}
