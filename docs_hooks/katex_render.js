// Renders TeX to HTML with KaTeX, for the build. Reads a JSON list of
// {tex, display} on stdin and writes a JSON list of {html} or {error}.
const path = require("path");
const katex = require(require.resolve("katex", { paths: [process.env.KATEX_ROOT || process.cwd()] }));

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const items = JSON.parse(input);
  const out = items.map(({ tex, display }) => {
    try {
      return { html: katex.renderToString(tex, { displayMode: display, throwOnError: true, strict: "error", output: "html" }) };
    } catch (err) {
      return { error: String(err.message || err) };
    }
  });
  process.stdout.write(JSON.stringify(out));
});
