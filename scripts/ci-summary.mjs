#!/usr/bin/env node
// Adds up the test reports a .ci/run wrote and prints one closing line,
// `tests: N passed, N failed, N skipped`, the line CI reads to know how many tests ran.
// Arguments: `name=path` pairs; a path ending in .json is a vitest JSON report
// (`--reporter=json --outputFile.json=...`), a directory holds schemathesis' JUnit XML files.
// A report that is missing or unreadable counts as one failed test, so a runner that crashed
// before reporting can never look like a clean run.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function vitestCounts(path) {
  const report = JSON.parse(readFileSync(path, 'utf8'));
  return {
    passed: report.numPassedTests,
    failed: report.numFailedTests + (report.numFailedTestSuites > 0 && report.numFailedTests === 0 ? 1 : 0),
    skipped: report.numPendingTests + report.numTodoTests,
  };
}

function junitCounts(dir) {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith('.xml'))
    .map((name) => join(dir, name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (files.length === 0) throw new Error(`no JUnit XML file in ${dir}`);
  const xml = readFileSync(files[0], 'utf8'); // the newest run's report
  const counts = { passed: 0, failed: 0, skipped: 0 };
  for (const [suite] of xml.matchAll(/<testsuite\s[^>]*>/g)) {
    const attr = (name) => Number(new RegExp(`\\s${name}="(\\d+)"`).exec(suite)?.[1] ?? 0);
    const failed = attr('failures') + attr('errors');
    counts.failed += failed;
    counts.skipped += attr('skipped');
    counts.passed += attr('tests') - failed - attr('skipped');
  }
  return counts;
}

const total = { passed: 0, failed: 0, skipped: 0 };
for (const argument of process.argv.slice(2)) {
  const [name, path] = argument.split('=');
  let counts;
  try {
    counts = path.endsWith('.json') ? vitestCounts(path) : junitCounts(path);
  } catch (error) {
    console.log(`ci-summary, ${name}: no readable report at ${path} (${error.message}); counted as 1 failed`);
    counts = { passed: 0, failed: 1, skipped: 0 };
  }
  console.log(`ci-summary, ${name} — ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  for (const key of Object.keys(total)) total[key] += counts[key];
}
console.log(`tests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
