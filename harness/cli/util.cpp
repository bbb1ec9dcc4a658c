// qgpu/harness/cli/util.cpp — shared CLI helpers.
#include "harness/cli/util.h"

#include <iostream>

#include "common/outcome.h"
#include "common/text.h"

namespace qgpu::cli {

namespace {
std::string& storedCommandLine() {
  static std::string line;
  return line;
}
bool& storedJson() {
  static bool json = false;
  return json;
}
}  // namespace

void setJsonOutput(bool json) { storedJson() = json; }
bool jsonOutput() { return storedJson(); }

nlohmann::json errorJson(const Diag& diag) {
  nlohmann::ordered_json e;
  e["kind"] = kindName(diag.kind);
  e["message"] = diag.message;
  e["file"] = diag.loc.file;
  e["line"] = diag.loc.line;
  e["column"] = diag.loc.column;
  e["outcome"] = outcomeName(classify(diag));
  e["exit"] = exitCode(diag);
  return nlohmann::json::parse(e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string dumpJson(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

int reportError(const Diag& diag) {
  const char* skipped = diag.kind == ErrorKind::NoDevice ? "skipped (inconclusive): " : "";
  std::fprintf(stderr, "qgpu: %s%s\n", skipped, diag.str().c_str());
  if (jsonOutput()) {
    std::cout << dumpJson({{"error", errorJson(diag)}}) << "\n";
    std::cout.flush();
  }
  return exitCode(diag);
}

Expected<std::vector<host::Compiler>> parseCompilers(const std::string& name) {
  if (name == "clang") return std::vector<host::Compiler>{host::Compiler::Clang};
  if (name == "nvcc") return std::vector<host::Compiler>{host::Compiler::Nvcc};
  if (name == "both") return std::vector<host::Compiler>{host::Compiler::Clang, host::Compiler::Nvcc};
  return makeDiag(ErrorKind::Usage, "unknown compiler '" + echo(name) + "' (clang, nvcc or both)");
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
