-- Call tools with chilkat.Mcp: arguments in one JsonObject, the result in another.
local URL = ... or "http://127.0.0.1:3001/mcp" -- moonhub run FILE.lua URL: another server

local chilkat = require("chilkat")
local mcp <close> = chilkat.Mcp()
assert(mcp:connect(URL))

local args = chilkat.JsonObject.new()
local result = chilkat.JsonObject.new()

args:update_string("message", "Hello from Lua")
assert(mcp:call_tool("echo", args, result))
local echo = result:string_of("content[0].text")

args = chilkat.JsonObject.new()
args:update_int("a", 2)
args:update_int("b", 40)
assert(mcp:call_tool("get-sum", args, result))
local sum = result:string_of("content[0].text")

args = chilkat.JsonObject.new()
args:update_string("location", "Chicago")
assert(mcp:call_tool("get-structured-content", args, result))
local weather = {
  has_structured = result:has_member("structuredContent"),
  temperature_is_number = result:int_of("structuredContent.temperature") ~= nil,
  conditions = result:string_of("structuredContent.conditions"),
}

assert(mcp:call_tool("get-tiny-image", chilkat.JsonObject.new(), result))
local image
for i = 0, result:size_of_array("content") - 1 do
  result.i = i
  if result:string_of("content[i].type") == "image" then
    image = { mime = result:string_of("content[i].mimeType"), base64_length = #result:string_of("content[i].data") }
  end
end

-- A tool that runs but fails returns true here, with isError in the result.
args = chilkat.JsonObject.new()
args:update_string("location", "Atlantis")
local ok = mcp:call_tool("get-structured-content", args, result)

return {
  echo = echo,
  sum = sum,
  weather = weather,
  image = image,
  invalid_call_ok = ok,
  invalid_call_is_error = result:bool_of("isError"),
}
