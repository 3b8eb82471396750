// The bundle bin/chatctl.js loads for `chatctl __complete`: the completion
// engine only (dist/complete.js), with the tree from dist/tree.json.
export { runComplete } from './complete.js';
