/**
 * Where a URL would connect, judged by the guard's address rules before any request: used for
 * URLs the service will call later (webhooks), so a refused address is a 400 at once instead
 * of a failure hours later. The request itself still goes through the guarded agents, which
 * check again at connect time (DNS can change in between).
 */
import net from 'node:net';
import { FetchError } from './errors';
import { bareHost, classifyAddress, isLocalhostName, isMetadataVerdict, PRIVATE_HINT, type LookupFunction } from './guard';
import { resolverLookup } from './resolver';

export type DestinationVerdict =
  /** `private`: every address is loopback/private (allowed only with ALLOW_PRIVATE_URLS=true). */
  | { ok: true; private: boolean }
  | { ok: false; error: string };

export async function checkDestination(url: URL, options: { allowPrivate: boolean; lookup?: LookupFunction }): Promise<DestinationVerdict> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, error: `unsupported protocol ${url.protocol}` };
  const host = bareHost(url.hostname);
  let addresses: string[];
  if (net.isIP(host) !== 0) addresses = [host];
  else if (isLocalhostName(host)) addresses = ['127.0.0.1'];
  else {
    try {
      addresses = await resolveAll(host, options.lookup ?? resolverLookup);
    } catch (err) {
      if (err instanceof FetchError && err.kind === 'timeout') return { ok: false, error: `host ${host}: ${err.userMessage}` };
      return { ok: false, error: `host ${host} does not resolve` };
    }
    if (addresses.length === 0) return { ok: false, error: `host ${host} does not resolve` };
  }
  let anyPrivate = false;
  for (const address of addresses) {
    const verdict = classifyAddress(address);
    if (verdict.allowed) continue;
    anyPrivate = true;
    const metadata = isMetadataVerdict(verdict);
    if (!options.allowPrivate || metadata) {
      const article = /^[aeiou]/i.test(verdict.label) ? 'an' : 'a';
      return { ok: false, error: `${host} is ${article} ${verdict.label} address, which is refused (${metadata ? 'always' : PRIVATE_HINT})` };
    }
  }
  return { ok: true, private: anyPrivate };
}

function resolveAll(host: string, lookup: LookupFunction): Promise<string[]> {
  return new Promise((resolve, reject) => {
    lookup(host, { all: true }, (err, address) => {
      if (err) return reject(err);
      resolve(Array.isArray(address) ? address.map((a) => a.address) : [address]);
    });
  });
}
