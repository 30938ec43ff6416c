// Renders TeX with KaTeX, for the build. One process serves a whole build:
// each line on stdin is a JSON list of {tex, display}; each answer is one line, a
// JSON list of {html} or {error}, in the same order.
//
// KaTeX runs in a worker thread; the main thread only passes lines along, so it
// notices at once when stdin closes (the build ended, or was killed) and ends the
// process, even while the worker is busy with a formula.
//
// Each formula comes out twice in one element: KaTeX's HTML, which a reader sees
// (hidden from screen readers), and MathML, which a screen reader reads (hidden
// from view, and from the site's search). The build keys its cache on this
// file's text, so a change here renders every formula again.
const { Worker, isMainThread, parentPort } = require("worker_threads");

if (isMainThread) {
  const readline = require("readline");
  const worker = new Worker(__filename);
  worker.on("message", (answer) => process.stdout.write(answer + "\n"));
  worker.on("error", (err) => {
    process.stderr.write(String((err && err.stack) || err) + "\n");
    process.exit(1);
  });
  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  lines.on("line", (line) => {
    if (line.trim()) worker.postMessage(line);
  });
  lines.on("close", () => process.exit(0));
} else {
  const katex = require(process.env.KATEX_JS); // katex.min.js: the wheel's copy, or npm's (see math.py)
  const OPTIONS = { throwOnError: true, strict: "error", output: "htmlAndMathml" };

  const render = ({ tex, display }) => {
    // KaTeX shows a command it does not trust (\href, \url, \includegraphics, \htmlClass ...)
    // as red text and carries on; the build trusts none of them and fails instead.
    const refused = [];
    const trust = (context) => {
      refused.push(context.command);
      return false;
    };
    try {
      const html = katex.renderToString(tex, { ...OPTIONS, displayMode: display, trust });
      if (refused.length) {
        const names = [...new Set(refused)];
        return { error: `${names.join(", ")} ${names.length > 1 ? "are" : "is"} not allowed: the build trusts no `
                        + "command that makes a link, loads a file or sets HTML attributes" };
      }
      // The MathML is left out of the site's search index (Material's data-search-exclude):
      // the index has the formula's text once, from the HTML, as a reader sees it.
      return { html: html.replaceAll('<span class="katex-mathml">', '<span class="katex-mathml" data-search-exclude>') };
    } catch (err) {
      return { error: String(err.message || err) };
    }
  };

  parentPort.on("message", (line) => parentPort.postMessage(JSON.stringify(JSON.parse(line).map(render))));
}
