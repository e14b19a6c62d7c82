/**
 * A plugin's worker thread: its own wasm Lua module and the plugin's state, with the unchanged
 * Lua API installed against a RemoteRegistry. The hub's thread mirrors what the plugin registers
 * and sends each call here; it terminates this thread when a call overstays its limit (a long C
 * call, a finalizer or a message handler cannot be stopped from inside) and starts a fresh one.
 */
import { parentPort } from 'node:worker_threads';
import { createLogger } from '../log.js';
import { LuaError } from '../lua/errors.js';
import { LuaState } from '../lua/state.js';
import {
  installApi,
  endForgottenBatches,
  settleUpstreams,
  stopBackgroundTasks,
  type TaskWatch,
} from '../lua-api/index.js';
import { useUpstreams } from '../upstream/manager.js';
import { RemoteUpstreams } from './remote-upstreams.js';
import { attachState, lazyField } from '../registry/lazy-fields.js';
import { IdTable } from '../id-table.js';
import type { CallContext, CallPeer } from '../registry/types.js';
import { findModule } from './find-module.js';
import { RemoteRegistry, remoteView, syncLink, type HubLink } from './remote-registry.js';
import { MessageBatch, isBundle } from './message-batch.js';
import type { FromWorker, PeerWire, PlainContext, ToWorker } from './worker-protocol.js';
import { onHubMessage, setup } from './worker-setup.js';
import { decode, encode, jsonExact, resultText } from './wire.js';
import { HANDLED, waitForHandled } from './sync-flag.js';
import { closeDirectPorts, serveDirectPort, type DirectHost } from './direct-port.js';

const port = parentPort!;
const owner = setup.source.name;
/** Messages posted on `port` so far: a synchronous question waits until the hub has them. */
let posted = 0;
/** One postMessage per event-loop turn (message-batch.ts); flushed before a question. */
const outbox = new MessageBatch<FromWorker | string>(port, (msg, err) => {
  if (typeof msg === 'string') return;
  if (msg.type === 'result') {
    // Its stand-in takes its place in the count.
    outbox.post({
      type: 'result',
      id: msg.id,
      ok: false,
      error: `the result cannot be passed to the hub: ${err.message}`,
    });
    return;
  }
  // Never reaches the hub, so never counted there: a question would wait for it in vain.
  posted--;
  if (msg.type === 'request') {
    const a = asked.get(msg.id);
    asked.delete(msg.id);
    a?.reject(new Error(`the request cannot be passed to the hub: ${err.message}`));
  }
  log.error({ type: msg.type }, `a message to the hub could not be copied: ${err.message}`);
});
const post = (msg: FromWorker): void => {
  posted++;
  // A failed call's result goes as JSON when JSON carries it exactly (wire.ts).
  if (msg.type === 'result') return postResult(encode(msg, jsonExact(msg)));
  outbox.post(msg, true);
  if (msg.type !== 'closed' && msg.type !== 'loaded' && msg.type !== 'failed') holdBacklog();
};
/**
 * Messages posted that the hub's thread has not handled yet, at most: a plugin's code that
 * registers, resets, updates or calls in a loop that never yields posts faster than the hub
 * handles, and the port's queue grew without bound (GiBs; the hub then handled the backlog in
 * one go, seconds without serving anybody). Past it, this thread waits until the hub is down to
 * half (it goes on posting while the hub handles the rest).
 */
const MAX_BACKLOG = 1024;
const holdBacklog = (): void => {
  // Int32 arithmetic: the hub's count wraps as an Int32, so compare in the same ring.
  if ((((posted | 0) - Atomics.load(setup.flag, HANDLED)) | 0) <= MAX_BACKLOG) return;
  // What is counted must be on its way, or the hub could never catch up with it.
  outbox.flush();
  waitForHandled(setup.flag, posted, MAX_BACKLOG / 2);
};
/**
 * Results wait for the turn's end while other calls run (they may finish in the same turn); the
 * last one, and anything else (logs, registrations, requests), goes now, in order.
 */
