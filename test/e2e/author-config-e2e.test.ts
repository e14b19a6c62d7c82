/**
 * Issue 15, items 6 and 7 end to end: an `mcpServers` file copied in with `moonhub import`
 * proxies a real stdio server and a real HTTP server, scoped by target like plugins; a secret
 * from the environment reaches its plugin (and an upstream's header) and appears nowhere else:
 * not in hub_status, not in the debug log, not in errors.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { EVERYTHING, startEverythingHttp, type HttpUpstream } from '../helpers/everything.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { connectWithToken, createSession, moonhubCli } from '../helpers/auth-hub.js';

const SECRET = 'mh-secret-7f3a9c2e41d8';

function text(result: unknown): string {
  return ((result as { content: { text?: string }[] }).content ?? [])
    .map((c) => c.text ?? '')
    .join('\n');
}

describe('moonhub import: an mcpServers file proxies a real stdio and a real HTTP server', () => {
  let http: HttpUpstream;
  let hub: MoonhubProcess;
  let dir: string;
  let config: string;
  const clients: Client[] = [];

  before(async () => {
    http = await startEverythingHttp();
    dir = mkdtempSync(join(tmpdir(), 'moonhub-import-'));
    mkdirSync(join(dir, 'plugins'));
    writeFileSync(
      join(dir, 'plugins', 'local.lua'),
      'mcp.tool("local.ping", {}, function() return "pong" end)\n',
    );
    config = join(dir, 'moonhub.yaml');
    writeFileSync(
      config,
      [
        '# my hub',
        'plugins: { dirs: [plugins] }',
        'auth: { mode: token }',
        'targets:',
        '  stdio-only: { plugins: [ev] } # a comment import must keep',
        '  everything: {}',
        'agents: { dev: {} }',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'mcp.json'),
      JSON.stringify({
        mcpServers: {
          ev: { command: process.execPath, args: [EVERYTHING, 'stdio'], env: { X: '1' } },
          web: { type: 'http', url: http.url, autoApprove: ['echo'] },
        },
      }),
    );
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await hub?.stop();
    await http?.stop();
  });

  it('copies the servers into upstreams, keeping the file and its comments', () => {
    const r = moonhubCli(['import', join(dir, 'mcp.json'), '--config', config]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /added to .*moonhub\.yaml: ev, web/);
    assert.match(r.stderr, /web: ignored autoApprove/);
    const written = readFileSync(config, 'utf8');
    assert.match(written, /# a comment import must keep/);
    assert.match(written, /upstreams:\n {2}ev:\n {4}command:/);
    // A second import keeps what is there unless --replace.
    const again = moonhubCli(['import', join(dir, 'mcp.json'), '--config', config]);
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stderr, /already there, kept .*: ev, web/);
  });

  it('refuses a file without servers and an entry with both command and url, leaving the config', () => {
    const before = readFileSync(config, 'utf8');
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ nothing: {} }));
    const r1 = moonhubCli(['import', join(dir, 'bad.json'), '--config', config]);
    assert.equal(r1.status, 1);
    assert.match(r1.stderr, /has no "mcpServers"/);
    writeFileSync(
      join(dir, 'both.json'),
      JSON.stringify({ mcpServers: { both: { command: 'x', url: 'http://127.0.0.1:1/mcp' } } }),
    );
    const r2 = moonhubCli(['import', join(dir, 'both.json'), '--config', config]);
    assert.equal(r2.status, 1);
    assert.match(r2.stderr, /'upstreams\.both' needs either command .* or url/);
    assert.equal(readFileSync(config, 'utf8'), before);
  });

  it('serves both upstreams under their names, and scopes them by target like plugins', async () => {
    const data = join(dir, 'data');
    hub = await startMoonhub(['--config', config, '--data', data]);
    const all = createSession([
      '--agent',
      'dev',
      '--target',
      'everything',
      '--config',
      config,
      '--data',
      data,
      '--url',
      hub.url,
    ]);
    const only = createSession([
      '--agent',
      'dev',
      '--target',
      'stdio-only',
      '--config',
      config,
      '--data',
      data,
      '--url',
      hub.url,
    ]);
    // session create prints ready entries for the clients people use, with the token in them.
    const entries = (all as unknown as { clients: { claude_code: string; vscode: unknown } })
      .clients;
    assert.ok(entries.claude_code.endsWith(`--header 'Authorization: Bearer ${all.token}'`));
    assert.deepEqual(entries.vscode, {
      servers: {
        'moonhub-dev': {
          type: 'http',
          url: hub.url,
          headers: { Authorization: `Bearer ${all.token}` },
        },
      },
    });
    const a = await connectWithToken(hub.url, 'modern', all.token);
    clients.push(a.client);
    const deadline = Date.now() + 20_000;
    let names: string[] = [];
    while (Date.now() < deadline) {
      names = (await a.client.listTools()).tools.map((t) => t.name);
      if (names.includes('ev_echo') && names.includes('web_echo')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(names.includes('ev_echo') && names.includes('web_echo'), names.join(', '));
    assert.ok(names.includes('local.ping'));
    assert.match(
      text(await a.client.callTool({ name: 'ev_echo', arguments: { message: 'via stdio' } })),
      /via stdio/,
    );
    assert.match(
      text(await a.client.callTool({ name: 'web_echo', arguments: { message: 'via http' } })),
      /via http/,
    );

    const status = JSON.parse(
      text(await a.client.callTool({ name: 'hub_status', arguments: {} })),
    ) as {
      upstreams: { owner: string; state: string; url: string }[];
    };
    const owners = Object.fromEntries(status.upstreams.map((u) => [u.owner, u]));
    assert.equal(owners.ev?.state, 'connected');
    assert.equal(owners.web?.state, 'connected');
    assert.equal(owners.ev?.url, 'stdio:node', 'a stdio upstream shows only its program');

    const b = await connectWithToken(hub.url, 'modern', only.token);
    clients.push(b.client);
    const seen = (await b.client.listTools()).tools.map((t) => t.name);
    assert.ok(seen.includes('ev_echo'), seen.join(', '));
    assert.ok(!seen.some((n) => n.startsWith('web_') || n.startsWith('local.')), seen.join(', '));
    const refused = await b.client.callTool({ name: 'web_echo', arguments: { message: 'x' } }).then(
      (r) => text(r),
      (err: Error) => err.message,
    );
    assert.match(refused, /Unknown tool: web_echo/);
  });
});

describe('a config with only upstreams', () => {
  it('list and call reach a configured stdio upstream without a client', () => {
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-upstreams-only-'));
    const config = join(dir, 'moonhub.json');
    writeFileSync(
      config,
      JSON.stringify({
        upstreams: {
          ev: { command: process.execPath, args: [EVERYTHING, 'stdio'], include: ['echo'] },
          off: { command: 'no-such-program', disabled: true },
        },
      }),
    );
    const list = moonhubCli(['list', '--config', config]);
    assert.equal(list.status, 0, list.stderr);
    assert.match(list.stdout, /^ {2}ev_echo /m);
    assert.doesNotMatch(list.stdout, /ev\.get-sum|off\./, 'include and disabled apply');
    const call = moonhubCli(['call', 'ev_echo', '--args', '{"message":"hi"}', '--config', config]);
    assert.equal(call.status, 0, call.stderr);
    assert.match(call.stdout, /Echo: hi/);
  });
});

describe('plugins.settings and ${ENV}: a secret reaches its plugin and nothing else', () => {
  let fake: FakeUpstream;
  let hub: MoonhubProcess;
  let client: Client;

  before(async () => {
    fake = await startFakeUpstream();
    fake.token = SECRET; // the upstream answers only with the secret as its bearer token
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-secrets-'));
    mkdirSync(join(dir, 'plugins'));
    writeFileSync(
      join(dir, 'plugins', 'sec.lua'),
      `mcp.tool("sec.check", {}, function()
         local t = secrets.get("token")
         return { length = #t, head = t:sub(1, 3), n = secrets.get("n"), list = secrets.get("list"),
                  absent = secrets.get("nope") == nil, other = secrets.get("other") == nil }
       end)
       mcp.tool("sec.fail", { input_schema = { type = "object", properties = { x = { type = "integer" } } } },
         function(p) error("upstream refused us", 0) end)
       local ok = pcall(secrets.get)
       mcp.tool("sec.bad_call", {}, function() return tostring(ok) end)
       `,
    );
    writeFileSync(
      join(dir, 'plugins', 'other.lua'),
      'mcp.tool("other.peek", {}, function() return tostring(secrets.get("token")) end)\n',
    );
    const config = join(dir, 'moonhub.json');
    writeFileSync(
      config,
      JSON.stringify({
        $schema: 'https://moonhub.dev/schemas/config.schema.json',
        plugins: {
          dirs: ['plugins'],
          settings: {
            sec: { token: '${MH_TEST_SECRET}', n: 3, list: ['a', '${MH_TEST_PLAIN:-b}'] },
          },
        },
        upstreams: {
          guarded: { url: fake.url, headers: { Authorization: 'Bearer ${MH_TEST_SECRET}' } },
          dead: {
            url: 'http://127.0.0.1:9/mcp',
            headers: { 'X-Key': '${MH_TEST_SECRET}' },
            connect_timeout_ms: 500,
          },
        },
      }),
    );
    hub = await startMoonhub(['--config', config], { MH_TEST_SECRET: SECRET });
    const { connectHttpClient } = await import('../helpers/mcp-client.js');
    client = (await connectHttpClient(hub.url, 'legacy')).client;
  });

  after(async () => {
    await client?.close();
    await hub?.stop();
    await fake?.close();
  });

  it('the plugin reads its settings with secrets.get; other plugins do not get them', async () => {
    const r = await client.callTool({ name: 'sec.check', arguments: {} });
    assert.deepEqual(r.structuredContent, {
      length: SECRET.length,
      head: 'mh-',
      n: 3,
      list: ['a', 'b'],
      absent: true,
      other: true,
    });
    assert.equal(text(await client.callTool({ name: 'other.peek', arguments: {} })), 'nil');
    assert.equal(text(await client.callTool({ name: 'sec.bad_call', arguments: {} })), 'false');
  });

  it('an upstream header built from the secret works (the upstream wants it)', async () => {
    const deadline = Date.now() + 15_000;
    let names: string[] = [];
    while (Date.now() < deadline && !names.includes('guarded_work')) {
      names = (await client.listTools()).tools.map((t) => t.name);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(names.includes('guarded_work'), names.join(', '));
  });

  it('the secret is in no status, list, error or log line', async () => {
    await client.callTool({ name: 'sec.fail', arguments: {} });
    await client.callTool({ name: 'sec.fail', arguments: { x: 'not a number' } });
    await client.callTool({ name: 'nope', arguments: {} }).catch(() => undefined);
    const status = text(await client.callTool({ name: 'hub_status', arguments: {} }));
    assert.match(status, /"owner": "dead"/, 'the failing upstream is reported');
    const lists = JSON.stringify([
      await client.listTools(),
      await client.listResources(),
      await client.listPrompts(),
    ]);
    await hub.waitForLog(/dead/);
    for (const [where, body] of [
      ['hub_status', status],
      ['the lists', lists],
      ['the debug log', hub.log()],
    ] as const)
      assert.ok(!body.includes(SECRET), `the secret appears in ${where}`);
  });

  it('an unset ${VAR} stops the start with an error that names the key and the variable only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-unset-'));
    const config = join(dir, 'moonhub.yaml');
    writeFileSync(
      config,
      'plugins:\n  dirs: [.]\n  settings:\n    x: { token: "${MH_TEST_UNSET_VAR}" }\n',
    );
    const r = moonhubCli(['serve', '--config', config, '--port', '0']);
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /'plugins\.settings\.x\.token' uses \$\{MH_TEST_UNSET_VAR\}, but the environment variable MH_TEST_UNSET_VAR is not set/,
    );
  });
});
