// archive_http_requests_total / archive_http_request_duration_seconds. The `route` label is the
// Express route pattern ("/jobs/:id"), never the raw path: ids and download tokens would make
// a series per request (and a token is a secret). Requests no route matched share one label.
import type { NextFunction, Request, Response } from 'express';
import { metrics } from '@ap/service-kit';

export const UNMATCHED_ROUTE = 'unmatched';

export function httpMetrics() {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    // The router sets req.route when a route matches, while req.baseUrl is still its mount
    // path; by the end of the response an error may have unwound baseUrl, so the pattern is
    // taken at that moment.
    let route: unknown;
    let pattern: string | undefined;
    Object.defineProperty(req, 'route', {
      configurable: true,
      enumerable: true,
      get: () => route,
      set: (value: { path?: unknown } | undefined) => {
        route = value;
        if (value && typeof value.path === 'string') pattern = `${req.baseUrl}${value.path}`.replace(/(.)\/$/, '$1');
      },
    });
    res.once('finish', () => {
      const labels = { method: req.method, route: pattern ?? UNMATCHED_ROUTE, status: String(res.statusCode) };
      metrics.httpRequestsTotal.inc(labels);
      metrics.httpRequestDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}
