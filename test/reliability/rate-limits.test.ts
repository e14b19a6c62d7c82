/**
 * Rate limits and the notice bounds against a real hub with token authentication (issue 12,
 * item 2): a principal past its bucket gets HTTP 429 with Retry-After and a JSON-RPC error with
 * `data.retryAfterMs` while another principal is served; a per-tool override by glob; stdio
 * gets the same error; a call's log messages are cut and rate-limited, with one warning; a GET
 * resuming an event stream (Last-Event-ID) takes a token like a request.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import {
  connectWithToken,
  createSession,
  makeHubDir,
  type HubDir,
  type Issued,
} from '../helpers/auth-hub.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';
import { modernHeaders, modernToolCall } from './flow-helpers.js';
import { initialize } from './limits-helpers.js';

const PLUGIN = String.raw`
mcp.tool("ok", {}, function() return "ok" end)
mcp.tool("slow.report", {}, function() return "report" end)
mcp.tool("chatty", { timeout_ms = 10000 }, function(_, context)
  for i = 1, 150 do context.log("info", "line " .. i .. " " .. string.rep("z", 5000)) end
  task.sleep(1100)
  context.log("info", "after the pause")
  return "chatted"
end)
`;

const CONFIG = `
auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [p] }
  B: { plugins: [p] }
  C: { plugins: [p], builtins: [execute] }
limits:
  notices: { per_second: 20, burst: 20, message_bytes: 1024 }
  rate:
    principal: { per_second: 20, burst: 40 }
    tools:
      "slow.*": { per_second: 0.1, burst: 2 }
`;

let dir: HubDir;
let hub: MoonhubProcess;
let config: string;
let A: Issued;
let B: Issued;
let C: Issued;

before(async () => {
  dir = makeHubDir({ p: PLUGIN });
  config = dir.write('moonhub.yaml', CONFIG);
  hub = await startMoonhub(['--config', config, '--data', dir.data, '--no-watch']);
  A = createSession(['--config', config, '--data', dir.data, '--agent', 'A', '--url', hub.url]);
  B = createSession(['--config', config, '--data', dir.data, '--agent', 'B', '--url', hub.url]);
  C = createSession(['--config', config, '--data', dir.data, '--agent', 'C', '--url', hub.url]);
});

after(async () => {
  await hub.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  retryAfter: string | null;
  text: string;
  error?: { code: number; message: string; data?: { limit: string; retryAfterMs: number } };
}

async function callAs(who: Issued, tool: string, id = 1): Promise<Answer> {
  const res = await fetch(hub.url, {
    method: 'POST',
    headers: { ...modernHeaders(tool), authorization: `Bearer ${who.token}` },
    body: modernToolCall(id, tool, {}),
  });
  const text = await res.text();
  const json = res.headers.get('content-type')?.includes('json')
    ? (JSON.parse(text) as { error?: Answer['error'] })
    : {};
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    text,
    error: json.error,
  };
}

/** B calls `ok` back to back through the SDK until stopped; its latencies and errors. */
async function honestB(): Promise<{
  stop: () => Promise<{ n: number; errors: string[]; p99: number }>;
}> {
  const { client } = await connectWithToken(hub.url, 'modern', B.token);
  const times: number[] = [];
  const errors: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        const r = await client.callTool({ name: 'ok', arguments: {} });
        if (r.isError) errors.push(JSON.stringify(r.content));
      } catch (err) {
        errors.push(String(err));
      }
      times.push(performance.now() - t0);
      await sleep(20);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await (client as Client).close();
      const sorted = [...times].sort((a, b) => a - b);
      const p99 = sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))] ?? 0;
      return { n: times.length, errors, p99 };
    },
  };
}

