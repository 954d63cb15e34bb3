import { LoggerService, LogLevel } from '@nestjs/common';
import type { Request } from 'express';
import { AsyncLocalStorage } from 'node:async_hooks';

/** What a log line knows about the request it was written in (set by the access-log middleware). */
export interface RequestLogContext {
  request_id?: string;
  /** The request itself (the audit log reads who is calling and from where). */
  request?: Request;
}

/** The request a log line belongs to, so every line written while serving it carries its id. */
export const requestLogContext = new AsyncLocalStorage<RequestLogContext>();

const LEVEL_NAMES: Record<LogLevel, string> = { log: 'info', warn: 'warn', error: 'error', fatal: 'fatal', debug: 'debug', verbose: 'verbose' };

/** Fields a structured line may carry besides time, level, message and context. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/**
 * MEMSTORE_LOG_FORMAT=json: one JSON object per line on stdout (time, level, message, context,
 * request_id, and the fields a caller passes as an object message, e.g. the access log's method,
 * route, status, duration_ms, token_id). Callers never pass secrets, passwords, cookies,
 * Authorization headers or memory content; the access log writes route templates, not URLs.
 */
export class JsonLogger implements LoggerService {
  private enabled: Set<LogLevel>;

  constructor(
    levels: LogLevel[],
    private readonly write: (line: string) => void = (line) => process.stdout.write(line),
  ) {
    this.enabled = new Set(levels);
  }

  setLogLevels(levels: LogLevel[]): void {
    this.enabled = new Set(levels);
  }

  log(message: unknown, ...rest: unknown[]): void {
    this.emit('log', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.emit('warn', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.emit('error', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.emit('fatal', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.emit('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.emit('verbose', message, rest);
  }

  private emit(level: LogLevel, message: unknown, rest: unknown[]): void {
    if (!this.enabled.has(level)) return;
    // Nest passes (message, ...params, context): the context is the last string; an error also passes its stack.
    const params = [...rest];
    const context = params.length > 0 && typeof params[params.length - 1] === 'string' ? (params.pop() as string) : undefined;
    const line: Record<string, unknown> = { time: new Date().toISOString(), level: LEVEL_NAMES[level] };
    if (message instanceof Error) {
      line.message = message.message;
      line.stack = message.stack;
    } else if (message !== null && typeof message === 'object') {
      Object.assign(line, message);
    } else {
      line.message = String(message);
    }
    if (context) line.context = context;
    const stack = params.find((p) => typeof p === 'string' && /\n\s+at /.test(p));
    if (stack && level !== 'log') line.stack = stack;
    const req = requestLogContext.getStore();
    if (req?.request_id && line.request_id === undefined) line.request_id = req.request_id;
    this.write(`${JSON.stringify(line)}\n`);
  }
}
