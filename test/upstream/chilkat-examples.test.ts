/**
 * Every chilkat example script (examples/scripts/chilkat-*.lua) run with `moonhub run` against a
 * real server-everything, its printed result checked: connect and handshake facts, tool calls,
 * resources and prompts, progress events, aborts, failures as `nil, err`, misuse as Lua errors.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BIN, ROOT } from '../helpers/moonhub-process.js';
import { startEverythingHttp, type HttpUpstream } from '../helpers/everything.js';
import { refusedUrl } from '../helpers/fake-upstream.js';

const run = promisify(execFile);
const SCRIPTS = join(ROOT, 'examples', 'scripts');

describe('chilkat example scripts against server-everything', () => {
  let upstream: HttpUpstream;
  let dead: string;
  const work = mkdtempSync(join(tmpdir(), 'moonhub-chilkat-'));
  const plugins = join(work, 'plugins');
  mkdirSync(plugins);

  /** Runs an example with the server's real address in place of the documented default. */
  async function example(name: string): Promise<Record<string, unknown>> {
    const source = readFileSync(join(SCRIPTS, name), 'utf8')
      .replaceAll('http://127.0.0.1:3001/mcp', upstream.url)
      .replaceAll('http://127.0.0.1:39999/mcp', dead);
    const file = join(work, name);
    writeFileSync(file, source);
    const { stdout } = await run(
      process.execPath,
      [BIN, 'run', file, '--plugins', plugins, '--root', work],
      { timeout: 60_000 },
    );
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  before(async () => {
    upstream = await startEverythingHttp();
    dead = await refusedUrl();
  });
  after(async () => {
    await upstream?.stop();
  });

  it('has a test for every example', () => {
    const tested = [
      'chilkat-abort.lua',
      'chilkat-call-tool.lua',
      'chilkat-connect.lua',
      'chilkat-errors.lua',
      'chilkat-events.lua',
      'chilkat-json.lua',
      'chilkat-resources-prompts.lua',
    ];
    assert.deepEqual(
      readdirSync(SCRIPTS)
        .filter((f) => f.startsWith('chilkat-'))
        .sort(),
      tested,
    );
  });

  it('chilkat-connect: handshake facts and the tool list', async () => {
    const r = await example('chilkat-connect.lua');
    assert.equal(r.connected, true);
    assert.equal(r.server_name, 'mcp-servers/everything');
    assert.equal(r.protocol_version, '2025-06-18');
    assert.equal(r.has_session, true);
    assert.ok((r.tools as string[]).includes('get-sum'));
    assert.equal(r.tool_count, (r.tools as string[]).length);
    assert.equal(r.connected_after_close, false);
  });

  it('chilkat-call-tool: text, structured content, images, isError', async () => {
    const r = await example('chilkat-call-tool.lua');
    assert.equal(r.echo, 'Echo: Hello from Lua');
    assert.match(String(r.sum), /42/);
    const w = r.weather as Record<string, unknown>;
    assert.equal(w.has_structured, true);
    assert.equal(typeof w.conditions, 'string');
    const img = r.image as { mime: string; base64_length: number };
    assert.equal(img.mime, 'image/png');
    assert.ok(img.base64_length > 10);
    assert.equal(r.invalid_call_ok, true);
    assert.equal(r.invalid_call_is_error, true);
  });

  it('chilkat-resources-prompts: resources read, prompts fetched', async () => {
    const r = await example('chilkat-resources-prompts.lua');
    assert.ok((r.resource_count as number) > 0);
    assert.equal(r.read_uri, r.first_uri);
    assert.ok((r.prompts as string[]).includes('args-prompt'));
    assert.equal(r.prompt_role, 'user');
    assert.match(String(r.prompt_text), /Lisbon/);
  });

  it('chilkat-events: percent_done rises to 100, progress_info and abort_check fire', async () => {
    const r = await example('chilkat-events.lua');
    assert.match(String(r.text), /Long running operation completed/);
    const pcts = r.percents as number[];
    assert.ok(pcts.length >= 2, JSON.stringify(pcts));
    assert.deepEqual(
      [...pcts].sort((a, b) => a - b),
      pcts,
      'rising',
    );
    assert.equal(pcts.at(-1), 100);
    assert.ok((r.progress_infos as number) >= 2);
    assert.ok((r.abort_checks as number) >= 2, 'heartbeat_ms 250 over ~2 s');
  });

  it('chilkat-abort: true aborts with nil, err; a raised error is raised again; object usable', async () => {
    const r = await example('chilkat-abort.lua');
    const a = r.aborted as Record<string, unknown>;
    assert.equal(a.ok, undefined);
    assert.match(String(a.err), /aborted by the percent_done event handler/);
    assert.equal(a.success, false);
    assert.ok((a.seconds as number) < 8, 'aborted well before the 10 s operation ended');
    const raised = r.raised as Record<string, unknown>;
    assert.equal(raised.ok, false);
    assert.equal(raised.err, 'stop right there');
    assert.equal(r.after, 'Echo: still here');
  });

  it('chilkat-errors: failures as nil, err naming what happened; misuse raises', async () => {
    const r = await example('chilkat-errors.lua');
    const refused = r.refused as Record<string, unknown>;
    assert.match(String(refused.err), /connection refused/);
    assert.equal(refused.same, true);
    assert.equal(refused.success, false);
    assert.equal(r.assert_raised, true);
    assert.match(String(r.not_connected), /not connected/);
    const rpc = r.rpc_error as Record<string, unknown>;
    assert.match(String(rpc.err), /JSON-RPC error -32602/);
    assert.equal(rpc.code, -32602);
    assert.equal(rpc.has_id, true);
    const m = r.misuse as Record<string, string>;
    assert.match(
      m.bad_argument!,
      /:\d+: bad argument #1 to 'connect' \(string expected, got table\)/,
    );
    assert.match(
      m.missing_argument!,
      /bad argument #1 to 'connect' \(string expected, got no value\)/,
    );
    assert.match(m.unknown_property!, /unknown property or method 'no_such_thing'/);
    assert.match(m.read_only!, /'server_name' is read-only/);
    assert.match(m.wrong_type!, /'heartbeat_ms' expects an integer, got string/);
    assert.match(m.out_of_range!, /out of range/);
    assert.match(
      m.wrong_class!,
      /bad argument #2 to 'call_tool' \(chilkat\.JsonObject expected, got chilkat\.Mcp\)/,
    );
    assert.match(m.bad_event!, /:\d+: set_event_handler: unknown event 'percentdone'/);
    assert.match(m.socket_extra!, /Socket carries only http_proxy_hostname/);
    assert.match(m.disposed!, /chilkat\.Mcp: the object was disposed/);
  });

  it('chilkat-json: paths, index variables, updates, members, emit', async () => {
    const r = await example('chilkat-json.lua');
    assert.deepEqual(r.names, ['a/2', 'b/0']);
    assert.equal(r.owner, 'moonhub');
    assert.equal(r.count, 2);
    assert.equal(r.fresh, false);
    assert.equal(r.not_array, -1);
    assert.deepEqual(r.members, ['tools:4', 'meta:3', 'note:1']);
    assert.equal(r.note, 'appended');
    assert.deepEqual(JSON.parse(String(r.emitted)).meta, {
      owner: { name: 'moonhub' },
      count: 2,
      fresh: false,
      parent: null,
      tags: [],
    });
    assert.match(String((r.bad as Record<string, unknown>).err), /invalid JSON/);
  });
});
