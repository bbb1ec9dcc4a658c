// qgpu/host/cuda/compile.cpp — runs clang-14 / nvcc / ptxas as subprocesses (see compile.h).
#include "host/cuda/compile.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "common/digest.h"
#include "common/file.h"
#include "common/process.h"

extern char** environ;

namespace qgpu::host {
namespace {

namespace fs = std::filesystem;

#ifndef QGPU_SOURCE_DIR
#define QGPU_SOURCE_DIR "."
#endif

bool isExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> findOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (isExecutableFile(candidate)) return candidate;
  }
  return std::nullopt;
}

// Resolves a tool: the environment override wins outright (set but wrong means missing, so tests
// can simulate an absent tool); otherwise the listed candidates, absolute paths or PATH names.
Expected<std::string> resolveTool(const char* toolName, const char* envVar,
                                  const std::vector<std::string>& candidates) {
  if (const char* override = std::getenv(envVar); override != nullptr && *override != '\0') {
    if (isExecutableFile(override)) return std::string(override);
    return makeDiag(ErrorKind::ToolMissing, std::string(toolName) + " not found: $" + envVar +
                                                " = '" + override + "' is not an executable file");
  }
  std::string searched;
  for (const std::string& candidate : candidates) {
    if (candidate.find('/') != std::string::npos) {
      if (isExecutableFile(candidate)) return candidate;
    } else if (auto found = findOnPath(candidate)) {
      return *found;
    }
    searched += (searched.empty() ? "" : ", ") + candidate;
  }
  return makeDiag(ErrorKind::ToolMissing, std::string(toolName) + " not found (searched " +
                                              searched + " and PATH; set $" + envVar + ")");
}

// A private temporary directory, removed with everything in it when this goes out of scope.
class TempDir {
 public:
  static Expected<TempDir> create() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                          "/qgpu-cuda-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr) {
      return makeDiag(ErrorKind::Io, "mkdtemp(" + pattern + ") failed: " + std::strerror(errno));
    }
    return TempDir(std::string(buffer.data()));
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

Status writeFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return makeDiag(ErrorKind::Io, "cannot write " + path);
  return Ok{};
}

// What the tools write into the temporary directory is read with a cap: a compiler log is kept
// to its first 1 MiB, and PTX over the front end's 4 MiB (ptx::kMaxInputBytes; host/cuda does
// not depend on host/ptx) is refused as the parser would refuse it.
constexpr size_t kMaxLogBytes = size_t{1} << 20;
constexpr size_t kMaxPtxBytes = size_t{4} << 20;

std::string readLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(kMaxLogBytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

struct RunResult {
  bool timedOut = false;
  int exitCode = -1;   // valid when the tool exited normally
  int signal = 0;      // nonzero when it was killed by a signal
  std::string output;  // stdout and stderr, interleaved as written
};

// Runs argv[0] with stdout+stderr going to a log file in `dir` and TMPDIR=dir (nvcc writes its
// intermediates there). The child leads its own process group so that a timeout kills nvcc's
// children (cicc, ptxas) too.
Expected<RunResult> runTool(const std::vector<std::string>& argv, const std::string& dir,
                            int timeoutSeconds) {
  const std::string logPath = dir + "/tool.log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);

  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> envStrings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "TMPDIR=", 7) != 0) envStrings.emplace_back(*e);
  }
  envStrings.push_back("TMPDIR=" + dir);
  std::vector<char*> env;
  for (std::string& e : envStrings) env.push_back(e.data());
  env.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return makeDiag(ErrorKind::ToolMissing,
                    "cannot run " + argv[0] + ": " + std::strerror(rc));
  }

  QGPU_TRY(exit, waitForChild(pid, std::chrono::seconds(timeoutSeconds)));
  RunResult result;
  result.timedOut = exit.timedOut;
  result.exitCode = exit.exitCode;
  result.signal = exit.signal;
  result.output = readLog(logPath);
  return result;
}

