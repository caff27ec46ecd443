// Slowloris: a request whose body has not all arrived REQUEST_TIMEOUT_MS after its headers is
// answered 408 (when nothing was answered yet) and its connection closed. Node's own
// requestTimeout is checked only every 30 s; this holds the bound to the millisecond. A
// download's response may last hours: only the request's arrival is timed.
import type { RequestHandler } from 'express';
import { errorEnvelope } from '@ap/contract';

/** How long a 408 is given to reach the client before its connection is cut anyway. */
const ANSWER_GRACE_MS = 1_000;

export function bodyDeadline(timeoutMs: number): RequestHandler {
  return (req, res, next) => {
    if (req.complete) return next();
    const timer = setTimeout(() => {
      if (req.complete) return;
      if (!res.headersSent) {
        res.set('Connection', 'close').status(408).json(errorEnvelope('INVALID_REQUEST', `request body did not arrive within ${timeoutMs / 1000} s`));
        setTimeout(() => req.socket.destroy(), ANSWER_GRACE_MS).unref();
      } else {
        req.socket.destroy();
      }
    }, timeoutMs);
    timer.unref();
    // A keep-alive socket serves many requests: each one's listener goes when it ends.
    const clear = () => {
      clearTimeout(timer);
      req.off('end', clear);
      req.socket.off('close', clear);
    };
    req.once('end', clear);
    req.socket.once('close', clear);
    next();
  };
}
