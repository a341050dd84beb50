// A lodash-style deep sort, hand-written as lodash does it:
// _.fromPairs(_.sortBy(_.toPairs(o), 0)) with _.mapValues recursing; fromPairs
// assigns (result[key] = value), not defineProperty.
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
const fromPairs = (pairs) => { const r = {}; for (const [k, v] of pairs) r[k] = v; return r; };
const sortBy0 = (pairs) => pairs.slice().sort(([a], [b]) => (a > b) - (a < b));
const deep = (x) =>
  Array.isArray(x) ? x.map(deep) : x && typeof x === "object" ? fromPairs(sortBy0(Object.entries(x)).map(([k, v]) => [k, deep(v)])) : x;
serve((task, tool, args) => JSON.stringify([task, tool, deep(args)]));
