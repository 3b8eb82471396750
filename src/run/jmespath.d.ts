// The two functions of the jmespath package chatctl calls (it ships no types).
declare module 'jmespath' {
  /** The expression's syntax tree; throws a ParserError or LexerError on an invalid one. */
  export function compile(expression: string): unknown;
  /** The expression applied to a JSON value. */
  export function search(data: unknown, expression: string): unknown;
}
