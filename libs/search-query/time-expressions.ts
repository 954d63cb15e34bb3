import * as chrono from 'chrono-node';
import { isStopWord, splitWords } from './search-query';

/**
 * Time in a search question (issue 45 item 5, decision 0135): "last week", "in May", "two
 * months ago", "yesterday", "on 8 May 2023", "last summer", "in 2022", "since March", "the week
 * before 8 May 2023" are resolved against a reference time (the request's `query_date`, `as_of`,
 * or now) into one date range with a strength. Search uses it as a bounded preference (dateBoost),
 * never as a filter, so a date never empties a result.
 *
 * Dates are read out of the text by chrono-node (its English "casual" parser); seasons and a bare
 * year after a preposition ("in 2022"), which chrono does not read, are matched here. Calendar
 * units are UTC days, weeks from Monday, months, years. An expression that names no year and
 * would fall after the reference ("in May" asked in March) means the last one before it: memories
 * are about the past.
 */

export interface TimeRange {
  /** Start, ms since the epoch (inclusive); -Infinity for "before X". */
  start: number;
  /** End, ms (exclusive). */
  end: number;
  /** How sure the question is about this time, 0-1: 1 for an explicit date, less for implied years and vague words ("a few weeks ago"). */
  strength: number;
  /** The words of the question that said it. */
  text: string;
}

export interface ResolvedTime {
  /** The range the question's time expressions name (their hull when there are several), or null. */
  range: TimeRange | null;
  /**
   * The question without the relative words of its time expressions ("last", "week", "ago", "two
   * months"...), for the keyword list: in a memory those words speak of another time. Absolute
   * parts stay (a month, a weekday, a year, a day of the month): a memory that writes the date
   * is evidence for it. Equal to the question when nothing was resolved.
   */
  keywordText: string;
}

/**
 * The most a date adds to a hybrid or semantic score (fusion.ts step 4): a preference, not a
 * filter. Fused scores lie in 0-1 (plus the neighbour boost), so a memory of the named time
 * passes one that matches the words a little better, never one that matches far better.
 */
export const TIME_WEIGHT = 0.2;

const DAY = 86_400_000;
/** Expressions looked at in one question (a question is at most 1,000 characters). */
const MAX_EXPRESSIONS = 8;

/** Words of a relative expression that are dropped from the keyword terms. */
const RELATIVE_WORDS = new Set(
  `ago last past previous this next coming recent recently yesterday today tomorrow tonight now day days week weeks weekend month months year years
  a an the few couple of several some one two three four five six seven eight nine ten eleven twelve before after earlier later since over during within in on
  morning afternoon evening night`.split(/\s+/),
);
/** A word that makes an expression relative to the reference (and so stripped from keyword terms). */
const RELATIVE = /\b(ago|last|past|previous|this|next|coming|yesterday|today|tomorrow|tonight|week|weeks|weekend|days?|months?|years?)\b/i;
/** Words that make an expression vague. */
const VAGUE = /\b(few|couple|several|some|around|about|roughly|approximately|recent(ly)?)\b/i;
/** A month or season named alone in lower case is a date only after one of these ("in march", not "march on"). */
const PREPOSITION_BEFORE = /\b(in|on|since|during|from|until|till|by|of|before|after|early|late|mid|last|this|next|through|throughout)\s*-?\s*$/i;

const MONTH_NAMES = /^(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(t|tember)?|oct(ober)?|nov(ember)?|dec(ember)?)$/i;

type Unit = 'day' | 'week' | 'month' | 'year';

interface Found {
  index: number;
  length: number;
  start: number;
  end: number;
  strength: number;
  relative: boolean;
}

function unitRange(unit: Unit, y: number, m: number, d: number): [number, number] {
  switch (unit) {
    case 'day':
      return [Date.UTC(y, m, d), Date.UTC(y, m, d + 1)];
    case 'week': {
      const day = Date.UTC(y, m, d);
      const monday = day - ((new Date(day).getUTCDay() + 6) % 7) * DAY;
      return [monday, monday + 7 * DAY];
    }
    case 'month':
      return [Date.UTC(y, m, 1), Date.UTC(y, m + 1, 1)];
    case 'year':
      return [Date.UTC(y, 0, 1), Date.UTC(y + 1, 0, 1)];
  }
}

