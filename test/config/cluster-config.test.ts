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
    const none = { records: {}, answers: {}, commandTimeoutMs: undefined };
    assert.deepEqual(s.cluster, {
      redis: 'redis://r:6379/2',
      prefix: 'team',
      workers: 3,
      limits: none,
    });
    const f = resolveSettings({ config: cfg, redis: 'rediss://other:6380', workers: 2 });
    assert.deepEqual(f.cluster, {
      redis: 'rediss://other:6380',
      prefix: 'team',
      workers: 2,
      limits: none,
    });
    assert.deepEqual(resolveSettings({}).cluster, {
      redis: undefined,
      prefix: undefined,
      workers: 1,
      limits: none,
    });
  });

  it("reads cluster.limits into the stores' bounds", () => {
    const cfg = file(
      'l.yaml',
      'cluster: { limits: { max_sessions: 5, idle_timeout_ms: 60000, max_subscriptions: 7,' +
        ' max_events_per_stream: 9, max_event_bytes: 4096, event_ttl_ms: 5000,' +
        ' instance_ttl_ms: 3000, session_cache_ms: 250, answer_timeout_ms: 2000,' +
        ' max_waiting_answers: 3, command_timeout_ms: 750 } }\n',
    );
    assert.deepEqual(resolveSettings({ config: cfg }).cluster.limits, {
      records: {
        maxSessions: 5,
        idleTimeoutMs: 60000,
        maxSubscriptions: 7,
        maxEventsPerStream: 9,
        maxEventBytes: 4096,
        eventTtlMs: 5000,
        instanceTtlMs: 3000,
        sessionCacheMs: 250,
      },
      answers: { timeoutMs: 2000, maxPending: 3 },
      commandTimeoutMs: 750,
    });
  });

  it('refuses bad values, naming the key', () => {
    for (const [text, key] of [
      ['cluster: { redis: "http://x" }', /cluster\/redis|cluster\.redis/],
      ['cluster: { workers: 0 }', /cluster\/workers|cluster\.workers/],
      ['cluster: { workers: 65 }', /cluster\/workers|cluster\.workers/],
      ['cluster: { prefix: "a b" }', /cluster\/prefix|cluster\.prefix/],
      ['cluster: { sentinel: true }', /sentinel/],
      ['cluster: { limits: { max_sessions: 0 } }', /max_sessions/],
      ['cluster: { limits: { idle_timeout_ms: 5 } }', /idle_timeout_ms/],
      ['cluster: { limits: { max_session: 5 } }', /max_session/],
      ['cluster: { limits: { instance_ttl_ms: 999 } }', /instance_ttl_ms/],
      ['cluster: { limits: { session_cache_ms: 0 } }', /session_cache_ms/],
      ['cluster: { limits: { session_cache_ms: 600001 } }', /session_cache_ms/],
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
