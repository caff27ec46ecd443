/**
 * TLS connections that h2.ts opens itself (the ALPN question and HTTP/2 sessions), under the
 * same guard as the agents' (guard.ts): a blocked literal address is refused before a socket
 * exists, names go through the guarded lookup (only checked addresses reach `connect`), and the
 * peer is checked again on `connect`. got's lookup, connect and secureConnect timeouts only
 * watch a request's own socket, so each phase here has its own timer of the same length.
 */
import net from 'node:net';
import tls from 'node:tls';
import { timeoutError } from './errors';
import { bareHost, blockedError, checkPeerOnConnect, verdictFor, type GuardOptions, type LookupFunction } from './guard';

export interface TlsTarget {
  host: string;
  port: number;
  /** ALPN protocols offered, in order of preference. */
  alpn: string[];
  /** A TLS session to resume (http2-wrapper keeps them per origin). */
  session?: Buffer | undefined;
}

export interface TlsSettings {
  guard: GuardOptions;
  /** The guarded lookup (GuardedAgents.lookup). */
  lookup: LookupFunction;
  ca: string[] | undefined;
  /** For each phase: DNS lookup, TCP connect, TLS handshake. */
  connectTimeoutMs: number;
}

/** Resolves with the socket once its TLS handshake is done (its `alpnProtocol` is then known). */
export function connectTls(target: TlsTarget, settings: TlsSettings): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const host = bareHost(target.host);
    const literal = net.isIP(host) !== 0;
    if (literal) {
      const verdict = verdictFor(host, settings.guard);
      if (!verdict.allowed) return reject(blockedError(host, verdict));
    }
    const socket = tls.connect({
      host,
      port: target.port,
      // SNI carries names only (RFC 6066).
      ...(literal ? {} : { servername: host }),
      ALPNProtocols: target.alpn,
      lookup: settings.lookup,
      ...(settings.ca ? { ca: settings.ca } : {}),
      ...(target.session ? { session: target.session } : {}),
    });
    checkPeerOnConnect(socket, settings.guard);
    let timer: NodeJS.Timeout | undefined;
    const arm = (phase: 'dns' | 'connect') => {
      clearTimeout(timer);
      timer = setTimeout(() => socket.destroy(timeoutError(settings.connectTimeoutMs, phase)), settings.connectTimeoutMs);
      timer.unref();
    };
    arm(literal ? 'connect' : 'dns');
    socket.once('lookup', (error) => error || arm('connect'));
    socket.once('connect', () => arm('connect'));
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      socket.off('error', failed);
      resolve(socket);
    });
    const failed = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    socket.once('error', failed);
  });
}

/**
 * Sockets that asked an origin for its protocol, waiting for the agent that speaks it to take
 * them (so finding out costs no extra connection). One nobody takes in time is closed.
 */
export class ParkedSockets {
  private readonly parked = new Map<string, { socket: tls.TLSSocket; protocol: string; timer: NodeJS.Timeout }>();

  constructor(private readonly keepMs: number) {}

  park(key: string, protocol: string, socket: tls.TLSSocket): void {
    this.parked.get(key)?.socket.destroy();
    // An error while parked ends the socket; nobody is listening yet.
    const ignore = () => {};
    socket.on('error', ignore);
    const timer = setTimeout(() => this.drop(key, socket), this.keepMs);
    timer.unref();
    this.parked.set(key, { socket, protocol, timer });
  }

  /** The parked socket for `key` if it speaks `protocol` and is still open. */
  take(key: string, protocol: string): tls.TLSSocket | undefined {
    const entry = this.parked.get(key);
    if (!entry || entry.protocol !== protocol) return undefined;
    this.parked.delete(key);
    clearTimeout(entry.timer);
    return entry.socket.destroyed ? undefined : entry.socket;
  }

  private drop(key: string, socket: tls.TLSSocket): void {
    if (this.parked.get(key)?.socket !== socket) return;
    this.parked.delete(key);
    socket.destroy();
  }

  close(): void {
    for (const key of [...this.parked.keys()]) this.drop(key, this.parked.get(key)!.socket);
  }
}
