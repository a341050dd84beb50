// Names sorted, recursively, by localeCompare (the locale's collation).
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
serve((task, tool, args) => JSON.stringify([task, tool, args], sortedReplacer((a, b) => a.localeCompare(b))));