void replaceAll(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// Parses "123" at the start of `text`; advances past it. No std::regex: GCC 12 with ASan warns
// inside <regex> (maybe-uninitialized), which -Werror turns into a build failure.
std::optional<uint32_t> takeNumber(std::string_view& text) {
  size_t digits = 0;
  while (digits < text.size() && digits < 9 && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  uint32_t value = 0;
  for (size_t i = 0; i < digits; ++i) value = value * 10 + static_cast<uint32_t>(text[i] - '0');
  text.remove_prefix(digits);
  return value;
}

// "FILE:LINE:COL" (clang) -> line, column.
bool parseClangLocation(std::string_view where, uint32_t& line, uint32_t& column) {
  size_t lastColon = where.rfind(':');
  if (lastColon == std::string_view::npos || lastColon == 0) return false;
  size_t prevColon = where.rfind(':', lastColon - 1);
  if (prevColon == std::string_view::npos) return false;
  std::string_view l = where.substr(prevColon + 1, lastColon - prevColon - 1);
  std::string_view c = where.substr(lastColon + 1);
  auto ln = takeNumber(l);
  auto col = takeNumber(c);
  if (!ln || !col || !l.empty() || !c.empty()) return false;
  line = *ln;
  column = *col;
  return true;
}

// Finds the first error line of a compiler's output and its location. Formats:
//   clang   FILE:LINE:COL: error: MESSAGE        (also "fatal error:")
//   nvcc    FILE(LINE): error: MESSAGE           (also "catastrophic error:")
//   ptxas   ptxas FILE, line LINE; error|fatal   : MESSAGE   /   ptxas fatal   : MESSAGE
// The Diag's first message line is "<tool>: error: MESSAGE"; the full output follows.
std::optional<std::pair<SourceLoc, std::string>> parseErrorLine(std::string_view line,
                                                                const std::string& fileName) {
  for (std::string_view marker : {std::string_view(": error: "), std::string_view(": fatal error: ")}) {
    size_t at = line.find(marker);
    if (at == std::string_view::npos) continue;
    std::string_view where = line.substr(0, at);
    std::string message(line.substr(at + marker.size()));
    uint32_t ln = 0, col = 0;
    if (parseClangLocation(where, ln, col)) return std::make_pair(SourceLoc{fileName, ln, col}, message);
    // nvcc: FILE(LINE)
    if (!where.empty() && where.back() == ')') {
      size_t open = where.rfind('(');
      if (open != std::string_view::npos) {
        std::string_view digits = where.substr(open + 1, where.size() - open - 2);
        auto n = takeNumber(digits);
        if (n && digits.empty()) return std::make_pair(SourceLoc{fileName, *n, 0}, message);
      }
    }
  }
  if (size_t at = line.find("): catastrophic error: "); at != std::string_view::npos) {
    size_t open = line.rfind('(', at);
    std::string_view digits =
        open == std::string_view::npos ? std::string_view() : line.substr(open + 1, at - open - 1);
    auto n = takeNumber(digits);
    std::string message(line.substr(at + 23));
    return std::make_pair(SourceLoc{fileName, n && digits.empty() ? *n : 0, 0}, message);
  }
  if (line.rfind("ptxas ", 0) == 0) {
    std::string_view rest = line.substr(6);
    uint32_t ln = 0;
    if (size_t at = rest.find(", line "); at != std::string_view::npos) {
      std::string_view after = rest.substr(at + 7);
      if (auto n = takeNumber(after); n && after.rfind("; ", 0) == 0) {
        ln = *n;
        rest = after.substr(2);
      }
    }
    bool isError = rest.rfind("error", 0) == 0 || rest.rfind("fatal", 0) == 0;
    size_t colon = rest.find(": ");
    if (isError && colon != std::string_view::npos) {
      return std::make_pair(SourceLoc{fileName, ln, 0}, std::string(rest.substr(colon + 2)));
    }
  }
  return std::nullopt;
}

Diag compileError(const std::string& tool, const std::string& output, const RunResult& run,
                  const std::string& fileName) {
  std::stringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (auto parsed = parseErrorLine(line, fileName)) {
      return makeDiag(ErrorKind::CompileFailed, tool + ": error: " + parsed->second + "\n" + output,
                      parsed->first);
    }
  }
  std::string how = run.signal != 0 ? "was killed by signal " + std::to_string(run.signal)
                                    : "exited with status " + std::to_string(run.exitCode);
  return makeDiag(ErrorKind::CompileFailed, tool + " " + how + "\n" + output, {fileName});
}

// The name the source gets inside the temp directory: the caller's base name when it is a plain
// .cu name (so tool messages mention it), else kernel.cu.
std::string tempSourceName(const std::string& fileName) {
  std::string base = fs::path(fileName).filename().string();
  bool plain = base.size() > 3 && base.size() < 100 && base.ends_with(".cu") &&
               base.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789._-") == std::string::npos &&
               base[0] != '-' && base != "out.cu";
  return plain ? base : "kernel.cu";
}

std::string dialectHeaderPath(const CompileOptions& options) {
  if (!options.dialectHeader.empty()) return options.dialectHeader;
  if (const char* env = std::getenv("QGPU_CUDA_HEADER"); env != nullptr && *env != '\0') return env;
  return std::string(QGPU_SOURCE_DIR) + "/kernels/qgpu_cuda.h";
}

}  // namespace

