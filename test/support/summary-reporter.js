// Ends every jest run with one plain line, "jest: N passed, N failed[, N skipped]", that CI
// reads as the run's count. A suite that could not run at all counts as a failure.
class SummaryReporter {
  onRunComplete(_contexts, r) {
    const failed = r.numFailedTests + r.numRuntimeErrorTestSuites;
    const skipped = r.numPendingTests + r.numTodoTests;
    process.stdout.write(`\njest: ${r.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}

module.exports = SummaryReporter;
