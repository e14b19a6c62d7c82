-- Read resources and fetch prompts with chilkat.Mcp.
local URL = ... or "http://127.0.0.1:3001/mcp" -- moonhub run FILE.lua URL: another server

local chilkat = require("chilkat")
local mcp <close> = chilkat.Mcp.new()
assert(mcp:connect(URL))

local json = chilkat.JsonObject.new()
assert(mcp:list_resources(json))
local resource_count = json:size_of_array("resources")
local first_uri = json:string_of("resources[0].uri")

local contents = chilkat.JsonObject.new()
assert(mcp:read_resource(first_uri, contents))
local read_uri = contents:string_of("contents[0].uri")

assert(mcp:list_prompts(json))
local prompts = {}
for i = 0, json:size_of_array("prompts") - 1 do
  json.i = i
  prompts[#prompts + 1] = json:string_of("prompts[i].name")
end

local args = chilkat.JsonObject.new()
args:update_string("city", "Lisbon")
local prompt = chilkat.JsonObject.new()
assert(mcp:get_prompt("args-prompt", args, prompt))

return {
  resource_count = resource_count,
  first_uri = first_uri,
  read_uri = read_uri,
  prompts = prompts,
  prompt_role = prompt:string_of("messages[0].role"),
  prompt_text = prompt:string_of("messages[0].content.text"),
}
