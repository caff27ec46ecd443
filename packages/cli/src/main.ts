#!/usr/bin/env node
// `archive-packager` / `pnpm cli`: runs the CLI with Ctrl-C wired to an abort (a second Ctrl-C exits at once).
import { EXIT, runCli } from './cli';

const controller = new AbortController();
process.on('SIGINT', () => {
  if (controller.signal.aborted) process.exit(EXIT.interrupted);
  controller.abort(new Error('interrupted'));
});

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const code = await runCli(process.argv.slice(2), { env: process.env, signal: controller.signal, readStdin });
// Exit now: idle keep-alive sockets of fetch must not hold the process open.
process.exit(code);
