/**
 * The hub's structured log (pino), always on stderr: stdout belongs to the stdio transport and to
 * `moonhub run` results.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level = process.env.MOONHUB_LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: { app: 'moonhub' } }, pino.destination({ fd: 2, sync: true }));
}

/** A logger that drops everything (tests, embedding). */
export const silentLogger: Logger = pino({ level: 'silent' });
