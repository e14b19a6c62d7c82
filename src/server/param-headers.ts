/**
 * 2026-07-28 tool parameter headers (SEP-2243): a tool parameter marked `x-mcp-header: "Name"`
 * travels in the body and in an `Mcp-Param-Name` header, and the two must agree. Checked by the
 * dispatcher after the tool is resolved in the caller's view, so a hidden tool answers as an
 * unknown one before any header is looked at.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { WireError } from '../errors.js';
import { header, mismatchError } from './era.js';
import { isPlainObject } from './jsonrpc.js';
import { decodeHeaderValue } from './protocol.js';

/** The `x-mcp-header` parameters of an input schema, found once per schema object. */
const paramHeaders = new WeakMap<object, [param: string, header: string][]>();

function headersOf(schema: Record<string, unknown>): [string, string][] {
  let found = paramHeaders.get(schema);
  if (found === undefined) {
    found = [];
    const props = schema.properties;
    if (isPlainObject(props)) {
      for (const [param, def] of Object.entries(props)) {
        const suffix = isPlainObject(def) ? def['x-mcp-header'] : undefined;
        if (typeof suffix === 'string' && suffix !== '')
          found.push([param, 'mcp-param-' + suffix.toLowerCase()]);
      }
    }
    paramHeaders.set(schema, found);
  }
  return found;
}

/** The rejection when the headers disagree with the arguments (Base64 sentinels decoded). */
export function checkParamHeaders(
  schema: Record<string, unknown>,
  args: unknown,
  headers: IncomingHttpHeaders,
): WireError | undefined {
  const list = headersOf(schema);
  if (list.length === 0) return undefined;
  const given = isPlainObject(args) ? args : {};
  for (const [param, name] of list) {
    const raw = header(headers, name);
    const value = given[param];
    const body = value === undefined || value === null ? undefined : String(value);
    if (raw === undefined) {
      if (body !== undefined)
        return mismatchError(
          `the body carries arguments.${param} but the required ${name} header is absent`,
          '(missing)',
        );
      continue;
    }
    const decoded = decodeHeaderValue(raw);
    if (decoded === undefined)
      return mismatchError(`the ${name} header carries an invalid Base64 sentinel value`, raw);
    if (decoded !== body)
      return mismatchError(
        `the body carries arguments.${param}=${JSON.stringify(body)} but the ${name} header names ${JSON.stringify(decoded)}`,
        raw,
      );
  }
  return undefined;
}
