import http from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import type { Logger } from '@ap/log';
import { renderMetrics } from './metrics';

export type ReadinessCheck = () => Promise<unknown>;

/** Runs every check with a deadline; returns the names of the ones that failed. */
export async function runReadinessChecks(checks: Record<string, ReadinessCheck>, timeoutMs = 2000): Promise<string[]> {
  const results = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          check(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
          }),
        ]);
        return null;
      } catch {
        return name;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return results.filter((n): n is string => n !== null);
}

/** A port another process holds: the service exits instead of running without serving. */
export class PortInUseError extends Error {
  constructor(readonly port: number) {
    super(`port ${port} is in use`);
  }
}

/** Listens on `port`; rejects with PortInUseError when the port is taken. */
export function listen(server: Server, port: number, host?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new PortInUseError(port) : err);
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
}

/**
 * For a service's start: a port in use ends the process with code 1, said on stderr too (the
 * log may be silenced).
 */
export function exitIfPortInUse(log: Logger): (err: unknown) => never {
  return (err) => {
    if (!(err instanceof PortInUseError)) throw err;
    log.fatal({ port: err.port }, err.message);
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  };
}

/**
 * The operations port of every service (HEALTH_PORT): `/healthz` says the process is alive,
 * `/readyz` that its dependencies answer, `/metrics` is the Prometheus exposition. The API
 * also answers `/healthz` and `/readyz` on its public port, never `/metrics`.
 * The checks also run once at start, so the dependencies' connections are open before the
 * first request needs them.
 */
export async function startHealthServer(port: number, checks: Record<string, ReadinessCheck>, host = '0.0.0.0'): Promise<http.Server & { port: number }> {
  const server = http.createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ success: true, status: 'ok' }));
    } else if (path === '/readyz') {
      const failing = await runReadinessChecks(checks);
      const ok = failing.length === 0;
      res
        .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ success: ok, status: ok ? 'ready' : 'unavailable', failing }));
    } else if (path === '/metrics') {
      try {
        const { contentType, body } = await renderMetrics();
        res.writeHead(200, { 'content-type': contentType }).end(body);
      } catch {
        res.writeHead(500, { 'content-type': 'application/json' }).end(
          JSON.stringify({ success: false, error: { code: 'INTERNAL_ERROR', message: 'metrics could not be collected' } }),
        );
      }
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end(
        JSON.stringify({ success: false, error: { code: 'NOT_FOUND', message: 'not found' } }),
      );
    }
  });
  await listen(server, port, host);
  void runReadinessChecks(checks);
  return Object.assign(server, { port: (server.address() as AddressInfo).port });
}

/**
 * Calls `stop` once on SIGTERM/SIGINT, then exits. A second signal, or a stop that takes
 * longer than `graceMs`, exits at once.
 */
export function onShutdown(log: Logger, stop: () => Promise<void>, graceMs = 30_000): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, graceMs);
    timer.unref();
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'error while shutting down');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
