// JSON.stringify([task, tool, args]) without sorting the names.
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
serve((task, tool, args) => JSON.stringify([task, tool, args]));
