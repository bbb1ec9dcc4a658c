// qgpu/harness/bisect.cpp — one `git bisect run` step (bisect.h).
#include "harness/bisect.h"

#include <filesystem>

#include "common/outcome.h"
#include "harness/subprocess.h"

namespace qgpu::bisect {

namespace fs = std::filesystem;

const char* answerName(Answer a) {
  switch (a) {
    case Answer::Good:
      return "good";
    case Answer::Bad:
      return "bad";
    case Answer::Skip:
      return "skip";
  }
  return "skip";
}

Step classifyCase(int exitCode, int signal, bool timedOut, bool harnessErrorIsBad) {
  if (timedOut) return {Answer::Skip, "case timed out (inconclusive)"};
  if (signal != 0)
    return {harnessErrorIsBad ? Answer::Bad : Answer::Skip,
            "case killed by signal " + std::to_string(signal)};
  switch (exitCode) {
    case kExitOk:
      return {Answer::Good, "case: match (exit 0)"};
    case kExitMismatch:
      return {Answer::Bad, "case: mismatch (exit 1)"};
    case kExitHarnessError:
      return {harnessErrorIsBad ? Answer::Bad : Answer::Skip, "case: harness error (exit 3)"};
    case kExitUsage:
      return {Answer::Skip, "case: bad input at this commit (exit 2)"};
    case kExitInconclusive:
      return {Answer::Skip, "case: inconclusive (exit 4)"};
    default:
      return {Answer::Skip, "case: exit " + std::to_string(exitCode) + " (not a qgpu verdict)"};
  }
}

Expected<Step> bisectStep(const BisectOptions& o) {
  if (o.buildCommand.empty()) return makeDiag(ErrorKind::Usage, "no build command");
  if (o.caseCommand.empty()) return makeDiag(ErrorKind::Usage, "no case after '--'");
  for (double t : {o.buildTimeoutSeconds, o.caseTimeoutSeconds})
    if (!(t > 0) || t > 1e6)
      return makeDiag(ErrorKind::Usage, "a timeout must be in (0, 1e6] seconds");
  ProcessOptions build;
  build.timeoutSeconds = o.buildTimeoutSeconds;
  if (!o.logDir.empty()) build.logPath = (fs::path(o.logDir) / "build.log").string();
  QGPU_TRY(b, runProcess({"/bin/sh", "-c", o.buildCommand}, build));
  if (b.timedOut) return Step{Answer::Skip, "build timed out"};
  if (!b.exitedWith(0))
    return Step{Answer::Skip, b.signal ? "build killed by signal " + std::to_string(b.signal)
                                       : "build failed (exit " + std::to_string(b.exitCode) + ")"};
  std::vector<std::string> argv = o.caseCommand;
  std::error_code ec;
  if (argv.size() == 1 && fs::path(argv[0]).extension() == ".cu" &&
      fs::is_regular_file(argv[0], ec))
    argv = {o.qgpu, "run", argv[0]};
  ProcessOptions run;
  run.timeoutSeconds = o.caseTimeoutSeconds;
  if (!o.logDir.empty()) run.logPath = (fs::path(o.logDir) / "case.log").string();
  QGPU_TRY(c, runProcess(argv, run));
  if (c.exitedWith(127))
    return Step{Answer::Skip, "case: command not found (exit 127): " + argv[0]};
  return classifyCase(c.exitCode, c.signal, c.timedOut, o.harnessErrorIsBad);
}

}  // namespace qgpu::bisect
