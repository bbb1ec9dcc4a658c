// qgpu/harness/cli/cmd_bisect.cpp — `qgpu bisect-run BUILD_CMD -- CASE...`: one step of
// `git bisect run` (harness/bisect.h, docs/reduce.md).
//
//   git bisect run /stable/qgpu bisect-run [--qgpu P] [--build-timeout S] [--timeout S]
//                                          [--harness-error bad|skip] [--log-dir D] BUILD_CMD --
//                                          CASE...
//
// Exit codes are git bisect's, not qgpu's (command.h): 0 good, 1 bad, 125 skip (the build
// failed, the case was inconclusive, bad input at that commit, or timed out), and 128 when
// bisect-run itself could not run (a bad option value, fork failed) or its command line does
// not parse (main.cpp answers 128 for bisect-run instead of 2, which git would read as bad): git
// bisect run stops on it. One line on stderr says what was decided and why (JSON on stdout with
// --json).
#include <cstdio>

#include "harness/bisect.h"
#include "harness/cli/command.h"
#include "harness/cli/util.h"

namespace qgpu::cli {

namespace {

using bisect::kExitBisectAbort;

struct BisectCmdOptions {
  bisect::BisectOptions options;
  std::string harnessError = "bad";
};

int runBisectCommand(BisectCmdOptions& o) {
  if (o.harnessError != "bad" && o.harnessError != "skip") {
    reportError(makeDiag(ErrorKind::Usage, "--harness-error must be bad or skip"));
    return kExitBisectAbort;
  }
  o.options.harnessErrorIsBad = o.harnessError == "bad";
  auto step = bisect::bisectStep(o.options);
  if (!step) {
    reportError(step.error());
    return kExitBisectAbort;
  }
  if (jsonOutput())
    std::printf("%s\n", dumpJson({{"answer", bisect::answerName(step->answer)},
                                  {"exit", static_cast<int>(step->answer)},
                                  {"reason", step->reason}})
                            .c_str());
  std::fprintf(stderr, "qgpu bisect-run: %s (%s)\n", bisect::answerName(step->answer),
               step->reason.c_str());
  return static_cast<int>(step->answer);
}

}  // namespace

Command addBisectCommand(CLI::App& root, const CommonOptions&) {
  static BisectCmdOptions o;
  CLI::App* app = root.add_subcommand(
      "bisect-run", "One `git bisect run` step: build, run the case; exit 0 good, 1 bad, 125 skip");
  app->add_option("build", o.options.buildCommand,
                  "Build command (sh -c), e.g. \"ninja -C build qgpu\"")
      ->required();
  app->add_option("case", o.options.caseCommand,
                  "After --: the case command (qgpu exit codes), or one .cu file (= QGPU run FILE)")
      ->required()
      ->expected(-1);
  app->add_option("--qgpu", o.options.qgpu, "The qgpu under test, for a case that is a file")
      ->capture_default_str();
  app->add_option("--build-timeout", o.options.buildTimeoutSeconds, "Seconds; over = skip")
      ->capture_default_str();
  app->add_option("--timeout", o.options.caseTimeoutSeconds, "Seconds for the case; over = skip")
      ->capture_default_str();
  app->add_option("--harness-error", o.harnessError,
                  "What a harness error (exit 3) or a crash of the case is: bad or skip")
      ->capture_default_str();
  app->add_option("--log-dir", o.options.logDir,
                  "Write build.log and case.log here (default: output passes through)");
  return {app, [] { return runBisectCommand(o); }};
}

}  // namespace qgpu::cli