const char* compilerName(Compiler compiler) {
  switch (compiler) {
    case Compiler::Clang: return "clang";
    case Compiler::Nvcc: return "nvcc";
  }
  return "unknown";
}

Expected<std::string> toolPath(Compiler compiler) {
  switch (compiler) {
    case Compiler::Clang:
      return resolveTool("clang-14", "QGPU_CLANG", {"clang-14", "/usr/lib/llvm-14/bin/clang"});
    case Compiler::Nvcc:
      return resolveTool("nvcc", "QGPU_NVCC", {"/usr/local/cuda/bin/nvcc", "nvcc"});
  }
  return makeDiag(ErrorKind::Usage, "unknown compiler");
}

Expected<std::string> ptxasPath() {
  return resolveTool("ptxas", "QGPU_PTXAS", {"/usr/local/cuda/bin/ptxas", "ptxas"});
}

bool toolAvailable(Compiler compiler) { return toolPath(compiler).ok(); }
bool ptxasAvailable() { return ptxasPath().ok(); }

namespace {

// The compile cache ($QGPU_COMPILE_CACHE, see compile.h): one file per key, <digest>.ptx. The key
// is everything the tool's output can depend on — the tool binary (path, size, modification
// time), the options, the dialect header and the clang path's include directory (their
// contents) and the source. Only successful compiles are stored, each written atomically, so a
// reader sees a whole PTX file or none.
std::string fileIdentity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path + ":missing";
  return path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

std::string directoryContents(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& file : files) {
    auto content = readInputFile(file.string(), kMaxPtxBytes, "header");
    text += file.string() + "\n" + (content.ok() ? *content : "<unreadable>") + "\n";
  }
  return text;
}

std::optional<std::string> cachePath(std::string_view cudaSource, Compiler compiler,
                                     const CompileOptions& options, const std::string& tool) {
  const char* dir = std::getenv("QGPU_COMPILE_CACHE");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  std::string key = "qgpu compile cache v1\n" + std::string(compilerName(compiler)) + "\n" +
                    fileIdentity(tool) + "\n" + options.arch + "\n" + options.optLevel + "\n" +
                    options.fileName + "\n" + std::to_string(options.timeoutSeconds) + "\n";
  if (compiler == Compiler::Clang) {
    std::string header = dialectHeaderPath(options);
    auto content = readInputFile(header, kMaxPtxBytes, "dialect header");
    if (!content.ok()) return std::nullopt;  // the compile reports the missing header
    key += header + "\n" + *content + "\n" +
           directoryContents(fs::path(header).parent_path() / "include");
  }
  uint64_t hash = fnv1a64(cudaSource, fnv1a64(key));
  char name[40];
  std::snprintf(name, sizeof name, "%016llx.ptx", static_cast<unsigned long long>(hash));
  return std::string(dir) + "/" + name;
}

// An entry is "// qgpu compile cache: <digest of the PTX>\n" + the PTX. One whose digest does not
// match (a torn or edited file) is a miss, and the compile that follows replaces it.
constexpr std::string_view kCacheMagic = "// qgpu compile cache: ";

std::optional<std::string> readCacheEntry(const std::string& path) {
  auto entry = readInputFile(path, kMaxPtxBytes + 128, "cached PTX");
  if (!entry.ok() || !entry->starts_with(kCacheMagic)) return std::nullopt;
  size_t newline = entry->find('\n');
  if (newline == std::string::npos) return std::nullopt;
  std::string digest = entry->substr(kCacheMagic.size(), newline - kCacheMagic.size());
  std::string ptx = entry->substr(newline + 1);
  if (ptx.empty() || digest != digestString(fnv1a64(ptx))) return std::nullopt;
  return ptx;
}

