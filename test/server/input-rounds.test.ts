/**
 * 2026-07-28 input rounds and Mcp-Param headers, unit by unit: request states are signed and
 * bound to their request, retries' answers are checked, and `x-mcp-header` parameters must agree
 * with their headers.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { WireError } from '../../src/errors.js';
import { RequestChannel, inputBinding, resumeRound } from '../../src/server/channel.js';
import { checkParamHeaders } from '../../src/server/param-headers.js';
import { RequestStates } from '../../src/server/request-state.js';

const STATES = new RequestStates();

/** Runs one round: asks `keys` through a fresh channel and returns the input_required result. */
async function roundAsking(
  params: Record<string, unknown>,
  keys: string[],
  states = STATES,
): Promise<{ result: Record<string, unknown> | undefined; answers: unknown[] }> {
  const channel = new RequestChannel();
  const round = resumeRound(params, 'tools/call t', channel, states);
  const answers: unknown[] = [];
  const asks = keys.map((k) =>
    round.ask(k, 'elicitation/create', { message: k }).then(
      (a) => answers.push(a),
      () => answers.push('rejected'),
    ),
  );
  await new Promise((r) => setImmediate(r));
  await Promise.all(asks);
  return { result: round.result, answers };
}

describe('input rounds', () => {
  it('collects the questions of one turn into one input_required result', async () => {
    const { result } = await roundAsking({}, ['a', 'b']);
    assert.equal(result!.resultType, 'input_required');
    assert.deepEqual(Object.keys(result!.inputRequests as object), ['a', 'b']);
    assert.equal(typeof result!.requestState, 'string');
  });

  it('answers from inputResponses and carries used answers in the next state', async () => {
    const first = await roundAsking(
      { inputResponses: { a: { action: 'accept', content: { x: 1 } }, extra: { y: 2 } } },
      ['a', 'b'],
    );
    assert.deepEqual(Object.keys(first.result!.inputRequests as object), ['b']);
    // The next retry answers b; a comes back from the state.
    const second = await roundAsking(
      {
        requestState: first.result!.requestState,
        inputResponses: { b: { action: 'decline' } },
      },
      ['a', 'b'],
    );
    assert.equal(second.result, undefined);
    assert.deepEqual(second.answers, [
      { action: 'accept', content: { x: 1 } },
      { action: 'decline' },
    ]);
  });

  it('refuses tampered, foreign and malformed input with -32602', async () => {
    const { result } = await roundAsking({}, ['a']);
    const state = result!.requestState as string;
    const bad = (params: Record<string, unknown>, binding = 'tools/call t') =>
      assert.throws(
        () => resumeRound(params, binding, new RequestChannel(), STATES),
        (err: unknown) => err instanceof WireError && err.code === -32602,
      );
    bad({ requestState: state + 'x' });
    bad({ requestState: 'garbage' });
    bad({ requestState: 42 });
    bad({ requestState: state }, 'tools/call other');
    bad({ inputResponses: null });
    bad({ inputResponses: { a: 12345 } });
    // Sealed by another hub (another random key): refused.
    bad({ requestState: new RequestStates().seal('tools/call t', {}) });
  });

  it('opens states sealed by another process of the same hub, and after a key change', async () => {
    const secret = Buffer.alloc(32, 7);
    const [a, b] = [new RequestStates(secret), new RequestStates(secret)];
    const answer = { action: 'accept', content: { ok: true } };
    const first = await roundAsking({ inputResponses: { a: answer } }, ['a', 'b'], a);
    const state = first.result!.requestState;
    // The retry lands on b, which shares the secret: a's answer comes back from the state.
    const second = await roundAsking(
      { requestState: state, inputResponses: { b: {} } },
      ['a', 'b'],
      b,
    );
    assert.equal(second.result, undefined);
    assert.deepEqual(second.answers, [answer, {}]);
    // The shared key changes (a Redis that lost it): states sealed before still open once...
    b.useSecret(Buffer.alloc(32, 8));
    const third = await roundAsking(
      { requestState: state, inputResponses: { b: {} } },
      ['a', 'b'],
      b,
    );
    assert.equal(third.result, undefined);
    // ...but not after a second change, and never on a process with another secret.
    b.useSecret(Buffer.alloc(32, 9));
    assert.throws(() => b.open(state, 'tools/call t'), /integrity check/);
    assert.throws(
      () => new RequestStates(Buffer.alloc(32, 1)).open(state, 'tools/call t'),
      /integrity/,
    );
  });

  it('binds a state to the principal that answered', () => {
    const states = new RequestStates();
    const params = { name: 't' };
    const alice = states.seal(inputBinding('tools/call', params, 'alice'), { a: {} });
    assert.deepEqual(states.open(alice, inputBinding('tools/call', params, 'alice')), { a: {} });
    assert.throws(
      () => states.open(alice, inputBinding('tools/call', params, 'bob')),
      /belongs to another request/,
    );
    assert.throws(
      () => states.open(alice, inputBinding('tools/call', params, undefined)),
      /belongs to another request/,
    );
  });
});

