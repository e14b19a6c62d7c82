-- Progress events: percent_done and progress_info fire while a long tool call runs, and
-- abort_check fires every heartbeat_ms.
local URL = ... or "http://127.0.0.1:3001/mcp" -- moonhub run FILE.lua URL: another server

local chilkat = require("chilkat")
local mcp <close> = chilkat.Mcp.new()
assert(mcp:connect(URL))

local percents, infos, checks = {}, {}, 0
local deadline = os.time() + 30 -- give up after 30 seconds
mcp.heartbeat_ms = 250 -- call abort_check 4 times per second
mcp:set_event_handler({
  percent_done = function(pct)
    percents[#percents + 1] = pct
    return false -- return true to abort the method in progress
  end,
  progress_info = function(name, value)
    infos[#infos + 1] = name .. ": " .. value
  end,
  abort_check = function()
    checks = checks + 1
    return os.time() > deadline
  end,
})

local args = chilkat.JsonObject.new()
args:update_int("duration", 2)
args:update_int("steps", 4)
local result = chilkat.JsonObject.new()
assert(mcp:call_tool("trigger-long-running-operation", args, result))
mcp:set_event_handler(nil)

return {
  text = result:string_of("content[0].text"),
  percents = percents,
  progress_infos = #infos,
  abort_checks = checks,
}
