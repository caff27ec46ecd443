// The soak's programmable origin: /<kind>/<size>/<seed>/<name> (plan.ts's BodyKind) with Range
// and ETag, and faults switched on for a window: `reset` cuts every body part-way, `stall`
// holds every body's bytes until the window ends.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeOriginHead } from '../../test/origin-range';
import { bodySlice, changedSeed, type BodyKind } from './plan';

/** How long a changing body keeps one version. */
export const CHANGE_PERIOD_MS = 20_000;
const SLOW_BYTES_PER_S = 256 * 1024;
const ENDLESS_BYTES_PER_S = 1024;

export interface SoakOrigin {
  url: string;
  /** Versions served so far of each changing body, by path seed. */
  versions: Map<number, Set<number>>;
  fault(kind: 'reset' | 'stall', ms: number): void;
  close(): Promise<void>;
}

export async function startSoakOrigin(): Promise<SoakOrigin> {
  const versions = new Map<number, Set<number>>();
  let resetUntil = 0;
  let stallUntil = 0;
  let getsOf = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const m = /^\/([ntsfce])\/(\d+)\/(\d+)\/[^/?]+$/.exec(req.url ?? '');
    if (!m) return void res.writeHead(404).end();
    const kind = m[1] as BodyKind;
    const size = Number(m[2]);
    let seed = Number(m[3]);
    if (kind === 'e') {
      // Endless: no length, a trickle for ever (cut by the service's minimum rate).
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      if (req.method === 'HEAD') return void res.end();
      const timer = setInterval(() => res.write(bodySlice('n', seed, 0, ENDLESS_BYTES_PER_S / 4)), 250);
      res.once('close', () => clearInterval(timer));
      return;
    }
    if (kind === 'c') {
      const version = Math.floor(Date.now() / CHANGE_PERIOD_MS);
      if (!versions.has(seed)) versions.set(seed, new Set());
      versions.get(seed)!.add(version);
      seed = changedSeed(seed, version);
    }
    const span = writeOriginHead(req, res, size, `"${kind}-${seed}-${size}"`);
    if (!span || req.method === 'HEAD') return void res.end();
    let cutAt = span.end;
    if (kind === 'f') {
      const n = (getsOf.get(req.url!) ?? 0) + 1;
      getsOf.set(req.url!, n);
      if (n % 2 === 1 && span.end - span.start > 1) cutAt = span.start + Math.floor((span.end - span.start) / 2);
    }
    if (Date.now() < resetUntil && span.end - span.start > 1) cutAt = Math.min(cutAt, span.start + Math.floor((span.end - span.start) * Math.random()));
    send(res, kind === 't' ? 't' : 'n', seed, span.start, span.end, cutAt, kind === 's' ? SLOW_BYTES_PER_S : 0);
  });
  server.keepAliveTimeout = 5_000;

  /** Sends [start, end) in 64 KiB chunks, at `rate` bytes/s when set; destroys the connection at `cutAt`; holds while stalled. */
  function send(res: http.ServerResponse, body: BodyKind, seed: number, start: number, end: number, cutAt: number, rate: number): void {
    let at = start;
    let closed = false;
    res.once('close', () => (closed = true));
    const began = Date.now();
    const pump = () => {
      while (!closed && at < end) {
        if (at >= cutAt) return void res.destroy();
        if (Date.now() < stallUntil) return void setTimeout(pump, 200);
        if (rate) {
          const wait = began + ((at - start) / rate) * 1000 - Date.now();
          if (wait > 5) return void setTimeout(pump, wait);
        }
        const n = Math.min(end, cutAt, at + 64 * 1024) - at;
        const ok = res.write(bodySlice(body, seed, at, at + n));
        at += n;
        if (!ok) return void res.once('drain', pump);
      }
      if (!closed) res.end();
    };
    pump();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    versions,
    fault(kind, ms) {
      if (kind === 'reset') resetUntil = Date.now() + ms;
      else stallUntil = Date.now() + ms;
      // Flaky bodies count their GETs from here again: a cut every other GET, not more.
      if (kind === 'reset') getsOf = new Map();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
