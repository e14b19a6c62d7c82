---@meta chilkat
-- LuaLS definitions of moonhub's built-in `require("chilkat")` module: an MCP client over
-- Streamable HTTP following the Chilkat Mcp reference (docs/lua-api.md, "MCP client").
-- Methods that fail return `nil, err`; misuse raises at the caller's line.

---An MCP client connection. Methods wait without blocking the hub.
---@class chilkat.Mcp
---@field auth_token string Sent as a bearer token [""].
---@field connect_timeout_ms integer Connect time limit [30000].
---@field idle_timeout_ms integer Longest silence while waiting; 0 = none [180000].
---@field heartbeat_ms integer How often `abort_check` fires; 0 = never [0].
---@field protocol_version string Revision to ask for; after connect, the negotiated one ["2025-06-18"].
---@field verbose_logging boolean [false]
---@field debug_log_file_path string A VFS path under /source/tmp/ each method appends its last_error_text to [""].
---@field last_method_success boolean Whether the last method succeeded.
---@field connected boolean (read-only) Whether connected.
---@field server_name string (read-only) The server's name.
---@field server_version string (read-only) The server's version.
---@field server_instructions string (read-only) The server's instructions.
---@field session_id string (read-only) The MCP session id ("" for a stateless server).
---@field last_error_text string (read-only) What went wrong last.
---@field last_error_html string (read-only) last_error_text as HTML.
---@field last_error_xml string (read-only) last_error_text as XML.
---@field version string (read-only) The module's version.
local Mcp = {}

---Makes a client (`chilkat.Mcp()` does the same).
---@return chilkat.Mcp
function Mcp.new() end

---Connects and initializes.
---@param url string `http://` or `https://` endpoint
---@return boolean|nil ok
---@return string? err
function Mcp:connect(url) end

---Lists the tools (first page) into `json`.
---@param json chilkat.JsonObject
---@return boolean|nil ok
---@return string? err
function Mcp:list_tools(json) end

---Calls a tool; true also when the tool ran and reported an error (isError in the result).
---@param name string
---@param args_json chilkat.JsonObject
---@param result_json chilkat.JsonObject
---@return boolean|nil ok
---@return string? err
function Mcp:call_tool(name, args_json, result_json) end

---Lists the resources (first page) into `json`.
---@param json chilkat.JsonObject
---@return boolean|nil ok
---@return string? err
function Mcp:list_resources(json) end

---Reads a resource into `json`.
---@param uri string
---@param json chilkat.JsonObject
---@return boolean|nil ok
---@return string? err
function Mcp:read_resource(uri, json) end

---Lists the prompts (first page) into `json`.
---@param json chilkat.JsonObject
---@return boolean|nil ok
---@return string? err
function Mcp:list_prompts(json) end

---Gets a prompt into `json`.
---@param name string
---@param args_json chilkat.JsonObject
---@param json chilkat.JsonObject
---@return boolean|nil ok
---@return string? err
function Mcp:get_prompt(name, args_json, json) end

---Ends the session (HTTP DELETE; a 405 is fine).
---@return boolean|nil ok
---@return string? err
function Mcp:close() end

---Copies the whole JSON-RPC envelope of the last response into `json`.
---@param json chilkat.JsonObject
---@return boolean
function Mcp:get_last_json_data(json) end

---Takes the HTTP proxy and bind address of a `chilkat.Socket`.
---@param sock chilkat.Socket
---@return boolean
function Mcp:set_connection_settings(sock) end

---Sets (or with nil removes) the event handlers: abort_check, percent_done, progress_info.
---@param handlers { abort_check: (fun(): boolean?)?, percent_done: (fun(pct: integer): boolean?)?, progress_info: (fun(name: string, value: string))? }?
---@return boolean
function Mcp:set_event_handler(handlers) end

---Frees the object now (also done by the GC and `<close>`).
function Mcp:dispose() end

