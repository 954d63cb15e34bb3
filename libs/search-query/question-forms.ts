import { parseSearchQuery } from './search-query';

/**
 * One side of a comparison question: the words a memory about that side would hold (the question's
 * head and the side), and which of them are the side's own (not the head's).
 */
export interface ComparisonSide {
  words: string[];
  own: string[];
}

/** A head that asks how much time lies between two things. */
const SPAN_HEAD = /\b(?:how long|time|passed|elapsed|gap|minutes|hours|days|weeks|months|years)\b/i;
/** The words of such a head that frame the question ("how many months passed"): no memory of either side holds them. */
const SPAN_FRAME = /^(?:many|much|long|time|passed|elapsed|gap|minutes?|hours?|days?|weeks?|months?|years?)$/;

/**
 * The sides of a question that compares two or more things (decision 0164), or [] when it does not:
 * - "Who did I meet first, the woman selling jam or the tourist from Australia?": the clause after
 *   the last comma, split at "or"; each side with the head's words ("meet", "first");
 * - "How many months passed between my degree and my thesis?": what lies between "between" and
 *   "and", and what follows, when the head asks for a span of time; the head's framing words
 *   ("many", "months", "passed") are left out, as no memory of either side holds them.
 * Each side's evidence usually sits in a memory of its own, so a memory that answers one side is
 * relevant although it holds only part of the question's words.
 */
export function comparisonSides(question: string): ComparisonSide[] {
  const text = question.trim().replace(/\?+$/, '');
  let headWords: string[];
  let sides: string[];
  const between = /^(.*?)\bbetween\b(.+?)\band\b(.+)$/i.exec(text);
  const comma = text.lastIndexOf(',');
  if (between && SPAN_HEAD.test(between[1])) {
    headWords = parseSearchQuery(between[1]).words.filter((w) => !SPAN_FRAME.test(w));
    sides = [between[2], between[3]];
  } else if (comma > 0 && /\bor\b/i.test(text.slice(comma))) {
    headWords = parseSearchQuery(text.slice(0, comma)).words;
    sides = text.slice(comma + 1).split(/\bor\b/i);
  } else return [];
  const out = sides
    .map((s) => parseSearchQuery(s).words.filter((w) => !headWords.includes(w)))
    .filter((own) => own.length > 0)
    .map((own) => ({ words: [...headWords, ...own], own }));
  return out.length >= 2 ? out : [];
}

/** "How many", "how much", "in total", "all the", not followed by a unit of time ("how many days ago" asks for one span). */
const TOTAL = /\b(?:how many|how much|in total|total|all the|all of)\b(?!\s+(?:minutes|hours|days|weeks|months|years)\b)/i;

/**
 * Whether a question asks for a count or a total ("How many fun runs did I miss in March?", "the
 * total cost of..."): its answer adds up several occasions, each usually told in a conversation
 * session of its own (decision 0165).
 */
export function asksForTotal(question: string): boolean {
  return TOTAL.test(question);
}
