// qgpu/harness/cli/util.cpp — shared CLI helpers.
#include "harness/cli/util.h"

namespace qgpu::cli {

namespace {
std::string& storedCommandLine() {
  static std::string line;
  return line;
}
}  // namespace

int reportError(const Diag& diag) {
  std::fprintf(stderr, "qgpu: %s\n", diag.str().c_str());
  return exitCode(diag);
}

Expected<std::vector<host::Compiler>> parseCompilers(const std::string& name) {
  if (name == "clang") return std::vector<host::Compiler>{host::Compiler::Clang};
  if (name == "nvcc") return std::vector<host::Compiler>{host::Compiler::Nvcc};
  if (name == "both") return std::vector<host::Compiler>{host::Compiler::Clang, host::Compiler::Nvcc};
  return makeDiag(ErrorKind::Usage, "unknown compiler '" + name + "' (clang, nvcc or both)");
}

std::string catalogDir(const CommonOptions& common) { return common.sourceDir + "/kernels/catalog"; }

std::string commandLine() { return storedCommandLine(); }

void setCommandLine(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    bool plain = !arg.empty() && arg.find_first_of(" \t\"'$\\[]|&;<>()*?") == std::string::npos;
    line += (i ? " " : "") + (plain ? arg : "'" + arg + "'");
  }
  storedCommandLine() = line;
}

}  // namespace qgpu::cli