describe('per-principal rate limit', () => {
  it('refuses a principal past its bucket with 429, Retry-After and retryAfterMs; another principal is served', async (t) => {
    const honest = await honestB();
    const answers: Answer[] = [];
    // 240 calls, 30 at a time: the burst (40) and 20 a second pass, the rest is refused.
    const t0 = performance.now();
    for (let round = 0; round < 8; round++)
      answers.push(
        ...(await Promise.all(Array.from({ length: 30 }, (_, i) => callAs(A, 'ok', i)))),
      );
    const seconds = (performance.now() - t0) / 1000;
    const h = await honest.stop();
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    t.diagnostic(
      `A: ${ok.length} served, ${refused.length} refused; B: ${h.n} calls, p99 ${h.p99.toFixed(1)} ms`,
    );
    assert.equal(ok.length + refused.length, answers.length, 'every answer is 200 or 429');
    const allowed = 40 + Math.ceil(20 * seconds) + 1;
    assert.ok(ok.length >= 40 && ok.length <= allowed, `${ok.length} served, at most ${allowed}`);
    assert.ok(refused.length > 0);
    const r = refused[0]!;
    assert.equal(r.error?.code, -32029);
    assert.match(r.error!.message, /rate limit limits\.rate\.principal reached; retry in \d+ ms/);
    assert.equal(r.error?.data?.limit, 'limits.rate.principal');
    assert.ok(r.error!.data!.retryAfterMs > 0 && r.error!.data!.retryAfterMs <= 1000);
    assert.equal(r.retryAfter, '1');
    // B shares nothing with A: every call served, quickly.
    assert.deepEqual(h.errors, []);
    assert.ok(h.n > 0);
    // A's flood loads this 2-core box too; B is never refused and stays within this bound.
    assert.ok(h.p99 < 2000, `B's p99 ${h.p99} ms`);
    // A is served again once its bucket refills.
    await sleep(1000);
    assert.equal((await callAs(A, 'ok')).status, 200);
  });
});

describe('per-tool rate limit (override by glob)', () => {
  it('refuses the third quick call of a slow.* tool and names the override', async () => {
    await sleep(2000); // A's principal bucket refills
    const first = await callAs(A, 'slow.report');
    const second = await callAs(A, 'slow.report');
    const third = await callAs(A, 'slow.report');
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    assert.equal(third.status, 429);
    assert.equal(third.error?.data?.limit, 'limits.rate.tools["slow.*"]');
    assert.ok(third.error!.data!.retryAfterMs > 5000, 'one token per 10 s');
    assert.equal(third.retryAfter, String(Math.ceil(third.error!.data!.retryAfterMs / 1000)));
    // The same principal's other tools, and the same tool for B, are not affected.
    assert.equal((await callAs(A, 'ok')).status, 200);
    assert.equal((await callAs(B, 'slow.report')).status, 200);
  });
});