Expected<std::string> compileUncached(std::string_view cudaSource, Compiler compiler,
                                      const CompileOptions& options, const std::string& tool) {
  QGPU_TRY(dir, TempDir::create());
  const std::string source = dir.path() + "/" + tempSourceName(options.fileName);
  const std::string ptx = dir.path() + "/out.ptx";
  QGPU_CHECK(writeFile(source, cudaSource));

  std::vector<std::string> argv;
  if (compiler == Compiler::Clang) {
    std::string header = dialectHeaderPath(options);
    if (!fs::exists(header)) {
      return makeDiag(ErrorKind::Io, "qgpu CUDA dialect header not found: " + header +
                                         " (set $QGPU_CUDA_HEADER)");
    }
    argv = {tool, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=" + options.arch,
            "-Xclang", "-target-feature", "-Xclang", "+ptx64", "-nocudainc", "-nocudalib",
            "-Wno-unknown-cuda-version", options.optLevel, "-S",
            // kernels/include (next to the dialect header's kernels/): the clang path's own
            // <cooperative_groups.h>, found before any system copy.
            "-I", (fs::path(header).parent_path() / "include").string(), "-include", header, "-o",
            ptx, source};
  } else {
    argv = {tool, "-ptx", "-arch=" + options.arch, "-O3", source, "-o", ptx};
  }
  QGPU_TRY(run, runTool(argv, dir.path(), options.timeoutSeconds));
  std::string output = run.output;
  replaceAll(output, source, options.fileName);
  if (run.timedOut) {
    return makeDiag(ErrorKind::CompileFailed,
                    std::string(compilerName(compiler)) + " timed out after " +
                        std::to_string(options.timeoutSeconds) + " s\n" + output,
                    {options.fileName});
  }
  if (run.exitCode != 0) return compileError(compilerName(compiler), output, run, options.fileName);
  struct stat st {};
  if (::stat(ptx.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<unsigned long long>(st.st_size) > kMaxPtxBytes)
    return makeDiag(ErrorKind::PtxUnsupported,
                    std::string(compilerName(compiler)) + " wrote " + std::to_string(st.st_size) +
                        " bytes of PTX; the front end reads at most " + std::to_string(kMaxPtxBytes),
                    {options.fileName});
  auto text = readInputFile(ptx, kMaxPtxBytes, "PTX output");
  if (!text.ok() || text->empty()) {
    return makeDiag(ErrorKind::CompileFailed,
                    std::string(compilerName(compiler)) + " succeeded but wrote no PTX\n" + output,
                    {options.fileName});
  }
  return std::move(text).value();
}

}  // namespace

Expected<std::string> compileToPtx(std::string_view cudaSource, Compiler compiler,
                                   const CompileOptions& options) {
  QGPU_TRY(tool, toolPath(compiler));
  std::optional<std::string> cached = cachePath(cudaSource, compiler, options, tool);
  if (cached && ::access(cached->c_str(), R_OK) == 0) {
    if (auto ptx = readCacheEntry(*cached)) return std::move(*ptx);
  }
  QGPU_TRY(ptx, compileUncached(cudaSource, compiler, options, tool));
  if (cached) {
    std::error_code ec;
    fs::create_directories(fs::path(*cached).parent_path(), ec);
    // A cache that cannot be written is only slower.
    (void)writeFileAtomic(*cached, std::string(kCacheMagic) + digestString(fnv1a64(ptx)) + "\n" + ptx);
  }
  return ptx;
}

Status ptxasCheck(std::string_view ptx, const std::string& arch) {
  QGPU_TRY(tool, ptxasPath());
  QGPU_TRY(dir, TempDir::create());
  const std::string input = dir.path() + "/input.ptx";
  QGPU_CHECK(writeFile(input, ptx));
  std::vector<std::string> argv = {tool, "-arch=" + arch, input, "-o", dir.path() + "/out.cubin"};
  QGPU_TRY(run, runTool(argv, dir.path(), 60));
  std::string output = run.output;
  replaceAll(output, input, "<ptx>");
  if (run.timedOut) return makeDiag(ErrorKind::CompileFailed, "ptxas timed out\n" + output);
  if (run.exitCode != 0) return compileError("ptxas", output, run, "<ptx>");
  return Ok{};
}

}  // namespace qgpu::host
