/**
 * Scoping end to end (LUA_API §2.1): a real hub in token mode, sessions made by the real CLI,
 * SDK clients holding different tokens. A (target lab + agent list) sees the intersection, B
 * (manifest only) its agent list, C (no lists) everything; what is outside a view answers like
 * an unknown name; a manifest edit changes one view and notifies that session only. Built-ins
 * (owners `builtin:NAME`) follow their own lists the same way: A gets the intersection
 * (search_tools), B's manifest lists none, C sees them all.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { waitFor, type ClientEvents, type Era } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import {
  LISTER_PLUGIN,
  connectWithToken,
  createSession,
  makeHubDir,
  rawPost,
  scopedPlugin,
  type HubDir,
  type Issued,
} from '../helpers/auth-hub.js';

const CONFIG = `
hub_id: scoped
auth: { mode: token }
plugins: { dirs: [plugins] }
targets:
  lab: { plugins: [alpha, beta, ctx, lister], builtins: [search_tools, hub_status] }
agents:
  A: { plugins: [beta, gamma, ctx, lister], builtins: [search_tools, execute] }
  B: { manifest: b-manifest.json }
  C: {}
`;

const toolNames = async (c: Client) => (await c.listTools()).tools.map((t) => t.name).sort();
/** Plugin tools are named `plugin.tool`; the built-ins have bare names. */
const pluginTools = (names: string[]) => names.filter((n) => n.includes('.'));
const promptNames = async (c: Client) => (await c.listPrompts()).prompts.map((p) => p.name).sort();
const resourceUris = async (c: Client) =>
  (await c.listResources()).resources.map((r) => r.uri).sort();
const templateUris = async (c: Client) =>
  (await c.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate).sort();

