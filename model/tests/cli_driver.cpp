// A stand-in for `qgpu` that registers only `model`, for testing cmd_model.cpp on its own
// (model/tests/cli_test.sh). The real binary is harness's main.cpp.
#include "harness/cli/command.h"

int main(int argc, char** argv) {
  CLI::App root{"qgpu (model subcommand only)"};
  qgpu::cli::CommonOptions common;
  root.add_flag("--json", common.json, "Machine-readable output");
  root.require_subcommand(1);
  auto model = qgpu::cli::addModelCommand(root, common);
  CLI11_PARSE(root, argc, argv);
  return model.run();
}
