/**
 * The worker half of the isolation micro benchmark: a Lua state running the echo handler of
 * bench/plugins/echo.lua, answering each {id, args} message with {id, result}; and the synchronous
 * request a worker would make for an immediate answer from the hub's thread.
 */
import { parentPort, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { LuaState } from '../../src/lua/state.js';

const port = parentPort!;
const state = await LuaState.create({ name: 'echo-worker' });

const echoRef = state.load(
  `local p = ... return { content = { { type = "text", text = p.text } } }`,
  '=echo-call',
);

port.on(
  'message',
  (msg: {
    id: number;
    args?: unknown;
    sync?: { port: MessagePort; flag: Int32Array; n: number };
  }) => {
    if (msg.sync) {
      // n synchronous requests to the hub's thread, as a facade's list/count would make them.
      const { port: reqPort, flag, n } = msg.sync;
      const started = performance.now();
      for (let i = 0; i < n; i++) {
        Atomics.store(flag, 0, 0);
        reqPort.postMessage(i);
        Atomics.wait(flag, 0, 0);
        const answer = receiveMessageOnPort(reqPort);
        if (answer === undefined) throw new Error('no answer');
      }
      port.postMessage({ id: msg.id, result: (performance.now() - started) / n });
      return;
    }
    void state
      .call(echoRef, [msg.args])
      .then(([result]) => port.postMessage({ id: msg.id, result }));
  },
);
port.postMessage({ ready: true });
