/**
 * The `cluster` config key and its flags: values read from the file, flags over the file, bad
 * values refused with the key's name (schema) or a clear message (CLI), an unreachable Redis
 * refused at start-up without leaking its password.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config.js';
import { resolveSettings } from '../../src/config/settings.js';
import { moonhubCli } from '../helpers/auth-hub.js';

const dir = mkdtempSync(join(tmpdir(), 'moonhub-cluster-config-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('cluster config', () => {
  it('reads cluster.redis, prefix and workers; flags win', () => {
    const cfg = file(
      'c.yaml',
      'cluster: { redis: "redis://r:6379/2", prefix: team, workers: 3 }\n',
    );
    const s = resolveSettings({ config: cfg });
    assert.deepEqual(s.cluster, { redis: 'redis://r:6379/2', prefix: 'team', workers: 3 });
    const f = resolveSettings({ config: cfg, redis: 'rediss://other:6380', workers: 2 });
    assert.deepEqual(f.cluster, { redis: 'rediss://other:6380', prefix: 'team', workers: 2 });
    assert.deepEqual(resolveSettings({}).cluster, {
      redis: undefined,
      prefix: undefined,
      workers: 1,
    });
  });

  it('refuses bad values, naming the key', () => {
    for (const [text, key] of [
      ['cluster: { redis: "http://x" }', /cluster\/redis|cluster\.redis/],
      ['cluster: { workers: 0 }', /cluster\/workers|cluster\.workers/],
      ['cluster: { workers: 65 }', /cluster\/workers|cluster\.workers/],
      ['cluster: { prefix: "a b" }', /cluster\/prefix|cluster\.prefix/],
      ['cluster: { sentinel: true }', /sentinel/],
    ] as const)
      assert.throws(() => loadConfig(file('bad.yaml', text)), key, text);
  });

  it('the CLI refuses --workers 0, a non-Redis URL and an unreachable Redis clearly', () => {
    const plugins = mkdtempSync(join(tmpdir(), 'moonhub-cluster-plugins-'));
    const w = moonhubCli(['serve', '--plugins', plugins, '--port', '0', '--workers', '0']);
    assert.notEqual(w.status, 0);
    assert.match(w.stderr, /--workers.*an integer from 1 to 64/);
    const data = ['--data', join(dir, 'data')];
    const u = moonhubCli([
      'serve',
      '--plugins',
      plugins,
      '--port',
      '0',
      ...data,
      '--redis',
      'http://x',
    ]);
    assert.notEqual(u.status, 0);
    assert.match(u.stderr, /redis:\/\/ or rediss:\/\//);
    const r = moonhubCli([
      'serve',
      '--plugins',
      plugins,
      '--port',
      '0',
      ...data,
      '--redis',
      'redis://:hunter2@127.0.0.1:1',
    ]);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1/);
    assert.doesNotMatch(r.stderr, /hunter2/);
  });
});
