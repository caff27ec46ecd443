// The soak's clients: API calls that go to either API process and try again (the other one)
// while a fault lasts, and downloads that count every byte received, can hang up part-way and
// resume with Range and If-Range.
import { createWriteStream } from 'node:fs';
import http from 'node:http';

export interface Answer {
  status: number;
  body: any;
}

/** Calls `path` on one of `apis`, again on the next one while it answers 5xx or not at all, up to `patienceMs`. */
export async function call(apis: readonly string[], method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}, patienceMs = 120_000): Promise<Answer> {
  const deadline = Date.now() + patienceMs;
  let lastProblem = '';
  for (let i = Math.floor(Math.random() * apis.length); ; i++) {
    try {
      const res = await fetch(`${apis[i % apis.length]}${path}`, {
        method,
        headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      const answer = text ? JSON.parse(text) : null;
      // 409 IDEMPOTENCY_KEY_IN_USE says "retry later", as 429 and 5xx do.
      if (res.status < 500 && res.status !== 429 && answer?.error?.code !== 'IDEMPOTENCY_KEY_IN_USE') return { status: res.status, body: answer };
      lastProblem = `${res.status} ${text.slice(0, 200)}`;
    } catch (err) {
      lastProblem = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`${method} ${path}: no answer within ${patienceMs / 1000} s (last: ${lastProblem})`);
    await new Promise((r) => setTimeout(r, 500 + Math.random() * 1000));
  }
}

export interface Download {
  /** Which API served it (its base URL). */
  api: string;
  bytes: number;
  killed: boolean;
  /** Whose download it is (usage is counted per user; stream downloads only). */
  tag?: { user: { killedInFlight: number }; stream: boolean };
}

export interface DownloadResult {
  status: number;
  bytes: number;
  /** The body arrived whole (as many bytes as Content-Length, or its last chunk). */
  whole: boolean;
  /** Bytes of the response not received (hung up or cut): the server may have counted those it had handed to TCP. */
  unsent?: number;
  etag?: string;
  contentRange?: string;
  length?: number;
}

/**
 * GETs `url` (a download URL with `api` as its origin) into `file` (appending at `append`),
 * counting each byte into `onBytes`; hangs up after `hangUpAfter` bytes when given.
 */
export function download(
  url: string,
  file: string | null,
  options: { range?: string; ifRange?: string; hangUpAfter?: number; append?: boolean; inFlight?: Set<Download>; tag?: Download['tag']; onBytes?: (n: number) => void } = {},
): Promise<DownloadResult> {
  return new Promise((resolve) => {
    const record: Download = { api: new URL(url).origin, bytes: 0, killed: false, tag: options.tag };
    options.inFlight?.add(record);
    const headers: Record<string, string> = {};
    if (options.range) headers.range = options.range;
    if (options.ifRange) headers['if-range'] = options.ifRange;
    let settled = false;
    const finish = (result: DownloadResult) => {
      if (settled) return;
      settled = true;
      options.inFlight?.delete(record);
      resolve(result);
    };
    const req = http.get(url, { headers, agent: false, timeout: 60_000 }, (res) => {
      const length = res.headers['content-length'] !== undefined ? Number(res.headers['content-length']) : undefined;
      // A 200 is the whole ZIP from its first byte (a resume whose If-Range no longer matched included).
      const out = file && (res.statusCode === 200 || res.statusCode === 206) ? createWriteStream(file, { flags: options.append && res.statusCode === 206 ? 'a' : 'w' }) : null;
      const base = { status: res.statusCode!, etag: res.headers.etag, contentRange: res.headers['content-range'], length };
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        record.bytes += c.length;
        options.onBytes?.(c.length);
        if (out) out.write(c);
        else if (res.statusCode! >= 400) chunks.push(c);
        if (options.hangUpAfter !== undefined && record.bytes >= options.hangUpAfter) {
          res.destroy();
          req.destroy();
        }
      });
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        // Without a length (chunked), only a body that reached its last chunk is whole.
        const whole = res.complete && (length === undefined || record.bytes === length);
        const result = { ...base, bytes: record.bytes, whole, unsent: length !== undefined ? length - record.bytes : 0 };
        if (out) out.end(() => finish(result));
        else finish(result);
      };
      res.once('end', end);
      res.once('close', end);
      res.once('error', end);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => finish({ status: 0, bytes: record.bytes, whole: false }));
  });
}
