// An origin whose files stop at a set byte until a gate opens, so a test can hold a packer
// mid-bin (with some parts already stored) for as long as it needs, and count what each file
// served, to see whether a resumed bin fetched a file again.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeOriginHead } from './origin-range';

export interface GatedOrigin {
  url: string;
  /** Bytes served per path. */
  served: Map<string, number>;
  /** The first byte of each GET per path, in the order asked. */
  starts: Map<string, number[]>;
  /** Lets every held body (and every later request) run to its end. */
  open(): void;
  close(): Promise<void>;
}

/** `files`: path -> body; `holdAt`: path -> byte at which that body waits for the gate. */
export async function startGatedOrigin(files: Record<string, Buffer>, holdAt: Record<string, number>): Promise<GatedOrigin> {
  const served = new Map<string, number>();
  const starts = new Map<string, number[]>();
  const held = new Set<() => void>();
  let opened = false;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const body = files[path];
    if (!body) return void res.writeHead(404).end();
    const span = writeOriginHead(req, res, body.length, `"${path}-${body.length}"`);
    if (!span || req.method === 'HEAD') return void res.end();
    starts.set(path, [...(starts.get(path) ?? []), span.start]);
    const hold = holdAt[path];
    const stop = !opened && hold !== undefined ? Math.max(span.start, Math.min(hold, span.end)) : span.end;
    let at = span.start;
    const pump = (until: number) => {
      while (at < until) {
        if (res.destroyed) return;
        const chunk = body.subarray(at, Math.min(until, at + 64 * 1024));
        at += chunk.length;
        served.set(path, (served.get(path) ?? 0) + chunk.length);
        if (!res.write(chunk)) return void res.once('drain', () => pump(until));
      }
      if (at === span.end) return void res.end();
      const release = () => {
        held.delete(release);
        pump(span.end);
      };
      held.add(release);
    };
    res.on('error', () => undefined);
    pump(stop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served,
    starts,
    open() {
      opened = true;
      for (const release of [...held]) release();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
