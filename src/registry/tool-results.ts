/** The tool results the hub itself makes: errors, and the mark of one a handler raised. */
import type { ToolResult } from './types.js';

export function errorResult(message: string): ToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/**
 * Marks a tool error that the handler raised (or the hub made: bad arguments, an unreachable
 * upstream), as opposed to an `isError` result the tool returned as its answer. Lua's
 * `mcp.call_tool` answers the first with `nil, err` and the second with its content blocks and
 * `is_error = true`, as Botster does. Not enumerable: it never reaches the wire.
 */
export const RAISED: unique symbol = Symbol('moonhub.raised');

export function failureResult(message: string): ToolResult {
  return markRaised(errorResult(message));
}

/** Sets the mark again on a result that crossed a thread (a symbol does not survive a copy). */
export function markRaised(result: ToolResult): ToolResult {
  Object.defineProperty(result, RAISED, { value: true });
  return result;
}

export function wasRaised(result: ToolResult): boolean {
  return (result as { [RAISED]?: boolean })[RAISED] === true;
}
