// A webhook receiver for tests: records every request (headers and raw body) per path and
// answers as told: a status sequence, or never (a receiver that hangs).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
  at: number;
}

export interface Receiver {
  url: string;
  /** Statuses answered in turn at `path` (the last one repeats); 'hang' never answers; a 3xx redirects to `<path>-target`. */
  set(path: string, statuses: (number | 'hang')[]): string;
  received(path: string): ReceivedRequest[];
  /** Waits until `path` has received at least `count` requests. */
  waitFor(path: string, count?: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const plans = new Map<string, (number | 'hang')[]>();
  const log = new Map<string, ReceivedRequest[]>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      try {
        body = JSON.parse(raw);
      } catch {
        // recorded as raw only
      }
      const list = log.get(path) ?? [];
      list.push({ path, headers: req.headers, raw, body, at: Date.now() });
      log.set(path, list);
      const plan = plans.get(path) ?? [200];
      const answer = plan.length > 1 ? plan.shift()! : plan[0]!;
      if (answer === 'hang') return;
      // A redirect points at `<path>-target` on this receiver, so a test can see it was not followed.
      const location = answer >= 300 && answer < 400 ? { location: `${url}${path}-target` } : {};
      res.writeHead(answer, { 'content-type': 'text/plain', ...location }).end(answer < 300 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    set(path, statuses) {
      plans.set(path, [...statuses]);
      return url + path;
    },
    received: (path) => [...(log.get(path) ?? [])],
    async waitFor(path, count = 1, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while ((log.get(path)?.length ?? 0) < count) {
        if (Date.now() > deadline) throw new Error(`receiver: ${path} got ${log.get(path)?.length ?? 0} of ${count} requests in ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 25));
      }
      return [...log.get(path)!];
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
