import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Express } from 'express';
import { docsPolicy } from './security-headers';
import { renderPlainReference, type OpenApiDocument } from './openapi';

/**
 * The API reference at /api/v1/docs: Swagger UI (the npm package swagger-ui-dist, served from our
 * own origin: no CDN, no third-party asset) rendering our OpenAPI document, with "try it". Its
 * init script is ours, as a file (the page's policy allows no inline script); the validator badge
 * that would call a third-party service is off. Without JavaScript the page shows the plain
 * reference rendered on the server.
 */
export const DOCS_ASSETS_PATH = '/api/v1/docs/assets';

const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const SWAGGER_UI_VERSION = (JSON.parse(readFileSync(path.join(SWAGGER_UI_DIR, 'package.json'), 'utf8')) as { version: string }).version;

const INIT_SCRIPT = `// Stablegate's API reference: Swagger UI over this deployment's OpenAPI document.
window.addEventListener('load', function () {
  document.getElementById('plain-reference').hidden = true;
  window.ui = SwaggerUIBundle({
    url: '/api/v1/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
});
`;

/**
 * The files the page loads, all from our origin; read once, on first use. A Map, looked up by the
 * name in the URL: a plain object would also answer `constructor`, `__proto__`, `toString`… from its
 * prototype (a 500 on a public route, issue 37); a Map holds only what is put in it.
 */
const ASSETS = new Map<string, { type: string; read: () => Buffer | string }>([
  ['swagger-ui.css', { type: 'text/css; charset=utf-8', read: () => readFileSync(path.join(SWAGGER_UI_DIR, 'swagger-ui.css')) }],
  ['swagger-ui-bundle.js', { type: 'application/javascript; charset=utf-8', read: () => readFileSync(path.join(SWAGGER_UI_DIR, 'swagger-ui-bundle.js')) }],
  ['docs-init.js', { type: 'application/javascript; charset=utf-8', read: () => INIT_SCRIPT }],
]);

function docsHtml(doc: OpenApiDocument): string {
  const v = encodeURIComponent(SWAGGER_UI_VERSION);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeText(doc.info.title)} reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${DOCS_ASSETS_PATH}/swagger-ui.css?v=${v}">
<script src="${DOCS_ASSETS_PATH}/swagger-ui-bundle.js?v=${v}" defer></script>
<script src="${DOCS_ASSETS_PATH}/docs-init.js?v=${v}" defer></script>
</head><body>
<div id="swagger-ui"></div>
<div id="plain-reference">${renderPlainReference(doc)}</div>
</body></html>`;
}

const escapeText = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** Mounts GET /api/v1/docs (and /docs) and its assets. */
export function mountDocs(app: Express, doc: OpenApiDocument, publicBaseUrl: string): void {
  const html = docsHtml(doc);
  const csp = docsPolicy(publicBaseUrl);
  const cache = new Map<string, Buffer | string>();
  app.get(['/api/v1/docs', '/docs'], (_req, res) => {
    res.setHeader('Content-Security-Policy', csp);
    res.type('html').send(html);
  });
  app.get(`${DOCS_ASSETS_PATH}/:file`, (req, res, next) => {
    const asset = ASSETS.get(req.params.file);
    if (!asset) return next();
    let body = cache.get(req.params.file);
    if (body === undefined) cache.set(req.params.file, (body = asset.read()));
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.type(asset.type).send(body);
  });
}
