// The reference canonicalization, but of the arguments alone.
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
serve((task, tool, args) => JSON.stringify(args, sortedReplacer((a, b) => (a < b ? -1 : 1))));
