// qgpu/harness/report/provenance.cpp — see provenance.h.
#include "harness/report/provenance.h"

#include <unistd.h>

#include <array>
#include <cstdio>

#include "host/cuda/compile.h"

namespace qgpu::report {

std::string shellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string commandOutput(const std::string& command) {
  // stdin from /dev/null: a tool that wants input must not wait for the terminal.
  std::string full = "{ " + command + "; } </dev/null 2>/dev/null";
  FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) return "";
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0 && out.size() < (1u << 20))
    out.append(buf.data(), n);
  int status = ::pclose(pipe);
  return status == 0 ? out : "";
}

namespace {

std::string firstLine(const std::string& text) {
  size_t end = text.find('\n');
  std::string line = text.substr(0, end);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// nvcc's "Cuda compilation tools, release 13.0, V13.0.48" line, else its first line.
std::string releaseLine(const std::string& text) {
  size_t at = text.find("release ");
  if (at == std::string::npos) return firstLine(text);
  size_t start = text.rfind('\n', at);
  return firstLine(text.substr(start == std::string::npos ? 0 : start + 1));
}

// `timeout 10` when coreutils has it: a wedged tool must not hang the run.
std::string bounded(const std::string& command) {
  static const bool haveTimeout = !commandOutput("command -v timeout").empty();
  return haveTimeout ? "timeout 10 " + command : command;
}

}  // namespace

Provenance collectProvenance(const std::string& sourceDir, const std::string& libtorchVersion) {
  Provenance p;
  std::string git = bounded("git -C " + shellQuote(sourceDir));
  std::string head = firstLine(commandOutput(git + " rev-parse HEAD"));
  if (head.size() == 40 && head.find_first_not_of("0123456789abcdef") == std::string::npos) {
    p.commit = head;
    // `git status` exits non-zero only when it cannot tell: then the flag stays unknown.
    std::string status = commandOutput(git + " status --porcelain && echo ok");
    if (!status.empty()) p.dirty = status == "ok\n" ? "false" : "true";
  }
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) == 0 && name[0] != '\0') p.host = name.data();
#if defined(__clang__)
  p.tools["cxx"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  p.tools["cxx"] = std::string("g++ ") + __VERSION__;
#endif
  for (host::Compiler c : {host::Compiler::Clang, host::Compiler::Nvcc}) {
    auto path = host::toolPath(c);
    if (!path.ok()) continue;
    std::string out = commandOutput(bounded(shellQuote(*path) + " --version"));
    std::string line = c == host::Compiler::Clang ? firstLine(out) : releaseLine(out);
    if (!line.empty()) p.tools[host::compilerName(c)] = line;
  }
  if (!libtorchVersion.empty()) p.tools["libtorch"] = libtorchVersion;
  return p;
}

void setGpu(Provenance& p, const std::string& gpuName, int driverVersion) {
  p.gpu = gpuName;
  if (driverVersion > 0)
    p.tools["cudaDriver"] = std::to_string(driverVersion / 1000) + "." +
                            std::to_string(driverVersion % 1000 / 10);
}

nlohmann::json toJson(const Provenance& p) {
  nlohmann::json j = {{"commit", p.commit}, {"dirty", p.dirty}, {"host", p.host},
                      {"tools", p.tools}};
  j["gpu"] = p.gpu.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.gpu);
  j["checkpoint"] = p.checkpoint.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.checkpoint);
  return j;
}

}  // namespace qgpu::report
