import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/** Paths whose values are secrets and never reach a log line. */
const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'password',
  'key',
  'api_key',
  'secret',
  'token',
  '*.password',
  '*.api_key',
  '*.secret',
  '*.token',
];

/** Download URLs carry a bearer token in the path: keep the route, drop the token. */
export function redactUrl(url: string): string {
  return url.replace(/\/download\/[^/?#]+/g, '/download/[redacted]');
}

/**
 * A URL's query string never reaches a log line (presigned URLs carry their signature there):
 * every http(s) or s3 URL in the finished line keeps its path and loses `?...`.
 */
const URL_QUERY = /((?:https?|s3):\/\/[^\s"'?#\\]*)\?[^\s"'#\\]*/gi;
export function dropUrlQueries(line: string): string {
  return line.includes('?') ? line.replace(URL_QUERY, '$1') : line;
}

export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? 'info', options: LoggerOptions = {}): Logger {
  return pino({
    name,
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    hooks: { streamWrite: dropUrlQueries },
    ...options,
  });
}