/** [start, end) of one chrono result, or null when it names no date (a time of day alone, "now"). */
function fromChrono(r: chrono.ParsedResult, text: string, ref: number, yearHint: number | undefined): Found | null {
  const t = r.text.toLowerCase();
  const c = r.start;
  const dated = c.isCertain('day') || c.isCertain('month') || c.isCertain('year') || c.isCertain('weekday');
  const today = /\b(today|tonight|this (morning|afternoon|evening))\b/.test(t);
  if ((!dated && !today) || /^(right )?now$/.test(t) || /^(the )?(day|week|month|year) (before|after)$/.test(t)) return null;
  // A lone lower-case month ("march on", "may") is a word, not a date, unless a preposition leads to it.
  if (MONTH_NAMES.test(r.text) && r.text === t && !PREPOSITION_BEFORE.test(text.slice(0, r.index))) return null;
  // "between August 11 and August 15 2023": a year said once holds for the whole question.
  const hinted = !c.isCertain('year') && yearHint !== undefined && (c.isCertain('month') || c.isCertain('day'));
  const y = hinted ? yearHint : (c.get('year') as number);
  const m = (c.get('month') as number) - 1;
  const d = c.get('day') as number;
  const relative = RELATIVE.test(t);
  let strength = VAGUE.test(t) ? 0.5 : 1;
  let start: number;
  let end: number;
  if (r.end) {
    start = Date.UTC(y, m, r.start.isCertain('day') ? d : 1);
    const e = r.end;
    const [ey, em, ed] = [e.get('year') as number, (e.get('month') as number) - 1, e.get('day') as number];
    end = e.isCertain('day') ? Date.UTC(ey, em, ed + 1) : Date.UTC(ey, em + 1, 1);
  } else if (/\b(past|last|previous|over|within)\s+(\d+|a few|few|several|a couple of|couple of|[a-z]+)\s+(days|weeks|months|years)\b/.test(t)) {
    // "the past 3 days", "the last two weeks": from then until the reference.
    start = Date.UTC(y, m, d);
    end = ref;
  } else if (/\bweekend\b/.test(t)) {
    const day = Date.UTC(y, m, d);
    const saturday = day - ((new Date(day).getUTCDay() + 1) % 7) * DAY;
    [start, end] = [saturday, saturday + 2 * DAY];
  } else if (/^(the )?week before\b/.test(t)) {
    [start, end] = [Date.UTC(y, m, d), Date.UTC(y, m, d + 7)];
  } else if (/^(the )?week after\b/.test(t)) {
    [start, end] = [Date.UTC(y, m, d - 6), Date.UTC(y, m, d + 1)];
  } else {
    const unit: Unit = /\bweeks?\b/.test(t)
      ? 'week'
      : /\bmonths?\b/.test(t)
        ? 'month'
        : /\byears?\b/.test(t)
          ? 'year'
          : c.isCertain('day') || c.isCertain('weekday') || today
            ? 'day'
            : c.isCertain('month')
              ? 'month'
              : 'year';
    [start, end] = unitRange(unit, y, m, d);
    if (/^this (week|month|year)$/.test(t)) end = Math.max(start + DAY, ref);
  }
  // No year said and it would lie ahead: the last one before the reference.
  if (!c.isCertain('year') && !hinted && !relative && start > ref) {
    const back = c.isCertain('weekday') && !c.isCertain('month') ? 7 * DAY : 0;
    if (back) [start, end] = [start - back, end - back];
    else {
      const s = new Date(start);
      const e = new Date(end);
      start = Date.UTC(s.getUTCFullYear() - 1, s.getUTCMonth(), s.getUTCDate());
      end = Date.UTC(e.getUTCFullYear() - 1, e.getUTCMonth(), e.getUTCDate());
    }
  }
  if (!c.isCertain('year') && !hinted && !relative) strength = Math.min(strength, 0.8);
  return { index: r.index, length: r.text.length, start, end, strength, relative };
}

