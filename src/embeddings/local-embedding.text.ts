/** Tokens of a text the local model reads by default (MEMSTORE_EMBEDDING_MAX_TOKENS; the model's own limit is 512). Decision 0145. */
export const DEFAULT_EMBEDDING_MAX_TOKENS = 128;

/** Characters per token that a head of a text is cut to before tokenising (English averages ~4). */
const CHARS_PER_TOKEN = 12;

/**
 * A head of `text` to tokenise instead of the whole text: ~maxTokens × 12 characters, cut just
 * before a whitespace character, so every word in it is whole and its tokens are the text's first
 * tokens (the BERT tokenizer splits at whitespace; its normaliser works character by character).
 * The whole text when it is short, or when no whitespace is near the cut (one giant word). The
 * caller still checks that the head yields more than maxTokens tokens.
 */
export function headForTokens(text: string, maxTokens: number): string {
  const cut = maxTokens * CHARS_PER_TOKEN;
  if (text.length <= cut) return text;
  for (let i = cut; i > cut - 1000 && i > 0; i--) if (/\s/.test(text[i])) return text.slice(0, i);
  return text;
}