---A JSON document with Chilkat-style paths (`a.b[0].c`, 0-based; `[i]`, `[j]`, `[k]`).
---@class chilkat.JsonObject
---@field i integer The index `[i]` in a path stands for.
---@field j integer The index `[j]` in a path stands for.
---@field k integer The index `[k]` in a path stands for.
---@field emit_compact boolean Whether emit() writes compact JSON [true].
---@field size integer (read-only) The number of members.
---@field last_error_text string (read-only) What went wrong last.
---@field last_method_success boolean Whether the last method succeeded.
---@field version string (read-only) The module's version.
local JsonObject = {}

---Makes an empty JSON object (`chilkat.JsonObject()` does the same).
---@return chilkat.JsonObject
function JsonObject.new() end

---Loads JSON text.
---@param s string
---@return boolean
function JsonObject:load(s) end

---The JSON text.
---@return string
function JsonObject:emit() end

---The string at `path`, or nil when absent.
---@param path string
---@return string?
function JsonObject:string_of(path) end

---The integer at `path`.
---@param path string
---@return integer
function JsonObject:int_of(path) end

---The boolean at `path`.
---@param path string
---@return boolean
function JsonObject:bool_of(path) end

---Whether `path` exists.
---@param path string
---@return boolean
function JsonObject:has_member(path) end

---The array size at `path`, -1 when it is not an array.
---@param path string
---@return integer
function JsonObject:size_of_array(path) end

---Sets a string at `path`, creating the path.
---@param path string
---@param v string
---@return boolean
function JsonObject:update_string(path, v) end

---Sets an integer at `path`, creating the path.
---@param path string
---@param v integer
---@return boolean
function JsonObject:update_int(path, v) end

---Sets a boolean at `path`, creating the path.
---@param path string
---@param v boolean
---@return boolean
function JsonObject:update_bool(path, v) end

---Sets null at `path`, creating the path.
---@param path string
---@return boolean
function JsonObject:update_null(path) end

---Sets a new empty object at `path`.
---@param path string
---@return boolean
function JsonObject:update_new_object(path) end

---Sets a new empty array at `path`.
---@param path string
---@return boolean
function JsonObject:update_new_array(path) end

---Appends a string member.
---@param name string
---@param v string
---@return boolean
function JsonObject:append_string(name, v) end

---Appends an integer member.
---@param name string
---@param v integer
---@return boolean
function JsonObject:append_int(name, v) end

---Appends a boolean member.
---@param name string
---@param v boolean
---@return boolean
function JsonObject:append_bool(name, v) end

---Deletes a member.
---@param name string
---@return boolean
function JsonObject:delete(name) end

---The name of member `i` (0-based).
---@param i integer
---@return string?
function JsonObject:name_at(i) end

---The string value of member `i` (0-based).
---@param i integer
---@return string?
function JsonObject:string_at(i) end

---The type of member `i`: 1 string, 2 number, 3 object, 4 array, 5 boolean, 6 null.
---@param i integer
---@return integer
function JsonObject:type_at(i) end

---Frees the object now.
function JsonObject:dispose() end

---Connection settings for `Mcp:set_connection_settings`: an HTTP proxy and a bind address.
---@class chilkat.Socket
---@field http_proxy_hostname string
---@field http_proxy_port integer
---@field http_proxy_username string
---@field http_proxy_password string
---@field client_ip_address string The local address to bind.
local Socket = {}

---Makes a settings object (`chilkat.Socket()` does the same).
---@return chilkat.Socket
function Socket.new() end

---Frees the object now.
function Socket:dispose() end

---@class chilkat
local chilkat = {
  Mcp = Mcp,
  JsonObject = JsonObject,
  Socket = Socket,
  ---The module's version.
  version = "11.7.0",
}

---Accepted for compatibility; does nothing.
---@param code string
---@return boolean
function chilkat.unlock_bundle(code) end

return chilkat
