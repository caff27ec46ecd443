// Package boundaries (docs/architecture.md#layers), checked by `pnpm lint:deps`, which `pnpm test`
// (and so CI) runs before the jest suites. Services are deployed apart and stay thin: a service
// never imports another service, and a package (shared code) never imports a service. Packages
// sit in layers (LAYERS, lowest first): a package imports packages of its own layer or below,
// never above, so the archive engine stays below the job lifecycle that drives it. Tests beside
// the code (`*.test.ts`) may wire higher layers together; the code they test may not. Workspace
// imports (`@ap/packer`) resolve through pnpm's node_modules links to the service's own files,
// so both relative paths and package names count; type-only imports count too.

/** The packages of each layer, lowest first. */
const LAYERS = [
  { name: 'base', packages: ['contract', 'zip', 'crc32', 'secrets', 'log', 'tokens', 'config'] },
  { name: 'io', packages: ['fetch', 'storage', 'db', 'queue'] },
  { name: 'archive', packages: ['archive'] },
  { name: 'lifecycle', packages: ['jobs', 'webhooks', 'accounts'] },
  { name: 'service-kit', packages: ['service-kit'] },
];
/** Packages that run in a client (browser or CLI): they speak the HTTP contract only. */
const CLIENT_PACKAGES = ['sdk', 'cli', 'dashboard'];
const CLIENT_IMPORTS = ['contract', 'sdk'];

const NOT_A_TEST = '\\.test\\.ts$';
const anyOf = (names) => `^packages/(${names.join('|')})/`;

const layerRules = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `${layer.name}-imports-upward`,
  comment: `A ${layer.name} package (${layer.packages.join(', ')}) imports only packages of its own layer or below.`,
  severity: 'error',
  from: { path: anyOf(layer.packages), pathNot: NOT_A_TEST },
  to: { path: anyOf(LAYERS.slice(i + 1).flatMap((l) => l.packages)) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'client-imports-server',
      comment: 'The SDK, the CLI and the dashboard talk to the service over HTTP: of the packages they import only the contract and the SDK.',
      severity: 'error',
      from: { path: anyOf(CLIENT_PACKAGES), pathNot: NOT_A_TEST },
      to: { path: '^packages/', pathNot: anyOf([...CLIENT_PACKAGES, ...CLIENT_IMPORTS]) },
    },
    {
      name: 'code-imports-tests',
      comment: 'Packages and services never import test/: what code needs lives in a package.',
      severity: 'error',
      from: { path: '^(packages|services)/', pathNot: NOT_A_TEST },
      to: { path: '^test/' },
    },
    {
      name: 'tool-imports-service',
      comment: 'Scripts and benches drive services as processes (or over HTTP), and import only packages.',
      severity: 'error',
      from: { path: '^(scripts|bench)/' },
      to: { path: '^services/' },
    },
    {
      name: 'service-imports-service',
      comment: 'A service must not import another service: shared code belongs in packages/.',
      severity: 'error',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/([^/]+)/', pathNot: '^services/$1/' },
    },
    {
      name: 'package-imports-service',
      comment: 'A package must not import a service: services depend on packages, never the reverse.',
      severity: 'error',
      from: { path: '^packages/' },
      to: { path: '^services/' },
    },
    {
      name: 'browser-code-imports-node',
      comment:
        'The dashboard app and the SDK client it bundles (@ap/sdk/client) run in a browser: no Node built-ins, and not the SDK\'s Node-only files (download, ZIP check, generator).',
      severity: 'error',
      from: { path: '^packages/(dashboard/web/|sdk/src/(client|openapi)\\.ts$)' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'browser-code-imports-node-sdk',
      comment: 'See browser-code-imports-node: @ap/sdk (the Node entry) and its Node-only files stay out of browser bundles.',
      severity: 'error',
      from: { path: '^packages/(dashboard/web/|sdk/src/(client|openapi)\\.ts$)' },
      to: { path: '^packages/sdk/src/(index|node|download|verify|generate)\\.ts$' },
    },
    {
      name: 'no-circular',
      comment: 'No import circle between files: a module that needs part of another which needs it back is two modules mixed; move the shared part into a file of its own.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that cannot be resolved cannot be checked against the rules above.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|generated)/' },
    tsPreCompilationDeps: true,
    combinedDependencies: false,
    preserveSymlinks: false,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json', '.node'],
      mainFields: ['module', 'main', 'types'],
    },
  },
};
