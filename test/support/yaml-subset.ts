// Just enough YAML to read the CI recipes of docs/ci-systems.md as a runner
// would: block mappings and sequences by indentation, `|` block scalars kept
// verbatim, plain and quoted scalars, comments. Flow collections (`[a, b]`,
// `{ a: b }`) are kept as their text. Anything else is an error, so a recipe
// written beyond this subset fails its test rather than being misread.
export type Yaml = string | null | Yaml[] | { [key: string]: Yaml };

interface Line {
  indent: number;
  text: string;
  raw: string;
}

export function parseYaml(source: string): Yaml {
  const lines: Line[] = source.split('\n').map((raw) => ({ raw, indent: raw.length - raw.trimStart().length, text: raw.trim() }));
  let i = 0;
  const skipBlank = () => {
    while (i < lines.length && (lines[i]!.text === '' || lines[i]!.text.startsWith('#'))) i++;
  };

  const scalar = (rest: string): Yaml => {
    if (rest.startsWith("'")) return rest.slice(1, rest.lastIndexOf("'")).replace(/''/g, "'");
    if (rest.startsWith('"')) return JSON.parse(rest.slice(0, rest.lastIndexOf('"') + 1)) as string;
    const value = rest.replace(/\s+#.*$/, '');
    return value === '' || value === '~' || value === 'null' ? null : value;
  };

  const block = (indent: number): string => {
    const out: string[] = [];
    let inner = -1;
    while (i < lines.length && (lines[i]!.text === '' || lines[i]!.indent > indent)) {
      const l = lines[i]!;
      if (l.text !== '' && inner < 0) inner = l.indent;
      out.push(l.text === '' ? '' : l.raw.slice(inner));
      i++;
    }
    while (out.length > 0 && out.at(-1) === '') out.pop();
    return out.join('\n') + '\n';
  };

  const value = (rest: string, indent: number): Yaml => {
    if (rest === '|' || rest === '|-') {
      const text = block(indent);
      return rest === '|-' ? text.slice(0, -1) : text;
    }
    if (rest === '' || rest.startsWith('#')) {
      skipBlank();
      if (i < lines.length && lines[i]!.indent > indent) return node(lines[i]!.indent);
      if (i < lines.length && lines[i]!.indent === indent && lines[i]!.text.startsWith('- ')) return node(indent);
      return null;
    }
    return scalar(rest);
  };

  const mapping = (indent: number, first?: string): Yaml => {
    const map: Record<string, Yaml> = {};
    let pending = first;
    for (;;) {
      let text: string;
      if (pending !== undefined) {
        text = pending;
        pending = undefined;
      } else {
        skipBlank();
        if (i >= lines.length || lines[i]!.indent !== indent || lines[i]!.text.startsWith('- ')) return map;
        text = lines[i]!.text;
        i++;
      }
      const m = /^([^:#'"]+?|'[^']*'|"[^"]*"):(?:\s+(.*))?$/.exec(text);
      if (!m) throw new Error(`not a mapping entry: ${text}`);
      const key = scalar(m[1]!) as string;
      map[key] = value((m[2] ?? '').trim(), indent);
    }
  };

  const sequence = (indent: number): Yaml => {
    const list: Yaml[] = [];
    for (;;) {
      skipBlank();
      if (i >= lines.length || lines[i]!.indent !== indent || !lines[i]!.text.startsWith('- ')) return list;
      const rest = lines[i]!.text.slice(2).trim();
      i++;
      if (/^[^:'"]+:(\s|$)/.test(rest) && !rest.startsWith('{')) list.push(mapping(indent + 2, rest));
      else list.push(value(rest, indent));
    }
  };

  function node(indent: number): Yaml {
    skipBlank();
    return lines[i]!.text.startsWith('- ') ? sequence(indent) : mapping(indent);
  }

  skipBlank();
  return node(lines[i]?.indent ?? 0);
}
