/**
 * The calling half of the `mcp` namespace (LUA_API §3.1-3.3): `mcp.call` starts a tool call and
 * returns its request id at once, `mcp.poll` reads its result, `mcp.listTools` names what the
 * caller may call, `mcp.image` makes a picture value.
 */
import { LuaArgumentError } from '../lua/errors.js';
import type { LuaState } from '../lua/state.js';
import { LuaType, luaTypeName } from '../lua/wasm.js';
import { readCallArgs } from './call-args.js';
import type { CallTracker } from './call-tracker.js';
import { checkString } from './args.js';
import { imageFunction } from './mcp-image.js';
import type { ToolCaller } from './tool-caller.js';

export function installMcpCalls(
  state: LuaState,
  tracker: CallTracker,
  caller: () => ToolCaller,
  root: () => string | undefined,
): void {
  const mod = state.module;
  state.defineLibrary('mcp', {
    // Raw: the arguments are read here, under the call ceilings, so a table that is too deep, or
    // holds a cycle or a function, is a refused call rather than a Lua error.
    call: {
      raw: (L, nargs) => {
        const nameType = nargs < 1 ? LuaType.None : mod._lua_type(L, 1);
        if (nameType !== LuaType.String) {
          throw new LuaArgumentError(
            `bad argument #1 to 'call' (string expected, got ${luaTypeName(nameType)})`,
          );
        }
        const name = state.bridge.read(L, 1);
        const argsType = luaTypeName(nargs < 2 ? LuaType.None : mod._lua_type(L, 2));
        const checked = readCallArgs(state, L, 2, argsType);
        const id =
          typeof name !== 'string'
            ? tracker.start('', undefined, 'mcp.call refused: the tool name is not UTF-8 text')
            : checked.ok
              ? tracker.start(name, checked.args)
              : tracker.start(name, undefined, checked.reason);
        state.bridge.push(L, id);
        return 1;
      },
    },
    poll: {
      fn: (args, call) => tracker.poll(checkString(args, call, 1, 'poll')),
    },
    listTools: { fn: () => caller().listTools() },
    image: imageFunction(root),
  });
}
