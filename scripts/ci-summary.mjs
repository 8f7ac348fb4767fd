#!/usr/bin/env node
// Adds up the test reports a .ci/run wrote and prints one closing line,
// `tests: N passed, N failed, N skipped`, the line CI reads to know how many tests ran.
// Arguments: `name=path` pairs; a path ending in .json is a vitest JSON report
// (`--reporter=json --outputFile.json=...`), a directory holds schemathesis' JUnit XML files.
// A report that is missing or unreadable counts as one failed test, so a runner that crashed
// before reporting can never look like a clean run. Each failed vitest test is named (file, title,
// the first line of its error) just above the closing line, where a CI log's tail shows it.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** `file > title: first line of the error` for each failed test (and each file that failed to load). */
function vitestFailures(report) {
  const failures = [];
  for (const file of report.testResults ?? []) {
    const where = String(file.name ?? '').replace(`${process.cwd()}/`, '');
    const failed = (file.assertionResults ?? []).filter((test) => test.status === 'failed');
    for (const test of failed) failures.push(`${where} > ${test.fullName ?? test.title}: ${firstLine(test.failureMessages?.[0])}`);
    if (failed.length === 0 && file.status === 'failed') failures.push(`${where}: ${firstLine(file.message)}`);
  }
  return failures;
}

// eslint-disable-next-line no-control-regex
const firstLine = (text) => String(text ?? '').replace(/\u001b\[[0-9;]*m/g, '').split('\n')[0].slice(0, 300);

function vitestCounts(path) {
  const report = JSON.parse(readFileSync(path, 'utf8'));
  return {
    failures: vitestFailures(report),
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
  for (const failure of counts.failures ?? []) console.log(`ci-summary, ${name} FAILED: ${failure}`);
  for (const key of Object.keys(total)) total[key] += counts[key];
}
console.log(`tests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