const SEASONS: Record<string, [number, number]> = { spring: [2, 5], summer: [5, 8], autumn: [8, 11], fall: [8, 11], winter: [11, 14] };
const SEASON = /\b(?:(last|this|past|previous|in|during|over|early|late|in the|during the|over the|the)\s+)?(spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?((?:19|20)\d{2}))?\b/gi;
const YEAR = /\b(in|during|since|from|of|by|through|throughout|before|after|until|early|late|mid-?)\s*((?:19|20)\d{2})\b/gi;

/** Seasons ("last summer", "in the winter of 2022") and years after a preposition ("in 2022"): what chrono does not read. */
function ownExpressions(text: string, ref: number): Found[] {
  const out: Found[] = [];
  const refYear = new Date(ref).getUTCFullYear();
  for (const m of text.matchAll(SEASON)) {
    const qualifier = m[1]?.toLowerCase();
    const year = m[3] ? Number(m[3]) : undefined;
    if (!qualifier && year === undefined) continue; // "summer" alone: too loose ("fall" is a verb)
    const [from, to] = SEASONS[m[2].toLowerCase()];
    const at = (y: number): [number, number] => [Date.UTC(y, from, 1), Date.UTC(y, to, 1)];
    let range: [number, number];
    if (year !== undefined) range = at(year);
    else if (qualifier === 'this') range = at(refYear);
    else {
      // last/past/previous: the latest one over by the reference; in/during/the: the latest begun.
      const over = qualifier === 'last' || qualifier === 'past' || qualifier === 'previous';
      let y = refYear + 1;
      do range = at(--y);
      while (over ? range[1] > ref : range[0] > ref);
    }
    const index = m.index + (m[0].length - m[0].trimStart().length);
    out.push({ index, length: m[0].length, start: range[0], end: range[1], strength: year !== undefined ? 1 : 0.8, relative: year === undefined });
  }
  for (const m of text.matchAll(YEAR)) {
    const y = Number(m[2]);
    const index = m.index + m[0].length - m[2].length;
    out.push({ index, length: m[2].length, start: Date.UTC(y, 0, 1), end: Date.UTC(y + 1, 0, 1), strength: 1, relative: false });
  }
  return out;
}

/** "since X", "after X" run to the reference; "before X", "until X" from long before. */
function withRelation(f: Found, text: string, ref: number): Found {
  const lead = /\b(since|after|before|until|till)\s+(the\s+)?$/i.exec(text.slice(0, f.index));
  if (!lead) return f;
  const word = lead[1].toLowerCase();
  const span = { index: lead.index, length: f.index + f.length - lead.index };
  if (word === 'since') return { ...f, ...span, end: Math.max(f.end, ref) };
  if (word === 'after') return { ...f, ...span, start: f.end, end: Math.max(f.end + DAY, ref) };
  return { ...f, ...span, start: -Infinity, end: f.start, strength: f.strength * 0.5 };
}

/**
 * "the Sunday before October 25", "last weekend before April 10": a day or weekend right before
 * a "before X" is the one in the week before X, at full strength (not all of time before X).
 */
function anchored(found: Found[], question: string): Found[] {
  const out: Found[] = [];
  for (const f of found) {
    const prev = out[out.length - 1];
    if (prev && f.start === -Infinity && /^[\s,]*$/.test(question.slice(prev.index + prev.length, f.index)) && prev.end - prev.start <= 7 * DAY) {
      out[out.length - 1] = { index: prev.index, length: f.index + f.length - prev.index, start: f.end - 7 * DAY, end: f.end, strength: f.strength * 2, relative: false };
    } else out.push(f);
  }
  return out;
}