const postResult = (wire: FromWorker | string): void => {
  outbox.post(wire, running <= 1);
};
const log = createLogger(setup.logLevel).child({ plugin: owner });

/** Asynchronous requests to the hub's thread, by id. */
const asked = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
let nextAsk = 1;
/** How many calls from the hub run here (results wait for the turn's end while others run). */
let running = 0;
/**
 * The calls running here whose code waits on their cancellation (read `ctx.signal`): the hub
 * relays an abort only for those ('watch'), so the others need no entry (a table insert and
 * delete per call less).
 */
const watched = new IdTable<WorkerCall, number>();

const link: HubLink = {
  post,
  ask: syncLink(setup.syncPort, setup.flag, () => {
    // The hub answers once it has handled every message posted before: send them first.
    outbox.flush();
    return posted;
  }),
  request: (op, args, origin, ctx) =>
    new Promise((resolve, reject) => {
      const id = nextAsk++;
      asked.set(id, { resolve, reject });
      post({ type: 'request', id, op, args, origin, ctx });
    }),
};

const registry = new RemoteRegistry(setup.hubId, link);
const upstreams = new RemoteUpstreams(registry, link);
useUpstreams(registry, upstreams);
function remotePeer(
  id: number,
  peer: { caps?: Record<string, unknown>; pollLater: boolean },
): CallPeer {
  const origin = { call: id };
  const out: CallPeer = {
    clientCapabilities: peer.caps,
    progress: (progress, total, message) =>
      link.ask({ op: 'progress', origin, args: [progress, total, message] }) as boolean,
    log: (level, data, logger) =>
      post({ type: 'peer', id, method: 'log', args: [level, data, logger] }),
    request: (method, params, opts) =>
      link.request('peerRequest', [method, params, opts], origin) as Promise<
        Record<string, unknown>
      >,
  };
  if (peer.pollLater)
    out.pollLater = (ms) => link.ask({ op: 'pollLater', origin, args: [ms] }) as boolean;
  return out;
}

/** A call running here: what its context's lazy fields are made from, and its cancellation. */
interface WorkerCall {
  id: number;
  /** The call has answered (a task it spawned may still read its context). */
  ended: boolean;
  wire: PeerWire | undefined;
  controller: AbortController | undefined;
  filter: CallContext['filter'];
  peer: CallPeer | undefined;
}

const FILTER_FIELD = lazyField((c: WorkerCall) => (c.filter ??= remoteView({ call: c.id })));
const PEER_FIELD = lazyField((c: WorkerCall) => {
  if (c.peer === undefined && c.wire !== undefined) c.peer = remotePeer(c.id, c.wire);
  return c.peer;
});
const SIGNAL_FIELD = lazyField((c: WorkerCall) => {
  if (!c.controller) {
    c.controller = new AbortController();
    if (!c.ended) watched.set(c.id, c);
    post({ type: 'watch', id: c.id });
  }
  return c.controller.signal;
});

/** The callers' contexts the hub defined (context-table.ts), by id: calls name theirs. */
const contexts = new Map<number, { ctx: PlainContext; peer?: PeerWire }>();

