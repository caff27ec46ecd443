// A real HTTP origin for tests: files with deterministic bytes, and the misbehaviours the
// pipeline must handle (no HEAD, redirects, truncation, failures, Content-Disposition).
import { createHash } from 'node:crypto';
import http from 'node:http';
import { originRange } from './origin-range';
import type { AddressInfo } from 'node:net';

export interface OriginFile {
  body: Buffer;
  /** HEAD answers 405 (forces the ranged-GET probe). */
  noHead?: boolean;
  /** Sends no Content-Length (chunked). */
  chunked?: boolean;
  /** Declares the full length but closes the connection after this many bytes. */
  truncateAt?: number;
  /** Answers with this status and no body. */
  status?: number;
  contentDisposition?: string;
  /** Redirects (302) to this path. */
  redirectTo?: string;
  etag?: string;
  /** The first GET with a body closes the connection after this many bytes (later ones are whole). */
  cutFirstGetAt?: number;
  /** The first GET with a body sends this many bytes, then nothing more (the connection stays open). */
  stallFirstGetAt?: number;
  /** GETs answer this status (HEADs succeed): a URL that probes well and fails when fetched. */
  getStatus?: number;
  /** Answers 401 unless every one of these request headers has its value. */
  requireHeaders?: Record<string, string>;
  /** Any GET with a Range header answers this status with no Content-Range (gateways that refuse ranges, empty files). */
  rangeStatus?: 400 | 416;
  /** GETs answer 403 after this many of them (a signed link that expired). */
  expireAfterGets?: number;
}

export interface Origin {
  url: string;
  files: Map<string, OriginFile>;
  /** Body bytes sent per path (GET bodies only). */
  bytesSent: Map<string, number>;
  requests: { method: string; path: string; range?: string; ifMatch?: string; headers: http.IncomingHttpHeaders }[];
  set(path: string, file: OriginFile): string;
  close(): Promise<void>;
}

/** Deterministic pseudo-random bytes, so tests can build large inputs cheaply. */
export function bytesOf(seed: number, length: number): Buffer {
  const words = new Int32Array(Math.ceil(length / 4));
  let x = (seed * 2654435761 + 1) | 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x;
  }
  return Buffer.from(words.buffer, 0, length);
}

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

export async function startOrigin(): Promise<Origin> {
  const files = new Map<string, OriginFile>();
  const bytesSent = new Map<string, number>();
  const requests: Origin['requests'] = [];
  const misbehaved = new Set<string>();
  const server = http.createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    requests.push({ method: req.method!, path, range: req.headers.range, ...(req.headers['if-match'] ? { ifMatch: req.headers['if-match'] } : {}), headers: req.headers });
    const file = files.get(path);
    if (!file) return void res.writeHead(404).end();
    if (file.requireHeaders && Object.entries(file.requireHeaders).some(([name, value]) => req.headers[name.toLowerCase()] !== value)) return void res.writeHead(401).end();
    if (file.redirectTo) return void res.writeHead(302, { location: file.redirectTo }).end();
    if (file.status) return void res.writeHead(file.status).end();
    if (req.method === 'HEAD' && file.noHead) return void res.writeHead(405).end();
    if (req.method === 'GET' && file.getStatus) return void res.writeHead(file.getStatus).end();
    if (req.method === 'GET' && file.rangeStatus && req.headers.range) return void res.writeHead(file.rangeStatus).end();
    if (req.method === 'GET' && file.expireAfterGets !== undefined && file.expireAfterGets-- <= 0) return void res.writeHead(403).end('Request has expired');
    const ifMatch = req.headers['if-match'];
    if (ifMatch !== undefined && ifMatch !== '*' && ifMatch !== file.etag) return void res.writeHead(412).end();
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream', 'accept-ranges': 'bytes' };
    if (file.contentDisposition) headers['content-disposition'] = file.contentDisposition;
    if (file.etag) headers.etag = file.etag;
    let body = file.body;
    let status = 200;
    if (req.headers.range && !file.chunked) {
      const range = originRange(req.headers.range, body.length);
      if (range.status === 416) return void res.writeHead(416, { 'content-range': range.contentRange }).end();
      if (range.status === 206) {
        headers['content-range'] = range.contentRange;
        body = body.subarray(range.start, range.end);
        status = 206;
      }
    }
    if (!file.chunked) headers['content-length'] = String(body.length);
    res.writeHead(status, headers);
    if (req.method === 'HEAD') return void res.end();
    const once = (file.cutFirstGetAt ?? file.stallFirstGetAt) !== undefined && body.length > 1 && !misbehaved.has(path);
    if (once) {
      misbehaved.add(path);
      const at = (file.cutFirstGetAt ?? file.stallFirstGetAt)!;
      bytesSent.set(path, (bytesSent.get(path) ?? 0) + at);
      res.write(body.subarray(0, at), () => {
        if (file.cutFirstGetAt !== undefined) res.destroy();
      });
      return;
    }
    const toSend = file.truncateAt !== undefined ? body.subarray(0, file.truncateAt) : body;
    bytesSent.set(path, (bytesSent.get(path) ?? 0) + toSend.length);
    if (file.truncateAt !== undefined) {
      res.write(toSend, () => res.destroy());
      return;
    }
    res.end(toSend);
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    files,
    bytesSent,
    requests,
    set(path, file) {
      files.set(decodeURIComponent(path), file); // requests are matched decoded
      return url + path;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
