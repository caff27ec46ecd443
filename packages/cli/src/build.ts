// Bundles the CLI into dist/cli.js: one file with its dependencies inlined, so the package can
// be published (and installed) without the workspace. `pnpm --filter archive-packager build`.
import { fileURLToPath } from 'node:url';

export const CLI_BUNDLE = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

export async function buildCli(): Promise<string> {
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [fileURLToPath(new URL('./main.ts', import.meta.url))],
    outfile: CLI_BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    // Bundled CommonJS modules call require() for Node's built-ins.
    banner: { js: "import { createRequire as __cliCreateRequire } from 'node:module'; const require = __cliCreateRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  return CLI_BUNDLE;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`built ${await buildCli()}\n`);
}
