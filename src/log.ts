/**
 * The hub's structured log (pino), always on stderr: stdout belongs to the stdio transport and to
 * `moonhub run` results. JSON lines by default; short coloured lines for a person when stderr is
 * a terminal or `--log-format pretty` asks (log-pretty.ts).
 */
import pino, { type Logger } from 'pino';
import { prettyDestination } from './log-pretty.js';

export type { Logger };

/** The levels `--log-level` and MOONHUB_LOG_LEVEL accept, most to least severe. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'pretty', 'auto'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

/** A known level, or an error naming the accepted ones (pino's own message is a stack trace). */
export function checkLogLevel(value: string, from = '--log-level'): LogLevel {
  const v = value.trim().toLowerCase();
  if (!isLogLevel(v))
    throw new Error(`${from}: '${value}' is not a log level; use one of ${LOG_LEVELS.join(', ')}`);
  return v;
}

export function checkLogFormat(value: string, from = '--log-format'): LogFormat {
  const v = value.trim().toLowerCase();
  if (!(LOG_FORMATS as readonly string[]).includes(v))
    throw new Error(
      `${from}: '${value}' is not a log format; use one of ${LOG_FORMATS.join(', ')}`,
    );
  return v as LogFormat;
}

export interface LoggerOptions {
  /** json, pretty, or auto (pretty when stderr is a terminal; the default). */
  format?: LogFormat;
}

export function createLogger(level?: string, opts: LoggerOptions = {}): Logger {
  const lvl = checkLogLevel(
    level ?? process.env.MOONHUB_LOG_LEVEL ?? 'info',
    level === undefined ? 'MOONHUB_LOG_LEVEL' : '--log-level',
  );
  const envFormat = process.env.MOONHUB_LOG_FORMAT;
  const format =
    opts.format ?? (envFormat ? checkLogFormat(envFormat, 'MOONHUB_LOG_FORMAT') : 'auto');
  const pretty = format === 'pretty' || (format === 'auto' && process.stderr.isTTY === true);
  const options = { level: lvl, base: { app: 'moonhub' } };
  if (pretty)
    return pino(
      options,
      prettyDestination(2, process.stderr.isTTY === true && !process.env.NO_COLOR),
    );
  return pino(options, pino.destination({ fd: 2, sync: true }));
}

/** A logger that drops everything (tests, embedding). */
export const silentLogger: Logger = pino({ level: 'silent' });
