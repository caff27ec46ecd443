/**
 * Name lookups of user-given hosts (job URLs, webhooks, source endpoints) with c-ares, which
 * waits on its sockets in the event loop, instead of `dns.lookup` (getaddrinfo on one of
 * libuv's four pool threads, shared with file I/O and key derivation): slow DNS of one user's
 * hosts then delays nobody else (docs/guarantees.md#dns-slow-or-silent).
 *
 * `localhost` and `*.localhost` are loopback without asking (RFC 6761); no other name is read
 * from the hosts file, and no search domain is appended: a user's URL names a host on the
 * network, and an alias local to the machine must not change where it goes.
 */
import { Resolver } from 'node:dns/promises';
import net from 'node:net';
import { timeoutError } from './errors';

/** A lookup of one name gives up after this long, however many servers and tries c-ares has. */
export const DNS_TIMEOUT_MS = 5_000;

/** `localhost`, `foo.localhost` and their trailing-dot forms always mean loopback (RFC 6761). */
export function isLocalhostName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.+$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

let resolver = createResolver([]);

function createResolver(servers: readonly string[]): Resolver {
  // Two tries within the bound: one lost UDP datagram is not a failed lookup.
  const created = new Resolver({ timeout: DNS_TIMEOUT_MS / 2, tries: 2 });
  if (servers.length) created.setServers([...servers]);
  return created;
}

/**
 * The DNS servers user-given hosts are resolved with (`DNS_SERVERS`; `host` or `host:port`),
 * for the whole process like the system's resolver configuration. Empty: the system's.
 */
export function setDnsServers(servers: readonly string[]): void {
  resolver = createResolver(servers);
}

type Family = 4 | 6;

function errnoError(code: string, hostname: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${message} ${hostname}`), { code, hostname });
}

/** Addresses of `hostname` in `families`, IPv4 first; rejects with ENOTFOUND, EAI_AGAIN or a DNS timeout. */
export async function resolveHost(hostname: string, families: readonly Family[] = [4, 6]): Promise<{ address: string; family: Family }[]> {
  const ip = net.isIP(hostname);
  if (ip !== 0) return [{ address: hostname, family: ip as Family }];
  if (isLocalhostName(hostname)) {
    return families.map((family) => ({ address: family === 4 ? '127.0.0.1' : '::1', family }));
  }
  const asked = resolver;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), DNS_TIMEOUT_MS)));
  const answers = Promise.allSettled(families.map((family) => (family === 4 ? asked.resolve4(hostname) : asked.resolve6(hostname))));
  const settled = await Promise.race([answers, expired]);
  clearTimeout(timer);
  if (settled === 'timeout') throw timeoutError(DNS_TIMEOUT_MS, 'dns');
  const found = settled.flatMap((answer, i) => (answer.status === 'fulfilled' ? answer.value.map((address) => ({ address, family: families[i]! })) : []));
  if (found.length) return found;
  const codes = settled.map((answer) => (answer.status === 'rejected' ? (answer.reason as NodeJS.ErrnoException).code : 'ENODATA'));
  if (codes.includes('ETIMEOUT')) throw timeoutError(DNS_TIMEOUT_MS, 'dns');
  if (codes.every((code) => code === 'ENODATA' || code === 'ENOTFOUND')) throw errnoError('ENOTFOUND', hostname, 'no address for');
  throw errnoError('EAI_AGAIN', hostname, `DNS lookup failed (${codes.join(', ')}) for`);
}

/** `resolveHost` in the shape of `dns.lookup`, for sockets' `lookup` option. */
export const resolverLookup: net.LookupFunction = (hostname, options, callback) => {
  const family = options.family === 4 || options.family === 'IPv4' ? [4 as const] : options.family === 6 || options.family === 'IPv6' ? [6 as const] : undefined;
  resolveHost(hostname, family).then(
    (found) => {
      if (options.all) callback(null, found);
      else callback(null, found[0]!.address, found[0]!.family);
    },
    (err: NodeJS.ErrnoException) => callback(err, '', 0),
  );
};
