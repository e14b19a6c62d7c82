/**
 * What Botster plugins (whose `cli/lua/lib/mcp.lua` the registry follows, LUA_API §2) need
 * besides the registry functions themselves: `require("lib.mcp")`, the callback forms of
 * `mcp.call_tool` and `mcp.read_resource`, Botster's source names for `mcp.reset`, the context
 * fields a caller passes on, and Botster's spellings of the fields Lua code reads.
 */
import type { LuaState } from '../lua/state.js';
import type { ResourceContents } from '../registry/types.js';

/** `require("lib.mcp")` gives the plugin's own `mcp` table, as Botster's loader does. */
export const LIB_MCP_MODULE = { source: 'return mcp', chunkname: '=[moonhub lib.mcp]' };

/**
 * The callback forms, in Lua so the callback runs in the caller's coroutine like any code it
 * calls: `call_tool(name, params, context, callback)` and `read_resource(uri, context,
 * callback)` call `callback(content, err, is_error)` and return nothing; without a callback they
 * return the same three values. Botster calls local handlers' callbacks at once too.
 */
const CALLBACK_FORMS = String.raw`
local call_tool, read_resource = mcp.call_tool, mcp.read_resource
local type, error = type, error
local function check(fname, i, callback)
  if callback ~= nil and type(callback) ~= "function" then
    error("bad argument #" .. i .. " to '" .. fname .. "' (function expected, got " .. type(callback) .. ")", 3)
  end
end
mcp.call_tool = function(name, params, context, callback)
  check("call_tool", 4, callback)
  if callback == nil then return call_tool(name, params, context) end
  callback(call_tool(name, params, context))
end
mcp.read_resource = function(uri, context, callback)
  check("read_resource", 3, callback)
  if callback == nil then return read_resource(uri, context) end
  callback(read_resource(uri, context))
end
`;

export function installCallbackForms(state: LuaState): void {
  state.exec(CALLBACK_FORMS, '=[moonhub mcp callbacks]');
}

/**
 * The owner a `mcp.reset(source)` means. Botster names a plugin's registrations by its file,
 * `"@" .. path` (`@/home/me/plugins/notes/init.lua`); moonhub by the plugin's name (`notes`).
 */
export function ownerFromSource(source: string): string {
  if (!source.startsWith('@')) return source;
  const parts = source
    .slice(1)
    .split(/[\\/]+/)
    .filter(Boolean);
  const file = parts.pop() ?? '';
  if (file === 'init.lua' && parts.length > 0) return parts[parts.length - 1]!;
  return file.replace(/\.lua$/, '');
}

/** Keys of a context table that say who is calling: taken from the hub, never from the table. */
const IDENTITY_KEYS = new Set([
  'session_uuid',
  'agent_name',
  'target',
  'principal',
  'hub_id',
  'plugin',
  'request_id',
  'uri',
  'call_id',
]);

/**
 * The other fields of a context table a Lua caller passed (strings, numbers, booleans), bounded
 * so a context cannot carry a data set: at most 64 fields of at most 4096 bytes each.
 */
export function contextFields(
  given: Record<string, unknown>,
): Record<string, string | number | boolean> | undefined {
  let out: Record<string, string | number | boolean> | undefined;
  let n = 0;
  for (const [key, value] of Object.entries(given)) {
    if (IDENTITY_KEYS.has(key)) continue;
    if (typeof value === 'string') {
      if (Buffer.byteLength(value) > MAX_FIELD_BYTES) continue;
    } else if (typeof value !== 'number' && typeof value !== 'boolean') continue;
    if (++n > MAX_FIELDS) break;
    (out ??= {})[key] = value;
  }
  return out;
}

export const MAX_FIELDS = 64;
export const MAX_FIELD_BYTES = 4096;

/** A resource content item as Lua sees it: MCP's spelling (Botster's) and the snake_case one. */
export function luaResourceItem(c: ResourceContents): Record<string, unknown> {
  return { uri: c.uri, text: c.text, blob: c.blob, mimeType: c.mimeType, mime_type: c.mimeType };
}
