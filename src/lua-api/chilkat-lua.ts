/**
 * The Lua half of `require("chilkat")`: classes whose objects are empty tables with a metatable,
 * so every property read and write goes through the host (which checks names, types and
 * read-only properties), methods with the colon, `<close>` and `__gc`. Misuse raises at the
 * caller's line (`pcall` around the host call keeps the host's position out, `error(_, 2)` puts
 * the caller's); a method that waits yields through `wait`.
 */
export const CHILKAT_LUA = String.raw`
-- The host's two functions, left by installChilkat in a global that only this chunk reads.
local host = __chilkat_host
if host == nil then error("chilkat: the module's host functions are gone from this state", 2) end
__chilkat_host = nil
local hc, hw = host.call, host.wait
local RAISE = "\0chilkat:raise"
local JSON_METHODS = { "load", "emit", "string_of", "int_of", "bool_of", "has_member",
  "size_of_array", "update_string", "update_int", "update_bool", "update_null",
  "update_new_object", "update_new_array", "append_string", "append_int", "append_bool",
  "delete", "name_at", "string_at", "type_at", "dispose" }
local MCP_METHODS = { "connect", "list_tools", "call_tool", "list_resources", "read_resource",
  "list_prompts", "get_prompt", "close", "get_last_json_data", "set_connection_settings",
  "dispose" }
local MCP_ASYNC = { connect = true, list_tools = true, call_tool = true, list_resources = true,
  read_resource = true, list_prompts = true, get_prompt = true, close = true }
local SOCKET_METHODS = { "dispose" }
local pack, unpack, pcall, error, type, select, setmetatable, rawequal, pairs, tostring =
  table.pack, table.unpack, pcall, error, type, select, setmetatable, rawequal, pairs, tostring
local ids = setmetatable({}, { __mode = "k" })
local class_of = setmetatable({}, { __mode = "k" })

local function to_host(v)
  local id = ids[v]
  if id then return { __chilkat = id } end
  return v
end

local function self_id(self, cls, name)
  local id = ids[self]
  if id == nil or class_of[self] ~= cls then
    local got = class_of[self] and ("chilkat." .. class_of[self]) or type(self)
    error("calling '" .. name .. "' on bad self (chilkat." .. cls .. " expected, got " .. got .. ")", 3)
  end
  return id
end

local EVENTS = { abort_check = true, percent_done = true, progress_info = true }

local function make(cls, methods, async, special)
  local mt = { __name = "chilkat." .. cls }
  local bound = {}
  for _, name in pairs(methods) do
    local is_async = async[name]
    bound[name] = function(self, ...)
      local id = self_id(self, cls, name)
      local n = select("#", ...)
      local args = pack(...)
      for i = 1, n do args[i] = to_host(args[i]) end
      local r = pack(pcall(hc, "invoke", id, name, unpack(args, 1, n)))
      if not r[1] then error(r[2], 2) end
      if is_async then
        r = pack(hw(r[2]))
        if rawequal(r[1], RAISE) then error(r[2], 0) end
        return unpack(r, 1, r.n)
      end
      return unpack(r, 2, r.n)
    end
  end
  for name, f in pairs(special or {}) do
    bound[name] = function(self, ...) return f(self_id(self, cls, name), ...) end
  end
  mt.__index = function(self, k)
    local m = bound[k]
    if m then return m end
    local ok, v = pcall(hc, "get", ids[self], k)
    if not ok then error(v, 2) end
    return v
  end
  mt.__newindex = function(self, k, v)
    local ok, e = pcall(hc, "set", ids[self], k, to_host(v))
    if not ok then error(e, 2) end
  end
  local function release(self)
    local id = ids[self]
    if id then hc("free", id) end
  end
  mt.__gc = release
  mt.__close = release
  mt.__tostring = function(self) return "chilkat." .. cls .. " #" .. tostring(ids[self]) end
  local C = {}
  function C.new()
    local obj = setmetatable({}, mt)
    ids[obj] = hc("new", cls)
    class_of[obj] = cls
    return obj
  end
  return setmetatable(C, { __call = function(_, ...) return C.new(...) end })
end

local function set_event_handler(id, t)
  if t == nil then
    hc("events", id)
    return true
  end
  if type(t) ~= "table" then
    error("bad argument #1 to 'set_event_handler' (table or nil expected, got " .. type(t) .. ")", 2)
  end
  for k, v in pairs(t) do
    if not EVENTS[k] then
      error("set_event_handler: unknown event '" .. tostring(k) ..
        "' (abort_check, percent_done or progress_info expected)", 2)
    end
    if type(v) ~= "function" then
      error("bad argument #1 to 'set_event_handler' (" .. k .. " must be a function, got " .. type(v) .. ")", 2)
    end
  end
  hc("events", id, t.abort_check, t.percent_done, t.progress_info)
  return true
end

return {
  Mcp = make("Mcp", MCP_METHODS, MCP_ASYNC, { set_event_handler = set_event_handler }),
  JsonObject = make("JsonObject", JSON_METHODS, {}),
  Socket = make("Socket", SOCKET_METHODS, {}),
  unlock_bundle = function(code)
    if type(code) ~= "string" then
      error("bad argument #1 to 'unlock_bundle' (string expected, got " .. type(code) .. ")", 2)
    end
    return true
  end,
  version = "11.7.0",
}
`;

/** What `require("chilkat")` loads (host.find_module hands it out as a built-in module). */
export const CHILKAT_MODULE = { source: CHILKAT_LUA, chunkname: '[chilkat]' };
