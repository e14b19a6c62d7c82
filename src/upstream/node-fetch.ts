/**
 * A `fetch` on node:http/https for what the global fetch cannot do without extra packages: a
 * bind address (`localAddress`) and an HTTP proxy (absolute-URI requests for http://, a CONNECT
 * tunnel for https://), with optional Basic proxy credentials. Responses stream (SSE works).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';

export interface NetSettings {
  proxyHost?: string;
  proxyPort?: number;
  proxyUser?: string;
  proxyPassword?: string;
  localAddress?: string;
}

export function hasNetSettings(s: NetSettings): boolean {
  return Boolean(s.proxyHost || s.localAddress);
}

function proxyAuth(s: NetSettings): Record<string, string> {
  if (!s.proxyUser) return {};
  const cred = Buffer.from(`${s.proxyUser}:${s.proxyPassword ?? ''}`).toString('base64');
  return { 'Proxy-Authorization': `Basic ${cred}` };
}

function tunnel(s: NetSettings, host: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: s.proxyHost,
      port: s.proxyPort ?? 8080,
      method: 'CONNECT',
      path: `${host}:${port}`,
      headers: { Host: `${host}:${port}`, ...proxyAuth(s) },
      localAddress: s.localAddress,
    });
    req.once('connect', (res, socket) => {
      if (res.statusCode === 200) resolve(socket);
      else {
        socket.destroy();
        reject(new Error(`the proxy refused the tunnel: HTTP ${res.statusCode}`));
      }
    });
    req.once('error', reject);
    req.end();
  });
}

export function createNodeFetch(s: NetSettings): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((v, k) => (headers[k] = v));
    const body =
      init.body === undefined || init.body === null ? undefined : String(init.body as string);
    const https = url.protocol === 'https:';
    const port = Number(url.port) || (https ? 443 : 80);
    let res: IncomingMessage;
    const send = (make: () => ReturnType<typeof httpRequest>) =>
      new Promise<IncomingMessage>((resolve, reject) => {
        const req = make();
        req.once('response', resolve);
        req.once('error', reject);
        init.signal?.addEventListener('abort', () => req.destroy(new Error('aborted')), {
          once: true,
        });
        if (body !== undefined) req.write(body);
        req.end();
      });
    if (s.proxyHost && https) {
      const raw = await tunnel(s, url.hostname, port);
      const socket = tlsConnect({ socket: raw, servername: url.hostname });
      res = await send(() =>
        httpsRequest({
          host: url.hostname,
          port,
          path: url.pathname + url.search,
          method: init.method ?? 'GET',
          headers,
          createConnection: () => socket,
        }),
      );
    } else if (s.proxyHost) {
      res = await send(() =>
        httpRequest({
          host: s.proxyHost,
          port: s.proxyPort ?? 8080,
          path: url.href,
          method: init.method ?? 'GET',
          headers: { ...headers, Host: url.host, ...proxyAuth(s) },
          localAddress: s.localAddress,
        }),
      );
    } else {
      res = await send(() =>
        (https ? httpsRequest : httpRequest)({
          host: url.hostname,
          port,
          path: url.pathname + url.search,
          method: init.method ?? 'GET',
          headers,
          localAddress: s.localAddress,
        }),
      );
    }
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (Array.isArray(v)) v.forEach((x) => out.append(k, x));
      else if (v !== undefined) out.set(k, v);
    }
    const status = res.statusCode ?? 500;
    const noBody = status === 204 || status === 304 || init.method === 'HEAD';
    if (noBody) res.resume();
    return new Response(
      noBody ? null : (Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>),
      { status, statusText: res.statusMessage, headers: out },
    );
  }) as typeof fetch;
}