/** The context a handler here sees: the caller's data, its client, view and cancellation by id. */
function contextOf(msg: Extract<ToWorker, { type: 'invoke' }>, call: WorkerCall): CallContext {
  let base: PlainContext;
  let wire: PeerWire | undefined;
  let requestId: string | number | undefined;
  let uri: string | undefined;
  if (msg.cx !== undefined) {
    const entry = contexts.get(msg.cx);
    // Only the hub defines entries; a name it never sent is refused, never guessed.
    if (entry === undefined) throw new Error(`the call names an unknown caller (${msg.cx})`);
    base = entry.ctx;
    wire = entry.peer;
    requestId = msg.rid;
    uri = msg.uri;
  } else {
    base = msg.ctx!;
    wire = msg.peer;
    requestId = base.request_id;
    uri = base.uri;
  }
  call.wire = wire;
  // One literal of fixed shape (an absent field is an own undefined), no spread of the caller's
  // context per call. The view, the peer and the signal are own enumerable getters shared by
  // every context (lazy-fields.ts): made only when read, as spreads expect.
  const ctx: CallContext = {
    hub_id: base.hub_id,
    session_uuid: base.session_uuid,
    agent_name: base.agent_name,
    target: base.target,
    principal: base.principal,
    plugin: base.plugin,
    request_id: requestId,
    uri,
    fields: base.fields,
  };
  attachState(ctx, call);
  Object.defineProperty(ctx, 'filter', FILTER_FIELD);
  Object.defineProperty(ctx, 'peer', PEER_FIELD);
  Object.defineProperty(ctx, 'signal', SIGNAL_FIELD);
  return ctx;
}

async function run(msg: Extract<ToWorker, { type: 'invoke' }>, call: WorkerCall): Promise<unknown> {
  const ctx = contextOf(msg, call);
  switch (msg.kind) {
    case 'tool': {
      const tool = registry.findTool(msg.name);
      if (!tool) throw new Error(`Unknown tool: ${msg.name}`);
      // The hub mirrors the tool without its compiled schema: its arguments are checked here.
      const input = msg.input as Record<string, unknown>;
      return registry.refusedArguments(tool, input) ?? tool.entry.handler(input, ctx);
    }
    case 'prompt': {
      const entry = registry.getPromptEntry(msg.name);
      if (!entry) throw new Error(`Unknown prompt: ${msg.name}`);
      return entry.handler(msg.input as Record<string, string>, ctx);
    }
    case 'resource': {
      const entry = registry.resourceEntry(msg.name);
      if (!entry) throw new Error(`Resource not found: ${msg.name}`);
      const { uri, params } = msg.input as { uri: string; params: Record<string, string> };
      return entry.handler(uri, params, ctx);
    }
    default: {
      const c = msg.complete!;
      const ref =
        msg.kind === 'complete-prompt'
          ? { type: 'ref/prompt', name: msg.name }
          : { type: 'ref/resource', uri: msg.name };
      return registry.complete(ref, c.argument, c.value, c.context, ctx);
    }
  }
}

/** Runs a call and posts its result (one async function: no promise chain per call). */
async function invoke(msg: Extract<ToWorker, { type: 'invoke' }>): Promise<void> {
  const call: WorkerCall = {
    id: msg.id,
    ended: false,
    wire: undefined,
    controller: undefined,
    filter: undefined,
    peer: undefined,
  };
  running++;
  let value: unknown;
  try {
    value = await run(msg, call);
  } catch (err) {
    const e = err as Error & { code?: string };
    const out: FromWorker = {
      type: 'result',
      id: msg.id,
      ok: false,
      error: e instanceof Error ? e.message : String(err),
    };
    if (typeof e?.code === 'string') out.code = e.code;
    post(out);
    ended(call);
    return;
  }
  posted++;
  const memory = state?.memoryUsed;
  // JSON when it carries the value exactly, value last (wire.ts resultText): the hub passes a
  // tool result's text on as it is. Posted while the call still counts as running (postResult).
  let wire: FromWorker | string | undefined;
  if (jsonExact(value)) {
    try {
      wire = resultText(msg.id, value, memory);
    } catch {
      // Too large for one string: the structured clone (and its refusal) decide.
    }
  }
  if (wire === undefined) {
    const out: FromWorker = { type: 'result', id: msg.id, ok: true, value };
    if (memory !== undefined) out.memory = memory;
    wire = out;
  }
  postResult(wire);
  ended(call);
}

function ended(call: WorkerCall): void {
  running--;
  call.ended = true;
  if (call.controller !== undefined) watched.delete(call.id);
}

let state: LuaState | undefined;

