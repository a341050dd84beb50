// Only the arguments' own names sorted; nested objects as they came.
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
const sortTop = (o) =>
  o && typeof o === "object" && !Array.isArray(o) ? Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1))) : o;
serve((task, tool, args) => JSON.stringify([task, tool, sortTop(args)]));