/** The time that `question` speaks of, resolved against `reference`, and its keyword text (see ResolvedTime). */
export function resolveTime(question: string, reference: Date): ResolvedTime {
  const ref = reference.getTime();
  if (!Number.isFinite(ref) || question.trim() === '') return { range: null, keywordText: question };
  let found: Found[] = [];
  try {
    const results = chrono.casual.parse(question, { instant: reference, timezone: 0 }, { forwardDate: false }).slice(0, MAX_EXPRESSIONS);
    const years = new Set(results.filter((r) => r.start.isCertain('year') && !RELATIVE.test(r.text)).map((r) => r.start.get('year') as number));
    const yearHint = years.size === 1 ? [...years][0] : undefined;
    for (const r of results) {
      const f = fromChrono(r, question, ref, yearHint);
      if (f) found.push(f);
    }
  } catch {
    // A parser failure costs the preference, never the search.
    found = [];
  }
  for (const f of ownExpressions(question, ref)) if (!found.some((g) => f.index < g.index + g.length && g.index < f.index + f.length)) found.push(f);
  // A quoted phrase is words to match, a title perhaps ("Summer of 2019"), never a time; nor is an excluded term.
  const quoted = [...question.matchAll(/-?"[^"]*"?/g)].map((m) => [m.index, m.index + m[0].length]);
  found = found
    .slice(0, MAX_EXPRESSIONS)
    .map((f) => withRelation(f, question, ref))
    .filter((f) => f.end > f.start && !quoted.some(([a, b]) => f.index < b && a < f.index + f.length) && !/(^|\s)-\S*$/.test(question.slice(0, f.index)))
    .sort((a, b) => a.index - b.index);
  found = anchored(found, question);
  if (found.length === 0) return { range: null, keywordText: question };
  // A relative expression beside an explicit date is relative to that date ("last week, as
  // mentioned on November 6, 2023"), not to the reference: the explicit dates alone decide.
  const explicit = found.filter((f) => !f.relative);
  const deciding = explicit.length > 0 ? explicit : found;
  const range: TimeRange = {
    start: Math.min(...deciding.map((f) => f.start)),
    end: Math.max(...deciding.map((f) => f.end)),
    strength: Math.min(...deciding.map((f) => f.strength)),
    text: deciding.map((f) => question.slice(f.index, f.index + f.length)).join(' … '),
  };
  return { range, keywordText: stripRelative(question, found) };
}

function stripRelative(question: string, found: Found[]): string {
  let out = '';
  let at = 0;
  for (const f of found) {
    if (f.index < at) continue;
    out += question.slice(at, f.index);
    const expr = question.slice(f.index, f.index + f.length);
    // Keep what names a date (month, weekday, season, day of month, year); drop the relative words and counts.
    out += f.relative ? expr.replace(/\b\d+\s+(?=(days?|weeks?|months?|years?)\b)/gi, ' ').replace(/\b[\p{L}\p{N}]+\b/gu, (w) => (RELATIVE_WORDS.has(w.toLowerCase()) ? ' ' : w)) : expr;
    at = f.index + f.length;
  }
  out += question.slice(at);
  const stripped = out.replace(/\s+/g, ' ').trim();
  // Nothing but stop words left ("what did I do yesterday"): the question as it was.
  return splitWords(stripped).some((w) => !isStopWord(w)) ? stripped : question;
}

/**
 * How much a memory created at `at` (ms) is in the range, 0-1 (times the range's strength): 1
 * inside; outside it fades linearly to 0 over a margin, a wider one after the range (a memory
 * tells of an event at or after it: "yesterday I ...") than before it (plans). Margins grow with
 * the range: after, max(7 days, its length); before, max(1 day, half its length).
 */
export function dateBoost(at: number | undefined, range: TimeRange | null | undefined): number {
  if (!range || at === undefined || !Number.isFinite(at)) return 0;
  const length = Number.isFinite(range.start) ? range.end - range.start : 0;
  let closeness: number;
  if (at >= range.start && at < range.end) closeness = 1;
  else if (at >= range.end) closeness = Math.max(0, 1 - (at - range.end) / Math.max(7 * DAY, length));
  else closeness = Math.max(0, 1 - (range.start - at) / Math.max(DAY, length / 2));
  return closeness * range.strength;
}
