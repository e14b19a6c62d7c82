-- How chilkat.Mcp reports failures (nil, err and last_error_text) and misuse (a Lua error).
local URL = ... or "http://127.0.0.1:3001/mcp" -- moonhub run FILE.lua URL: another server
local DEAD = "http://127.0.0.1:39999/mcp" -- nothing listens here

local chilkat = require("chilkat")
local mcp = chilkat.Mcp.new()

local out = {}

-- A refused connection: nil plus the error text, which is also last_error_text.
local ok, err = mcp:connect(DEAD)
out.refused = { ok = ok, err = err, same = err == mcp.last_error_text, success = mcp.last_method_success }

-- Wrapping in assert() raises that text instead.
local raised, msg = pcall(function() assert(mcp:connect(DEAD)) end)
out.assert_raised = not raised and msg:find("refused", 1, true) ~= nil

-- Calling before connecting fails the same way.
ok, err = mcp:list_tools(chilkat.JsonObject.new())
out.not_connected = err

-- A JSON-RPC error from the server: the full envelope is kept for get_last_json_data.
assert(mcp:connect(URL))
ok, err = mcp:read_resource("demo://no/such/resource", chilkat.JsonObject.new())
local envelope = chilkat.JsonObject.new()
mcp:get_last_json_data(envelope)
out.rpc_error = { ok = ok, err = err, code = envelope:int_of("error.code"), has_id = envelope:has_member("id") }

-- Misuse raises a Lua error.
local function misuse(f)
  local good, e = pcall(f)
  return good and "no error" or e
end
out.misuse = {
  bad_argument = misuse(function() mcp:connect({}) end),
  missing_argument = misuse(function() mcp:connect() end),
  unknown_property = misuse(function() return mcp.no_such_thing end),
  read_only = misuse(function() mcp.server_name = "x" end),
  wrong_type = misuse(function() mcp.heartbeat_ms = "fast" end),
  out_of_range = misuse(function() mcp.connect_timeout_ms = -5 end),
  wrong_class = misuse(function() mcp:call_tool("echo", mcp, chilkat.JsonObject.new()) end),
  bad_event = misuse(function() mcp:set_event_handler({ percentdone = function() end }) end),
  socket_extra = misuse(function() chilkat.Socket.new().ssl_protocol = "TLS 1.3" end),
}

mcp:close()
mcp:dispose()
out.misuse.disposed = misuse(function() return mcp.connected end)
return out
