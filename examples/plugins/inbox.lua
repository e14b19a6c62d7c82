-- inbox: private message boxes for agents, one per MCP session.
--
-- An agent's address is its session uuid (inbox_whoami tells it). Any caller may send to an
-- address; only the session that owns an inbox may read it. The owner is always taken from
-- context.session_uuid, never from an argument, so one agent cannot drain another's inbox.
-- inbox_admin_dump is the one exception, and it is administrative: see ADMIN_AGENTS below.
--
-- Callers without a session: context.session_uuid is nil for a caller that has no MCP session
-- (a stateless HTTP request, for example). Such a caller has no inbox of its own, so inbox_read,
-- inbox_peek and inbox_whoami refuse it with an error that says a session is needed. We do not
-- fall back to context.principal: several sessions (several agents) may share one principal, and
-- keying the inbox by principal would let each of them drain the others' messages. Sending needs
-- no session; the message then names the sender's principal, if any, instead of a session.
--
-- Messages are kept in memory: they last until the hub stops or this plugin reloads.

-- Agents allowed to call inbox_admin_dump. An agent name reaches a handler only from an
-- authenticated principal: a session the operator created (`moonhub session create --agent
-- operator`) or an OAuth token whose agent claim says so. A caller without a principal (auth
-- mode none) is never an administrator, whatever it claims.
local ADMIN_AGENTS = { "operator" }

-- Bounds that keep the plugin well inside its state's memory ceiling (64 MiB by default) however
-- callers behave: at most MAX_TOTAL_MESSAGES * MAX_TEXT_BYTES bytes of text are held.
local MAX_MESSAGES_PER_INBOX = 500
local MAX_TOTAL_MESSAGES = 2000
local MAX_TEXT_BYTES = 16384

local inboxes = {} -- session uuid -> array of messages, oldest first
local total_messages = 0
local next_message_id = 1

-- Returns the caller's session uuid, or raises an error a client can act on.
local function own_session(context, tool)
  local session = context.session_uuid
  if session == nil or session == "" then
    error(tool .. " needs to know which agent is calling: it reads the caller's own inbox, and "
      .. "this call came without a session (context.session_uuid is nil; a 2026-07-28 request to a "
      .. "hub without authentication has none). Give each agent a session token (`moonhub session "
      .. "create --agent NAME` on a hub with auth mode token; over stdio, the entry it prints), or "
      .. "use a client that keeps a 2025 MCP session (Mcp-Session-Id).", 0)
  end
  return session
end

local function is_admin(context)
  if context.principal == nil or context.agent_name == nil then
    return false
  end
  for _, admin in ipairs(ADMIN_AGENTS) do
    if admin == context.agent_name then
      return true
    end
  end
  return false
end

-- Copies up to `limit` messages from the front of `box` into a JSON array.
local function take(box, limit)
  local out = json.array()
  for i = 1, math.min(limit, #box) do
    out[i] = box[i]
  end
  return out
end

local LIMIT_SCHEMA = {
  type = "integer",
  minimum = 1,
  maximum = MAX_MESSAGES_PER_INBOX,
  description = "At most this many messages, oldest first (default: all)",
}

mcp.tool("inbox_whoami", {
  title = "My inbox address",
  description = "Return the calling session's uuid: the address other agents send to with inbox_send.",
  annotations = { readOnlyHint = true },
}, function(_, context)
  local session = own_session(context, "inbox_whoami")
  return {
    session_uuid = session,
    agent_name = context.agent_name,
    pending = #(inboxes[session] or {}),
  }
end)

mcp.tool("inbox_send", {
  title = "Send a message",
  description = "Put a text message into another agent's inbox. `to` is the recipient's session uuid (its inbox_whoami).",
  input_schema = {
    type = "object",
    properties = {
      to = { type = "string", minLength = 1, description = "Recipient session uuid" },
      text = { type = "string", minLength = 1, maxLength = MAX_TEXT_BYTES, description = "Message text" },
    },
    required = { "to", "text" },
    additionalProperties = false,
  },
}, function(params, context)
  -- maxLength counts characters; the store's bound is in bytes (UTF-8 text may use 4 a character).
  if #params.text > MAX_TEXT_BYTES then
    error(string.format("text is %d bytes long; the limit is %d", #params.text, MAX_TEXT_BYTES), 0)
  end
  local box = inboxes[params.to] or {}
  if #box >= MAX_MESSAGES_PER_INBOX then
    error(string.format("the inbox of %s is full (%d messages): its owner must read it first",
      params.to, MAX_MESSAGES_PER_INBOX), 0)
  end
  if total_messages >= MAX_TOTAL_MESSAGES then
    error(string.format("all inboxes together hold %d messages, the limit; try again later",
      total_messages), 0)
  end
  inboxes[params.to] = box
  local message = {
    id = next_message_id,
    from = context.session_uuid, -- nil for a caller without a session
    from_principal = context.principal,
    from_agent = context.agent_name,
    text = params.text,
  }
  next_message_id = next_message_id + 1
  box[#box + 1] = message
  total_messages = total_messages + 1
  log.debug("inbox message queued", { id = message.id, to = params.to })
  return { sent = true, id = message.id, to = params.to, queued = #box }
end)

mcp.tool("inbox_read", {
  title = "Read my inbox",
  description = "Return and remove messages from the calling session's own inbox, oldest first.",
  input_schema = {
    type = "object",
    properties = { limit = LIMIT_SCHEMA },
    additionalProperties = false,
  },
  annotations = { destructiveHint = true },
}, function(params, context)
  local session = own_session(context, "inbox_read")
  local box = inboxes[session] or {}
  local messages = take(box, params.limit or #box)
  -- Drop what was returned: shift the unread rest to the front and clear the tail.
  local n, k = #box, #messages
  table.move(box, k + 1, n, 1)
  for i = n - k + 1, n do
    box[i] = nil
  end
  total_messages = total_messages - k
  if #box == 0 then
    inboxes[session] = nil
  end
  return { messages = messages, remaining = #box }
end)

mcp.tool("inbox_peek", {
  title = "Peek at my inbox",
  description = "Return messages from the calling session's own inbox without removing them.",
  input_schema = {
    type = "object",
    properties = { limit = LIMIT_SCHEMA },
    additionalProperties = false,
  },
  annotations = { readOnlyHint = true },
}, function(params, context)
  local box = inboxes[own_session(context, "inbox_peek")] or {}
  return { messages = take(box, params.limit or #box), total = #box }
end)

mcp.tool("inbox_admin_dump", {
  title = "Dump every inbox (administrative)",
  description = "ADMINISTRATIVE: return every session's pending messages without removing them. "
    .. "Only the agents listed in ADMIN_AGENTS (inbox.lua) may call it; not meant for other agents.",
  annotations = { readOnlyHint = true },
}, function(_, context)
  if not is_admin(context) then
    error("inbox_admin_dump is administrative: the calling agent ("
      .. tostring(context.agent_name) .. ") is not in ADMIN_AGENTS in inbox.lua", 0)
  end
  log.warn("inbox_admin_dump used", {
    principal = context.principal,
    agent = context.agent_name,
    session = context.session_uuid,
  })
  local dump = {}
  local total = 0
  for session, box in pairs(inboxes) do
    dump[session] = take(box, #box)
    total = total + #box
  end
  return { inboxes = dump, total = total }
end)
