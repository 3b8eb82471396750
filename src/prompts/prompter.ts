// Asks for what the command line left out, when stdin and stdout are terminals
// and prompts are allowed; else commands get `undefined` and name the flag.
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
