/**
 * SSRF guard (docs/product-rules.md#not-in-the-contract-decided-here).
 *
 * Why hand-written around ipaddr.js rather than `request-filtering-agent`: that package does the
 * same two checks (literal IPs in `createConnection`, resolved names on the socket's `lookup`
 * event) but treats every non-`unicast` ipaddr range alike and has no notion of NAT64/6to4
 * embedding or IPv4-compatible addresses, and it would be one more dependency for ~40 lines.
 * The classification itself is ipaddr.js's (`process()` unwraps ::ffff:a.b.c.d, `range()` names
 * the special-purpose block); only the wiring is ours.
 *
 * Where the check sits, so that DNS rebinding cannot slip between check and connect:
 *  - names: the agents force their own `lookup` into every socket they create; it resolves,
 *    checks every returned address, and hands Node only checked addresses, so the address
 *    connected to is the address checked. A name with any non-public address is refused.
 *  - literal IPs (Node skips `lookup` for them): checked in `createConnection` before the socket
 *    exists.
 *  - belt and braces: on the socket's `connect`, the peer address is checked again and the socket
 *    destroyed before the HTTP request (queued until connect) is written.
 * Redirect hops go through the same agents, so every hop is checked at connect time; the
 * fetcher also checks each hop's URL up front for a clearer, earlier error.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import ipaddr from 'ipaddr.js';
import { FetchError } from './errors';
import { isLocalhostName, resolverLookup } from './resolver';

export { isLocalhostName };

export type LookupFunction = net.LookupFunction;

export interface AddressVerdict {
  allowed: boolean;
  /** ipaddr.js range name (or ours: 'ipv4Compatible', 'invalid'), of the embedded IPv4 when there is one. */
  range: string;
  /** Human label: "loopback", "private", "cloud metadata", ... */
  label: string;
}

const LABELS: Record<string, string> = {
  loopback: 'loopback',
  private: 'private',
  uniqueLocal: 'private',
  linkLocal: 'link-local',
  multicast: 'multicast',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  carrierGradeNat: 'carrier-grade NAT',
  reserved: 'reserved',
  deprecatedSiteLocal: 'site-local',
  ipv4Compatible: 'IPv4-compatible',
  teredo: 'Teredo',
  rfc6145: 'IPv4-translated',
  rfc6052: 'NAT64',
  invalid: 'invalid',
};

const METADATA_LABEL = 'cloud metadata';
// EC2 IMDS, ECS task credentials, EKS Pod Identity (169.254.170.23, fd00:ec2::23), Alibaba.
const METADATA = new Set(['169.254.169.254', '169.254.170.2', '169.254.170.23', 'fd00:ec2::254', 'fd00:ec2::23', '100.100.100.200']);

function ipv4FromParts(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

/** Classifies one IP address (any textual form ipaddr.js accepts; zone ids are ignored). */
export function classifyAddress(address: string, allowList: readonly CidrRange[] = []): AddressVerdict {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(address.replace(/%.*$/, '')); // ::ffff:a.b.c.d -> a.b.c.d
  } catch {
    return { allowed: false, range: 'invalid', label: 'invalid' };
  }
  // Metadata first: no allow-list entry opens it (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse).
  if (METADATA.has(addr.toNormalizedString()) || METADATA.has(addr.toString())) {
    return { allowed: false, range: addr.range(), label: METADATA_LABEL };
  }
  for (const [net, bits] of allowList) {
    if (addr.kind() === net.kind() && addr.match(net, bits)) return { allowed: true, range: 'allowListed', label: 'allow-listed' };
  }
  let range: string = addr.range();
  if (addr instanceof ipaddr.IPv6) {
    const p = addr.parts;
    let embedded: ipaddr.IPv4 | undefined;
    if (range === 'rfc6052' && p[2] === 0) embedded = ipv4FromParts(p[6] ?? 0, p[7] ?? 0); // 64:ff9b::a.b.c.d (well-known /96)
    else if (range === '6to4') embedded = ipv4FromParts(p[1] ?? 0, p[2] ?? 0); // 2002:AABB:CCDD::/48
    else if (range === 'unicast' && p.slice(0, 6).every((x) => x === 0)) range = 'ipv4Compatible'; // ::a.b.c.d (deprecated)
    if (embedded) {
      const inner = classifyAddress(embedded.toString(), allowList);
      return inner.allowed ? inner : { ...inner, label: `${inner.label} (embedded in ${address})` };
    }
  }
  if (range === 'unicast') return { allowed: true, range, label: 'public' };
  return { allowed: false, range, label: LABELS[range] ?? range };
}

