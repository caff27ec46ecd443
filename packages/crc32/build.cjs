// Builds the addon with node-gyp against the headers of the Node that runs this script
// (<prefix>/include/node, shipped with Debian's nodejs and the official builds), so nothing is
// downloaded; node-gyp falls back to its own header download only when they are missing.
const { execFileSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const path = require('node:path');

const prefix = path.resolve(process.execPath, '..', '..');
const args = [require.resolve('node-gyp/bin/node-gyp.js'), 'rebuild'];
if (existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) args.push(`--nodedir=${prefix}`);
execFileSync(process.execPath, args, { cwd: __dirname, stdio: 'inherit' });
