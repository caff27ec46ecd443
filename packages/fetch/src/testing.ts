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
