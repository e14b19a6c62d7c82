/**
 * The error registry and its documentation stay in step: every wire error and local code in
 * src/errors.ts is in docs/errors.md with the same code, status and message, every documented one
 * exists, every registered wire error is raised somewhere, and no JSON-RPC error code is written
 * as a bare literal outside the registry.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LOCAL_ERRORS, WIRE_ERRORS, wireError } from '../../src/errors.js';
import { ROOT } from '../helpers/moonhub-process.js';

/** The rows of the markdown table under `heading`, as arrays of cells. */
function tableUnder(markdown: string, heading: string): string[][] {
  const start = markdown.indexOf(`## ${heading}`);
  assert.ok(start >= 0, `docs/errors.md has a "${heading}" section`);
  const next = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, next === -1 ? undefined : next);
  return section
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .slice(2)
    .map((l) =>
      l
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim().replace(/\\\|/g, '|')),
    );
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const docs = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
// The registry itself (errors.ts and its local half) is where the codes are written.
const REGISTRY = [join('src', 'errors.ts'), join('src', 'local-errors.ts')];
const sources = sourceFiles(join(ROOT, 'src')).filter((f) => !REGISTRY.some((r) => f.endsWith(r)));

describe('error registry', () => {
  it('documents every wire error as registered, and nothing else', () => {
    const rows = tableUnder(docs, 'Wire errors');
    const documented = new Map(
      rows.map(([name, code, status, message]) => [name, { code, status, message }]),
    );
    for (const [name, def] of Object.entries(WIRE_ERRORS)) {
      const row = documented.get('`' + name + '`');
      assert.ok(row, `${name} is missing from docs/errors.md`);
      assert.deepEqual(
        row,
        { code: String(def.code), status: String(def.status), message: def.message },
        name,
      );
    }
    for (const name of documented.keys())
      assert.ok(
        Object.hasOwn(WIRE_ERRORS, name.replace(/`/g, '')),
        `${name} is documented but not registered`,
      );
  });

  it('documents every local error code, and nothing else', () => {
    const rows = tableUnder(docs, 'Local error codes');
    assert.deepEqual(
      rows.map(([code]) => code!.replace(/`/g, '')).sort(),
      Object.keys(LOCAL_ERRORS).sort(),
    );
  });

  it('raises every registered wire error somewhere', () => {
    const text = sources.map((f) => readFileSync(f, 'utf8')).join('\n');
    for (const name of Object.keys(WIRE_ERRORS))
      assert.ok(text.includes(`'${name}'`), `${name} is registered but never raised`);
  });

  it('keeps JSON-RPC error codes out of the code as bare literals', () => {
    for (const file of sources) {
      const text = readFileSync(file, 'utf8');
      // Upstream code reads codes other servers send; the serving side writes only registered ones.
      if (file.includes(join('src', 'upstream'))) continue;
      const found = text.match(/-32[0-9]{3}\b/g);
      assert.equal(found, null, `${file} writes ${String(found)}`);
    }
  });

  it('throws only registered errors in src/server', () => {
    for (const file of sources.filter((f) => f.includes(join('src', 'server')))) {
      const text = readFileSync(file, 'utf8');
      assert.doesNotMatch(text, /new Error\(/, `${file} throws an unregistered error`);
    }
  });

  it('fills message templates', () => {
    const e = wireError('batch_unsupported', { version: '2025-06-18' });
    assert.equal(e.code, -32600);
    assert.equal(e.status, 400);
    assert.equal(
      e.message,
      'Invalid Request: JSON-RPC batches are not supported on protocol revision 2025-06-18',
    );
  });
});