/**
 * Each task's start goes at once (the task may get stuck before this turn ends, and the hub's
 * hard stop must know of it); its end waits for the turn's end like a result.
 */
const taskWatch: TaskWatch = {
  started: (id, ms, background) => post({ type: 'task', id, ms, background }),
  ended: (id) => {
    posted++;
    outbox.post({ type: 'task-end', id });
  },
};

async function load(): Promise<void> {
  try {
    state = await LuaState.create({
      name: owner,
      memoryLimit: setup.memoryLimit,
      print: (text) => log.info({ source: 'print' }, text),
      findModule: (name) => findModule(setup.source, name),
    });
    const views = setup.sessionViews
      ? (uuid: string) => {
          const v = link.ask({ op: 'sessionView', origin: {}, args: [uuid] }) as string;
          return v === 'none' ? null : v === 'all' ? undefined : remoteView({ session: uuid });
        }
      : undefined;
    installApi(state, {
      registry,
      owner,
      logger: log,
      root: setup.source.folder,
      sessionViews: views,
      settings: setup.settings,
      limits: setup.limits,
      taskWatch,
      // Counted on the hub's thread (moonhub_limit_refusals_total), one message per turn.
      onRefused: (limit, count) => post({ type: 'refused', limit, count }),
    });
    const ref = state.load(setup.code, setup.chunkname);
    await state.call(ref, [], { timeoutMs: setup.loadTimeoutMs });
    state.unref(ref);
    endForgottenBatches(state);
    void settleUpstreams(registry, owner, state);
    post({ type: 'loaded', memory: state?.memoryUsed });
  } catch (err) {
    if (state) endForgottenBatches(state);
    post({
      type: 'failed',
      message: err instanceof Error ? err.message : String(err),
      lua: err instanceof LuaError,
    });
  }
}

/** Direct calls from execute workers: the same registry call, views and peers by grant id. */
const directHost: DirectHost = {
  call: (name, args, ctx) => {
    const tool = registry.findTool(name);
    if (!tool) return Promise.reject(new Error(`Unknown tool: ${name}`));
    return registry.callResolved(tool, args, ctx);
  },
  view: (grant) => remoteView({ call: grant }),
  peer: (grant, wire) => remotePeer(grant, wire),
};

function close(): void {
  // Direct calls running from execute scripts finish first, as the hub's own calls do.
  void closeDirectPorts(`the plugin '${owner}' was unloaded`).then(() => {
    // The plugin's proxies live on the hub's thread, which settles them.
    state?.close();
    post({ type: 'closed' });
    outbox.flush();
  });
}

onHubMessage((raw) => {
  const msg = decode(raw);
  if (!isBundle(msg)) return onMessage(msg);
  for (const m of msg.messages) onMessage(decode(m));
});

function onMessage(msg: ToWorker): void {
  switch (msg.type) {
    case 'invoke':
      return void invoke(msg);
    case 'answer': {
      const a = asked.get(msg.id);
      if (!a) return;
      asked.delete(msg.id);
      if (msg.ok) return a.resolve(msg.value);
      return a.reject(Object.assign(new Error(msg.error ?? 'failed'), { code: msg.code }));
    }
    case 'abort':
      return watched.get(msg.id)?.controller?.abort();
    case 'context':
      contexts.set(msg.cx, msg.entry);
      return;
    case 'forget':
      contexts.delete(msg.cx);
      return;
    case 'callback':
      return void upstreams.callback(msg.url, msg.which, msg.args).then(
        (value) => post({ type: 'callback-done', id: msg.id, ok: true, value }),
        (err: unknown) =>
          post({ type: 'callback-done', id: msg.id, ok: false, error: (err as Error).message }),
      );
    case 'close':
      return close();
    case 'retire':
      if (state) stopBackgroundTasks(state);
      return;
    case 'direct':
      return serveDirectPort(msg.port, msg.finished, directHost);
  }
}

void load();
