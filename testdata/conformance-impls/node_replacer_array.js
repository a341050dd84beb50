// Sorting with JSON.stringify's replacer array, Object.keys(args).sort():
// the array also filters the names of every nested object.
const { serve } = require("./_serve.js");
serve((task, tool, args) => JSON.stringify([task, tool, args], Object.keys(args).sort()));
