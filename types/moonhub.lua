---@meta moonhub
-- LuaLS definitions of moonhub's Lua API (docs/lua-api.md): every global a plugin, a
-- `moonhub run` script or an `execute` script can use besides Lua's sandboxed standard library.
-- Point your editor at this folder: `.luarc.json` {"workspace.library": ["<moonhub>/types"]}
-- (`moonhub new hub` writes it). test/lua-api/definitions.test.ts holds it against a real state.

---@alias moonhub.JsonValue string|number|boolean|table|lightuserdata|nil

---Who is calling, and functions that reach the calling client while the call runs.
---@class moonhub.Context
---@field hub_id string This hub's id.
---@field session_uuid string? The caller's moonhub session (or MCP session id); nil without one.
---@field agent_name string? The calling agent's name, when known.
---@field target string? The target the session was started for, when known.
---@field principal string? Who authenticated: `session:<uuid>` or `oauth:<sub>`; nil without auth.
---@field plugin string? The calling plugin, when the call comes from Lua.
---@field request_id string|integer? The JSON-RPC request id.
---@field uri string? The URI being read (resource handlers only).
---@field call_id integer? Names the call inside the hub (binds the context functions to it).
---@field client_capabilities table? The capabilities the client declared (read on demand).
---@field progress fun(done: number, total?: number, message?: string): boolean Sends a progress notification; false without a progress token.
---@field log fun(level: "debug"|"info"|"notice"|"warning"|"error"|"critical"|"alert"|"emergency", data: string|table, logger?: string) Sends a log message to the client.
---@field elicit fun(request: table): table Asks the user for input; waits; returns `{action, content}`.
---@field sample fun(request: table): table Asks the client's model for a completion; waits.
---@field list_roots fun(request?: table): table Asks the client for its roots; waits; returns `{roots}`.
---@field input fun(requests: table<string, table>): table<string, table> Asks several questions at once; waits for all.
---@field poll_later fun(retry_ms?: integer): boolean Lets go of the HTTP connection while the call goes on (SSE polling).

---A tool's definition for `mcp.tool`.
---@class moonhub.ToolSchema
---@field description string? Shown to the model; default "".
---@field title string? A human-readable name.
---@field input_schema table? JSON Schema of the arguments (`inputSchema` works too).
---@field output_schema table? JSON Schema of the result's structuredContent (`outputSchema` works too).
---@field annotations table? MCP tool annotations, e.g. `{ readOnlyHint = true }`.
---@field timeout_ms integer? Wall-clock limit of one call; default 5000.
---@field requires string[]? Client capabilities the tool needs (`sampling`, `elicitation`, `roots`).
---@field icons table[]? Icons: `{ { src = "https://...", mimeType = "image/png" } }`.

---One argument of a prompt.
---@class moonhub.PromptArgument
---@field name string The argument's name.
---@field description string? Shown to the user.
---@field required boolean? Whether it must be given.
---@field complete (fun(value: string, args: table, context: moonhub.Context): string[]|table)? Completes the argument.

---A prompt's definition for `mcp.prompt`.
---@class moonhub.PromptSchema
---@field description string? Default "".
---@field title string? A human-readable name.
---@field arguments moonhub.PromptArgument[]? The prompt's arguments (they arrive as strings).
---@field timeout_ms integer? Wall-clock limit of one render; default 5000.
---@field icons table[]? Icons, as for tools.

---A resource's definition for `mcp.resource`.
---@class moonhub.ResourceSchema
---@field name string? Shown in resource lists; default: the URI or template.
---@field description string?
---@field title string?
---@field mime_type string? Default MIME type of what the handler returns (`mimeType` works too).
---@field timeout_ms integer? Wall-clock limit of one read; default 5000.
---@field complete table<string, fun(value: string, args: table, context: moonhub.Context): string[]|table>? Completes template variables.
---@field icons table[]? Icons, as for tools.

---A tool handler: the arguments (checked against input_schema) and the caller; returns the result.
---@alias moonhub.ToolHandler fun(params: table, context: moonhub.Context): any
---A prompt handler: returns `{description?, messages}` or a string (one user message).
---@alias moonhub.PromptHandler fun(args: table<string, string>, context: moonhub.Context): table|string
---A resource handler: the template's variables; returns a string, `{text|blob, mime_type?}` or a list of those.
---@alias moonhub.ResourceHandler fun(params: table<string, string>, context: moonhub.Context): string|table

