// Every command's --help text, rendered by commander itself at build time,
// so `chatctl … --help` can print it without loading commander. A test
// compares each entry with what the live program prints.
import type { Command } from 'commander';

export function renderAllHelp(program: Command, capture: { take(): string }): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (cmd: Command, path: string[]) => {
    cmd.outputHelp();
    out[path.join(' ')] = capture.take();
    for (const sub of cmd.commands) if (sub.name() !== 'help') walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  return out;
}
