// The right text, hashed as UTF-16LE (as C#'s SHA256.HashData(Encoding.Unicode.GetBytes(text))).
const { serve, sortedReplacer } = require("./_serve.js");
const { createHash } = require("node:crypto");
serve((task, tool, args) => JSON.stringify([task, tool, args], sortedReplacer((a, b) => (a < b ? -1 : 1))),
  (t) => createHash("sha256").update(t, "utf16le").digest("hex"));
