// PBKDF2 for AE-2 keys on worker threads of their own, never on libuv's pool (which bcrypt for
// logins and file I/O use), at most half the cores, so the event loop keeps a core. Work waits
// in one queue per owner (a user) and is served round-robin: one user's many downloads take
// turns with another's single one (docs/archive-options.md#key-derivation).
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

/** The worker's whole program (CommonJS, evaluated: no file to find in any build). */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { pbkdf2Sync } = require('node:crypto');
parentPort.on('message', (m) => {
  try {
    parentPort.postMessage({ key: pbkdf2Sync(m.password, m.salt, m.iterations, m.bytes, 'sha1') });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
  }
});
`;

export interface Pbkdf2Task {
  password: string;
  salt: Buffer;
  iterations: number;
  bytes: number;
}

interface Queued extends Pbkdf2Task {
  resolve(key: Buffer): void;
  reject(err: Error): void;
}

export const DEFAULT_KEY_WORKERS = Math.max(1, Math.floor(availableParallelism() / 2));

export class KeyDerivationPool {
  /** Each owner's waiting tasks; the map's order is the round's order (an owner served goes last). */
  private readonly waiting = new Map<string, Queued[]>();
  private readonly idle: Worker[] = [];
  private workers = 0;

  constructor(private readonly size = DEFAULT_KEY_WORKERS) {}

  derive(owner: string, task: Pbkdf2Task): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      const queue = this.waiting.get(owner);
      if (queue) queue.push({ ...task, resolve, reject });
      else this.waiting.set(owner, [{ ...task, resolve, reject }]);
      this.pump();
    });
  }

  /** Tasks waiting, all owners together. */
  get backlog(): number {
    let n = 0;
    for (const q of this.waiting.values()) n += q.length;
    return n;
  }

  private pump(): void {
    while (this.waiting.size > 0) {
      const worker = this.idle.pop() ?? (this.workers < this.size ? this.spawn() : undefined);
      if (!worker) return;
      const [owner, queue] = this.waiting.entries().next().value as [string, Queued[]];
      const task = queue.shift()!;
      this.waiting.delete(owner);
      if (queue.length > 0) this.waiting.set(owner, queue);
      this.run(worker, task);
    }
  }

  private run(worker: Worker, task: Queued): void {
    const done = (m: { key?: Uint8Array; error?: string }) => {
      worker.off('error', failed);
      if (m.key) task.resolve(Buffer.from(m.key.buffer, m.key.byteOffset, m.key.byteLength));
      else task.reject(new Error(`key derivation failed: ${m.error}`));
      this.idle.push(worker);
      worker.unref();
      this.pump();
    };
    const failed = (err: Error) => {
      worker.off('message', done);
      this.workers--;
      task.reject(err);
      this.pump();
    };
    worker.once('message', done);
    worker.once('error', failed);
    worker.ref();
    worker.postMessage({ password: task.password, salt: task.salt, iterations: task.iterations, bytes: task.bytes });
  }

  private spawn(): Worker {
    this.workers++;
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    worker.unref();
    return worker;
  }
}
