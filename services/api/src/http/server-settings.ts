import type { Server } from 'node:http';
import { answerClientErrors } from './client-errors';

/**
 * How the API's HTTP server is set up, in production and in the test stacks alike. Downloads
 * can run for hours, so only idle keep-alive sockets time out, and after longer than clients'
 * and load balancers' own idle timeouts (undici's 4 s, an ALB's 60 s): the client always lets
 * an idle socket go first, so it never sends a request on one the server is closing (with
 * Node's default of 5 s, a request after an event-loop stall met a reset connection).
 */
export function applyServerSettings(server: Server): void {
  answerClientErrors(server);
  server.requestTimeout = 0;
  server.keepAliveTimeout = 65_000;
}
