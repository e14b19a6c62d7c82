/**
 * An upstream's `notifications/message` when no call of ours is in flight goes to the hub's log.
 * An upstream controls how many and how big: the lines are bounded here, per upstream, to
 * LOG_LINES_PER_SECOND a second with each message's data cut to LOG_DATA_CHARS characters of
 * its JSON; the rest are counted and reported in one line a second. (Messages for a calling
 * client take the client's own notice bounds, limits.notices, instead.)
 */
import type { Logger } from '../log.js';

export const LOG_LINES_PER_SECOND = 20;
export const LOG_DATA_CHARS = 2048;

/** `(level, data, logger)` as the relay gives it, logged within the bounds above. */
export function gatedUpstreamLog(
  log: Logger,
): (level: string, data: unknown, name: string | undefined) => void {
  let windowStart = -Infinity;
  let lines = 0;
  let dropped = 0;
  let report: NodeJS.Timeout | undefined;
  const flush = () => {
    report = undefined;
    if (dropped === 0) return;
    log.warn(
      { dropped },
      `upstream log messages: ${dropped} more in the last second were not logged (over ${LOG_LINES_PER_SECOND} a second)`,
    );
    dropped = 0;
  };
  return (level, data, name) => {
    const now = performance.now();
    if (now - windowStart >= 1000) {
      windowStart = now;
      lines = 0;
    }
    if (++lines > LOG_LINES_PER_SECOND) {
      dropped++;
      report ??= setTimeout(flush, 1000).unref();
      return;
    }
    log.info(
      { level: String(level).slice(0, 16), logger: name?.slice(0, 128), data: bounded(data) },
      'upstream log message',
    );
  };
}

/** The data as given when its JSON is short; otherwise that JSON cut, as text. */
function bounded(data: unknown): unknown {
  if (typeof data === 'string')
    return data.length <= LOG_DATA_CHARS ? data : `${data.slice(0, LOG_DATA_CHARS)}… (cut)`;
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch {
    return '(data that cannot be written as JSON)';
  }
  if (json === undefined || json.length <= LOG_DATA_CHARS) return data;
  return `${json.slice(0, LOG_DATA_CHARS)}… (cut)`;
}
