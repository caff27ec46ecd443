import type { Server } from 'node:http';
import { answerClientErrors } from './client-errors';

/**
 * How the API's HTTP server is set up, in production and in the test stacks alike. Downloads
 * can run for hours, so only idle keep-alive sockets time out, and after longer than clients'
 * and load balancers' own idle timeouts (undici's 4 s, an ALB's 60 s): the client always lets
 * an idle socket go first, so it never sends a request on one the server is closing (with
 * Node's default of 5 s, a request after an event-loop stall met a reset connection).
 * A request that trickles in (slowloris) is cut after `REQUEST_TIMEOUT_MS`.
 */
export function applyServerSettings(server: Server, options: { requestTimeoutMs?: number } = {}): void {
  answerClientErrors(server);
  // The time a request (headers and body) may take to arrive, not its response: a download
  // still streams for hours. The body's bound is held exactly by bodyDeadline; this covers headers.
  const requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
  server.requestTimeout = requestTimeoutMs;
  server.headersTimeout = Math.min(server.headersTimeout, requestTimeoutMs);
  server.keepAliveTimeout = 65_000;
}
