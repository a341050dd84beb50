// The reference canonicalization, string values normalized to NFC first (names kept).
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
const sorted = sortedReplacer((a, b) => (a < b ? -1 : 1));
serve((task, tool, args) => JSON.stringify([task, tool, args], (k, x) => (typeof x === "string" ? x.normalize("NFC") : sorted(k, x))));
