/**
 * `tools.use(name, action?, args?)` (LUA_API §3.5): a call that reads as if it blocked. It yields
 * until the tool answers, returns the result decoded (structuredContent, else the text as JSON
 * when it is JSON, else the text; pictures as image values) and raises when the tool fails.
 */
import { LuaArgumentError } from '../lua/errors.js';
import type { LuaState } from '../lua/state.js';
import { LuaMulti } from '../lua/state.js';
import { LuaType } from '../lua/wasm.js';
import type { ContentItem, ToolResult } from '../registry/types.js';
import { readImageInfo } from '../images/index.js';
import { badArgument, checkString } from './args.js';
import { findOverLimit } from './call-args.js';
import { resultText, type CallTracker } from './call-tracker.js';
import type { ImageValue } from './mcp-image.js';

/** An image content item as the image value Lua code works with. */
export function imageValueOfItem(item: ContentItem): ImageValue {
  const data = String(item.data);
  const bytes = Buffer.from(data, 'base64');
  const value: ImageValue = {
    type: 'image',
    mime_type: String(item.mimeType ?? item.mime_type ?? 'application/octet-stream'),
    data,
    bytes: bytes.length,
    width: 0,
    height: 0,
  };
  try {
    const info = readImageInfo(bytes);
    value.width = info.width;
    value.height = info.height;
  } catch {
    // A picture from a tool whose header we cannot read keeps its data; its size stays 0.
  }
  return value;
}

function parseMaybeJson(text: string): unknown {
  const t = text.trim();
  if (t === '') return text;
  try {
    return JSON.parse(t);
  } catch {
    return text;
  }
}

/** Puts image values back where `{type="image", image=n}` placeholders stand. */
function restorePictures(value: unknown, pictures: ImageValue[], used: Set<number>): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => restorePictures(v, pictures, used));
  const o = value as Record<string, unknown>;
  if (o.type === 'image' && typeof o.image === 'number' && Object.keys(o).length === 2) {
    const pic = pictures[o.image - 1];
    if (pic) {
      used.add(o.image);
      return pic;
    }
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[k] = restorePictures(v, pictures, used);
  return out;
}

/** The decoded value of a result; pictures no placeholder names come as a second value. */
export function decodeResult(result: ToolResult): unknown {
  const pictures = result.content
    .filter((c) => c.type === 'image' && typeof c.data === 'string')
    .map(imageValueOfItem);
  const text = resultText(result);
  let value: unknown =
    result.structuredContent ??
    (text === '' && pictures.length > 0 ? undefined : parseMaybeJson(text));
  if (pictures.length === 0) return value;
  const used = new Set<number>();
  value = restorePictures(value, pictures, used);
  const left = pictures.filter((_, i) => !used.has(i + 1));
  if (left.length === 0) return value;
  if (value === undefined) return left.length === 1 ? left[0] : left;
  return new LuaMulti([value, left]);
}

export function installTools(state: LuaState, tracker: CallTracker): void {
  state.defineLibrary('tools', {
    use: {
      async: true,
      fn: async (args, call) => {
        const name = checkString(args, call, 1, 'use');
        let action: string | undefined;
        let input: unknown;
        if (call.nargs >= 2 && call.typeOf(2) === LuaType.String) {
          action = args[1] as string;
          input = args[2];
          if (call.nargs >= 3 && ![LuaType.Table, LuaType.Nil].includes(call.typeOf(3)))
            throw badArgument(3, 'use', 'table', call);
        } else {
          if (call.nargs >= 2 && ![LuaType.Table, LuaType.Nil].includes(call.typeOf(2)))
            throw badArgument(2, 'use', 'string or table', call);
          input = args[1];
        }
        if (Array.isArray(input)) {
          throw new LuaArgumentError(`tools.use: the arguments of '${name}' must be a keyed table`);
        }
        const params: Record<string, unknown> = { ...((input as Record<string, unknown>) ?? {}) };
        if (action !== undefined) params.action = action;
        const problem = findOverLimit(params);
        const id = tracker.start(name, params, problem && `tools.use refused: ${problem}`);
        const done = await tracker.wait(id);
        if (done.is_error) throw new Error(done.content || `tool '${name}' reported an error`);
        const result = tracker.result(id);
        return result === undefined ? undefined : decodeResult(result);
      },
    },
  });
}
