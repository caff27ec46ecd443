// Package boundaries (docs/decisions.md "Archive engine and package boundaries"), checked by
// `pnpm lint:deps`, which `pnpm test` (and so CI) runs before the jest suites. Services are
// deployed apart and stay thin: a service never imports another service, and a package (shared
// code) never imports a service. Workspace imports (`@ap/packer`) resolve through pnpm's
// node_modules links to the service's own files, so both relative paths and package names count;
// type-only imports count too.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
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
