// The service's own store (S3_ENDPOINT and S3_BUCKET) is never a user's source or destination
// (docs/guarantees.md#hardening-third-round-items-1-6), with ALLOW_PRIVATE_URLS=true too: a
// source on its endpoint could read or overwrite every user's ZIPs.
import net from 'node:net';
import { bareHost } from './guard';
import { isLocalhostName } from './resolver';

/** Where the service keeps its ZIPs: `endpoint` undefined is AWS S3. */
export interface OwnStore {
  endpoint: string | undefined;
  bucket: string;
}

/** The words of a job or bin error when a source or destination is the service's own store. */
export const SOURCE_NOT_ALLOWED = 'source not allowed';

/** "host:port" with the scheme's default port, loopback names and forms as one. */
function hostPort(endpoint: string): string | null {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return null;
  }
  let host = bareHost(url.hostname).toLowerCase().replace(/\.+$/, '');
  if (isLocalhostName(host) || host === '::1' || /^127\./.test(host) || host === '0.0.0.0' || host === '::') host = 'loopback';
  else if (net.isIPv6(host)) host = new URL(`http://[${host}]`).hostname;
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${host}:${port}`;
}

const isAwsEndpoint = (endpoint: string | null): boolean => endpoint === null || /(^|\.)amazonaws\.com$/i.test(new URL(endpoint).hostname.replace(/\.+$/, ''));

/** True when a source's endpoint is the store's (host and port); nothing is refused for AWS S3 by endpoint alone. */
export function isOwnStoreEndpoint(endpoint: string | null, own: OwnStore | undefined): boolean {
  if (!own?.endpoint || endpoint === null) return false;
  const mine = hostPort(own.endpoint);
  return mine !== null && hostPort(endpoint) === mine;
}

/** True when `bucket` read or written through `endpoint` (null: AWS S3) is the service's own store. */
export function isOwnStore(endpoint: string | null, bucket: string, own: OwnStore | undefined): boolean {
  if (!own) return false;
  if (own.endpoint) return isOwnStoreEndpoint(endpoint, own);
  return bucket === own.bucket && isAwsEndpoint(endpoint);
}
