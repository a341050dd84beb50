// The key of `${task}${tool}${canonical(args)}`, the three concatenated.
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
serve((task, tool, args) => `${task}${tool}${JSON.stringify(args, sortedReplacer((a, b) => (a < b ? -1 : 1)))}`);
