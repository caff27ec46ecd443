// GET /openapi.json and GET /docs: the API's OpenAPI document and a reference page of it,
// rendered by Swagger UI from the project's own node_modules (nothing from a CDN; the page's
// assets are this route's files, a fixed list).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Router } from 'express';
import { ApiError, buildOpenApiDocument } from '@ap/contract';

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Archive Packaging Service API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="docs/swagger-ui.css">
<link rel="icon" type="image/png" href="docs/favicon-32x32.png">
</head>
<body>
<div id="reference"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

// Starts the page: renders the API's own document and loads nothing from elsewhere (no validator
// badge, which would send the document to validator.swagger.io). A file, not an inline script:
// the Content-Security-Policy (helmet) allows scripts from this origin only.
const INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: new URL('openapi.json', document.baseURI).href,
    dom_id: '#reference',
    deepLinking: true,
    validatorUrl: null,
  });
});
`;

const ASSET_TYPES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

export function referenceRouter(publicBaseUrl: string): Router {
  const router = Router();
  let document: string | null = null;
  const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const assets = new Map<string, Buffer>();

  router.get('/openapi.json', (_req, res) => {
    document ??= JSON.stringify(buildOpenApiDocument({ serverUrl: publicBaseUrl }));
    res.type('application/json').send(document);
  });
  // The page's links are relative (it works under any path prefix of a proxy); at `/docs/` they
  // would resolve below it, so that page names `/docs` as its base and renders the same.
  const PAGE_BELOW = PAGE.replace('<head>\n', '<head>\n<base href="../docs">\n');
  router.get('/docs', (req, res) => {
    res.type('html').set('Cache-Control', 'no-cache').send(req.path.endsWith('/') ? PAGE_BELOW : PAGE);
  });
  router.get('/docs/:asset', (req, res) => {
    const name = req.params.asset;
    if (name === 'init.js') return void res.type('text/javascript; charset=utf-8').send(INIT_SCRIPT);
    const type = Object.hasOwn(ASSET_TYPES, name) ? ASSET_TYPES[name] : undefined;
    if (!type) throw new ApiError('NOT_FOUND', `no asset ${JSON.stringify(name)}`);
    let body = assets.get(name);
    if (!body) {
      body = readFileSync(path.join(swaggerDir, name));
      assets.set(name, body);
    }
    res.type(type).set('Cache-Control', 'public, max-age=3600').send(body);
  });
  return router;
}