/** True for a cloud metadata address, also one embedded in an IPv6 form. */
export function isMetadataVerdict(verdict: AddressVerdict): boolean {
  return verdict.label.startsWith(METADATA_LABEL);
}

/**
 * The guard's verdict on one address: `classifyAddress`, except that ALLOW_PRIVATE_URLS=true
 * opens every refused range but cloud metadata, which stays refused always.
 */
export function verdictFor(address: string, guard: GuardOptions): AddressVerdict {
  const verdict = classifyAddress(address, guard.allowList);
  if (verdict.allowed || !guard.allowPrivate || isMetadataVerdict(verdict)) return verdict;
  return { allowed: true, range: verdict.range, label: `${verdict.label} (allowed by ALLOW_PRIVATE_URLS)` };
}

export type CidrRange = [ipaddr.IPv4 | ipaddr.IPv6, number];

export function parseAllowList(cidrs: readonly string[] | undefined): CidrRange[] {
  return (cidrs ?? []).map((c) => (c.includes('/') ? ipaddr.parseCIDR(c) : ((a) => [a, a.kind() === 'ipv4' ? 32 : 128] as CidrRange)(ipaddr.parse(c))));
}

export const PRIVATE_HINT = 'set ALLOW_PRIVATE_URLS=true for development';

export function blockedError(address: string, verdict: AddressVerdict, viaName?: string): FetchError {
  const label = verdict.label;
  const article = /^[aeiou]/i.test(label) ? 'an' : 'a';
  const user = viaName ? `blocked: resolves to ${article} ${label} address` : `blocked: ${article} ${label} address`;
  const hint = isMetadataVerdict(verdict) ? 'refused always' : PRIVATE_HINT;
  const detail = viaName
    ? `blocked: ${viaName} resolves to ${address}, ${article} ${label} address (${hint})`
    : `blocked: address ${address} is ${article} ${label} address (${hint})`;
  return new FetchError('blocked', user, { retryable: false, detail });
}

/** URL hostname without IPv6 brackets. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * Up-front check of a URL (before a request and for each redirect hop): protocol, literal
 * addresses and localhost names. Names are checked again, authoritatively, at connect time.
 */
export function checkUrl(url: URL, guard: GuardOptions): FetchError | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return new FetchError('protocol', `unsupported protocol ${url.protocol}`, { retryable: false });
  }
  const host = bareHost(url.hostname);
  if (net.isIP(host) !== 0) {
    const verdict = verdictFor(host, guard);
    return verdict.allowed ? undefined : blockedError(host, verdict);
  }
  if (guard.allowPrivate) return undefined;
  if (isLocalhostName(host)) return blockedError(host, { allowed: false, range: 'loopback', label: 'loopback' }, host);
  return undefined;
}

export interface GuardOptions {
  allowPrivate: boolean;
  allowList: readonly CidrRange[];
}

/** Wraps a dns.lookup-compatible function so it only ever yields allowed addresses. */
export function guardLookup(base: LookupFunction, guard: GuardOptions): LookupFunction {
  return (hostname, options, callback) => {
    base(hostname, options, (err, address, family) => {
      if (err) return callback(err, address, family);
      const list = Array.isArray(address) ? address.map((a) => a.address) : [address];
      for (const a of list) {
        const verdict = verdictFor(a, guard);
        if (!verdict.allowed) return callback(blockedError(a, verdict, hostname) as NodeJS.ErrnoException, '', 0);
      }
      if (list.length === 0) {
        const e = Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }) as NodeJS.ErrnoException;
        return callback(e, '', 0);
      }
      callback(null, address, family);
    });
  };
}

