// --query EXPR (docs/configuration.md, Output): a JMESPath expression applied
// to every JSON document chatctl prints, compiled before anything is sent (an
// invalid one is exit 2). A bundle of its own: jmespath loads only then.
import { compile, search } from 'jmespath';
import { usageError } from '../errors/cli-error.js';
import type { JsonQuery } from '../output/json.js';

/**
 * The functions of the JMESPath specification, which jmespath implements:
 * the parser accepts any name, and an unknown one fails only when reached
 * while searching, after the request was sent.
 */
const FUNCTIONS = new Set(
  'abs avg ceil contains ends_with floor join keys length map max max_by merge min min_by not_null reverse sort sort_by starts_with sum to_array to_number to_string type values'.split(' '),
);

type Node = { type?: unknown; name?: unknown; children?: unknown };

/** The first function the expression calls that JMESPath does not have, walking its syntax tree without recursion. */
function unknownFunction(ast: unknown): string | undefined {
  const stack: unknown[] = [ast];
  while (stack.length > 0) {
    const node = stack.pop() as Node | null;
    if (!node || typeof node !== 'object') continue;
    if (node.type === 'Function' && typeof node.name === 'string' && !FUNCTIONS.has(node.name)) return node.name;
    if (Array.isArray(node.children)) stack.push(...node.children);
  }
  return undefined;
}

const HINT = 'a JMESPath expression, as the AWS CLI takes: e.g. --query data.endpoint.id (docs/configuration.md, Output)';

export function compileQuery(expression: string): JsonQuery {
  let ast: unknown;
  try {
    ast = compile(expression);
  } catch (err) {
    throw usageError(`invalid --query ${JSON.stringify(expression)}: ${(err as Error).message}`, HINT);
  }
  const unknown = unknownFunction(ast);
  if (unknown !== undefined) throw usageError(`invalid --query ${JSON.stringify(expression)}: unknown function ${unknown}()`, HINT);
  return {
    expression,
    select(document) {
      try {
        return search(document, expression);
      } catch (err) {
        throw new Error(`--query ${JSON.stringify(expression)} could not be applied to the output: ${(err as Error).message}`);
      }
    },
  };
}
