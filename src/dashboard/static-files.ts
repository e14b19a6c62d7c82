/**
 * The dashboard page: plain HTML, CSS and an ES module shipped in the package's `dashboard/`
 * folder and served as they are (no build step). The page holds no data and no secret; it asks
 * for an admin token and fetches everything from the admin API with it. A strict
 * Content-Security-Policy keeps anything but these files from running on it.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Route } from '../observe/operator-routes.js';

/** The package root (this file runs from dist/src/dashboard/). */
const ASSETS = resolve(dirname(fileURLToPath(import.meta.url)), '../../../dashboard');

const TYPES: Record<string, string> = {
  'app.js': 'text/javascript; charset=utf-8',
  'charts.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
  'index.html': 'text/html; charset=utf-8',
};

const HEADERS = {
  'Cache-Control': 'no-cache',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};

export function dashboardPage(path: string): Route {
  const cache = new Map<string, Buffer>();
  const file = (name: string): Buffer => {
    let b = cache.get(name);
    if (b === undefined) {
      b = readFileSync(join(ASSETS, name));
      cache.set(name, b);
    }
    return b;
  };
  const page = path.endsWith('/') ? path : path + '/';
  return (req, res) => {
    const url = (req.url ?? '/').split('?', 1)[0]!;
    let name: string | undefined;
    if (url === path || url === page || url === page + 'index.html') name = 'index.html';
    else if (url.startsWith('/dashboard/assets/')) name = url.slice('/dashboard/assets/'.length);
    if (name === undefined) return false;
    req.resume();
    // Own keys only: 'constructor' and the like are not assets.
    if (!Object.hasOwn(TYPES, name) || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
      return true;
    }
    const body = file(name);
    res.writeHead(200, {
      'Content-Type': TYPES[name]!,
      'Content-Length': String(body.length),
      ...HEADERS,
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  };
}
