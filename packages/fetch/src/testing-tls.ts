/**
 * TLS origins for tests: a certificate authority made for the test run (openssl), a leaf
 * certificate it signs for the test names, and origins that speak HTTP/2 (ALPN `h2` only) or
 * HTTP/1.1 only. A fetcher trusts the CA only when given it as `extraCa`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCa {
  /** The CA certificate (PEM): what a fetcher is told to trust. */
  ca: string;
  /** A leaf certificate for the names asked for, signed by the CA, and its key. */
  cert: string;
  key: string;
}

/** A CA and a leaf for `names` (DNS names: Node accepts no wildcard over a single label such as `*.test`). */
export function makeTestCa(names: string[] = ['localhost']): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'ap-test-ca-'));
  const at = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  try {
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
    openssl('req', '-x509', ...ec, '-keyout', at('ca.key'), '-out', at('ca.pem'), '-days', '2', '-subj', '/CN=ap test CA');
    openssl('req', ...ec, '-keyout', at('leaf.key'), '-out', at('leaf.csr'), '-subj', `/CN=${names[0]}`);
    writeFileSync(at('leaf.ext'), `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}\n`);
    openssl('x509', '-req', '-in', at('leaf.csr'), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-CAcreateserial', '-out', at('leaf.pem'), '-days', '2', '-extfile', at('leaf.ext'));
    return { ca: readFileSync(at('ca.pem'), 'utf8'), cert: readFileSync(at('leaf.pem'), 'utf8'), key: readFileSync(at('leaf.key'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Over h2 the request and response are http2's compatibility objects, used through the http shapes. */
export type TlsHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface TlsOrigin {
  port: number;
  /** TCP connections accepted. */
  connections: number;
  /** Requests seen, with the HTTP version each came over ('2.0' or '1.1'). */
  requests: { url: string; httpVersion: string; headers: http.IncomingHttpHeaders }[];
  close(): Promise<void>;
}

/** An https origin on `host`: HTTP/2 only (`h2`), both (ALPN chooses), or HTTP/1.1 only (no ALPN). */
export async function startTlsOrigin(tlsCa: TestCa, protocol: 'h2' | 'both' | 'http/1.1', handler: TlsHandler, host = '127.0.0.1', port = 0): Promise<TlsOrigin> {
  const { cert, key } = tlsCa;
  const server = protocol === 'http/1.1' ? https.createServer({ cert, key }) : http2.createSecureServer({ cert, key, allowHTTP1: protocol === 'both' });
  const sockets = new Set<import('node:net').Socket>();
  const origin: TlsOrigin = {
    port: 0,
    connections: 0,
    requests: [],
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  server.on('connection', (socket: import('node:net').Socket) => {
    origin.connections++;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('request', (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => {
    origin.requests.push({ url: req.url ?? '', httpVersion: req.httpVersion, headers: req.headers as http.IncomingHttpHeaders });
    handler(req as http.IncomingMessage, res as http.ServerResponse);
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  origin.port = (server.address() as AddressInfo).port;
  return origin;
}

/** `/<i>` is `files[i]` (HEAD and single ranges too). */
export function filesHandler(files: Buffer[]): TlsHandler {
  return (req, res) => {
    const body = files[Number(req.url!.slice(1))];
    if (!body) return void res.writeHead(404).end();
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    const end = m ? Math.min(Number(m[2]), body.length - 1) : body.length - 1;
    const headers: Record<string, string | number> = { 'accept-ranges': 'bytes', 'content-length': Math.max(0, end - start + 1) };
    if (m) headers['content-range'] = `bytes ${start}-${end}/${body.length}`;
    res.writeHead(m ? 206 : 200, headers);
    res.end(req.method === 'HEAD' ? undefined : body.subarray(start, end + 1));
  };
}
