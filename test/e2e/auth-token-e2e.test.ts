/**
 * Token authentication end to end, on a real hub with sessions from the real CLI: every way to
 * present the wrong credentials is refused with the right status and no hint of what the hub
 * serves; revocation and new sessions apply at once; a 2025 session id is useless to another
 * principal; the admin API; `serve --stdio --session`; the refusal to serve auth none off
 * loopback; and the inbox example's privacy and its administrative dump.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { ROOT, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import {
  connectWithToken,
  createSession,
  makeHubDir,
  moonhubCli,
  rawPost,
  scopedPlugin,
  type HubDir,
  type Issued,
} from '../helpers/auth-hub.js';
import { join } from 'node:path';

const CONFIG = `
hub_id: alpha-hub
auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [secret], builtins: [] }
  B: { plugins: [public], builtins: [] }
`;

/** Nothing about the hub's surface may appear in a refusal. */
function assertNoLeak(text: string): void {
  assert.doesNotMatch(text, /secret|public|echo|prompt|info/i, `leaked: ${text}`);
}

const LIST = { method: 'tools/list', params: {} };

describe('token authentication', () => {
  let dir: HubDir;
  let config: string;
  let hub: MoonhubProcess;
  let A: Issued;
  let B: Issued;

  before(async () => {
    dir = makeHubDir({ secret: scopedPlugin('secret'), public: scopedPlugin('public') });
    config = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', config, '--data', dir.data]);
    A = createSession(['--config', config, '--data', dir.data, '--agent', 'A', '--url', hub.url]);
    B = createSession(['--config', config, '--data', dir.data, '--agent', 'B', '--url', hub.url]);
  });
  after(async () => hub.stop());

  it('refuses a request without a token: 401, a Bearer challenge, nothing leaked', async () => {
    const r = await rawPost(hub.url, LIST);
    assert.equal(r.status, 401);
    assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer realm="moonhub"$/);
    assertNoLeak(r.text);
    // The SDK client gives up the same way.
    await assert.rejects(connectWithToken(hub.url, 'legacy', undefined), /401|nauthorized/);
  });

  it('refuses wrong, malformed and non-bearer tokens with 403 invalid_token and words a client shows', async () => {
    const forged = `mhs_${'A'.repeat(16)}_${'b'.repeat(43)}`;
    const real = A.token;
    const tampered = real.slice(0, -1) + (real.endsWith('x') ? 'y' : 'x');
    for (const authorization of [
      `Bearer ${forged}`,
      `Bearer ${tampered}`,
      'Bearer nonsense',
      `Basic ${Buffer.from('a:b').toString('base64')}`,
      'Bearer',
    ]) {
      const r = await rawPost(hub.url, LIST, { Authorization: authorization });
      // 403, not 401: a 401 sends OAuth clients (mcp-remote, the Inspector) into a discovery
      // that cannot work against session tokens, and they drop this body.
      assert.equal(r.status, 403, authorization);
      assert.match(r.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      assert.match(r.text, /session token is wrong, revoked or belongs to another hub/);
      assert.doesNotMatch(r.text, /Unauthorized/);
      assertNoLeak(r.text);
    }
    await assert.rejects(connectWithToken(hub.url, 'modern', forged), /403/);
  });

  it('sees a new session at once and refuses a revoked one at once', async () => {
    const s = createSession(['--config', config, '--data', dir.data, '--agent', 'B']);
    const c = await connectWithToken(hub.url, 'legacy', s.token);
    assert.deepEqual(
      (await c.client.listTools()).tools.map((t) => t.name),
      ['public.echo'],
    );
    const revoked = moonhubCli([
      'session',
      'revoke',
      s.session_uuid,
      '--config',
      config,
      '--data',
      dir.data,
    ]);
    assert.equal(revoked.status, 0, revoked.stderr);
    assert.deepEqual(JSON.parse(revoked.stdout), { revoked: s.session_uuid });
    await assert.rejects(c.client.listTools(), /403|revoked/);
    await hub.waitForLog(/revoked session disconnected/);
    const r = await rawPost(hub.url, LIST, { Authorization: `Bearer ${s.token}` });
    assert.equal(r.status, 403);
    assertNoLeak(r.text);
    await c.client.close().catch(() => {});
    const again = moonhubCli([
      'session',
      'revoke',
      s.session_uuid,
      '--config',
      config,
      '--data',
      dir.data,
    ]);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /no active session/);
    const listed = JSON.parse(
      moonhubCli(['session', 'list', '--config', config, '--data', dir.data]).stdout,
    ) as { session_uuid: string; revoked_at?: string; token?: string }[];
    const row = listed.find((x) => x.session_uuid === s.session_uuid)!;
    assert.ok(row.revoked_at);
    assert.ok(listed.every((x) => !('token' in x) && !JSON.stringify(x).includes('mhs_')));
  });

  it('refuses a token of another hub, even from the same data folder', async () => {
    const other = createSession(['--data', dir.data, '--hub-id', 'beta-hub', '--agent', 'A']);
    const r = await rawPost(hub.url, LIST, { Authorization: `Bearer ${other.token}` });
    assert.equal(r.status, 403);
    assertNoLeak(r.text);
    const elsewhere = makeHubDir({});
    const foreign = createSession([
      '--data',
      elsewhere.data,
      '--hub-id',
      'alpha-hub',
      '--agent',
      'A',
    ]);
    const r2 = await rawPost(hub.url, LIST, { Authorization: `Bearer ${foreign.token}` });
    assert.equal(r2.status, 403);
  });

  it('answers 404 to a 2025 session id presented by another principal', async () => {
    const init = await rawPost(
      hub.url,
      {
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'a', version: '1' },
        },
      },
      { Authorization: `Bearer ${A.token}` },
    );
    assert.equal(init.status, 200);
    const sid = init.headers.get('mcp-session-id')!;
    const asA = {
      Authorization: `Bearer ${A.token}`,
      'mcp-session-id': sid,
      'mcp-protocol-version': '2025-11-25',
    };
    const asB = { ...asA, Authorization: `Bearer ${B.token}` };
    const hijack = await rawPost(hub.url, LIST, asB);
    assert.equal(hijack.status, 404);
    assertNoLeak(hijack.text);
    const noToken = await rawPost(hub.url, LIST, {
      'mcp-session-id': sid,
      'mcp-protocol-version': '2025-11-25',
    });
    assert.equal(noToken.status, 401);
    const get = await fetch(hub.url, { headers: { ...asB, Accept: 'text/event-stream' } });
    assert.equal(get.status, 404);
    await get.body?.cancel();
    const del = await fetch(hub.url, { method: 'DELETE', headers: asB });
    assert.equal(del.status, 404);
    // The owner still has it, with its own view.
    const own = await rawPost(hub.url, LIST, asA);
    assert.equal(own.status, 200);
    assert.match(own.text, /secret\.echo/);
    assert.doesNotMatch(own.text, /public\.echo/);
  });

  it('refuses a bad Origin with 403 before looking at the token', async () => {
    const attempts: Record<string, string>[] = [
      { Origin: 'https://evil.example', Authorization: `Bearer ${A.token}` },
      { Origin: 'https://evil.example' },
    ];
    for (const headers of attempts) {
      const r = await rawPost(hub.url, LIST, headers);
      assert.equal(r.status, 403);
      assertNoLeak(r.text);
    }
    const admin = await fetch(new URL('/admin/sessions', hub.url), {
      headers: { Origin: 'https://evil.example' },
    });
    assert.equal(admin.status, 403);
  });

  describe('admin API', () => {
    let adminToken: string;
    let adminUrl: string;
    before(() => {
      const r = moonhubCli([
        'session',
        'create',
        '--admin',
        '--config',
        config,
        '--data',
        dir.data,
        '--url',
        hub.url,
      ]);
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { token: string; admin_url: string; role: string };
      assert.equal(out.role, 'admin');
      adminToken = out.token;
      adminUrl = out.admin_url;
    });

    const call = (method: string, url: string, token?: string, body?: unknown) =>
      fetch(url, {
        method,
        headers: {
          ...(token ? { Authorization: `Bearer ${token}` } : {}),
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body:
          body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });

    it('needs an admin token: none, an agent token and a wrong one get 401', async () => {
      for (const token of [undefined, A.token, `mhs_${'x'.repeat(16)}_${'y'.repeat(43)}`]) {
        const r = await call('GET', adminUrl, token);
        assert.equal(r.status, 401);
        assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer realm="moonhub-admin"/);
        assert.doesNotMatch(await r.text(), /session_uuid/);
      }
      // ...and an admin token is no MCP credential.
      const mcp = await rawPost(hub.url, LIST, { Authorization: `Bearer ${adminToken}` });
      assert.equal(mcp.status, 403);
    });

    it('creates, lists and revokes sessions', async () => {
      const created = await call('POST', adminUrl, adminToken, { agent: 'A', name: 'via api' });
      assert.equal(created.status, 201);
      const s = (await created.json()) as Issued & { agent: string };
      assert.equal(s.agent, 'A');
      assert.equal(s.mcp_config.http.headers.Authorization, `Bearer ${s.token}`);
      const c = await connectWithToken(s.mcp_config.http.url, 'modern', s.token);
      assert.deepEqual(
        (await c.client.listTools()).tools.map((t) => t.name),
        ['secret.echo'],
      );

      const list = (await (await call('GET', adminUrl, adminToken)).json()) as {
        sessions: { session_uuid: string; name?: string; hub_id: string }[];
      };
      assert.ok(
        list.sessions.some((x) => x.session_uuid === s.session_uuid && x.name === 'via api'),
      );
      assert.ok(list.sessions.every((x) => x.hub_id === 'alpha-hub'));
      assert.doesNotMatch(JSON.stringify(list), /mhs_|token/);

      const revoked = await call('DELETE', `${adminUrl}/${s.session_uuid}`, adminToken);
      assert.equal(revoked.status, 200);
      await assert.rejects(c.client.listTools(), /403|revoked/);
      await c.client.close().catch(() => {});
      const twice = await call('DELETE', `${adminUrl}/${s.session_uuid}`, adminToken);
      assert.equal(twice.status, 404);
    });

    it('rejects bad requests with a clear error and stays up', async () => {
      const cases: [unknown, RegExp][] = [
        [{}, /'agent' must be a name/],
        [{ agent: 'nobody' }, /agent 'nobody' is not defined in the config/],
        [{ agent: 'A', role: 'admin' }, /'role' is not a known field/],
        [{ agent: 'A', target: 'x y' }, /'target' must be a name/],
        ['{not json', /not valid JSON/],
        [[1, 2], /must be a JSON object/],
      ];
      for (const [body, re] of cases) {
        const r = await call('POST', adminUrl, adminToken, body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.match(((await r.json()) as { error: string }).error, re);
      }
      const noType = await fetch(adminUrl, {
        method: 'POST',
        headers: { Authorization: `Bearer ${adminToken}` },
        body: '{"agent":"A"}',
      });
      assert.equal(noType.status, 415);
      assert.equal((await call('PUT', adminUrl, adminToken)).status, 405);
      assert.equal(
        (await call('GET', new URL('/admin/nope', hub.url).href, adminToken)).status,
        404,
      );
      assert.ok(hub.alive());
    });
  });

  it('joins the running hub over stdio with the printed entry (`moonhub connect`)', async () => {
    const s1 = createSession([
      '--config',
      config,
      '--data',
      dir.data,
      '--agent',
      'A',
      '--url',
      hub.url,
    ]);
    const { command, args, env } = s1.mcp_config.stdio;
    assert.deepEqual(args.slice(1), ['connect', hub.url]);
    assert.ok(!args.join(' ').includes(s1.token), 'the token is not on the command line');
    const client = new Client({ name: 'stdio-connect', version: '1' });
    await client.connect(
      new StdioClientTransport({ command, args, env: { ...process.env, ...env } as never }),
    );
    try {
      assert.deepEqual(
        (await client.listTools()).tools.map((t) => t.name),
        ['secret.echo'],
      );
      const r = await client.callTool({ name: 'secret.echo', arguments: {} });
      assert.equal((r.structuredContent as { session_uuid: string }).session_uuid, s1.session_uuid);
    } finally {
      await client.close();
    }
    // A revoked token: the client is told in the hub's words, and stderr says it once.
    const s3 = createSession([
      '--config',
      config,
      '--data',
      dir.data,
      '--agent',
      'A',
      '--url',
      hub.url,
    ]);
    const transport = new StdioClientTransport({
      ...s3.mcp_config.stdio,
      env: { ...process.env, ...s3.mcp_config.stdio.env } as never,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const c3 = new Client({ name: 'stdio-connect-revoked', version: '1' });
    await c3.connect(transport);
    try {
      assert.equal((await c3.listTools()).tools.length, 1);
      moonhubCli(['session', 'revoke', s3.session_uuid, '--config', config, '--data', dir.data]);
      await assert.rejects(c3.listTools(), /session token is wrong, revoked/);
      // stderr is another pipe than the answer's: give it a moment to arrive.
      for (let i = 0; i < 40 && !/the hub refused the token/.test(stderr); i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.match(stderr, /the hub refused the token/);
    } finally {
      await c3.close();
    }
  });

  it('serves a session over stdio with its view (`serve --stdio --session`)', async () => {
    const { command, args } = A.mcp_config.stdio_standalone;
    assert.ok(args.includes('--session') && args.includes(A.session_uuid));
    const client = new Client({ name: 'stdio-session', version: '1' });
    await client.connect(new StdioClientTransport({ command, args, stderr: 'pipe' }));
    try {
      assert.deepEqual(
        (await client.listTools()).tools.map((t) => t.name),
        ['secret.echo'],
      );
      const r = await client.callTool({ name: 'secret.echo', arguments: {} });
      assert.equal((r.structuredContent as { session_uuid: string }).session_uuid, A.session_uuid);
      assert.equal((r.structuredContent as { agent_name: string }).agent_name, 'A');
      await assert.rejects(
        client.callTool({ name: 'public.echo', arguments: {} }),
        /Unknown tool: public\.echo/,
      );
    } finally {
      await client.close();
    }
    // Revoked while connected: within the store poll, every request says so, and the log too.
    const s2 = createSession(['--config', config, '--data', dir.data, '--agent', 'A']);
    const c2 = new Client({ name: 'stdio-revoked', version: '1' });
    const t2 = new StdioClientTransport({ ...s2.mcp_config.stdio_standalone, stderr: 'pipe' });
    let log = '';
    t2.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    await c2.connect(t2);
    try {
      assert.equal((await c2.listTools()).tools.length, 1);
      moonhubCli(['session', 'revoke', s2.session_uuid, '--config', config, '--data', dir.data]);
      const start = Date.now();
      let refusal = '';
      while (refusal === '' && Date.now() - start < 5000) {
        refusal = await c2.listTools().then(
          () => '',
          (err: Error) => err.message,
        );
        if (refusal === '') await new Promise((r) => setTimeout(r, 100));
      }
      assert.match(refusal, new RegExp(`session ${s2.session_uuid} has been revoked`));
      await assert.rejects(c2.callTool({ name: 'secret.echo', arguments: {} }), /has been revoked/);
      assert.match(log, /stdio session revoked; refusing its requests/);
    } finally {
      await c2.close();
    }
    const bad = moonhubCli([
      'serve',
      '--stdio',
      '--config',
      config,
      '--data',
      dir.data,
      '--session',
      '00000000-0000-4000-8000-000000000000',
    ]);
    assert.equal(bad.status, 1);
    assert.match(
      bad.stderr,
      /no active session 00000000-0000-4000-8000-000000000000 of hub 'alpha-hub'/,
    );
  });
});

describe('auth mode none off loopback', () => {
  it('is refused without --force, and loudly warned about with it', async () => {
    const dir = makeHubDir({ p: scopedPlugin('p') });
    const refused = moonhubCli([
      'serve',
      '--plugins',
      dir.plugins,
      '--host',
      '127.0.0.2',
      '--port',
      '0',
      '--data',
      dir.data,
    ]);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /refusing to serve 127\.0\.0\.2 without authentication/);
    const forced = await startMoonhub([
      '--plugins',
      dir.plugins,
      '--host',
      '127.0.0.2',
      '--force',
      '--data',
      dir.data,
    ]);
    try {
      assert.match(
        forced.log(),
        /WARNING: serving WITHOUT AUTHENTICATION on a non-loopback address/,
      );
    } finally {
      await forced.stop();
    }
    const tokenMode = await startMoonhub([
      '--plugins',
      dir.plugins,
      '--host',
      '127.0.0.2',
      '--auth',
      'token',
      '--data',
      dir.data,
    ]);
    try {
      assert.doesNotMatch(tokenMode.log(), /WARNING/);
    } finally {
      await tokenMode.stop();
    }
  });
});

describe('the inbox example with sessions', () => {
  let hub: MoonhubProcess;
  let dir: HubDir;
  const s: Record<string, Issued> = {};
  before(async () => {
    dir = makeHubDir({});
    hub = await startMoonhub([
      '--plugins',
      join(ROOT, 'examples', 'plugins'),
      '--auth',
      'token',
      '--data',
      dir.data,
      '--no-watch',
    ]);
    for (const agent of ['alice', 'bob', 'operator'])
      s[agent] = createSession(['--data', dir.data, '--agent', agent, '--url', hub.url]);
  });
  after(async () => hub.stop());

  it("keeps each session's messages private; only the operator agent can read them all", async () => {
    const [alice, bob, op] = await Promise.all(
      ['alice', 'bob', 'operator'].map((a) => connectWithToken(hub.url, 'modern', s[a]!.token)),
    );
    try {
      const who = await bob!.client.callTool({ name: 'inbox_whoami', arguments: {} });
      assert.equal(
        (who.structuredContent as { session_uuid: string }).session_uuid,
        s.bob!.session_uuid,
      );
      await alice!.client.callTool({
        name: 'inbox_send',
        arguments: { to: s.bob!.session_uuid, text: 'for bob only' },
      });
      const aliceRead = await alice!.client.callTool({ name: 'inbox_read', arguments: {} });
      assert.doesNotMatch(JSON.stringify(aliceRead), /for bob only/);
      const aliceDump = await alice!.client.callTool({ name: 'inbox_admin_dump', arguments: {} });
      assert.equal(aliceDump.isError, true);
      assert.doesNotMatch(JSON.stringify(aliceDump), /for bob only/);

      const dump = await op!.client.callTool({ name: 'inbox_admin_dump', arguments: {} });
      assert.notEqual(dump.isError, true);
      assert.match(JSON.stringify(dump.structuredContent), /for bob only/);

      // The same session over a second connection (the other era) is the same inbox.
      const bob2 = await connectWithToken(hub.url, 'legacy', s.bob!.token);
      const bobRead = await bob2.client.callTool({ name: 'inbox_read', arguments: {} });
      const msgs = (
        bobRead.structuredContent as {
          messages: { text: string; from: string; from_agent: string }[];
        }
      ).messages;
      assert.equal(msgs.length, 1);
      assert.equal(msgs[0]!.text, 'for bob only');
      assert.equal(msgs[0]!.from, s.alice!.session_uuid);
      assert.equal(msgs[0]!.from_agent, 'alice');
      await bob2.client.close();
    } finally {
      await Promise.all([alice, bob, op].map((c) => c!.client.close()));
    }
  });
});
