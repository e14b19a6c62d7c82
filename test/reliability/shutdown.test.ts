/**
 * Graceful shutdown (issue 12, item 5) against real hub processes: on SIGTERM a call in flight
 * still gets its answer (with `Connection: close`), new connections are refused and a request
 * arriving on an open connection gets 503 `shutting_down`, the process exits 0 within its deadline; a call longer than the drain
 * deadline gets `drain_deadline` and the process still exits 0; a second signal exits at once;
 * stdio drains too; stdio upstream children do not outlive the hub; `--workers` drains through
 * the primary.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { EVERYTHING } from '../helpers/everything.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { scratch, type Scratch } from './helpers.js';

const SLOW = String.raw`
mcp.tool("slow.wait", {
  input_schema = { type = "object", properties = { ms = { type = "integer" } } },
  timeout_ms = 60000,
}, function(p)
  task.sleep(p.ms)
  return "waited " .. p.ms
end)
mcp.tool("slow.progress", {
  input_schema = { type = "object", properties = { ms = { type = "integer" } } },
  timeout_ms = 60000,
}, function(p, context)
  context.progress(1, 2, "half way")
  task.sleep(p.ms)
  return "streamed " .. p.ms
end)
`;

const HEADERS = {
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
  'MCP-Protocol-Version': '2026-07-28',
};

function callBody(id: number, ms: number, tool = 'slow.wait'): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name: tool,
      arguments: { ms },
      _meta: {
        progressToken: `p${id}`,
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  });
}

/** One 2026-07-28 tools/call of slow.wait over its own HTTP request. */
async function slowCall(
  url: string,
  id: number,
  ms: number,
  tool = 'slow.wait',
): Promise<{ status: number; body: string; type: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, 'Mcp-Method': 'tools/call', 'Mcp-Name': tool },
    body: callBody(id, ms, tool),
  });
  return {
    status: res.status,
    body: await res.text(),
    type: res.headers.get('content-type') ?? '',
  };
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
}

function exitOf(child: ChildProcess): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode, at: Date.now() });
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pids whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Opens a subscriptions/listen stream and reads it to its end. */
async function listenStream(url: string): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, 'Mcp-Method': 'subscriptions/listen' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'listen-1',
      method: 'subscriptions/listen',
      params: {
        notifications: { toolsListChanged: true },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  return res.text();
}

/** Sends raw HTTP/1.1 text on one connection and collects everything until it closes. */
function rawConnection(port: number): { write(text: string): void; all: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  let data = '';
  socket.on('data', (d: Buffer) => (data += d.toString()));
  const all = new Promise<string>((resolve) => {
    socket.on('close', () => resolve(data));
    socket.on('error', () => resolve(data));
  });
  return { write: (text) => socket.write(text), all };
}