describe('request state expiry (limits.request_state_ttl_ms)', () => {
  it('opens a state until its TTL has passed, then refuses it as expired', () => {
    let now = 1_000_000;
    const secret = Buffer.alloc(32, 3);
    const states = new RequestStates(secret, { ttlMs: 60_000, now: () => now });
    const state = states.seal('tools/call t', { a: { ok: 1 } });
    now += 60_000;
    assert.deepEqual(states.open(state, 'tools/call t'), { a: { ok: 1 } });
    now += 1;
    assert.throws(
      () => states.open(state, 'tools/call t'),
      (err: unknown) =>
        err instanceof WireError &&
        err.code === -32602 &&
        /requestState expired: issued 60 s ago/.test(err.message) &&
        /limits\.request_state_ttl_ms/.test(err.message),
    );
    // Another process of the hub (same secret, its own TTL and clock) judges by the seal's time.
    const other = new RequestStates(secret, { ttlMs: 120_000, now: () => now });
    assert.deepEqual(other.open(state, 'tools/call t'), { a: { ok: 1 } });
  });

  it('defaults to 5 minutes and refuses a state sealed without an issue time', () => {
    let now = 5_000_000;
    const states = new RequestStates(Buffer.alloc(32, 4), { now: () => now });
    const state = states.seal('tools/call t', {});
    now += 5 * 60_000;
    assert.deepEqual(states.open(state, 'tools/call t'), {});
    now += 1;
    assert.throws(() => states.open(state, 'tools/call t'), /expired/);
    // A state of an older moonhub (no `t`), sealed under the same key: refused as expired.
    const payload = Buffer.from(JSON.stringify({ b: 'tools/call t', a: {} })).toString('base64url');
    const key = createHmac('sha256', Buffer.alloc(32, 4))
      .update('moonhub 2026-07-28 requestState v1')
      .digest();
    const old = `${payload}.${createHmac('sha256', key).update(payload).digest('base64url')}`;
    assert.throws(() => states.open(old, 'tools/call t'), /expired: it carries no issue time/);
  });
});

describe('Mcp-Param headers', () => {
  const schema = {
    type: 'object',
    properties: { region: { type: 'string', 'x-mcp-header': 'Region' } },
  };
  const check = (args: unknown, headers: Record<string, string>) =>
    checkParamHeaders(schema, args, headers);

  it('accepts agreeing plain and Base64 values', () => {
    assert.equal(check({ region: 'eu' }, { 'mcp-param-region': 'eu' }), undefined);
    assert.equal(
      check({ region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVsbG8=?=' }),
      undefined,
    );
    assert.equal(check({}, {}), undefined);
  });

  it('rejects a missing header, a mismatch and bad Base64 with -32020', () => {
    for (const [args, headers] of [
      [{ region: 'eu' }, {}],
      [{ region: 'eu' }, { 'mcp-param-region': 'us' }],
      [{ region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVsbG8?=' }],
    ] as const) {
      const verdict = check(args, headers);
      assert.equal(verdict?.code, -32020);
      assert.equal(verdict?.status, 400);
    }
  });
});
