/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for OAuth mode: where clients learn which
 * authorization server issues tokens for this hub and which scopes it wants.
 */
import type { ServerResponse } from 'node:http';
import type { OAuthConfig } from '../config/config.js';

export const METADATA_PATH = '/.well-known/oauth-protected-resource';

/** The metadata URL of a resource: the well-known path inserted before the resource's path. */
export function metadataUrlFor(resource: string): string {
  const u = new URL(resource);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/$/, '');
  return `${u.origin}${METADATA_PATH}${path}`;
}

export function metadataDocument(resource: string, oauth: OAuthConfig): Record<string, unknown> {
  const doc: Record<string, unknown> = {
    resource,
    authorization_servers: [oauth.issuer],
    bearer_methods_supported: ['header'],
    resource_name: 'moonhub',
  };
  if (oauth.scopes !== undefined) doc.scopes_supported = oauth.scopes;
  return doc;
}

export function sendMetadata(res: ServerResponse, method: string | undefined, doc: object): void {
  if (method !== 'GET' && method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD' });
    res.end();
    return;
  }
  const body = JSON.stringify(doc);
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(body)),
    'Cache-Control': 'max-age=300',
  });
  res.end(method === 'HEAD' ? undefined : body);
}
