/**
 * HTTP/2 to https origins that offer it (docs/engine.md#http2): many files of one origin travel
 * as streams of one connection instead of a connection each.
 *
 * Which protocol an origin speaks is asked once per origin (ALPN, `h2` or `http/1.1`, on a
 * guarded TLS connection, tls-connect.ts) and remembered (HTTP/1.1 for ten minutes); the
 * connection that asked is then used by the agent for that protocol, so asking costs no extra
 * connection. A request to an `h2` origin is an http2-wrapper request on our own session agent,
 * every other request goes to got's guarded https (or http) agent as before. Plain http, IPv6
 * literal hosts (http2-wrapper names a session by `host:port`) and FETCH_HTTP2=false stay on
 * HTTP/1.1.
 *
 * Every session connects through `connectTls`, so the guard holds as on HTTP/1.1: only vetted
 * addresses are connected to, each connection's own lookup (no answer reused from another
 * name), redirects re-checked by client.ts before the next request is routed here. got's idle
 * (`socket`) and response timeouts act on the stream as on a socket; the session's own
 * connect phases and its first SETTINGS frame are timed here.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { ClientHttp2Session } from 'node:http2';
import type tls from 'node:tls';
import http2wrapper from 'http2-wrapper';
import { FetchError, timeoutError } from './errors';
import { bareHost } from './guard';
import { connectTls, type ParkedSockets, type TlsSettings } from './tls-connect';

/**
 * Flow-control window of one stream: what the origin may send before the body is read. A body
 * read ahead but not yet consumed holds at most this much (HTTP/1.1's equivalent is the
 * kernel's receive buffer); one stream then moves at most a window per round trip.
 */
export const H2_STREAM_WINDOW = 2 * 1024 * 1024;
/** Window of the whole connection; Node hands it back as data arrives, whoever reads it. */
const H2_SESSION_WINDOW = 16 * 1024 * 1024;
const PROTOCOL_TTL_MS = 10 * 60_000;
const PROTOCOLS_KEPT = 1000;

type Protocol = 'h2' | 'http/1.1';

export interface H2Settings extends TlsSettings {
  parked: ParkedSockets;
  /** A session with no stream open is closed after this long (as idle keep-alive sockets are). */
  idleSessionMs: number;
}

export interface H2Transport {
  /** got's `request` option: an h2 request for an h2 origin, else undefined (got's own https/http request). */
  request(url: URL, options: https.RequestOptions): http.ClientRequest | Promise<http.ClientRequest> | undefined;
  /** Sessions open now (tests). */
  sessions(): number;
  close(): void;
}

const kSettingsTimer = Symbol('settingsTimer');
const { kCurrentStreamCount } = http2wrapper.Agent as unknown as { kCurrentStreamCount: symbol };
/** Connection-specific headers that HTTP/2 forbids (RFC 9113 §8.2.2); the contract refuses the others. */
const HOP_BY_HOP = ['keep-alive', 'http2-settings'];

