-- Connect to an MCP server with chilkat.Mcp, read what the handshake told us, and list the tools.
-- Run: npx @modelcontextprotocol/server-everything streamableHttp   (listens on port 3001)
--      moonhub run examples/scripts/chilkat-connect.lua
local URL = ... or "http://127.0.0.1:3001/mcp" -- moonhub run FILE.lua URL: another server

local chilkat = require("chilkat")
chilkat.unlock_bundle("Anything for 30-day trial")

local mcp <close> = chilkat.Mcp.new()
mcp.connect_timeout_ms = 5000
print("protocol version requested: " .. mcp.protocol_version)

assert(mcp:connect(URL))
print("connected to " .. mcp.server_name .. " " .. mcp.server_version)

local json = chilkat.JsonObject.new()
assert(mcp:list_tools(json))

local names = {}
local n = json:size_of_array("tools")
for i = 0, n - 1 do
  json.i = i
  names[#names + 1] = json:string_of("tools[i].name")
end

local summary = {
  connected = mcp.connected,
  server_name = mcp.server_name,
  protocol_version = mcp.protocol_version,
  has_session = mcp.session_id ~= "",
  tool_count = n,
  tools = names,
}
assert(mcp:close())
summary.connected_after_close = mcp.connected
return summary
