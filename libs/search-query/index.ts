export * from './search-query';
export { ENGLISH_STOP_WORDS } from './stop-words';
export { foldForMatch, snippetAround, snippetMaker } from './snippet';
export * from './fusion';
export * from './term-match';