---Options of `mcp.proxy`.
---@class moonhub.ProxyOptions
---@field prefix string? Put before every imported tool and prompt name.
---@field token string? Sent as `Authorization: Bearer <token>` (HTTP).
---@field headers table<string, string>? Extra HTTP headers.
---@field env table<string, string>? Environment additions of a `stdio:` child.
---@field cwd string? Working directory of a `stdio:` child.
---@field include string[]? Globs of upstream names to import (default all).
---@field exclude string[]? Globs of upstream names to leave out.
---@field timeout_ms integer? Longest time of one call to the upstream; default 60000.
---@field connect_timeout_ms integer? Longest time to connect; default 10000.
---@field idle_timeout_ms integer? Longest silence in one call; default timeout_ms.
---@field transform_arguments (fun(name: string, arguments: table, context: moonhub.Context): table?)? Replaces the arguments sent upstream.
---@field on_auth_error (fun(status: integer): string|table|nil)? On 401/403: a new token or `{token, headers}` to retry once.
---@field pin boolean? Refuse a tool whose upstream definition changed since it was approved.
---@field oauth boolean|table? OAuth 2.1 to an HTTP upstream.

---The result of `mcp.poll` and `task.await`.
---@class moonhub.CallResult
---@field id string The request id.
---@field is_error boolean Whether the call failed.
---@field content string The result's text items joined (or its structuredContent's JSON).
---@field value any `task.spawn` only: the function's first return value.

---A picture made by `mcp.image`.
---@class moonhub.Image
---@field type "image"
---@field mime_type string
---@field data string Base64 of the bytes.
---@field bytes integer
---@field width integer
---@field height integer
---@field path string?

---The hub's registry: what the plugin offers to MCP clients, and what it uses of others'.
mcp = {}

---Registers a tool, or replaces the tool of that name.
---@param name string Non-empty; e.g. `notes.add`.
---@param schema moonhub.ToolSchema
---@param handler moonhub.ToolHandler
function mcp.tool(name, schema, handler) end

---Removes the tool of that name, whichever plugin registered it.
---@param name string
---@return boolean removed
function mcp.remove_tool(name) end

---Lists the tools (those a session sees, with `session_uuid`).
---@param session_uuid string?
---@return table[]|nil tools `{ name, description, input_schema }` each
---@return string? err
function mcp.list_tools(session_uuid) end

---Calls a tool as the caller `context` describes (inside a handler: its real caller).
---`is_error` is true when the tool reported an error with content. Botster's callback form
---calls `callback(content, err, is_error)` instead and returns nothing.
---@param name string
---@param params table?
---@param context moonhub.Context|table?
---@return table[]|nil content
---@return string? err
---@return boolean? is_error
---@overload fun(name: string, params: table?, context: moonhub.Context|table?, callback: fun(content: table[]|nil, err: string?, is_error: boolean?))
function mcp.call_tool(name, params, context) end

---The number of registered tools.
---@return integer
function mcp.count() end

---Registers a prompt, or replaces the prompt of that name.
---@param name string
---@param schema moonhub.PromptSchema
---@param handler moonhub.PromptHandler
function mcp.prompt(name, schema, handler) end

---Removes the prompt of that name.
---@param name string
---@return boolean removed
function mcp.remove_prompt(name) end

---Lists the prompts: `{ name, description, arguments }` each.
---@return table[]
function mcp.list_prompts() end

---Renders a prompt: `{ description, messages }`.
---@param name string
---@param args table<string, string>?
---@return table|nil result
---@return string? err
function mcp.get_prompt(name, args) end

---The number of registered prompts.
---@return integer
function mcp.count_prompts() end

---Registers a resource (a fixed URI) or a resource template (`note://{id}`).
---@param uri_template string
---@param schema moonhub.ResourceSchema
---@param handler moonhub.ResourceHandler
function mcp.resource(uri_template, schema, handler) end

---Removes the resource or template registered under that URI or template.
---@param uri_template string
---@return boolean removed
function mcp.remove_resource(uri_template) end

---Lists the resource templates: `{ uri_template, name, description, mime_type }` each.
---@return table[]
function mcp.list_resource_templates() end

---Lists the fixed resources: `{ uri, name, description, mime_type }` each.
---@return table[]
function mcp.list_resources() end

---Reads a resource as the caller `context` describes: an array of contents. Botster's
---callback form calls `callback(contents, err)` instead and returns nothing.
---@param uri string
---@param context moonhub.Context|table?
---@return table[]|nil contents
---@return string? err
---@overload fun(uri: string, context: moonhub.Context|table?, callback: fun(contents: table[]|nil, err: string?))
function mcp.read_resource(uri, context) end

