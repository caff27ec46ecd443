/** Local HTTP origins for this package's tests (loopback only). */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

export interface TestOrigin {
  /** `http://127.0.0.1:PORT` (or `http://[::1]:PORT`), no trailing slash. */
  base: string;
  port: number;
  requests: SeenRequest[];
  /** TCP connections accepted. */
  connections: number;
  close(): Promise<void>;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, origin: TestOrigin) => void;

export async function startOrigin(handler: Handler, host = '127.0.0.1'): Promise<TestOrigin> {
  const server = http.createServer();
  const origin: TestOrigin = {
    base: '',
    port: 0,
    requests: [],
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', () => {
    origin.connections++;
  });
  server.on('request', (req, res) => {
    origin.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    handler(req, res, origin);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  origin.port = (server.address() as AddressInfo).port;
  origin.base = `http://${host.includes(':') ? `[${host}]` : host}:${origin.port}`;
  return origin;
}

/** A port with nothing listening (bound then released). */
export async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Reads a whole stream, resolving with the bytes or rejecting with its error. */
export async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Deterministic test content. */
export function bytes(n: number, seed = 1): Buffer {
  const b = Buffer.allocUnsafe(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

/** Serves `body` with HEAD, Range (single range) and conditional support, like a file server. */
export function fileHandler(body: Buffer, extraHeaders: Record<string, string> = {}): Handler {
  return (req, res) => {
    const headers: Record<string, string | number> = { 'accept-ranges': 'bytes', ...extraHeaders };
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (m) {
      const start = Number(m[1]);
      const end = m[2] === '' ? body.length - 1 : Math.min(Number(m[2]), body.length - 1);
      if (start >= body.length) {
        res.writeHead(416, { 'content-range': `bytes */${body.length}` });
        res.end();
        return;
      }
      res.writeHead(206, { ...headers, 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${body.length}` });
      res.end(req.method === 'HEAD' ? undefined : body.subarray(start, end + 1));
      return;
    }
    res.writeHead(200, { ...headers, 'content-length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}

export interface CappedOrigin extends TestOrigin {
  /** Responses being sent now, and the most ever at once. */
  inFlight: number;
  maxInFlight: number;
  /** Responses that sent bytes since the last call (busy connections, not ones held back by their client). */
  takeBusy(): number;
  /** 429 answers given. */
  refusals: number;
}

export interface CappedOptions {
  /** Each response is sent at this rate (a per-connection cap). */
  bytesPerSecond: number;
  /** Answers 429 with `Retry-After: 1` while more than this many responses are in flight. */
  refuseAbove?: number;
  /**
   * What the files are validated by: a strong ETag (the default); a Last-Modified only, an hour
   * before the response's Date (strong, RFC 9110 8.8.2.2) or `recent` (the Date's second: weak);
   * or none, which also means no Accept-Ranges (an application server generating files).
   */
  validators?: 'etag' | 'last-modified' | 'recent' | 'none';
}

/**
 * Serves `files[i]` at `/<i>` (Range, a strong ETag), each response at `bytesPerSecond`, as a
 * CDN or an object store capping each connection does.
 */
export async function startCappedOrigin(files: Buffer[], opts: CappedOptions): Promise<CappedOrigin> {
  const tickMs = 16;
  const perTick = Math.max(1, Math.round((opts.bytesPerSecond * tickMs) / 1000));
  const busy = new Set<unknown>();
  const lastModified = new Date(Date.now() - (opts.validators === 'recent' ? 0 : 3600_000)).toUTCString();
  const o = (await startOrigin((req, res, origin) => {
    const state = origin as CappedOrigin;
    const body = files[Number(req.url!.slice(1))];
    if (!body) return void res.writeHead(404).end();
    if (opts.refuseAbove !== undefined && state.inFlight >= opts.refuseAbove) {
      state.refusals++;
      return void res.writeHead(429, { 'retry-after': '1' }).end();
    }
    const validators = opts.validators ?? 'etag';
    const headers: Record<string, string | number> = validators === 'none' ? {} : { 'accept-ranges': 'bytes' };
    if (validators === 'etag') headers.etag = '"capped"';
    else if (validators !== 'none') headers['last-modified'] = lastModified;
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    const end = m ? Math.min(Number(m[2]) + 1, body.length) : body.length;
    if (m) headers['content-range'] = `bytes ${start}-${end - 1}/${body.length}`;
    headers['content-length'] = end - start;
    res.writeHead(m ? 206 : 200, headers);
    if (req.method === 'HEAD') return void res.end();
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    let done = false;
    const finish = () => {
      if (!done) state.inFlight--;
      done = true;
    };
    res.once('close', finish);
    // At most a tick's bytes per tick: a late timer or a client holding the response back earns no credit.
    let at = start;
    const send = () => {
      if (res.destroyed) return;
      const next = Math.min(end, at + perTick);
      const more = res.write(body.subarray(at, next));
      busy.add(res);
      at = next;
      if (at >= end) {
        finish();
        return void res.end();
      }
      if (more) setTimeout(send, tickMs);
      else res.once('drain', () => setTimeout(send, tickMs));
    };
    send();
  })) as CappedOrigin;
  o.inFlight = 0;
  o.maxInFlight = 0;
  o.refusals = 0;
  o.takeBusy = () => {
    const n = busy.size;
    busy.clear();
    return n;
  };
  return o;
}