export function createH2Transport(settings: H2Settings): H2Transport {
  const known = new Map<string, { protocol: Protocol; at: number }>();
  const asking = new Map<string, Promise<Protocol>>();
  const { parked } = settings;

  const remember = (key: string, protocol: Protocol) => {
    known.delete(key);
    known.set(key, { protocol, at: performance.now() });
    if (known.size > PROTOCOLS_KEPT) known.delete(known.keys().next().value!);
  };
  const lookupProtocol = (key: string): Protocol | undefined => {
    const entry = known.get(key);
    // An h2 answer holds until a session's handshake says otherwise (createConnection); an
    // HTTP/1.1 one is asked again after a while, in case the origin took up h2.
    if (entry && (entry.protocol === 'h2' || performance.now() - entry.at < PROTOCOL_TTL_MS)) return entry.protocol;
    return undefined;
  };

  class GuardedHttp2Agent extends http2wrapper.Agent {
    override async createConnection(origin: URL, options: { session?: Buffer }): Promise<tls.TLSSocket> {
      const host = bareHost(origin.hostname);
      const port = Number(origin.port || 443);
      const key = `${host}:${port}`;
      const socket = parked.take(key, 'h2') ?? (await connectTls({ host, port, alpn: ['h2', 'http/1.1'], session: options.session }, settings));
      if (socket.alpnProtocol !== 'h2') {
        // The origin stopped offering h2: the connection serves the retry over HTTP/1.1.
        remember(key, 'http/1.1');
        parked.park(key, 'http/1.1', socket);
        throw new FetchError('connection', 'connection closed by the server', { retryable: true, detail: `${key} no longer offers HTTP/2` });
      }
      const timer = setTimeout(() => socket.destroy(timeoutError(settings.connectTimeoutMs, 'connect')), settings.connectTimeoutMs);
      timer.unref();
      (socket as tls.TLSSocket & { [kSettingsTimer]?: NodeJS.Timeout })[kSettingsTimer] = timer;
      return socket;
    }
  }
  const agent = new GuardedHttp2Agent({ maxEmptySessions: 100 });
  agent.settings = { enablePush: false, initialWindowSize: H2_STREAM_WINDOW };
  agent.on('session', (session: ClientHttp2Session) => {
    clearTimeout((session.socket as unknown as { [kSettingsTimer]?: NodeJS.Timeout })[kSettingsTimer]);
    session.setLocalWindowSize(H2_SESSION_WINDOW);
    // Streams have got's idle timeout; the session itself closes only once idle and empty.
    session.setTimeout(settings.idleSessionMs);
    session.on('timeout', () => {
      if ((session as unknown as Record<symbol, number>)[kCurrentStreamCount] === 0) session.close();
    });
  });

  function ask(key: string, host: string, port: number): Promise<Protocol> {
    let pending = asking.get(key);
    if (!pending) {
      pending = connectTls({ host, port, alpn: ['h2', 'http/1.1'] }, settings).then((socket) => {
        const protocol: Protocol = socket.alpnProtocol === 'h2' ? 'h2' : 'http/1.1';
        remember(key, protocol);
        parked.park(key, protocol, socket);
        return protocol;
      });
      const settled = () => asking.delete(key);
      pending.then(settled, settled);
      asking.set(key, pending);
    }
    return pending;
  }

  function h2Request(url: URL, options: https.RequestOptions): http.ClientRequest {
    const headers = { ...options.headers } as http.OutgoingHttpHeaders;
    for (const name of HOP_BY_HOP) delete headers[name];
    const { agent: _h1, ...rest } = options;
    const request = http2wrapper.request(url, { ...rest, headers, agent });
    // When got ends a request with an error (its idle timeout), http2-wrapper cancels the stream
    // at once and the response ends ('aborted', then its end) before the request's error is
    // out: got would report a short body instead of the timeout it reports over HTTP/1.1.
    request.once('response', (response: http.IncomingMessage) => {
      const emit = response.emit.bind(response);
      const push = response.push.bind(response);
      response.emit = ((event: string, ...args: unknown[]) => (event === 'aborted' && request.errored ? false : emit(event, ...args))) as typeof response.emit;
      response.push = (chunk: unknown, encoding?: BufferEncoding) => (chunk === null && request.errored ? false : push(chunk, encoding));
    });
    return request;
  }

  return {
    request(url, options) {
      if (url.protocol !== 'https:' || net.isIPv6(bareHost(url.hostname))) return undefined;
      const host = url.hostname;
      const port = Number(url.port || 443);
      const key = `${host}:${port}`;
      const protocol = lookupProtocol(key);
      if (protocol === 'h2') return h2Request(url, options);
      if (protocol === 'http/1.1') return undefined;
      return ask(key, host, port).then((asked) => (asked === 'h2' ? h2Request(url, options) : https.request(url, options)));
    },
    sessions: () => agent.sessionCount,
    close() {
      agent.destroy();
      parked.close();
    },
  };
}
