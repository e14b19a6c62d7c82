/**
 * An execute worker thread: its own wasm Lua module, one fresh sandboxed state per run (made
 * ahead of time, never reused), the script API bound to the hub's thread through messages. The
 * hub terminates the thread when a run overstays its wall time (a long C call cannot be stopped
 * from inside); every other limit ends the run here with a clear error.
 */
import { mkdirSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { MessageBatch, isBundle, type MessageBundle } from '../plugins/message-batch.js';
import { LuaError, LuaArgumentError } from '../lua/errors.js';
import { LuaState } from '../lua/state.js';
import { installScriptApi } from '../lua-api/script-api.js';
import { installTask } from '../lua-api/task.js';
import { installVfs } from '../lua-api/vfs.js';
import { MessageGate } from '../lua-api/plugin-limits.js';
import type { ToolCaller } from '../lua-api/tool-caller.js';
import { extractImages } from '../registry/result-images.js';
import { toJsonText } from '../registry/results.js';
import type { ToolResult } from '../registry/types.js';
import { DirectCalls } from './direct-calls.js';
import { innerNameRefusal } from './options.js';
import type { FromWorker, ToWorker, WorkerSetup } from './protocol.js';

const setup = workerData as WorkerSetup;

const LOG_TO_OUTPUT = `
log = {}
for _, level in ipairs({ "debug", "info", "warn", "error" }) do
  log[level] = function(message, fields)
    local line = "[" .. level .. "] " .. tostring(message)
    if fields ~= nil then line = line .. " " .. json.encode(fields) end
    print(line)
  end
end`;
const port = parentPort!;
/**
 * A script's tool calls started in one turn (`mcp.call` x3, then `task.await`) go in one
 * postMessage (plugins/message-batch.ts); everything else goes at once, after them.
 */
const outbox = new MessageBatch<FromWorker>(port, (msg, err) => {
  if (msg.type !== 'call') return;
  const w = waiting.get(msg.call);
  waiting.delete(msg.call);
  w?.reject(new Error(`the arguments of '${msg.name}' cannot be passed on: ${err.message}`));
});
const post = (msg: FromWorker): void => outbox.post(msg, msg.type !== 'call');
/** Calls the hub granted a run, straight to plugin workers (direct-calls.ts). */
const direct = new DirectCalls(post);

interface Run {
  id: number;
  caller: ToolCaller;
  output: string[];
  outputBytes: number;
  outputExceeded: string | undefined;
  deadline: number;
  instructions: number;
  /** The folder behind `/source/` for this run. */
  root: string;
  /** The scratch folder is still to be made (on the first touch of `/source/`). */
  lazy: boolean;
}

/** The run's `/source/` folder, made on first use when it is the run's own scratch folder. */
function rootOf(run: Run | undefined): string | undefined {
  if (run === undefined) return undefined;
  if (run.lazy) {
    // The hub named it inside its private 0700 folder; it does not exist yet (a fresh run).
    mkdirSync(run.root, { mode: 0o700 });
    run.lazy = false;
    post({ type: 'scratch', run: run.id });
  }
  return run.root;
}

interface Prepared {
  state: LuaState;
  holder: { run: Run | undefined };
}

const waiting = new Map<
  number,
  { run: number; resolve: (r: ToolResult) => void; reject: (e: Error) => void }
>();
let nextCall = 1;

/** What a run refused in this worker, reported with its answer (the hub counts it). */
interface RunRefusals {
  names: number;
  notices: number;
}

function callerFor(run: number, tools: string[], refused: RunRefusals): ToolCaller {
  // Notices are cut and rate-limited here, before they cross to the hub's thread: a script
  // calling notice() in a tight loop would otherwise queue messages faster than the hub reads
  // them (the hub's memory grew by GiBs in seconds).
  const gate = new MessageGate(
    { messageBytes: setup.messageBytes, messagesPerSecond: setup.messagesPerSecond },
    (n) =>
      post({
        type: 'notice',
        run,
        text: `${n} notice${n === 1 ? '' : 's'} dropped: at most ${setup.messagesPerSecond} per second (execute.messages_per_second)`,
        params: undefined,
      }),
    { messageBytes: 'execute.message_bytes', messagesPerSecond: 'execute.messages_per_second' },
    undefined,
    () => void refused.notices++,
  );
  return {
    call: (name, args) => {
      // Refused here, before the name is copied to the hub's thread or looked up anywhere.
      const tooLong = innerNameRefusal(name, setup.nameLength);
      if (tooLong !== undefined) {
        refused.names++;
        return Promise.reject(tooLong);
      }
      return (
        direct.call(name, args) ??
        new Promise<ToolResult>((resolve, reject) => {
          const call = nextCall++;
          waiting.set(call, { run, resolve, reject });
          post({ type: 'call', run, call, name, args });
        })
      );
    },
    listTools: () => tools,
    notice: (text, params) => {
      const cut = gate.admit(text);
      if (cut !== undefined) post({ type: 'notice', run, text: cut, params });
    },
  };
}

function print(holder: Prepared['holder'], text: string): void {
  const run = holder.run;
  if (!run) return;
  if (run.outputExceeded) throw new LuaArgumentError(run.outputExceeded);
  const bytes = Buffer.byteLength(text, 'utf8') + 1;
  if (run.outputBytes + bytes > setup.outputBytes) {
    run.outputExceeded = `output limit exceeded: a script may print at most ${setup.outputBytes} bytes`;
    throw new LuaArgumentError(run.outputExceeded);
  }
  run.outputBytes += bytes;
  run.output.push(text);
}

async function prepare(): Promise<Prepared> {
  const holder: Prepared['holder'] = { run: undefined };
  const state = await LuaState.create({
    name: 'execute',
    memoryLimit: setup.memoryBytes,
    print: (text) => print(holder, text),
    findModule: (name) => `module '${name}' not found: execute scripts cannot require modules`,
  });
  installTask(state);
  installVfs(state, () => rootOf(holder.run), {
    writeBytes: setup.writeBytes,
    writeKey: 'execute.write_bytes',
    readOnly: setup.sharedRoot
      ? 'read-only (execute.root is shared by every run; without it each run writes in a scratch folder of its own)'
      : undefined,
  });
  // log.* as in plugins, but into the captured output: a script's log is what it reports.
  state.exec(LOG_TO_OUTPUT, '=[execute log]');
  installScriptApi(state, {
    caller: () => holder.run!.caller,
    root: () => rootOf(holder.run),
    limits: { maxCalls: setup.maxCalls, maxConcurrent: setup.maxConcurrentCalls },
    spawnLimits: () => ({
      timeoutMs: Math.max(1, (holder.run?.deadline ?? 0) - performance.now()),
      instructions: holder.run?.instructions,
    }),
  });
  return { state, holder };
}

let next: Promise<Prepared> = prepare();
void next.then(() => post({ type: 'idle', run: 0 }));
/** The tool list of the last run; the hub sends it again only when the caller's view changed. */
let lastTools: string[] = [];

async function execute(msg: Extract<ToWorker, { type: 'run' }>): Promise<void> {
  const prepared = await next;
  const { state, holder } = prepared;
  // The wall time starts now, here and (when asked to report it) in the hub's hard-stop timer.
  if (msg.report) post({ type: 'started', run: msg.run });
  if (msg.tools !== undefined) lastTools = msg.tools;
  direct.begin(msg.run, msg.direct);
  const refused: RunRefusals = { names: 0, notices: 0 };
  const run: Run = {
    id: msg.run,
    caller: callerFor(msg.run, lastTools, refused),
    output: [],
    outputBytes: 0,
    outputExceeded: undefined,
    deadline: performance.now() + msg.timeoutMs,
    instructions: msg.instructions,
    root: msg.root,
    lazy: msg.lazy === true,
  };
  holder.run = run;
  const output = () => run.output.join('\n');
  try {
    const ref = state.loadScript(msg.code, '=execute', setup.codeCacheBytes);
    const [value] = await state.call(ref, [], {
      timeoutMs: msg.timeoutMs,
      instructions: msg.instructions,
    });
    if (run.outputExceeded) throw new LuaError(run.outputExceeded);
    const pictures = extractImages(value ?? null);
    const size = Buffer.byteLength(toJsonText(pictures.value), 'utf8');
    if (size > setup.resultBytes) {
      throw new LuaError(
        `result limit exceeded: the returned value is ${size} bytes of JSON; the ceiling is ${setup.resultBytes}`,
      );
    }
    done(
      {
        type: 'done',
        run: msg.run,
        ok: true,
        result: pictures.value,
        images: pictures.images,
        output: output(),
      },
      refused,
    );
  } catch (err) {
    let error = err instanceof Error ? err.message : String(err);
    if (run.outputExceeded && !error.includes('output limit exceeded')) error = run.outputExceeded;
    done({ type: 'done', run: msg.run, ok: false, error, output: output() }, refused);
  } finally {
    holder.run = undefined;
    // Calls still out belong to a finished run: their answers will find nobody.
    for (const [call, w] of waiting) if (w.run === msg.run) waiting.delete(call);
    // The answer is out; closing runs the state's finalizers, which the hook cannot stop. The
    // hub counts this worker busy until 'idle' and replaces it if that takes too long.
    state.close();
    next = prepare();
    void next.then(() => post({ type: 'idle', run: msg.run }));
  }
}

/** The run's answer, with the direct calls it left running (the hub keeps their hard stop). */
function done(msg: Extract<FromWorker, { type: 'done' }>, refused: RunRefusals): void {
  if (refused.names > 0) msg.nameRefusals = refused.names;
  if (refused.notices > 0) msg.noticeRefusals = refused.notices;
  const left = direct.end(msg.run);
  if (left !== undefined) msg.direct = left;
  if (direct.made > 0) msg.directCalls = direct.made;
  if (direct.records.length > 0) msg.directLog = direct.records;
  post(msg);
}

port.on('message', (msg: ToWorker | MessageBundle<ToWorker>) => {
  if (!isBundle(msg)) return onMessage(msg);
  for (const m of msg.messages) onMessage(m);
});

function onMessage(msg: ToWorker): void {
  if (msg.type === 'run') {
    void execute(msg);
  } else if (msg.type === 'revoke') {
    direct.revoke(msg.run);
  } else if (msg.type === 'result') {
    const w = waiting.get(msg.call);
    if (!w) return;
    waiting.delete(msg.call);
    if (msg.error !== undefined) w.reject(new Error(msg.error));
    else w.resolve(msg.result as ToolResult);
  }
}
