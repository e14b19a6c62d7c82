/**
 * chilkat.Mcp against another moonhub: the 2026-07-28 era when asked for (stateless, no session
 * id) and 2025-06-18 by default, the debug log file, an HTTP proxy and bind address through
 * set_connection_settings, and chilkat used inside a plugin's tool handler.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { startFakeUpstream } from '../helpers/fake-upstream.js';

const run = promisify(execFile);

function text(result: unknown): string {
  return ((result as { content: { text?: string }[] }).content ?? [])
    .map((c) => c.text ?? '')
    .join('\n');
}

describe('chilkat.Mcp against moonhub', () => {
  let upstream: MoonhubProcess;
  let hub: MoonhubProcess;
  let proxy: Server;
  const proxied: string[] = [];
  const work = mkdtempSync(join(tmpdir(), 'moonhub-chilkat-hub-'));
  const upDir = join(work, 'up');
  const hubDir = join(work, 'hub');
  const empty = join(work, 'empty');

  async function script(body: string): Promise<Record<string, unknown>> {
    const file = join(work, `s${Math.random().toString(36).slice(2)}.lua`);
    writeFileSync(
      file,
      `local chilkat = require("chilkat")\nlocal URL = ${JSON.stringify(upstream.url)}\n${body}`,
    );
    const { stdout } = await run(
      process.execPath,
      [BIN, 'run', file, '--plugins', empty, '--root', work],
      {
        timeout: 30_000,
      },
    );
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  before(async () => {
    for (const d of [upDir, hubDir, empty]) mkdirSync(d);
    writeFileSync(
      join(upDir, 'greeter.lua'),
      `mcp.tool("greet", { input_schema = { type = "object", properties = { name = { type = "string" } } } },
        function(p) return "Hello, " .. (p.name or "?") end)`,
    );
    upstream = await startMoonhub(['--plugins', upDir]);
    writeFileSync(
      join(hubDir, 'relay.lua'),
      `local chilkat = require("chilkat")
       mcp.tool("relay", {}, function()
         local m <close> = chilkat.Mcp.new()
         assert(m:connect(${JSON.stringify(upstream.url)}))
         local args, out = chilkat.JsonObject.new(), chilkat.JsonObject.new()
         args:update_string("name", "plugin")
         assert(m:call_tool("greet", args, out))
         return out:string_of("content[0].text")
       end)`,
    );
    hub = await startMoonhub(['--plugins', hubDir]);
    // A forward HTTP proxy that records what passes through it.
    proxy = createServer((req, res) => {
      proxied.push(`${req.method} ${req.url}`);
      const target = new URL(req.url!);
      const up = request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname + target.search,
          method: req.method,
          headers: { ...req.headers, host: target.host },
        },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      up.on('error', () => res.writeHead(502).end());
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  });

  after(async () => {
    await hub?.stop();
    await upstream?.stop();
    proxy?.closeAllConnections();
    await new Promise((r) => proxy?.close(r));
  });

  it('speaks 2026-07-28 when protocol_version asks for it, 2025-06-18 by default', async () => {
    const r = await script(`
      local modern = chilkat.Mcp.new()
      modern.protocol_version = "2026-07-28"
      assert(modern:connect(URL))
      local args, out = chilkat.JsonObject.new(), chilkat.JsonObject.new()
      args:update_string("name", "modern")
      assert(modern:call_tool("greet", args, out))
      local legacy = chilkat.Mcp.new()
      assert(legacy:connect(URL))
      local out2 = chilkat.JsonObject.new()
      assert(legacy:call_tool("greet", args, out2))
      return { mv = modern.protocol_version, ms = modern.session_id, mt = out:string_of("content[0].text"),
               lv = legacy.protocol_version, ls = legacy.session_id ~= "", lt = out2:string_of("content[0].text"),
               closed = legacy:close() }`);
    assert.equal(r.mv, '2026-07-28');
    assert.equal(r.ms, '');
    assert.equal(r.mt, 'Hello, modern');
    assert.equal(r.lv, '2025-06-18');
    assert.equal(r.ls, true);
    assert.equal(r.lt, 'Hello, modern');
    assert.equal(r.closed, true);
  });

  it('writes last_error_text of each method to debug_log_file_path (a VFS path)', async () => {
    const r = await script(`
      local m = chilkat.Mcp.new()
      m.verbose_logging = true
      m.debug_log_file_path = "tmp/chilkat.log"
      assert(m:connect(URL))
      m:list_tools(chilkat.JsonObject.new())
      local outside = chilkat.Mcp.new()
      outside.debug_log_file_path = "/etc/passwd"
      outside:connect(URL)
      return { text = m.last_error_text, outside = outside.last_error_text }`);
    assert.match(String(r.text), /ListTools: Success/);
    const log = readFileSync(join(work, 'tmp', 'chilkat.log'), 'utf8');
    assert.match(log, /Connect: Success \(url http/);
    assert.match(log, /ListTools: Success/);
    assert.match(String(r.outside), /debug log not written: \/etc\/passwd: outside \/source\//);
  });

  it('goes through an HTTP proxy and bind address from set_connection_settings', async () => {
    const port = (proxy.address() as AddressInfo).port;
    const r = await script(`
      local sock = chilkat.Socket.new()
      sock.http_proxy_hostname = "127.0.0.1"
      sock.http_proxy_port = ${port}
      sock.client_ip_address = "127.0.0.1"
      local m = chilkat.Mcp.new()
      assert(m:set_connection_settings(sock))
      assert(m:connect(URL))
      local out = chilkat.JsonObject.new()
      assert(m:list_tools(out))
      return { n = out:size_of_array("tools") }`);
    assert.ok((r.n as number) >= 1);
    assert.ok(
      proxied.some((l) => l.startsWith(`POST ${upstream.url}`)),
      proxied.join('\n'),
    );
  });

  it('sends auth_token as a bearer token; without it the HTTP status is the error', async () => {
    const fake = await startFakeUpstream();
    fake.token = 'sesame';
    try {
      const r = await script(`
        local m = chilkat.Mcp.new()
        local ok, err = m:connect(${JSON.stringify(fake.url)})
        m.auth_token = "sesame"
        local ok2 = m:connect(${JSON.stringify(fake.url)})
        local out = chilkat.JsonObject.new()
        assert(m:call_tool("work", chilkat.JsonObject.new(), out))
        return { denied = err, ok = ok2, text = out:string_of("content[0].text") }`);
      assert.match(String(r.denied), /^Connect: .*401/);
      assert.equal(r.ok, true);
      assert.equal(r.text, 'worked');
    } finally {
      await fake.close();
    }
  });

  it('works inside a plugin tool handler', async () => {
    const { client } = await connectHttpClient(hub.url, 'legacy');
    try {
      assert.equal(text(await client.callTool({ name: 'relay', arguments: {} })), 'Hello, plugin');
    } finally {
      await client.close();
    }
  });
});
