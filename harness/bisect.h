// qgpu/harness/bisect.h — one step of `git bisect run` (issue 9, item 6): build the commit git
// checked out, run the case, and answer in git's terms.
//
//   git bisect run qgpu bisect-run [options] BUILD_CMD -- CASE...
//
// BUILD_CMD runs through /bin/sh -c; CASE is a command (argv, no shell) whose exit code follows
// qgpu's contract (common/outcome.h), e.g. `build/harness/qgpu run k.cu --compiler clang`; a CASE
// of one existing .cu file is short for `QGPU run FILE` with QGPU = --qgpu (default
// build/harness/qgpu: the qgpu just built, not the one running bisect-run).
// The answer (one table, `classifyCase`):
//   build fails (nonzero, signal) or times out       125 skip (the commit cannot be tested)
//   case exit 0 (match)                                0 good
//   case exit 1 (mismatch)                             1 bad
//   case exit 3 (harness error: a qgpu bug, e.g. an    1 bad  (--harness-error skip: 125)
//     Internal lowering error) or killed by a signal
//   case exit 2 (bad input: this commit does not     125 skip
//     read the file), 4 (inconclusive: a refused
//     kernel, no tool), a timeout, any other exit
// git bisect run stops on exit codes above 127; these three are the only ones returned, so a
// bisection is never aborted by the case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/diag.h"

namespace qgpu::bisect {

enum class Answer : uint8_t {
  Good = 0,   // git bisect good
  Bad = 1,    // git bisect bad
  Skip = 125, // git bisect skip
};
const char* answerName(Answer a);  // "good", "bad", "skip"
// What `qgpu bisect-run` exits with when it could not run at all (its command line, a fork):
// above 127, so `git bisect run` stops instead of marking the commit.
inline constexpr int kExitBisectAbort = 128;

struct BisectOptions {
  std::string buildCommand;       // /bin/sh -c
  std::vector<std::string> caseCommand;  // argv; one .cu file: `qgpu run FILE`
  std::string qgpu = "build/harness/qgpu";  // for a case that is a file
  double buildTimeoutSeconds = 3600;
  double caseTimeoutSeconds = 600;
  bool harnessErrorIsBad = true;  // exit 3 (and a signal) = bad; false: skip
  std::string logDir;             // where build.log and case.log go (empty: inherited output)
};

// The table above, for the case's result.
struct Step {
  Answer answer = Answer::Skip;
  std::string reason;  // one line: "build failed (exit 2)", "case: mismatch (exit 1)", ...
};
Step classifyCase(int exitCode, int signal, bool timedOut, bool harnessErrorIsBad);

// Builds and runs the case. Errors: Usage (no build command, no case, a timeout outside
// (0, 1e6] s), Internal (fork/wait).
Expected<Step> bisectStep(const BisectOptions& options);

}  // namespace qgpu::bisect
