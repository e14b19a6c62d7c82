/**
 * `notice(text, params?)` (LUA_API §3.6): a progress/log message to whoever made the call that
 * runs the script. params may hold pictures; the receiving side turns them into image data.
 */
import type { LuaState } from '../lua/state.js';
import { checkString } from './args.js';
import type { ToolCaller } from './tool-caller.js';

export function installNotice(state: LuaState, caller: () => ToolCaller): void {
  state.defineLibrary('__moonhub', {
    notice: {
      fn: (args, call) => {
        const text = checkString(args, call, 1, 'notice');
        caller().notice(text, args[1]);
        return undefined;
      },
    },
  });
  // A global function rather than a library member: `notice("50% done")`.
  state.exec('notice = __moonhub.notice; __moonhub = nil', '=[moonhub notice]');
}
