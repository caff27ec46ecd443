// Name lookups of user-given hosts never occupy libuv's thread pool, and give up after 5 s
// (docs/guarantees.md#dns-slow-or-silent): DNS servers on loopback UDP that this file starts,
// one answering from a table and one that never answers.
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { pbkdf2 } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { checkDestination } from './destination';
import { DNS_TIMEOUT_MS, setDnsServers } from './resolver';
import { startDnsServer } from './testing-dns';
import { fetchHarness } from './testing-fetcher';

const { fetcher, origin, close } = fetchHarness();
afterAll(close);
afterEach(() => setDnsServers([]));

/** Key derivations on every thread of libuv's pool and more queued behind; settles when the first is done. */
function occupyThreadPool(): { firstDone: Promise<unknown>; allDone: Promise<unknown> } {
  const jobs = Array.from({ length: 8 }, () => new Promise<void>((resolve, reject) => pbkdf2('password', 'salt', 1_000_000, 64, 'sha512', (err) => (err ? reject(err) : resolve()))));
  return { firstDone: Promise.race(jobs), allDone: Promise.all(jobs) };
}

describe('name lookups of user-given hosts', () => {
  it('resolve and fetch while every thread of the pool is busy', async () => {
    const dns = await startDnsServer({ table: { 'files.example.test': '127.0.0.1' } });
    setDnsServers([dns.address]);
    const o = await origin((_req, res) => void res.end('hello'));
    const finished: string[] = [];
    const pool = occupyThreadPool();
    void pool.firstDone.then(() => finished.push('thread pool work'));
    try {
      const probed = await fetcher().probe(`http://files.example.test:${o.port}/a.txt`);
      finished.push('probe');
      expect(probed).toMatchObject({ ok: true, size: 5 });
      expect(finished).toEqual(['probe']);
      expect(dns.queries).toBeGreaterThan(0);
    } finally {
      await pool.allDone;
      await dns.close();
    }
  });

  it('of a DNS server that never answers fail after 5 s with a clear error, delaying no file read', async () => {
    const dns = await startDnsServer('silent');
    setDnsServers([dns.address]);
    const f = fetcher({ retries: 0, connectTimeoutMs: 3 * DNS_TIMEOUT_MS });
    const finished: string[] = [];
    try {
      // More names than the pool has threads: with getaddrinfo they would hold all four.
      const probes = Promise.all(Array.from({ length: 8 }, (_, i) => f.probe(`http://silent-${i}.example.test/a.txt`))).then((results) => {
        finished.push('lookups');
        return results;
      });
      await readFile('package.json');
      finished.push('file read');
      const results = await probes;
      expect(finished).toEqual(['file read', 'lookups']);
      expect(results.map((r) => (r.ok ? 'ok' : r.error))).toEqual(Array(8).fill('timed out after 5 s (DNS lookup)'));
      expect(dns.queries).toBeGreaterThanOrEqual(8);
    } finally {
      await dns.close();
    }
  }, 30_000);

  it('checked up front (webhooks, source endpoints) fail with a clear error when DNS never answers', async () => {
    const dns = await startDnsServer('silent');
    setDnsServers([dns.address]);
    try {
      expect(await checkDestination(new URL('https://hooks.example.test/in'), { allowPrivate: false })).toEqual({ ok: false, error: 'host hooks.example.test: timed out after 5 s (DNS lookup)' });
    } finally {
      await dns.close();
    }
  }, 30_000);

  it('of localhost are loopback without asking DNS', async () => {
    const dns = await startDnsServer('silent');
    setDnsServers([dns.address]);
    const o = await origin((_req, res) => void res.end('local'));
    try {
      expect(await fetcher().probe(`http://localhost:${o.port}/a.txt`)).toMatchObject({ ok: true, size: 5 });
      expect(dns.queries).toBe(0);
    } finally {
      await dns.close();
    }
  });
});