type ConnectionOptions = http.ClientRequestArgs & { lookup?: LookupFunction };
type CreateConnection = (options: ConnectionOptions, callback?: (err: Error | null, stream: Duplex) => void) => Duplex | null | undefined;

/**
 * Shared body of both agents' `createConnection`: refuse blocked literal IPs before a socket
 * exists, force the guarded lookup for names, and re-check the peer on `connect`.
 */
function guardedCreateConnection(
  superCreate: CreateConnection,
  guard: GuardOptions,
  lookup: LookupFunction,
  options: ConnectionOptions,
  callback?: (err: Error | null, stream: Duplex) => void,
): Duplex | null | undefined {
  const host = bareHost(String(options.host ?? options.hostname ?? ''));
  if (net.isIP(host) !== 0) {
    const verdict = verdictFor(host, guard);
    if (!verdict.allowed) {
      // Node's Agent accepts the error through the callback when nothing is returned.
      callback?.(blockedError(host, verdict), undefined as unknown as Duplex);
      return undefined;
    }
  }
  const socket = superCreate({ ...options, lookup }, callback);
  if (socket instanceof net.Socket) checkPeerOnConnect(socket, guard);
  return socket;
}

/** Belt and braces: the peer a socket connected to is checked before anything is written. */
export function checkPeerOnConnect(socket: net.Socket, guard: GuardOptions): void {
  socket.once('connect', () => {
    const peer = socket.remoteAddress;
    const verdict = peer === undefined ? undefined : verdictFor(peer, guard);
    if (peer === undefined || (verdict && !verdict.allowed)) {
      socket.destroy(blockedError(peer ?? 'unknown', verdict ?? { allowed: false, range: 'invalid', label: 'unknown' }));
    }
  });
}

export interface GuardedAgents {
  http: http.Agent;
  https: https.Agent;
  /** The lookup every guarded socket uses: it yields only allowed addresses. */
  lookup: LookupFunction;
  /** The trusted CAs when extra ones were given (Node's bundled roots otherwise). */
  ca: string[] | undefined;
}

export interface AgentSettings {
  guard: GuardOptions;
  /** Default: c-ares, off libuv's thread pool (resolver.ts). */
  lookup?: LookupFunction | undefined;
  /** Idle keep-alive sockets are closed after this long. */
  freeSocketTimeoutMs?: number | undefined;
  maxSockets?: number | undefined;
  /** Extra trusted CA certificates (PEM), added to Node's bundled roots. */
  extraCa?: ReadonlyArray<string | Buffer> | undefined;
  /**
   * A TLS socket already connected (guarded) to `host:port` that the https agent takes instead
   * of connecting again: the one that asked the origin for its protocol (h2.ts).
   */
  adopt?: ((host: string, port: number) => Duplex | undefined) | undefined;
}

export function createGuardedAgents(settings: AgentSettings): GuardedAgents {
  const lookup = guardLookup(settings.lookup ?? resolverLookup, settings.guard);
  const { guard } = settings;
  const common = {
    keepAlive: true,
    scheduling: 'lifo' as const,
    timeout: settings.freeSocketTimeoutMs ?? 15_000,
    ...(settings.maxSockets === undefined ? {} : { maxSockets: settings.maxSockets }),
  };

  class GuardedHttpAgent extends http.Agent {
    override createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
      return guardedCreateConnection((o, cb) => super.createConnection(o, cb), guard, lookup, options, callback);
    }
  }
  class GuardedHttpsAgent extends https.Agent {
    override createConnection(options: https.RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
      const adopted = settings.adopt?.(bareHost(String(options.host ?? options.hostname ?? '')), Number(options.port ?? 443));
      if (adopted) return adopted;
      return guardedCreateConnection((o, cb) => super.createConnection(o as https.RequestOptions, cb), guard, lookup, options, callback);
    }
  }
  const ca = settings.extraCa?.length ? [...tls.rootCertificates, ...settings.extraCa.map(String)] : undefined;
  return { http: new GuardedHttpAgent(common), https: new GuardedHttpsAgent({ ...common, ...(ca ? { ca } : {}) }), lookup, ca };
}
