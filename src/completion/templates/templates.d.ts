// The completion scripts are shell files, bundled as text (scripts/build.mjs
// and vitest.config.ts load them with a text loader).
declare module '*.bash' {
  const text: string;
  export default text;
}
declare module '*.zsh' {
  const text: string;
  export default text;
}
declare module '*.fish' {
  const text: string;
  export default text;
}
