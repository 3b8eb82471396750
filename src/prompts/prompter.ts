// Asks for what the command line left out. Only exists when stdin and stdout
// are both terminals and prompts are allowed (docs/configuration.md); commands
// receive `undefined` otherwise and fail with a usage error naming the flag.
export interface Prompter {
  name(): Promise<string>;
  url(): Promise<string>;
  events(): Promise<string[]>;
  expectedVersion(): Promise<string>;
  mode(): Promise<string>;
  confirmImmediate(endpointId: string): Promise<boolean>;
  /** `auth token` on a terminal: print the token (from `where`) on the screen? */
  confirmShowToken(where: string): Promise<boolean>;
  token(): Promise<string>;
}