function rawPost(port: number, body: string, name: string): string {
  return (
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n` +
    `Mcp-Method: tools/call\r\nMcp-Name: ${name}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

describe('graceful shutdown over HTTP', () => {
  let dir: Scratch;
  let config: string;

  before(() => {
    dir = scratch('moonhub-drain-');
    dir.write('plugins/slow/init.lua', SLOW);
    config = dir.write(
      'moonhub.yaml',
      `plugins: { dirs: [plugins] }
shutdown: { drain_ms: 6000 }
upstreams:
  ever: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(EVERYTHING)}, stdio] }
`,
    );
  });
  after(() => dir.remove());

  it('answers calls in flight, refuses new work, closes upstream children, exits 0', async () => {
    const hub = await startMoonhub(['--config', config]);
    const port = Number(new URL(hub.url).port);
    let kids = childrenOf(hub.child.pid!);
    for (let i = 0; i < 300 && kids.length === 0; i++) {
      await sleep(50);
      kids = childrenOf(hub.child.pid!);
    }
    const exit = exitOf(hub.child);

    // A: a 1.5 s call on a raw connection.
    const a = rawConnection(port);
    a.write(rawPost(port, callBody(1, 1500), 'slow.wait'));
    // D: a request whose body is still on its way when the signal comes.
    const d = rawConnection(port);
    const late = rawPost(port, callBody(3, 10), 'slow.wait');
    d.write(late.slice(0, -10));
    // B: a 3 s call on its own connection keeps the drain going after A has answered; its
    // progress made its answer an SSE stream, whose last event must be the answer.
    const b = slowCall(hub.url, 2, 3000, 'slow.progress');
    // C: an open subscriptions/listen stream, which must end with its closing result.
    const c = listenStream(hub.url);
    await sleep(400);
    const signalled = Date.now();
    hub.child.kill('SIGTERM');
    await hub.waitForLog(/stopped accepting/, 0, 5_000);
    d.write(late.slice(-10));

    // A new connection is refused: the hub no longer listens.
    await assert.rejects(fetch(hub.url, { method: 'POST', headers: HEADERS, body: '{}' }));

    const [aText, bRes, cText, dText, ended] = await Promise.all([a.all, b, c, d.all, exit]);
    assert.match(cText, /subscriptions\/acknowledged[\s\S]*"resultType":"complete"/, cText);
    assert.match(aText, /HTTP\/1\.1 200[\s\S]*waited 1500/, aText);
    // The answer in flight tells the client not to reuse the connection.
    assert.match(aText.split('\r\n\r\n')[0]!, /[Cc]onnection: close/, aText);
    // The request that arrived on an open connection: 503 shutting_down, Connection: close.
    assert.match(dText, /HTTP\/1\.1 503[\s\S]*[Cc]onnection: close[\s\S]*shutting down/, dText);
    assert.equal(bRes.status, 200, bRes.body);
    assert.match(bRes.type, /text\/event-stream/);
    assert.match(bRes.body, /notifications\/progress[\s\S]*half way[\s\S]*streamed 3000/);
    assert.deepEqual({ code: ended.code, signal: ended.signal }, { code: 0, signal: null });
    // B ended the drain at ~2.6 s after the signal; the closing steps are quick.
    assert.ok(ended.at - signalled < 6_000, `exited ${ended.at - signalled} ms after SIGTERM`);
    const log = hub.log();
    assert.match(log, /draining 2 call\(s\) in flight/);
    assert.match(log, /drained, 2 call\(s\) answered/);
    assert.match(log, /hub stopped/);
    assert.ok(kids.length > 0, 'the stdio upstream child was running');
    await sleep(200);
    for (const pid of kids) assert.equal(alive(pid), false, `child ${pid} outlived the hub`);
  });

  it('answers a call past the drain deadline with drain_deadline and still exits 0', async () => {
    const hub = await startMoonhub(['--plugins', `${dir.dir}/plugins`, '--drain-ms', '700']);
    const exit = exitOf(hub.child);
    const long = slowCall(hub.url, 7, 20_000);
    await sleep(400);
    const signalled = Date.now();
    hub.child.kill('SIGTERM');
    const [res, ended] = await Promise.all([long, exit]);
    assert.equal(res.status, 200, res.body);
    const answer = JSON.parse(res.body) as {
      id: number;
      error?: { code: number; message: string };
    };
    assert.equal(answer.id, 7);
    assert.equal(answer.error?.code, -32000);
    assert.match(answer.error?.message ?? '', /shut down before this call finished.*700 ms/);
    assert.deepEqual({ code: ended.code, signal: ended.signal }, { code: 0, signal: null });
    assert.ok(ended.at - signalled < 700 + 4_000, `exited ${ended.at - signalled} ms after`);
    assert.match(hub.log(), /drain deadline passed, 1 call\(s\) aborted/);
  });

  it('answers /readyz 503 (draining) on the metrics address while it drains, and counts refusals', async () => {
    const cfg = dir.write(
      'metrics.yaml',
      'plugins: { dirs: [plugins] }\nobserve: { metrics: { listen: { port: 0 } } }\n',
    );
    const hub = await startMoonhub(['--config', cfg]);
    const exit = exitOf(hub.child);
    const metrics = /metrics at (\S+)/.exec(hub.log())?.[1];
    assert.ok(metrics, hub.log());
    const readyz = new URL('/readyz', metrics).href;
    assert.equal((await fetch(readyz)).status, 200);
    const call = slowCall(hub.url, 9, 1500);
    // A connection opened before the signal, whose request comes during the drain.
    const open = rawConnection(Number(new URL(hub.url).port));
    await sleep(300);
    hub.child.kill('SIGTERM');
    await hub.waitForLog(/stopped accepting/, 0, 5_000);
    const during = await fetch(readyz);
    assert.equal(during.status, 503);
    assert.equal(((await during.json()) as { draining?: boolean }).draining, true);
    open.write(rawPost(Number(new URL(hub.url).port), callBody(10, 10), 'slow.wait'));
    assert.match(await open.all, /HTTP\/1\.1 503[\s\S]*shutting down/);
    // The refusal is counted with every other refusal, under its own limit.
    const scrape = await (await fetch(new URL('/metrics', metrics))).text();
    assert.match(scrape, /moonhub_limit_refusals_total\{limit="shutting_down"\} 1\b/, scrape);
    assert.match((await call).body, /waited 1500/);
    assert.equal((await exit).code, 0);
  });

  it('exits at once on a second signal', async () => {
    const hub = await startMoonhub(['--plugins', `${dir.dir}/plugins`, '--drain-ms', '30000']);
    const exit = exitOf(hub.child);
    const long = slowCall(hub.url, 8, 20_000).catch((err: unknown) => err);
    await sleep(300);
    hub.child.kill('SIGTERM');
    await hub.waitForLog(/stopped accepting/, 0, 5_000);
    const second = Date.now();
    hub.child.kill('SIGTERM');
    const ended = await exit;
    assert.equal(ended.code, 143);
    assert.ok(ended.at - second < 2_000, `exited ${ended.at - second} ms after the 2nd signal`);
    assert.match(hub.log(), /second signal/);
    await long;
  });

  it('drains each worker of --workers through the primary', async () => {
    const hub: MoonhubProcess = await startMoonhub(
      ['--plugins', `${dir.dir}/plugins`, '--workers', '2', '--drain-ms', '6000'],
      { MOONHUB_LOG_LEVEL: 'info' },
    );
    const exit = exitOf(hub.child);
    const calls = [slowCall(hub.url, 11, 1500), slowCall(hub.url, 12, 1500)];
    await sleep(400);
    hub.child.kill('SIGTERM');
    const [r1, r2] = await Promise.all(calls);
    const ended = await exit;
    assert.match(r1.body, /waited 1500/);
    assert.match(r2.body, /waited 1500/);
    assert.deepEqual({ code: ended.code, signal: ended.signal }, { code: 0, signal: null });
    assert.match(hub.log(), /telling the workers to drain/);
    assert.match(hub.log(), /every worker has stopped/);
  });
});

describe('graceful shutdown settings', () => {
  it('refuses a bad --drain-ms and a bad shutdown.drain_ms with a clear error', () => {
    const dir = scratch('moonhub-drain-bad-');
    try {
      dir.write('plugins/slow/init.lua', SLOW);
      const flag = spawnSync(
        process.execPath,
        [BIN, 'serve', '--plugins', `${dir.dir}/plugins`, '--port', '0', '--drain-ms', 'soon'],
        { encoding: 'utf8', timeout: 30_000 },
      );
      assert.notEqual(flag.status, 0);
      assert.match(flag.stderr, /--drain-ms.*an integer number of ms from 0 to 600000/);
      const config = dir.write(
        'moonhub.yaml',
        'plugins: { dirs: [plugins] }\nshutdown: { drain_ms: -5 }\n',
      );
      const file = spawnSync(process.execPath, [BIN, 'serve', '--config', config, '--port', '0'], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.notEqual(file.status, 0);
      assert.match(file.stderr, /shutdown.*drain_ms|drain_ms.*>= 0/);
    } finally {
      dir.remove();
    }
  });
});

describe('graceful shutdown over stdio', () => {
  let dir: Scratch;
  before(() => {
    dir = scratch('moonhub-drain-stdio-');
    dir.write('plugins/slow/init.lua', SLOW);
  });
  after(() => dir.remove());

  it('answers the call in flight, refuses a new one, exits 0', async () => {
    const child = spawn(
      process.execPath,
      [BIN, 'serve', '--stdio', '--plugins', `${dir.dir}/plugins`, '--drain-ms', '6000'],
      { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, MOONHUB_LOG_LEVEL: 'info' } },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exit = exitOf(child);
    const until = async (re: RegExp, what: () => string) => {
      const t0 = Date.now();
      while (!re.test(what())) {
        if (Date.now() - t0 > 15_000) throw new Error(`timed out on ${re}:\n${what()}\n${err}`);
        await sleep(20);
      }
    };
    await until(/serving MCP on stdio/, () => err);
    child.stdin.write(callBody(1, 1200) + '\n');
    await sleep(300);
    child.kill('SIGTERM');
    await until(/stopped accepting/, () => err);
    child.stdin.write(callBody(2, 10) + '\n');
    const ended = await exit;
    assert.deepEqual({ code: ended.code, signal: ended.signal }, { code: 0, signal: null }, err);
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: number; result?: unknown; error?: { message: string } });
    const first = lines.find((l) => l.id === 1);
    const second = lines.find((l) => l.id === 2);
    assert.match(JSON.stringify(first?.result), /waited 1200/);
    assert.match(second?.error?.message ?? '', /shutting down/);
  });
});
