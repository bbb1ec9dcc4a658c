// qgpu/harness/cli/main.cpp — `qgpu`: dispatches to the subcommands (one file each, command.h).
//
// No exception escapes: a command-line error is a usage error (exit 2), anything thrown by a
// command (std::exception or otherwise) is reported as an Internal error, exit 3, through the one
// error reporter (util.h), so --json gets a JSON error object for it too.
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "common/text.h"
#include "harness/bisect.h"
#include "harness/cli/command.h"
#include "harness/cli/util.h"

namespace {

// --json before the subcommand, looked up in argv itself: a command line that does not parse
// still gets its error in the format it asked for.
bool wantsJson(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0) return true;
  return false;
}

// `bisect-run` answers git bisect, for which 2 would mean "bad": a command line that does not
// parse must stop the bisection instead (128, harness/cli/cmd_bisect.cpp).
bool isBisectRun(int argc, char** argv) {
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
    if (std::strcmp(argv[i], "bisect-run") == 0) return true;
  return false;
}

int run(int argc, char** argv) {
  using namespace qgpu::cli;
  CLI::App app{"qgpu: a SIMT GPU compiled into Qwen3.5 weights, and its conformance harness"};
  app.require_subcommand(1);
  static CommonOptions common;
  common.sourceDir = QGPU_SOURCE_DIR;
  app.add_flag("--json", common.json, "Machine-readable output (JSON) on stdout, errors included");
  app.add_option("--root", common.sourceDir, "The qgpu source tree (kernels/, reports/)")
      ->capture_default_str();

  std::vector<Command> commands = {
      addCheckCommand(app, common),   addCompileCommand(app, common),
      addRunCommand(app, common),     addExprCommand(app, common),
      addTraceCommand(app, common),   addReportCommand(app, common),
      addAuditCommand(app, common),   addBenchCommand(app, common),
      addFuzzCommand(app, common),    addReduceCommand(app, common),
      addBisectCommand(app, common),  addCircuitCommand(app, common),
#ifdef QGPU_HAVE_GPU_CLI
      addGpuCommand(app, common),
#endif
#ifdef QGPU_HAVE_MODEL
      addModelCommand(app, common),
#endif
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    const int code = isBisectRun(argc, argv) ? qgpu::bisect::kExitBisectAbort : kExitUsage;
    if (wantsJson(argc, argv)) {
      setJsonOutput(true);
      reportError(qgpu::makeDiag(qgpu::ErrorKind::Usage, qgpu::echo(e.what(), 400)));
      return code;
    }
    app.exit(e);
    return code;
  }
  setJsonOutput(common.json);
  for (const Command& command : commands)
    if (command.app && command.app->parsed()) return command.run();
  return reportError(qgpu::makeDiag(qgpu::ErrorKind::Usage, "no subcommand"));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qgpu::cli;
  setCommandLine(argc, argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    return reportError(qgpu::makeDiag(
        qgpu::ErrorKind::Internal, "unexpected exception: " + qgpu::echo(e.what(), 400)));
  } catch (...) {
    return reportError(qgpu::makeDiag(qgpu::ErrorKind::Internal, "unexpected exception"));
  }
}
