// qgpu/harness/cli/main.cpp — `qgpu`: dispatches to the subcommands (one file each, command.h).
#include <cstdio>
#include <vector>

#include "harness/cli/command.h"
#include "harness/cli/util.h"

int main(int argc, char** argv) {
  using namespace qgpu::cli;
  setCommandLine(argc, argv);
  CLI::App app{"qgpu: a SIMT GPU compiled into Qwen3.5 weights, and its conformance harness"};
  app.require_subcommand(1);
  static CommonOptions common;
  common.sourceDir = QGPU_SOURCE_DIR;
  app.add_flag("--json", common.json, "Machine-readable output (JSON) on stdout");
  app.add_option("--root", common.sourceDir, "The qgpu source tree (kernels/, reports/)")
      ->capture_default_str();

  std::vector<Command> commands = {
      addCheckCommand(app, common),   addCompileCommand(app, common),
      addRunCommand(app, common),     addExprCommand(app, common),
      addTraceCommand(app, common),
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
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  for (const Command& command : commands)
    if (command.app && command.app->parsed()) return command.run();
  std::fprintf(stderr, "qgpu: no subcommand\n");
  return kExitUsage;
}
