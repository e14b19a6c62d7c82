/**
 * `moonhub serve --workers 2` serving 2025 sessions (`Mcp-Session-Id`) on both workers: every
 * request on a connection of its own goes round-robin, and a session opened through one worker
 * is served by both (tools/call, logging/setLevel, resources/subscribe reaching the GET stream
 * held by the other worker), an elicitation is answered through the other worker, a DELETE or a
 * revocation through one ends the session on both.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MoonhubProcess } from '../helpers/moonhub-process.js';
import { createSession, moonhubCli } from '../helpers/auth-hub.js';
import { PROBE_PLUGIN, startWorkersHub, type WorkersHub } from '../helpers/cluster-fixture.js';
import {
  call,
  initializeSession,
  rawRequest,
  sessionPost,
  type RawResponse,
} from '../helpers/legacy-raw.js';

const CONFIG = `
hub_id: local
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
cluster: { workers: 2 }
`;

const tool = (name: string) => call('tools/call', { name, arguments: {} });

describe('serve --workers 2: 2025 sessions on both workers', () => {
  let w: WorkersHub;
  let hub: MoonhubProcess;
  let token: string;

  before(async () => {
    w = await startWorkersHub({ plugins: { probe: PROBE_PLUGIN }, config: CONFIG });
    hub = w.hub;
    token = w.newToken();
  });
  after(async () => hub?.stop());

  it('a session opened through one worker is served by both', async () => {
    const { sessionId } = await initializeSession(hub.url, token);
    const seen = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const r = await sessionPost(hub.url, token, sessionId, tool('probe.echo'));
      assert.equal(r.status, 200, r.text);
      assert.match(r.text, /echoed/);
      seen.add(r.instance);
    }
    assert.equal(seen.size, 2, 'both workers served the session');
  });

  it('logging/setLevel through one worker holds on the other', async () => {
    const { sessionId } = await initializeSession(hub.url, token);
    const set = await sessionPost(
      hub.url,
      token,
      sessionId,
      call('logging/setLevel', { level: 'warning' }),
    );
    assert.equal(set.status, 200, set.text);
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const r = await sessionPost(hub.url, token, sessionId, tool('probe.log'));
      assert.equal(r.status, 200, r.text);
      assert.match(r.text, /warning-line/);
      assert.doesNotMatch(r.text, /info-line/, `worker ${r.instance} ignored the level`);
      seen.add(r.instance);
    }
    assert.equal(seen.size, 2);
  });

  it('a subscription made through one worker reaches the GET stream on the other', async () => {
    const { sessionId } = await initializeSession(hub.url, token);
    const get = await rawRequest(hub.url, { method: 'GET', token, sessionId });
    assert.equal(get.status, 200);
    try {
      // Subscribe until it lands on the worker without the stream (undoing it where it is).
      let crossed = false;
      for (let i = 0; i < 10 && !crossed; i++) {
        const r = await sessionPost(
          hub.url,
          token,
          sessionId,
          call('resources/subscribe', { uri: 'probe://watched' }),
        );
        assert.equal(r.status, 200, r.text);
        if (r.instance !== get.instance) crossed = true;
        else
          await sessionPost(
            hub.url,
            token,
            sessionId,
            call('resources/unsubscribe', { uri: 'probe://watched' }),
          );
      }
      assert.ok(crossed, 'no subscribe landed on the other worker');
      await new Promise((r) => setTimeout(r, 200)); // the refresh crosses the bus
      const touched = await sessionPost(hub.url, token, sessionId, tool('probe.touch'));
      assert.equal(touched.status, 200, touched.text);
      await get.waitFor(/"uri":"probe:\/\/watched"/, 5000);
    } finally {
      get.close();
    }
  });

  it('an elicitation is answered through the other worker', async () => {
    const { sessionId } = await initializeSession(hub.url, token, { elicitation: {} });
    let crossed = 0;
    for (let i = 0; i < 6 && crossed === 0; i++) {
      const running: RawResponse = await rawRequest(hub.url, {
        method: 'POST',
        token,
        sessionId,
        body: tool('probe.ask'),
      });
      assert.equal(running.status, 200);
      const asked = await running.waitFor(/"id":"(moonhub-[^"]+)","method":"elicitation\/create"/);
      const id = /"id":"(moonhub-[^"]+)"/.exec(asked)![1]!;
      const answer = await sessionPost(hub.url, token, sessionId, {
        jsonrpc: '2.0',
        id,
        result: { action: 'accept', content: { name: 'ada' } },
      });
      assert.equal(answer.status, 202, answer.text);
      if (answer.instance !== running.instance) crossed++;
      await running.waitFor(/hello ada/, 10_000);
    }
    assert.ok(crossed > 0, 'no answer landed on the other worker');
  });

  it('a POST stream cut off is resumed with Last-Event-ID on the other worker', async () => {
    const { sessionId } = await initializeSession(hub.url, token);
    let crossed = false;
    for (let attempt = 0; attempt < 4 && !crossed; attempt++) {
      const running = await rawRequest(hub.url, {
        method: 'POST',
        token,
        sessionId,
        body: call('tools/call', { name: 'probe.slow', arguments: { wait: 800 } }),
      });
      assert.equal(running.status, 200);
      await running.waitFor(/step-2/);
      const ids = [...running.text().matchAll(/^id: (\S+)$/gm)].map((m) => m[1]!);
      const last = ids[ids.length - 1]!;
      running.close();
      // Steer round-robin: after a connection to the stream's worker, the next goes to the other.
      for (let i = 0; i < 6; i++) {
        const ping = await sessionPost(hub.url, token, sessionId, call('ping'));
        if (ping.instance === running.instance) break;
      }
      const resumed = await rawRequest(hub.url, {
        method: 'GET',
        token,
        sessionId,
        headers: { 'Last-Event-ID': last },
      });
      assert.equal(resumed.status, 200);
      const text = await resumed.done;
      assert.doesNotMatch(text, /step-2/, 'replayed an event the client had');
      assert.match(text, /step-3[\s\S]*step-4[\s\S]*step-5[\s\S]*slow done/);
      crossed = resumed.instance !== running.instance;
    }
    assert.ok(crossed, 'no resumption landed on the other worker');
  });

  it('a Last-Event-ID nothing is known of gets 404 on every worker', async () => {
    const { sessionId } = await initializeSession(hub.url, token);
    for (const last of ['0123456789abcdef_3', 'not a stream id_1', 'x']) {
      const r = await rawRequest(hub.url, {
        method: 'GET',
        token,
        sessionId,
        headers: { 'Last-Event-ID': last },
      });
      assert.equal(r.status, 404, await r.done);
    }
    // The hub still serves the session.
    assert.equal((await sessionPost(hub.url, token, sessionId, tool('probe.echo'))).status, 200);
  });

  it("another session cannot resume a session's stream, on either worker", async () => {
    const owner = await initializeSession(hub.url, token);
    const other = await initializeSession(hub.url, token);
    const running = await rawRequest(hub.url, {
      method: 'POST',
      token,
      sessionId: owner.sessionId,
      body: call('tools/call', { name: 'probe.slow', arguments: { wait: 1500 } }),
    });
    await running.waitFor(/step-1/);
    const first = /^id: (\S+)$/m.exec(running.text())![1]!;
    await running.waitFor(/step-3/);
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const r = await rawRequest(hub.url, {
        method: 'GET',
        token,
        sessionId: other.sessionId,
        headers: { 'Last-Event-ID': first },
      });
      const text = await r.done;
      assert.equal(r.status, 404, text);
      assert.doesNotMatch(text, /step-/);
      seen.add(r.instance);
    }
    assert.equal(seen.size, 2);
    await running.waitFor(/slow done/);
  });

  it('cached copies never serve stale state: setLevel and DELETE through one, the next request through the other', async () => {
    const { sessionId } = await initializeSession(hub.url, token);
    for (let i = 0; i < 4; i++)
      assert.equal((await sessionPost(hub.url, token, sessionId, tool('probe.echo'))).status, 200);
    let crossed = 0;
    for (const level of ['warning', 'info', 'warning', 'info', 'warning', 'info']) {
      const set = await sessionPost(hub.url, token, sessionId, call('logging/setLevel', { level }));
      assert.equal(set.status, 200, set.text);
      // At once, no pause: the change was relayed before setLevel was answered.
      const r = await sessionPost(hub.url, token, sessionId, tool('probe.log'));
      assert.equal(r.status, 200, r.text);
      if (level === 'warning')
        assert.doesNotMatch(r.text, /info-line/, `${r.instance} served a stale log level`);
      else assert.match(r.text, /info-line/, `${r.instance} served a stale log level`);
      if (r.instance !== set.instance) crossed++;
    }
    assert.ok(crossed >= 3, `only ${crossed} calls landed on the other worker than setLevel`);
    const del = await rawRequest(hub.url, { method: 'DELETE', token, sessionId });
    assert.equal(del.status, 200, await del.done);
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const r = await sessionPost(hub.url, token, sessionId, tool('probe.echo'));
      assert.equal(r.status, 404, `${r.instance} served an ended session: ${r.text}`);
      seen.add(r.instance);
    }
    assert.equal(seen.size, 2);
  });

  it('a DELETE through one worker ends the session on both, its stream too', async () => {
    const { sessionId } = await initializeSession(hub.url, token);
    const get = await rawRequest(hub.url, { method: 'GET', token, sessionId });
    assert.equal(get.status, 200);
    const del = await rawRequest(hub.url, { method: 'DELETE', token, sessionId });
    assert.equal(del.status, 200, await del.done);
    await Promise.race([
      get.done,
      new Promise((_, fail) => setTimeout(() => fail(new Error('stream still open')), 5000)),
    ]);
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const r = await sessionPost(hub.url, token, sessionId, tool('probe.echo'));
      assert.equal(r.status, 404, r.text);
      seen.add(r.instance);
    }
    assert.equal(seen.size, 2);
  });

  it('a revoked token ends its sessions and streams on both workers within a second', async () => {
    const { cfg, dir } = w;
    const s = createSession(['--config', cfg, '--data', dir.data, '--agent', 'worker']);
    const adminR = moonhubCli([
      'session',
      'create',
      '--admin',
      '--config',
      cfg,
      '--data',
      dir.data,
    ]);
    const adminToken = (JSON.parse(adminR.stdout) as { token: string }).token;
    const { sessionId } = await initializeSession(hub.url, s.token);
    const get = await rawRequest(hub.url, { method: 'GET', token: s.token, sessionId });
    assert.equal(get.status, 200);
    // Used through the other worker too, so both hold a copy.
    for (let i = 0; i < 4; i++)
      assert.equal(
        (await sessionPost(hub.url, s.token, sessionId, tool('probe.echo'))).status,
        200,
      );
    const start = Date.now();
    const res = await fetch(new URL(`/admin/sessions/${s.session_uuid}`, hub.url), {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${adminToken}` },
    });
    assert.equal(res.status, 200);
    await Promise.race([
      get.done,
      new Promise((_, fail) => setTimeout(() => fail(new Error('stream open after 1 s')), 1000)),
    ]);
    process.stderr.write(`revoked session's stream ended after ${Date.now() - start} ms\n`);
  });
});

describe('serve --workers 2: cluster.limits.max_sessions bounds the sessions of all workers', () => {
  let hub: MoonhubProcess;
  let token: string;
  let kept = '';
  let idle = '';
  let adminToken = '';

  before(async () => {
    const w = await startWorkersHub({
      plugins: { probe: PROBE_PLUGIN },
      config: CONFIG.replace(
        'cluster: { workers: 2 }',
        'cluster: { workers: 2, limits: { max_sessions: 2, idle_timeout_ms: 5000 } }',
      ),
    });
    hub = w.hub;
    const { cfg, dir } = w;
    token = w.newToken();
    const admin = moonhubCli(['session', 'create', '--admin', '--config', cfg, '--data', dir.data]);
    adminToken = (JSON.parse(admin.stdout) as { token: string }).token;
  });
  after(async () => hub?.stop());

  it('a third session is refused on either worker; the two go on; a DELETE frees a place', async () => {
    const a = await initializeSession(hub.url, token);
    const b = await initializeSession(hub.url, token);
    for (let i = 0; i < 4; i++) {
      const refused = await rawRequest(hub.url, {
        method: 'POST',
        token,
        body: call('initialize', {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'one-too-many', version: '1' },
        }),
      });
      assert.equal(refused.status, 503, await refused.done);
      assert.match(await refused.done, /too many sessions/);
    }
    for (const s of [a, b])
      assert.equal(
        (await sessionPost(hub.url, token, s.sessionId, tool('probe.echo'))).status,
        200,
      );
    // Counted as refusals by the sessions limit, by each worker that refused.
    let counted = 0;
    for (let i = 0; i < 4; i++) {
      const m = await fetch(new URL('/metrics', hub.url), {
        headers: { Authorization: `Bearer ${adminToken}`, Connection: 'close' },
      });
      const line = /moonhub_limit_refusals_total\{limit="sessions"\} (\d+)/.exec(await m.text());
      counted = Math.max(counted, Number(line?.[1] ?? 0));
    }
    assert.ok(counted >= 1, 'the refusals were not counted');
    const del = await rawRequest(hub.url, { method: 'DELETE', token, sessionId: a.sessionId });
    assert.equal(del.status, 200);
    kept = (await initializeSession(hub.url, token)).sessionId;
    idle = b.sessionId;
  });

  it('an idle session is forgotten (its place freed); one with an open GET stream is kept', async () => {
    const get = await rawRequest(hub.url, { method: 'GET', token, sessionId: kept });
    assert.equal(get.status, 200);
    try {
      await new Promise((r) => setTimeout(r, 7000)); // past idle_timeout_ms (5 s)
      const seen = new Set<string>();
      for (let i = 0; i < 4; i++) {
        const r = await sessionPost(hub.url, token, kept, tool('probe.echo'));
        assert.equal(r.status, 200, r.text);
        seen.add(r.instance);
      }
      assert.equal(seen.size, 2);
      assert.equal((await sessionPost(hub.url, token, idle, tool('probe.echo'))).status, 404);
      await initializeSession(hub.url, token); // the idle one's place
    } finally {
      get.close();
    }
  });
});
