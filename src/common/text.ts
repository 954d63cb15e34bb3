const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Input text normalisation (issue 10): a string with every lone surrogate replaced by U+FFFD,
 * anything else unchanged (non-strings are returned as they are). Applied once at input, to
 * every string of a JSON body (json-body.ts) and to query and path parameters (validation pipe).
 */
export function wellFormed<T>(v: T): T {
  return (typeof v === 'string' ? v.replace(LONE_SURROGATE, '\uFFFD') : v) as T;
}
