/**
 * scripts/ci-summary.mjs, the closing lines of `.ci/run`: the counts CI reads, and each failed
 * test by file and title with its error's first line, at the log's tail where a CI report shows it
 * (a run failed with `1 failed` and no name within the shown tail).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const script = path.resolve('scripts/ci-summary.mjs');

describe('ci-summary', () => {
  it('adds up the reports and names each failed test with the first line of its error', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ci-summary-'));
    const report = {
      numPassedTests: 3,
      numFailedTests: 1,
      numFailedTestSuites: 1,
      numPendingTests: 2,
      numTodoTests: 0,
      testResults: [
        {
          name: path.join(process.cwd(), 'test/x/one.test.ts'),
          status: 'failed',
          assertionResults: [
            { status: 'passed', title: 'fine', fullName: 'one fine' },
            { status: 'failed', title: 'breaks', fullName: 'one breaks', failureMessages: ['\u001b[31mAssertionError: expected 1 to be 2\u001b[39m\n    at somewhere'] },
          ],
        },
        { name: path.join(process.cwd(), 'test/x/two.test.ts'), status: 'failed', message: 'Error: Cannot find module x\nstack', assertionResults: [] },
      ],
    };
    fs.writeFileSync(path.join(dir, 'npm.json'), JSON.stringify(report));
    const out = execFileSync(process.execPath, [script, `npm-test=${path.join(dir, 'npm.json')}`, `missing=${path.join(dir, 'none.json')}`], { encoding: 'utf8' });
    const lines = out.trim().split('\n');
    expect(lines).toContain('ci-summary, npm-test — 3 passed, 1 failed, 2 skipped');
    expect(lines).toContain('ci-summary, npm-test FAILED: test/x/one.test.ts > one breaks: AssertionError: expected 1 to be 2');
    expect(lines).toContain('ci-summary, npm-test FAILED: test/x/two.test.ts: Error: Cannot find module x');
    expect(lines.some((line) => line.startsWith('ci-summary, missing: no readable report'))).toBe(true);
    expect(lines.at(-1)).toBe('tests: 3 passed, 2 failed, 2 skipped');
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
