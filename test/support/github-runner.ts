// The GitHub Actions runner's reading of $GITHUB_OUTPUT and $GITHUB_ENV,
// written from its documented format, for tests to read back what chatctl
// appended: one `NAME=VALUE` per line, or a multi-line value
// `NAME<<DELIMITER`, its lines, then a line that is exactly DELIMITER. A
// line with both takes the form whose marker comes first; a heredoc that
// never ends, or a line that is neither, makes the whole file invalid.
export function parseRunnerFile(text: string): Map<string, string> {
  const values = new Map<string, string>();
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const eq = line.indexOf('=');
    const heredoc = line.indexOf('<<');
    if (eq >= 0 && (heredoc < 0 || eq < heredoc)) {
      const name = line.slice(0, eq);
      if (name === '') throw new Error(`line ${i + 1}: no name`);
      values.set(name, line.slice(eq + 1));
      continue;
    }
    if (heredoc <= 0) throw new Error(`line ${i + 1}: neither NAME=VALUE nor NAME<<DELIMITER: ${JSON.stringify(line)}`);
    const name = line.slice(0, heredoc);
    const delimiter = line.slice(heredoc + 2);
    if (delimiter === '') throw new Error(`line ${i + 1}: an empty delimiter`);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && lines[j] !== delimiter; j++) body.push(lines[j]!);
    if (j >= lines.length) throw new Error(`line ${i + 1}: the value of ${name} never ends (no line "${delimiter}")`);
    values.set(name, body.join('\n'));
    i = j;
  }
  return values;
}