describe('plugin scoping per session', () => {
  let dir: HubDir;
  let config: string;
  let hub: MoonhubProcess;
  const sessions: Record<'A' | 'B' | 'C', Issued> = {} as never;

  before(async () => {
    dir = makeHubDir({
      alpha: scopedPlugin('alpha'),
      beta: scopedPlugin('beta'),
      gamma: scopedPlugin('gamma'),
      ctx: scopedPlugin('ctx'),
      lister: LISTER_PLUGIN,
    });
    dir.write('b-manifest.json', JSON.stringify({ plugins: ['gamma', 'ctx'], builtins: [] }));
    config = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', config, '--data', dir.data]);
    const common = ['--config', config, '--data', dir.data, '--url', hub.url];
    sessions.A = createSession([...common, '--agent', 'A', '--target', 'lab', '--name', 'a']);
    sessions.B = createSession([...common, '--agent', 'B']);
    sessions.C = createSession([...common, '--agent', 'C']);
  });
  after(async () => hub.stop());

  for (const era of ['modern', 'legacy'] as Era[]) {
    it(`shows each session exactly its view (${era})`, async () => {
      const a = await connectWithToken(hub.url, era, sessions.A.token);
      const b = await connectWithToken(hub.url, era, sessions.B.token);
      const c = await connectWithToken(hub.url, era, sessions.C.token);
      try {
        assert.deepEqual(await toolNames(a.client), [
          'beta.echo',
          'ctx.echo',
          'lister.of',
          'lister.relay',
          'search_tools',
        ]);
        assert.deepEqual(await toolNames(b.client), ['ctx.echo', 'gamma.echo']);
        const ofC = await toolNames(c.client);
        assert.deepEqual(pluginTools(ofC), [
          'alpha.echo',
          'beta.echo',
          'ctx.echo',
          'gamma.echo',
          'lister.of',
          'lister.relay',
        ]);
        for (const builtin of ['execute', 'search_tools'])
          assert.ok(ofC.includes(builtin), builtin);
        assert.deepEqual(await promptNames(a.client), ['beta-prompt', 'ctx-prompt']);
        assert.deepEqual(await promptNames(b.client), ['ctx-prompt', 'gamma-prompt']);
        assert.deepEqual(await resourceUris(a.client), ['beta://info', 'ctx://info']);
        assert.deepEqual(await templateUris(b.client), ['ctx://item/{id}', 'gamma://item/{id}']);
        assert.equal((await templateUris(c.client)).length, 4);
      } finally {
        await Promise.all([a.client.close(), b.client.close(), c.client.close()]);
      }
    });
  }

  it('fills the call context from the session: session_uuid, agent, target, principal, hub', async () => {
    const a = await connectWithToken(hub.url, 'modern', sessions.A.token);
    try {
      const r = await a.client.callTool({ name: 'ctx.echo', arguments: {} });
      assert.deepEqual(r.structuredContent, {
        plugin: 'ctx',
        session_uuid: sessions.A.session_uuid,
        agent_name: 'A',
        target: 'lab',
        principal: `session:${sessions.A.session_uuid}`,
        hub_id: 'scoped',
      });
    } finally {
      await a.client.close();
    }
  });

  it('answers a call outside the view exactly like an unknown name (tools, prompts, resources)', async () => {
    const auth = { Authorization: `Bearer ${sessions.A.token}` };
    const hidden = await rawPost(
      hub.url,
      { method: 'tools/call', params: { name: 'alpha.echo', arguments: {} } },
      auth,
    );
    const missing = await rawPost(
      hub.url,
      { method: 'tools/call', params: { name: 'zzzzz.echo', arguments: {} } },
      auth,
    );
    assert.equal(hidden.status, missing.status);
    assert.equal(hidden.text, missing.text.replace('zzzzz.echo', 'alpha.echo'));
    assert.match(hidden.text, /"code":-32602,"message":"Unknown tool: alpha.echo"/);
    // A built-in outside the view is as unknown as a plugin's tool.
    const hiddenBuiltin = await rawPost(
      hub.url,
      { method: 'tools/call', params: { name: 'execute', arguments: { code: 'return 1' } } },
      auth,
    );
    assert.equal(hiddenBuiltin.status, missing.status);
    assert.equal(hiddenBuiltin.text, missing.text.replace('zzzzz.echo', 'execute'));

    const hiddenPrompt = await rawPost(
      hub.url,
      { method: 'prompts/get', params: { name: 'gamma-prompt' } },
      auth,
    );
    const missingPrompt = await rawPost(
      hub.url,
      { method: 'prompts/get', params: { name: 'zzzzz-prompt' } },
      auth,
    );
    assert.equal(hiddenPrompt.text, missingPrompt.text.replace('zzzzz-prompt', 'gamma-prompt'));
    assert.match(hiddenPrompt.text, /Unknown prompt: gamma-prompt/);

    for (const [hiddenUri, missingUri] of [
      ['alpha://info', 'zzzzz://info'],
      ['gamma://item/7', 'zzzzz://item/7'],
    ] as const) {
      const h = await rawPost(
        hub.url,
        { method: 'resources/read', params: { uri: hiddenUri } },
        auth,
      );
      const m = await rawPost(
        hub.url,
        { method: 'resources/read', params: { uri: missingUri } },
        auth,
      );
      assert.equal(h.status, m.status);
      assert.equal(h.text, m.text.replaceAll(missingUri, hiddenUri));
      assert.doesNotMatch(h.text, /info of|item 7/);
    }
    // The same names are served to the session whose view holds them.
    const c = await rawPost(
      hub.url,
      { method: 'resources/read', params: { uri: 'alpha://info' } },
      { Authorization: `Bearer ${sessions.C.token}` },
    );
    assert.match(c.text, /info of alpha/);
  });

  it('mcp.list_tools(session_uuid) lists what that session sees', async () => {
    const c = await connectWithToken(hub.url, 'modern', sessions.C.token);
    try {
      const ofB = await c.client.callTool({
        name: 'lister.of',
        arguments: { session: sessions.B.session_uuid },
      });
      assert.deepEqual(ofB.structuredContent, { names: ['ctx.echo', 'gamma.echo'] });
      const ofSelf = await c.client.callTool({ name: 'lister.of', arguments: {} });
      const own = (ofSelf.structuredContent as { names: string[] }).names;
      assert.equal(pluginTools(own).length, 6);
      assert.ok(own.includes('execute'));
      const unknown = await c.client.callTool({
        name: 'lister.of',
        arguments: { session: '00000000-0000-4000-8000-000000000000' },
      });
      assert.match(JSON.stringify(unknown.structuredContent), /unknown session/);
    } finally {
      await c.client.close();
    }
  });

  it("mcp.call_tool(name, params, context) keeps the caller's view", async () => {
    const a = await connectWithToken(hub.url, 'modern', sessions.A.token);
    try {
      const hidden = await a.client.callTool({
        name: 'lister.relay',
        arguments: { name: 'alpha.echo' },
      });
      assert.deepEqual(hidden.structuredContent, { error: 'Unknown tool: alpha.echo' });
      const seen = await a.client.callTool({
        name: 'lister.relay',
        arguments: { name: 'beta.echo' },
      });
      assert.match(JSON.stringify(seen.structuredContent), /plugin.*beta/);
    } finally {
      await a.client.close();
    }
  });

  for (const era of ['legacy', 'modern'] as Era[]) {
    it(`a manifest edit changes B's view and notifies B only (${era})`, async () => {
      const clients: Record<string, { client: Client; events: ClientEvents }> = {};
      for (const k of ['A', 'B', 'C'] as const)
        clients[k] = await connectWithToken(hub.url, era, sessions[k].token);
      try {
        // 2026-07-28 clients hear list_changed through subscriptions/listen, opened by listing.
        for (const k of ['A', 'B', 'C']) await clients[k]!.client.listTools();
        await new Promise((r) => setTimeout(r, 300));
        const from = hub.log().length;
        const next = era === 'legacy' ? ['alpha', 'gamma', 'ctx'] : ['gamma', 'ctx'];
        dir.write('b-manifest.json', JSON.stringify({ plugins: next, builtins: [] }));
        await hub.waitForLog(/agent manifest reloaded/, from);
        await waitFor(() => clients.B!.events.tools > 0, 5000, 'B hears tools/list_changed');
        assert.deepEqual(await toolNames(clients.B!.client), next.map((p) => `${p}.echo`).sort());
        // Give a wrong notification time to arrive before saying there was none.
        await new Promise((r) => setTimeout(r, 400));
        assert.equal(clients.A!.events.tools, 0, 'A was not notified');
        assert.equal(clients.C!.events.tools, 0, 'C was not notified');
      } finally {
        await Promise.all(Object.values(clients).map((c) => c.client.close()));
      }
    });
  }

  it('applies an edit of the config file: targets and agents at once, other keys after a restart', async () => {
    const a = await connectWithToken(hub.url, 'legacy', sessions.A.token);
    const c = await connectWithToken(hub.url, 'legacy', sessions.C.token);
    try {
      await a.client.listTools();
      const from = hub.log().length;
      dir.write(
        'moonhub.yaml',
        CONFIG.replace(
          'A: { plugins: [beta, gamma, ctx, lister],',
          'A: { plugins: [alpha],',
        ).replace('hub_id: scoped', 'hub_id: renamed'),
      );
      await hub.waitForLog(/config reloaded/, from);
      assert.match(
        hub.log().slice(from),
        /"keys":\["hub_id"\],"msg":"config change needs a restart to apply"/,
      );
      await waitFor(() => a.events.tools > 0, 5000, 'A hears tools/list_changed');
      assert.deepEqual(await toolNames(a.client), ['alpha.echo', 'search_tools']);
      assert.equal(c.events.tools, 0, 'C was not notified');
      const r = await a.client.callTool({ name: 'alpha.echo', arguments: {} });
      assert.equal((r.structuredContent as { hub_id: string }).hub_id, 'scoped');
      const from2 = hub.log().length;
      dir.write('moonhub.yaml', 'agents: { A: { plugins: 7 } }');
      await hub.waitForLog(/config file not applied/, from2);
      assert.deepEqual(await toolNames(a.client), ['alpha.echo', 'search_tools']);
    } finally {
      dir.write('moonhub.yaml', CONFIG);
      await Promise.all([a.client.close(), c.client.close()]);
    }
  });

  it('tells a plugin reload only to the sessions that see the plugin', async () => {
    const b = await connectWithToken(hub.url, 'legacy', sessions.B.token);
    const c = await connectWithToken(hub.url, 'legacy', sessions.C.token);
    try {
      await b.client.listTools();
      await c.client.listTools();
      await new Promise((r) => setTimeout(r, 300));
      const from = hub.log().length;
      dir.write(
        'plugins/alpha.lua',
        scopedPlugin('alpha') + 'mcp.tool("alpha.more", {}, function() return 1 end)\n',
      );
      await hub.waitForLog(/"plugin":"alpha".*plugin (re)?loaded/, from);
      await waitFor(() => c.events.tools > 0, 5000, 'C hears tools/list_changed');
      assert.ok((await toolNames(c.client)).includes('alpha.more'));
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(b.events.tools, 0, 'B, which does not see alpha, was not notified');
    } finally {
      await Promise.all([b.client.close(), c.client.close()]);
    }
  });

  it('keeps the view when a manifest edit is broken, and says so in the log', async () => {
    const b = await connectWithToken(hub.url, 'modern', sessions.B.token);
    try {
      const before = await toolNames(b.client);
      const from = hub.log().length;
      dir.write('b-manifest.json', '{"plugins": ["gamma", ');
      await hub.waitForLog(/agent manifest not applied/, from);
      assert.deepEqual(await toolNames(b.client), before);
      dir.write('b-manifest.json', JSON.stringify({ plugins: ['nonesuch'], extra: 1 }));
      await hub.waitForLog(/'extra' is not a known setting/, from);
      assert.deepEqual(await toolNames(b.client), before);
      assert.ok(hub.alive());
    } finally {
      await b.client.close();
    }
  });
});
