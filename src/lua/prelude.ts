/**
 * The Lua half of the sandbox, run once in every new state before any user code. It receives the
 * host table and the await marker as chunk arguments (never globals), keeps the originals it
 * needs in locals out of user reach, and returns the helpers the JS side keeps references to.
 *
 * Waiting on JS: a host async function returns a request id; its wrapper yields `(MARK, id)` and
 * the scheduler resumes it with `(true, values...)` or `(false, message)`. `coroutine.resume` and
 * `coroutine.wrap` are replaced by versions that pass such yields up to the scheduler, so a wait
 * works at any depth, inside user coroutines too.
 */
export const PRELUDE = String.raw`
local host, MARK, ARRAY_MT = ...
local yield, resume, status, create = coroutine.yield, coroutine.resume, coroutine.status, coroutine.create
local pack, unpack, error, type, select, setmetatable, getmetatable, rawequal =
  table.pack, table.unpack, error, type, select, setmetatable, getmetatable, rawequal
local load_text, pcall, tostring = load, pcall, tostring

local function wrap_async(raw)
  return function(...)
    local r = pack(yield(MARK, raw(...)))
    if r[1] then return unpack(r, 2, r.n) end
    error(r[2], 2)
  end
end

local function forward(co, ok, ...)
  if ok and rawequal((...), MARK) and status(co) == "suspended" then
    return forward(co, resume(co, yield(...)))
  end
  return ok, ...
end

coroutine.resume = function(co, ...)
  return forward(co, resume(co, ...))
end

local function wrap_result(ok, ...)
  if ok then return ... end
  error((...), 0)
end

coroutine.wrap = function(f)
  local co = create(f)
  return function(...)
    return wrap_result(forward(co, resume(co, ...)))
  end
end

-- load is text-only: a binary chunk answers "attempt to load a binary chunk (mode is 't')".
load = function(chunk, name, mode, ...)
  if select("#", ...) > 0 then return load_text(chunk, name, "t", ...) end
  return load_text(chunk, name, "t")
end

local gc = collectgarbage
local gc_allowed = { collect = true, count = true, step = true, isrunning = true }
collectgarbage = function(opt, ...)
  opt = opt or "collect"
  if not gc_allowed[opt] then
    error("collectgarbage('" .. tostring(opt) .. "') is not allowed in the sandbox", 2)
  end
  return gc(opt, ...)
end

dofile, loadfile = nil, nil
string.dump = nil
local traceback = debug.traceback
debug = { traceback = traceback }
local os_time, os_clock, os_date, os_difftime = os.time, os.clock, os.date, os.difftime
os = { time = os_time, clock = os_clock, date = os_date, difftime = os_difftime }

-- require: Lua modules from the plugin's own folder (the host finds and compiles them).
local loaded, loading = {}, {}
package = { loaded = loaded }
require = function(name)
  if type(name) ~= "string" then
    error("bad argument #1 to 'require' (string expected, got " .. type(name) .. ")", 2)
  end
  local m = loaded[name]
  if m ~= nil then return m end
  if loading[name] then error("loop or previous error loading module '" .. name .. "'", 2) end
  -- Fix (test/lua): called directly, a refusal was positioned at this prelude line
  -- ("[moonhub prelude]:72: module 'x' not found"); through pcall it has no position, and
  -- error(_, 2) puts the caller's.
  local found, fn, where = pcall(host.find_module, name)
  if not found then error(fn, 2) end
  loading[name] = true
  local ok, res = pcall(fn, name, where)
  loading[name] = nil
  if not ok then error(res, 0) end
  if res == nil then res = true end
  loaded[name] = res
  return res
end

json = {
  null = host.null,
  encode = host.json_encode,
  decode = host.json_decode,
  array = function(t)
    if t ~= nil and type(t) ~= "table" then
      error("bad argument #1 to 'array' (table expected, got " .. type(t) .. ")", 2)
    end
    return setmetatable(t or {}, ARRAY_MT)
  end,
  is_array = function(t) return getmetatable(t) == ARRAY_MT end,
}

print = host.print

return wrap_async
`;
