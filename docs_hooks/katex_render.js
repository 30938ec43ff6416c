// Renders TeX to HTML with KaTeX, for the build. One process serves a whole build:
// each line on stdin is a JSON list of {tex, display}; each answer is one line, a
// JSON list of {html} or {error}, in the same order.
const readline = require("readline");
const katex = require(require.resolve("katex", { paths: [process.env.KATEX_ROOT || process.cwd()] }));

function render({ tex, display }) {
  try {
    return { html: katex.renderToString(tex, { displayMode: display, throwOnError: true, strict: "error", output: "html" }) };
  } catch (err) {
    return { error: String(err.message || err) };
  }
}

const lines = readline.createInterface({ input: process.stdin, terminal: false });
lines.on("line", (line) => {
  if (line.trim()) process.stdout.write(JSON.stringify(JSON.parse(line).map(render)) + "\n");
});
