import express, { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError, PayloadTooLargeError, RequestValidationError } from './errors';
import { wellFormed } from './text';
import { sendError } from './http-exception.filter';

/** Structural limits of a JSON request body, checked before JSON.parse (issue 10). */
export interface JsonShapeLimits {
  /** Objects and arrays nested at most this deep (the body itself is level 1). */
  maxDepth: number;
  /** Keys in any one object. */
  maxKeys: number;
  /** Values in the whole body (an object member counts once): bounds the work of every later step. */
  maxNodes: number;
}

export const JSON_SHAPE_LIMITS: JsonShapeLimits = { maxDepth: 32, maxKeys: 1000, maxNodes: 10_000 };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const LBRACE = 0x7b;
const LBRACKET = 0x5b;
/** Outside strings, the next character that matters (numbers, literals and whitespace are skipped natively). */
const STRUCTURAL = /[{}[\]:,"]/g;

/** Index just past the closing quote of the string whose body starts at `i` (-1 when unterminated). */
function endOfString(text: string, i: number): number {
  for (;;) {
    const q = text.indexOf('"', i);
    if (q < 0) return -1;
    let backslashes = 0;
    for (let k = q - 1; text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if ((backslashes & 1) === 0) return q + 1;
    i = q + 1;
  }
}

/**
 * One linear pass over JSON text, before any parser sees it: enforces the depth, keys-per-object
 * and value-count limits (413 with a sentence naming the limit). It does not validate the
 * grammar (JSON.parse does, right after); on malformed input it may count oddly, but it never
 * does more than a constant amount of work per character.
 */
export function checkJsonShape(text: string, limits: JsonShapeLimits = JSON_SHAPE_LIMITS): void {
  const keys: number[] = []; // per open container: keys so far (-1 for an array)
  let nodes = 1;
  let i = 0;
  for (;;) {
    STRUCTURAL.lastIndex = i;
    const next = STRUCTURAL.exec(text);
    if (!next) return;
    i = next.index;
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = endOfString(text, i + 1);
      if (i < 0) return; // unterminated: JSON.parse reports it
      continue;
    }
    if (c === LBRACE || c === LBRACKET) {
      keys.push(c === LBRACE ? 0 : -1);
      nodes++;
      if (keys.length > limits.maxDepth) {
        throw new PayloadTooLargeError(`Request body is nested too deeply: at most ${limits.maxDepth} levels of objects and arrays are accepted`);
      }
    } else if (c === COLON) {
      const top = keys.length - 1;
      if (top >= 0 && keys[top] >= 0 && ++keys[top] > limits.maxKeys) {
        throw new PayloadTooLargeError(`Request body has too many keys in one object: at most ${limits.maxKeys} are accepted`);
      }
    } else if (c === COMMA) {
      if (++nodes > limits.maxNodes) {
        throw new PayloadTooLargeError(`Request body has too many values: at most ${limits.maxNodes} values (object members and array items) are accepted`);
      }
    } else {
      keys.pop(); // } or ]
    }
    i++;
  }
}

/** A \uD800-\uDFFF escape somewhere in the text (the only way a lone surrogate gets past UTF-8 decoding). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * Decodes, checks and parses a JSON body. Malformed JSON → 422 json_invalid (CONTRACT §1).
 *
 * This is where request text is normalised, once: raw UTF-8 is decoded with replacement
 * characters (so invalid or CESU-encoded bytes become U+FFFD), and a lone surrogate sent as an
 * escape (`"\ud800"`) becomes U+FFFD in every string and key, so create, fetch, list, search,
 * download and the stored file all hold the same well-formed text.
 */
export function parseJsonBody(raw: Buffer, limits: JsonShapeLimits = JSON_SHAPE_LIMITS): unknown {
  // TextDecoder drops a leading BOM and replaces invalid UTF-8 with U+FFFD.
  const text = new TextDecoder('utf-8').decode(raw);
  checkJsonShape(text, limits);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new RequestValidationError([{ loc: ['body'], msg: 'Invalid JSON', type: 'json_invalid', input: null, ctx: { error: (e as Error).message } }]);
  }
  return SURROGATE_ESCAPE.test(text) ? wellFormedDeep(value) : value;
}

/** Every string (and key) of a parsed JSON value with its lone surrogates replaced by U+FFFD. */
function wellFormedDeep(value: unknown): unknown {
  if (typeof value === 'string') return wellFormed(value);
  if (Array.isArray(value)) return value.map(wellFormedDeep);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // defineProperty: a "__proto__" key stays an own property, as JSON.parse made it.
      Object.defineProperty(out, wellFormed(k), { value: wellFormedDeep(v), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

function charsetOf(req: Request): string | undefined {
  return /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1].toLowerCase();
}

/**
 * The JSON body parser (replaces express.json): reads the raw body up to the byte limit,
 * decoding Content-Encoding (gzip, deflate, br) with body-parser, whose errors the exception
 * filter maps to 400 (undecodable) / 415 (unknown encoding) / 413 (too large, decoded size
 * counts); then checkJsonShape and JSON.parse. The pipe then drops unknown keys before
 * class-transformer sees the object. Bodies of other media types are not read (req.body stays
 * undefined, which the validation pipe reports as "not a JSON object").
 */
export function jsonBodyParser(limitBytes: number, limits: JsonShapeLimits = JSON_SHAPE_LIMITS): RequestHandler {
  const raw = express.raw({ type: ['application/json', 'application/*+json'], limit: limitBytes, inflate: true });
  return (req: Request, res: Response, next: NextFunction) => {
    // A body already read by a route's own parser (POST /mcp, see mcpJsonBody) is left as it is.
    if (req.body !== undefined) return next();
    raw(req, res, (err?: unknown) => {
      if (err) return sendError(err, req, res);
      if (!Buffer.isBuffer(req.body)) {
        req.body = undefined;
        return next();
      }
      const charset = charsetOf(req);
      if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
        return sendError(new AppError(415, `Unsupported charset "${charset}": send JSON as UTF-8`), req, res);
      }
      try {
        // An empty body is an empty object, as with express.json.
        req.body = req.body.length === 0 ? {} : parseJsonBody(req.body, limits);
      } catch (e) {
        return sendError(e, req, res);
      }
      next();
    });
  };
}
