/**
 * What the direct path (direct-http.ts) writes and checks on the wire, as plain functions and
 * constants: the name field of each method, the `Mcp-Name` encoding, the header checks of the
 * lean client, and the cheap shape checks of a result before the hub passes it on.
 */
import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client';

/** The methods the direct path carries. */
export type DirectMethod = 'tools/call' | 'prompts/get' | 'resources/read';

/**
 * 2026-07-28 sends log messages only to requests that name a level. The hub asks for all of
 * them: the relay hands each to the calling agent's peer, which applies the agent's own level.
 */
export const LOG_LEVEL_META_KEY = 'io.modelcontextprotocol/logLevel';

export const NAME_FIELD: Record<DirectMethod, string> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
};

/** `Mcp-Name` as the SDK encodes it: printable ASCII as is, anything else as sentinel base64. */
export function headerValue(s: string): string {
  let plain = s.length > 0 && s === s.trim() && !(s.startsWith('=?base64?') && s.endsWith('?='));
  for (let i = 0; plain && i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 9 && (c < 32 || c > 126)) plain = false;
  }
  return plain ? s : `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;
}

/**
 * An HTTP header name (RFC 9110 token), and a value the lean client sends: printable ASCII and
 * tabs (node:http sends other characters as latin1; such a list goes through node:http).
 */
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
export const FIELD_VALUE = /^[\t\x20-\x7e]*$/;

export function invalid(method: string, problem: string): SdkError {
  return new SdkError(SdkErrorCode.InvalidResult, `Invalid result for ${method}: ${problem}`);
}

/** The cheap checks the hub needs before passing a result on (no full schema pass). */
export function shapeProblem(method: DirectMethod, r: Record<string, unknown>): string | undefined {
  if (method === 'tools/call') {
    const content = r.content;
    if (content !== undefined) {
      if (!Array.isArray(content)) return 'content is not an array';
      for (const c of content)
        if (
          typeof c !== 'object' ||
          c === null ||
          typeof (c as { type?: unknown }).type !== 'string'
        )
          return 'a content item has no type';
    }
    if (r.isError !== undefined && typeof r.isError !== 'boolean')
      return 'isError is not a boolean';
    const sc = r.structuredContent;
    if (sc !== undefined && (typeof sc !== 'object' || sc === null || Array.isArray(sc)))
      return 'structuredContent is not an object';
    return undefined;
  }
  const list = method === 'prompts/get' ? r.messages : r.contents;
  return Array.isArray(list)
    ? undefined
    : `${method === 'prompts/get' ? 'messages' : 'contents'} is not an array`;
}
