/**
 * The config file and agent manifests: JSON and YAML, the published schema, errors that name the
 * file and the key, paths relative to the file, flags over the file; and the CLI refusing a bad
 * config with that message and exit code 1.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config.js';
import { resolveSettings, endpointUrl } from '../../src/config/settings.js';
import { loadManifest } from '../../src/views/source.js';
import { moonhubCli } from '../helpers/auth-hub.js';

const dir = mkdtempSync(join(tmpdir(), 'moonhub-config-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('config file', () => {
  it('reads YAML and JSON, resolving paths against the file', () => {
    const yaml = file(
      'ok.yaml',
      `hub_id: h1
listen: { host: 127.0.0.1, port: 9000 }
plugins: { dirs: [plugins] }
targets: { lab: { plugins: [a, b], builtins: [execute] } }
agents: { x: { manifest: m/x.json, plugins: [a] } }
auth: { mode: oauth, oauth: { issuer: "https://id.example", jwks_uri: "https://id.example/jwks", scopes: [mcp] } }
`,
    );
    const c = loadConfig(yaml);
    assert.deepEqual(c.plugins?.dirs, [join(dir, 'plugins')]);
    assert.equal(c.agents?.x?.manifest, join(dir, 'm', 'x.json'));
    assert.deepEqual(c.targets?.lab, { plugins: ['a', 'b'], builtins: ['execute'] });
    const json = file('ok.json', JSON.stringify({ hub_id: 'h2', auth: { mode: 'token' } }));
    assert.equal(loadConfig(json).auth?.mode, 'token');
  });

  const bad: [string, string, RegExp][] = [
    ['unknown top key', 'hubid: x', /'hubid' is not a known setting/],
    ['unknown nested key', 'listen: { hots: x }', /'listen.hots' is not a known setting/],
    ['port out of range', 'listen: { port: 70000 }', /'listen.port' must be <= 65535/],
    ['port not a number', 'listen: { port: "80" }', /'listen.port' must be integer/],
    [
      'bad auth mode',
      'auth: { mode: password }',
      /'auth.mode' must be one of "none", "token", "oauth"/,
    ],
    [
      'oauth without issuer',
      'auth: { mode: oauth, oauth: { jwks_uri: "https://x/jwks" } }',
      /'auth.oauth.issuer' is required/,
    ],
    [
      'issuer not a URL',
      'auth: { oauth: { issuer: "id.example", jwks_uri: "https://x" } }',
      /'auth.oauth.issuer' must be an http:\/\/ or https:\/\/ URL/,
    ],
    [
      'scope with a space',
      'auth: { oauth: { issuer: "https://x", jwks_uri: "https://x", scopes: ["a b"] } }',
      /'auth.oauth.scopes.0' must not contain spaces/,
    ],
    ['bad target name', 'targets: { "la b": {} }', /'targets.la b' is not a valid name/],
    [
      'bad plugin name',
      'targets: { lab: { plugins: ["../x"] } }',
      /'targets.lab.plugins.0' is not a valid name/,
    ],
    ['plugins not a list', 'agents: { a: { plugins: alpha } }', /'agents.a.plugins' must be array/],
    [
      'duplicate plugin',
      'agents: { a: { plugins: [x, x] } }',
      /'agents.a.plugins' must NOT have duplicate items/,
    ],
    [
      'unknown agent key',
      'agents: { a: { tools: [x] } }',
      /'agents.a.tools' is not a known setting/,
    ],
    ['not an object', '- a\n- b', /'\(top level\)' must be object/],
    ['broken YAML', 'listen: [', /is not valid YAML/],
  ];
  for (const [what, text, re] of bad) {
    it(`names the key: ${what}`, () => {
      const p = file(`bad-${what.replace(/\W+/g, '-')}.yaml`, text);
      assert.throws(
        () => loadConfig(p),
        (err: Error) => {
          assert.match(err.message, re);
          assert.ok(err.message.includes(p), 'names the file');
          return true;
        },
      );
    });
  }

  it('turns the execute section into the built-in options, root relative to the file', () => {
    const p = file(
      'exec.yaml',
      'execute: { timeout_ms: 500, max_concurrent_calls: 4, memory_bytes: 2097152, root: ws }',
    );
    assert.deepEqual(resolveSettings({ config: p }).execute, {
      timeoutMs: 500,
      maxConcurrentCalls: 4,
      memoryBytes: 2097152,
      root: join(dir, 'ws'),
    });
    assert.deepEqual(resolveSettings({ config: file('off.yaml', 'execute: false') }).execute, {
      enabled: false,
    });
    assert.deepEqual(resolveSettings({}).execute, {});
    assert.deepEqual(
      resolveSettings({ config: file('ceil.yaml', 'execute: { max_timeout_ms: 2000 }') }).execute,
      { maxTimeoutMs: 2000, timeoutMs: 2000 },
    );
  });

  it('says when the file cannot be read or is not JSON', () => {
    assert.throws(() => loadConfig(join(dir, 'missing.json')), /cannot read config file/);
    assert.throws(() => loadConfig(file('broken.json', '{"hub_id": ')), /is not valid JSON/);
  });

  it('lets flags override the file, and --plugins add to its directories', () => {
    const p = file(
      'flags.yaml',
      'hub_id: from-file\nlisten: { host: 127.0.0.1, port: 9000 }\nplugins: { dirs: [p1] }\nauth: { mode: token }\n',
    );
    const s = resolveSettings({
      config: p,
      port: 9100,
      hubId: 'from-flag',
      plugins: ['p2'],
      auth: 'none',
    });
    assert.equal(s.hub_id, 'from-flag');
    assert.equal(s.port, 9100);
    assert.equal(s.authMode, 'none');
    assert.deepEqual(s.dirs, [join(dir, 'p1'), join(process.cwd(), 'p2')]);
    assert.equal(endpointUrl(s), 'http://127.0.0.1:9100/mcp');
    assert.equal(resolveSettings({ config: p }).authMode, 'token');
    assert.throws(() => resolveSettings({ auth: 'oauth' }), /needs the auth.oauth section/);
    const plain = file(
      'plain-jwks.yaml',
      'auth: { oauth: { issuer: "https://id.example", jwks_uri: "http://id.example/jwks" } }',
    );
    assert.throws(
      () => resolveSettings({ config: plain }),
      /jwks_uri must be https \(http only on loopback\)/,
    );
    const local = file(
      'local-jwks.yaml',
      'auth: { oauth: { issuer: "http://127.0.0.1:9", jwks_uri: "http://127.0.0.1:9/jwks" } }',
    );
    assert.equal(resolveSettings({ config: local }).authMode, 'none');
  });
});

describe('agent manifest', () => {
  it('holds plugins and builtins lists and nothing else', () => {
    assert.deepEqual(loadManifest(file('m1.json', '{"plugins": ["a"], "builtins": []}')), {
      plugins: ['a'],
      builtins: [],
    });
    assert.deepEqual(loadManifest(file('m2.yaml', 'plugins: [a, b]')), { plugins: ['a', 'b'] });
    assert.throws(
      () => loadManifest(file('m3.json', '{"plugin": ["a"]}')),
      /agent manifest .*m3\.json: 'plugin' is not a known setting/,
    );
    assert.throws(
      () => loadManifest(file('m4.json', '{"plugins": "a"}')),
      /'plugins' must be array/,
    );
  });
});

describe('the CLI with a bad config', () => {
  it('exits 1 with the message that names the key', () => {
    const p = file('cli-bad.yaml', 'agents: { a: { manifest: 7 } }');
    const r = moonhubCli(['serve', '--config', p, '--data', join(dir, 'data')]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /'agents\.a\.manifest' must be string/);
    const s = moonhubCli([
      'session',
      'create',
      '--agent',
      'zed',
      '--config',
      file('cli-ok.yaml', 'agents: { a: {} }'),
      '--data',
      join(dir, 'data'),
    ]);
    assert.equal(s.status, 1);
    assert.match(s.stderr, /agent 'zed' is not defined in the config \(agents: a\)/);
    const m = moonhubCli([
      'serve',
      '--config',
      file('cli-m.yaml', `plugins: { dirs: [.] }\nagents: { a: { manifest: nowhere.json } }`),
      '--data',
      join(dir, 'data'),
    ]);
    assert.equal(m.status, 1);
    assert.match(m.stderr, /cannot read agent manifest .*nowhere\.json/);
    const mode = moonhubCli(['serve', '--auth', 'password', '--plugins', dir]);
    assert.equal(mode.status, 1);
    assert.match(mode.stderr, /one of none, token, oauth/);
  });
});
