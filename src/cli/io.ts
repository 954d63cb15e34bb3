import { parseArgs, ParseArgsConfig } from 'node:util';

/** Where a command writes: lines to stdout / stderr, and whether stderr is a terminal (progress bars). */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  /** Raw stderr writes for the progress bar (only called when `tty`). */
  rawErr?(text: string): void;
  tty?: boolean;
  /** Reads one line that is a secret: not echoed on a terminal; the first line of stdin otherwise. null at end of input. */
  readSecret?(prompt: string): Promise<string | null>;
  /** stdin is a terminal (a person types: a secret is asked twice). */
  interactive?: boolean;
}

export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

/** A command's wrong usage: printed with its help, exit code 2. */
export class UsageError extends Error {}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(args: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number>;
}

/** node:util parseArgs, with its errors turned into UsageError. */
export function parseOptions<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, positionals = 0) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: positionals > 0, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (parsed.positionals.length > positionals) throw new UsageError(`Unexpected argument: ${parsed.positionals[positionals]}`);
  return parsed;
}

/**
 * Progress on stderr: a bar redrawn in place on a terminal (at most 10 times a second), plain
 * lines elsewhere (CI logs): one every 10 % or 5 s.
 */
export class Progress {
  private lastDraw = 0;
  private lastPct = -1;
  private drawn = false;

  constructor(
    private readonly io: CliIo,
    private readonly label: string,
  ) {}

  update(done: number, total: number | null, what = ''): void {
    const now = Date.now();
    const pct = total ? Math.min(100, Math.floor((done / total) * 100)) : null;
    if (this.io.tty && this.io.rawErr) {
      if (now - this.lastDraw < 100 && done !== total) return;
      this.lastDraw = now;
      const width = 30;
      const bar = pct === null ? '' : `[${'#'.repeat(Math.round((pct / 100) * width)).padEnd(width, '.')}] ${String(pct).padStart(3)}% `;
      this.io.rawErr(`\r\x1b[2K${this.label} ${bar}${done}${total ? `/${total}` : ''} ${what}`);
      this.drawn = true;
      return;
    }
    const step = pct === null ? null : Math.floor(pct / 10);
    if ((step !== null && step !== this.lastPct) || now - this.lastDraw >= 5000) {
      this.lastPct = step ?? this.lastPct;
      this.lastDraw = now;
      this.io.err(`${this.label}: ${done}${total ? `/${total} (${pct}%)` : ''} ${what}`.trimEnd());
    }
  }

  /** Ends the bar's line on a terminal. */
  finish(): void {
    if (this.drawn && this.io.rawErr) this.io.rawErr('\n');
    this.drawn = false;
  }
}
