-- Aborting a method from an event handler: a true return makes the method fail (nil, err); an
-- error raised in a handler is raised again from the method. The object stays usable.
local URL = ... or "http://127.0.0.1:3001/mcp" -- moonhub run FILE.lua URL: another server

local chilkat = require("chilkat")
local mcp <close> = chilkat.Mcp.new()
assert(mcp:connect(URL))

local args = chilkat.JsonObject.new()
args:update_int("duration", 10)
args:update_int("steps", 10)
local result = chilkat.JsonObject.new()

mcp:set_event_handler({ percent_done = function(pct) return pct >= 20 end })
local started = os.time()
local ok, err = mcp:call_tool("trigger-long-running-operation", args, result)
local aborted = { ok = ok, err = err, seconds = os.time() - started, success = mcp.last_method_success }

mcp:set_event_handler({ progress_info = function() error("stop right there", 0) end })
local raised_ok, raised = pcall(mcp.call_tool, mcp, "trigger-long-running-operation", args, result)

mcp:set_event_handler(nil)
local echo_args = chilkat.JsonObject.new()
echo_args:update_string("message", "still here")
assert(mcp:call_tool("echo", echo_args, result))

return {
  aborted = aborted,
  raised = { ok = raised_ok, err = raised },
  after = result:string_of("content[0].text"),
}
