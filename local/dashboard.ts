import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dashboardVendorFiles } from '#lib/dashboard-vendor.ts';
import type { ExtraRoute } from './api-gateway-adapter.ts';

// The dashboard (web/) as static files: `/` and `/dashboard` redirect to `/dashboard/`, which serves web/index.html.
// The same files deploy as they are (docs/dashboard.md); nothing is built.

export const defaultWebDir = fileURLToPath(new URL('../web/', import.meta.url));

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

const securityHeaders = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // Locally the API is on the same origin; no inline script or style is used.
  'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
};

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...securityHeaders, ...headers }).end(text);
}

async function serveFile(webDir: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const method = (req.method ?? 'GET').toUpperCase();
  if (method !== 'GET' && method !== 'HEAD') return sendText(res, 405, 'method not allowed', { allow: 'GET, HEAD' });
  const { pathname } = new URL(req.url ?? '/', 'http://localhost');
  let relative: string;
  try {
    relative = decodeURIComponent(pathname.slice('/dashboard/'.length));
  } catch {
    return sendText(res, 400, 'bad path');
  }
  if (relative === '' || relative.endsWith('/')) relative += 'index.html';
  const vendorFile = Object.hasOwn(dashboardVendorFiles, relative) ? dashboardVendorFiles[relative] : undefined;
  const file = vendorFile ?? resolve(webDir, relative);
  // Never outside web/ (but for the vendored files), never a dotfile.
  if ((!vendorFile && !file.startsWith(webDir + sep)) || relative.split('/').some((part) => part.startsWith('.'))) {
    return sendText(res, 404, 'not found');
  }
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) return sendText(res, 404, 'not found');
  const body = await readFile(file);
  res.writeHead(200, {
    'content-type': contentTypes[extname(file)] ?? 'application/octet-stream',
    'content-length': String(body.length),
    'cache-control': 'no-cache',
    ...securityHeaders,
  });
  res.end(method === 'HEAD' ? undefined : body);
}

/** Extra routes for the local HTTP server that serve the dashboard from `webDir` (default: the repo's web/). */
export function dashboardRoutes(webDir = defaultWebDir): ExtraRoute[] {
  const root = resolve(webDir);
  const redirect = (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(302, { location: '/dashboard/', ...securityHeaders }).end();
  };
  return [
    { method: 'GET', path: '/', handle: redirect },
    { method: 'GET', path: '/dashboard', handle: redirect },
    { method: '*', path: '/dashboard/*', handle: (req, res) => serveFile(root, req, res) },
  ];
}