---The number of registered resources and templates.
---@return integer
function mcp.count_resources() end

---Tells subscribed clients that the resource at `uri` changed.
---@param uri string
function mcp.resource_updated(uri) end

---Shows an upstream MCP server's tools, prompts and resources as this plugin's; waits up to 5 s.
---@param url string `http(s)://...` or `stdio:<command line>`
---@param opts moonhub.ProxyOptions?
---@return boolean connected
---@return string? err Why it is not connected yet (it keeps retrying).
function mcp.proxy(url, opts) end

---Removes what `mcp.proxy(url)` imported and closes the connection.
---@param url string
---@return boolean existed
function mcp.remove_proxy(url) end

---Starts a batch: list changes are announced once, at `mcp.end_batch()`.
function mcp.begin_batch() end

---Ends a batch started with `mcp.begin_batch()`.
function mcp.end_batch() end

---Removes everything `source` registered (everything, with nil), its proxies too.
---@param source string?
function mcp.reset(source) end

---Starts a tool call without waiting; returns its request id.
---@param toolName string
---@param args table|string? A table, or a JSON object text.
---@return string requestId
function mcp.call(toolName, args) end

---The call's result once it ended, nil while it runs.
---@param requestId string
---@return moonhub.CallResult?
function mcp.poll(requestId) end

---The names of the tools this state may call, sorted.
---@return string[]
function mcp.listTools() end

---Makes a picture value from a VFS path, the bytes, or a table carrying base64.
---@param source string|table
---@return moonhub.Image
function mcp.image(source) end

---Waiting and concurrency.
task = {}

---Suspends the running call for `ms` milliseconds (the hub keeps serving).
---@param ms number
function task.sleep(ms) end

---Waits for one call (an id) or several (an array of ids) and returns their results.
---@param ids string|string[]
---@return moonhub.CallResult|moonhub.CallResult[]
function task.await(ids) end

---Runs `fn(...)` in a coroutine of its own; `task.await` on the id gives its result.
---@param fn function
---@param ... any
---@return string id
function task.spawn(fn, ...) end

---Calls that read as if they blocked.
tools = {}

---Calls a tool, waits, and returns the decoded result; raises on a tool error.
---@param name string
---@param action string|table? An action name (sent as `action`), or the arguments.
---@param args table?
---@return any value
---@return moonhub.Image[]? images Pictures no placeholder names.
function tools.use(name, action, args) end

---Files, under `/source/` (the plugin's folder; `/source/tmp/` is writable).
vfs = {}

---Reads a file.
---@param path string
---@return string|nil data
---@return string? err
function vfs.read(path) end

---Writes a file under `/source/tmp/`.
---@param path string
---@param data string
---@return boolean|nil ok
---@return string? err
function vfs.write(path, data) end

---Lists the names in a directory.
---@param path string
---@return string[]|nil names
---@return string? err
function vfs.list(path) end

---Whether a file or directory exists.
---@param path string
---@return boolean
function vfs.exists(path) end

---The hub's structured log, tagged with the plugin.
log = {}

---Logs at debug level.
---@param message string
---@param fields table?
function log.debug(message, fields) end

---Logs at info level.
---@param message string
---@param fields table?
function log.info(message, fields) end

---Logs at warn level.
---@param message string
---@param fields table?
function log.warn(message, fields) end

---Logs at error level.
---@param message string
---@param fields table?
function log.error(message, fields) end

---JSON encoding and decoding.
json = {}

---The JSON null sentinel (a unique light userdata; truthy).
---@type lightuserdata
json.null = nil

---Encodes a value as JSON text; raises `json.encode: ...` on what JSON cannot hold.
---@param value any
---@return string
function json.encode(value) end

---Decodes JSON text (null becomes `json.null`); raises `json.decode: ...` on invalid JSON.
---@param text string
---@return any
function json.decode(text) end

---Marks `t` (or a new table) as a JSON array, so it encodes as `[]` even when empty.
---@generic T: table
---@param t T?
---@return T
function json.array(t) end

---Whether `t` carries the JSON array mark.
---@param t table
---@return boolean
function json.is_array(t) end

---The plugin's settings and secrets from the config (`plugins.settings.<plugin>`).
secrets = {}

---The plugin's setting `key` (`${ENV_VAR}` already substituted), or nil; never logged or shown.
---@param key string
---@return any value
function secrets.get(key) end

---Tells the caller how the work is going (a progress/log message; stderr in `moonhub run`).
---@param text string
---@param params table?
function notice(text, params) end
