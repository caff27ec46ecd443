// A private redis-server for tests that kill it (the shared one is never touched), on a free
// loopback port, without persistence: a restart loses every key, as a Redis restart may.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../scripts/embedded';

export interface PrivateRedis {
  url: string;
  /** Starts it again on the same port (nothing when it runs). */
  start(): Promise<void>;
  /** SIGKILL; resolves once it has exited. */
  kill(): Promise<void>;
}

/** Sends `signal` to a child still running and resolves once it has exited. */
export async function endChild(child: ChildProcess | null, signal: NodeJS.Signals): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let redis: ChildProcess | null = null;
  const start = async () => {
    if (redis) return;
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
    redis = child;
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => /Ready to accept connections/.test(chunk.toString()) && resolve());
      child.once('exit', (code) => {
        if (redis === child) redis = null;
        reject(new Error(`redis-server exited (${code})`));
      });
    });
  };
  const kill = async () => {
    const child = redis;
    redis = null;
    await endChild(child, 'SIGKILL');
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    kill,
  };
}
