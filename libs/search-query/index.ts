export * from './search-query';
export { ENGLISH_STOP_WORDS } from './stop-words';
export { foldForMatch, snippetAround, snippetMaker } from './snippet';
export * from './fusion';
export { dateBoost, resolveTime, TIME_WEIGHT, type ResolvedTime, type TimeRange } from './time-expressions';
export * from './term-match';
export { asksForTotal, comparisonSides, type ComparisonSide } from './question-forms';