describe('per-tool rate limit inside execute', () => {
  it("takes the caller's (principal, tool) token for each inner call: a script is no way around it", async () => {
    // Three quick inner calls of a slow.* tool (burst 2, one token per 10 s: a slow machine must
    // not refill it before C's own call below; 2 s did once in CI), and one of `ok`.
    const code = `
      local out = {}
      for i = 1, 3 do
        local r = task.await(mcp.call("slow.report", {}))
        out[i] = r.is_error and r.content or "served"
      end
      out[4] = task.await(mcp.call("ok", {})).is_error and "refused" or "served"
      return out`;
    const rateRefusals = await refusalCount('rate');
    const res = await fetch(hub.url, {
      method: 'POST',
      headers: { ...modernHeaders('execute'), authorization: `Bearer ${C.token}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'execute',
          arguments: { code },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    const body = JSON.parse(/^data: (.*)$/m.exec(text)?.[1] ?? text) as {
      result: { structuredContent: { result: string[] } };
    };
    const out = body.result.structuredContent.result;
    assert.deepEqual(out.slice(0, 2), ['served', 'served']);
    assert.match(
      out[2]!,
      /Rate limit exceeded for tool 'slow\.report' \(limits\.rate\.tools\["slow\.\*"\]\); retry after \d+ ms/,
    );
    assert.equal(out[3], 'served', "an unlimited tool's inner calls are not refused");
    // The inner refusal is counted as the front door's are (before C's own 429 below).
    assert.equal((await refusalCount('rate')) - rateRefusals, 1);
    // The script spent C's tokens: C's own call of the tool is refused too, B's is not.
    assert.equal((await callAs(C, 'slow.report')).status, 429);
    assert.equal((await callAs(B, 'slow.report')).status, 200);
  });
});

describe('notice size and rate per call', () => {
  it('cuts long log messages, drops a flood past the rate and warns once', async () => {
    await sleep(1000);
    const a = await callAs(A, 'chatty');
    assert.equal(a.status, 200);
    const events = a.text
      .split('\n\n')
      .map((e) => /^data: (.*)$/m.exec(e)?.[1])
      .filter((d): d is string => d !== undefined && d !== '')
      .map(
        (d) => JSON.parse(d) as { method?: string; params?: { data?: unknown; level?: string } },
      );
    const logs = events.filter((e) => e.method === 'notifications/message');
    const lines = logs.filter((e) => String(e.params?.data).startsWith('line '));
    const warnings = logs.filter((e) => e.params?.level === 'warning');
    assert.ok(lines.length >= 20 && lines.length < 40, `${lines.length} of 150 lines delivered`);
    for (const l of lines) {
      const data = String(l.params!.data);
      assert.ok(Buffer.byteLength(JSON.stringify(l)) <= 1024, `${data.length} characters`);
      assert.match(
        data,
        /\[truncated: \d+ bytes, at most 1024 \(limits\.notices\.message_bytes\)\]$/,
      );
    }
    // One warning per run of drops: on a slow machine a token may refill mid-loop, so a line
    // passes between two runs and each run gets its own warning. Every line is either delivered
    // or counted in a warning.
    assert.ok(warnings.length >= 1 && warnings.length <= 3, `${warnings.length} warnings`);
    let dropped = 0;
    for (const w of warnings) {
      const m =
        /^(\d+) log\/notice\/progress messages dropped: more than 20 per second \(limits\.notices\.per_second\)$/.exec(
          String(w.params!.data),
        );
      assert.ok(m, String(w.params!.data));
      dropped += Number(m[1]);
    }
    assert.equal(lines.length + dropped, 150, 'every line delivered or counted as dropped');
    assert.equal(
      String(logs.at(-1)!.params!.data),
      'after the pause',
      'nothing after the pause lost',
    );
    assert.match(a.text, /"text":"chatted"/);
  });
});

async function refusalCount(limit: string): Promise<number> {
  const text = await scrape(baseOf(hub.url), adminToken(dir.data));
  return sample(text, 'moonhub_limit_refusals_total', { limit });
}

describe('refusals in the metrics', () => {
  it('counts rate refusals, dropped and cut notices by limit', async () => {
    const text = await scrape(baseOf(hub.url), adminToken(dir.data));
    const count = (limit: string) => sample(text, 'moonhub_limit_refusals_total', { limit });
    assert.ok(count('rate') >= 2, `rate ${count('rate')}`);
    assert.ok(count('notice_rate') >= 100, `notice_rate ${count('notice_rate')}`);
    assert.ok(count('notice_size') >= 20, `notice_size ${count('notice_size')}`);
  });
});

describe('rate limits over stdio', () => {
  it('answers a JSON-RPC error with data.retryAfterMs, and serves again after it', async () => {
    const stdioConfig = dir.write(
      'stdio.yaml',
      'plugins: { dirs: [plugins] }\nlimits:\n  rate:\n    principal: { per_second: 5, burst: 3 }\n',
    );
    const child = spawn(process.execPath, [BIN, 'serve', '--stdio', '--config', stdioConfig], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const line = (id: number) =>
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: {
            name: 'ok',
            arguments: {},
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }) + '\n';
      child.stdin.write([1, 2, 3, 4, 5].map(line).join(''));
      const deadline = Date.now() + 20_000;
      while ((out.match(/\n/g) ?? []).length < 5 && Date.now() < deadline) await sleep(50);
      const answers = out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { id: number; result?: unknown; error?: Answer['error'] });
      const refused = answers.filter((a) => a.error !== undefined);
      assert.equal(answers.filter((a) => a.result !== undefined).length, 3, out);
      assert.equal(refused.length, 2);
      assert.equal(refused[0]!.error!.code, -32029);
      assert.equal(refused[0]!.error!.data!.limit, 'limits.rate.principal');
      assert.ok(refused[0]!.error!.data!.retryAfterMs > 0);
      await sleep(refused[1]!.error!.data!.retryAfterMs + 50);
      out = '';
      child.stdin.write(line(6));
      while (!out.includes('\n') && Date.now() < deadline) await sleep(50);
      assert.match(out, /"id":6,"result"/);
    } finally {
      child.kill();
    }
  });
});

describe('SSE resumption (Last-Event-ID) and the rate limit', () => {
  it("takes a token of the principal's bucket per resumption: a loop is refused 429, B served", async (t) => {
    await sleep(1000);
    const D = createSession([
      '--config',
      config,
      '--data',
      dir.data,
      '--agent',
      'A',
      '--url',
      hub.url,
    ]);
    const auth = { authorization: `Bearer ${D.token}` };
    const init = await initialize(hub.url, D.token);
    const sid = init.sid!;
    const session = { ...auth, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    // A call whose answer comes as a resumable event stream: read its priming event, then go.
    const gone = new AbortController();
    const call = await fetch(hub.url, {
      method: 'POST',
      signal: gone.signal,
      headers: {
        ...session,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'chatty', arguments: {} },
      }),
    });
    const reader = call.body!.getReader();
    let head = '';
    while (!/^id: (\S+)$/m.test(head))
      head += new TextDecoder().decode((await reader.read()).value);
    const lastEventId = /^id: (\S+)$/m.exec(head)![1]!;
    gone.abort();
    await sleep(200);
    const resume = async (): Promise<{
      status: number;
      retryAfter: string | null;
      text: string;
    }> => {
      const stop = new AbortController();
      const res = await fetch(hub.url, {
        signal: stop.signal,
        headers: { ...session, accept: 'text/event-stream', 'last-event-id': lastEventId },
      });
      // A replay is not read to its end: the client goes and comes back, as in the attack.
      const text = res.status === 200 ? '' : await res.text();
      stop.abort();
      return { status: res.status, retryAfter: res.headers.get('retry-after'), text };
    };
    assert.equal((await resume()).status, 200, 'a resumption replays the stream');
    const honest = await honestB();
    // 80 resumptions, 10 at a time: past the burst (40) and 20 a second, they are refused.
    const answers: Awaited<ReturnType<typeof resume>>[] = [];
    const t0 = performance.now();
    for (let round = 0; round < 8; round++)
      answers.push(...(await Promise.all(Array.from({ length: 10 }, resume))));
    const seconds = (performance.now() - t0) / 1000;
    const h = await honest.stop();
    const refused = answers.filter((a) => a.status === 429);
    const letThrough = answers.length - refused.length;
    t.diagnostic(
      `${letThrough} resumptions let through, ${refused.length} refused in ${seconds.toFixed(2)} s`,
    );
    assert.ok(letThrough <= 40 + Math.ceil(20 * seconds) + 1, `${letThrough} let through`);
    assert.ok(refused.length >= 20, `${refused.length} refused`);
    const r = refused[0]!;
    const error = (JSON.parse(r.text) as { error: NonNullable<Answer['error']> }).error;
    assert.equal(error.code, -32029);
    assert.match(error.message, /rate limit limits\.rate\.principal reached; retry in \d+ ms/);
    assert.equal(r.retryAfter, '1');
    assert.deepEqual(h.errors, [], 'B is not refused');
    assert.ok(h.n > 0);
  });
});
