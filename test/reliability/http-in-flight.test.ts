/**
 * HTTP requests one principal has running at once (limits.http_in_flight_per_principal): past
 * the bound a request is refused at once (429, Retry-After, an error naming the key) while
 * another principal is served, and every way a call ends gives its place back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeHubDir, type Issued, sessionIssuer } from '../helpers/auth-hub.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { modern, sleep } from './limits-helpers.js';

const PLUGIN = `
mcp.tool("p.wait", { description = "waits", timeout_ms = 20000 }, function(args)
  task.sleep(args.ms or 1000)
  return "waited"
end)
mcp.tool("p.fail", { description = "fails" }, function() error("boom") end)
mcp.tool("p.echo", { description = "echo" }, function() return "echo" end)
`;

describe('HTTP requests in flight per principal', () => {
  let hub: MoonhubProcess;
  let A: Issued;
  let B: Issued;

  before(async () => {
    const dir = makeHubDir({ p: PLUGIN });
    const file = dir.write(
      'moonhub.yaml',
      `auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [p] }
  B: { plugins: [p] }
limits: { http_in_flight_per_principal: 20 }
`,
    );
    hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
    const issue = sessionIssuer(file, dir.data, hub.url);
    A = issue('A');
    B = issue('B');
  });
  after(async () => hub?.stop());

  const call = (who: Issued, name: string, args: Record<string, unknown> = {}, id = 1) =>
    modern(hub.url, who.token, 'tools/call', { name, arguments: args }, id);

  it('refuses past the bound at once; B is served meanwhile', async () => {
    const t0 = Date.now();
    const flood = Array.from({ length: 60 }, (_, i) => call(A, 'p.wait', { ms: 1500 }, i));
    await sleep(300);
    const b = await call(B, 'p.echo');
    assert.equal(b.status, 200);
    assert.ok(Date.now() - t0 < 1400, 'B answered while A was at its bound');
    const answers = await Promise.all(flood);
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    assert.equal(ok.length, 20);
    assert.equal(refused.length, 40);
    assert.equal(refused[0]!.body?.error?.code, -32000);
    assert.match(
      refused[0]!.body!.error!.message,
      /at most 20 HTTP requests of this principal run at once \(limits\.http_in_flight_per_principal\)/,
    );
  });

  it('gives the places back on answers, errors and client disconnects', async () => {
    const full = async (name: string, args: Record<string, unknown>) =>
      Promise.all(Array.from({ length: 20 }, (_, i) => call(A, name, args, i)));
    for (const a of await full('p.fail', {})) assert.equal(a.status, 200);
    // A client that goes away: its calls are cancelled and their places come back.
    const gone = new AbortController();
    const dropped = Array.from({ length: 20 }, (_, i) =>
      fetch(hub.url, {
        method: 'POST',
        signal: gone.signal,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${A.token}`,
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'p.wait',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: {
            name: 'p.wait',
            arguments: { ms: 15000 },
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      }).catch(() => undefined),
    );
    await sleep(500);
    gone.abort();
    await Promise.all(dropped);
    await sleep(500);
    const again = await full('p.wait', { ms: 100 });
    assert.deepEqual(
      again.map((a) => a.status),
      Array.from({ length: 20 }, () => 200),
    );
  });
});
