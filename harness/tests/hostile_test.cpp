// qgpu/harness/tests/hostile_test.cpp — the standing hostile-input suite (corpus/hostile/).
//
// Each `corpus/hostile/*.json` file is one case: a `qgpu` command line on malformed, extreme or
// adversarial input, the exit code and error kind it must end with, and bounds on its wall time
// and peak memory (corpus/hostile/README.md has the format). This test runs every case as a child
// process of the `qgpu` binary built beside it, in a fresh temporary directory, and checks all of
// them. Under ASan+UBSan (ci/sanitize.sh) the same cases run against the sanitized binary, with
// the bounds scaled for the sanitizers' cost.
//
// A case the build cannot run (the `model` subcommand without LibTorch, a compiler that is not
// installed) is skipped with its reason, never passed.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

#if defined(__SANITIZE_ADDRESS__)
// ASan's shadow memory and UBSan's checks: a sanitized qgpu is slower and larger.
constexpr double kTimeScale = 4.0;
constexpr double kMemoryScale = 4.0;
constexpr long kMemorySlackMb = 512;
#else
constexpr double kTimeScale = 1.0;
constexpr double kMemoryScale = 1.0;
constexpr long kMemorySlackMb = 0;
#endif

// The classes of issue 7 (and one per input parser): each must have at least one case, so that a
// class cannot silently drop out of the suite.
const std::set<std::string> kRequiredClasses = {
    // §1 never a wrong "match"
    "64bit-address", "ptx-type", "outside-write", "expr-wrap", "non-finite-model",
    // §2 never a crash, a hang or unbounded memory
    "expr-size", "lowering-size", "input-caps", "max-steps", "json-output",
    // §3 one contract for output and exit codes
    "json-error", "usage", "model-validation", "safetensors", "json-syntax", "transformers-parity",
    // §4 one outcome model
    "unbuilt-case", "verdict",
    // every input parser
    "kernel-file", "ptx-syntax", "trace-tokens",
    // issue 10: run reports (merge, --balance) and shard selection
    "report-file", "shard-spec",
    // issue 10: recorded runs (`qgpu audit`) and benchmark files (`qgpu bench report`)
    "audit-run", "bench-file",
    // issue 9: `qgpu fuzz` generator names and policies
    "fuzz-policy",
    // issue 9: `qgpu reduce` inputs and predicates (missing, empty, not found, hanging)
    "reduce-input",
    // issue 8: a program the division expansion (--expand-division) cannot fit
    "division-expansion",
    // issue 11: a misaligned .v2/.v4 access faults as on a GPU, never a "match"
    "vector-alignment",
    // issue 11: a construct qgpu does not take (a used module .global variable) is refused by name
    "ptx-unsupported",
    // issue 8: `qgpu circuit plan --shape`: an unknown shape, a shape the circuit does not fit
    "circuit-shape",
};

struct ChildResult {
  int exitCode = -1;     // -1 when killed by a signal
  int signal = 0;
  double seconds = 0;
  long maxRssMb = 0;
  bool timedOut = false;
  std::string out, err;
};

std::string readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string substitute(std::string text, const std::string& dir) {
  const std::pair<std::string, std::string> vars[] = {{"{dir}", dir}, {"{root}", QGPU_SOURCE_DIR}};
  for (const auto& [name, value] : vars)
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + value.size()))
      text.replace(at, name.size(), value);
  return text;
}

// Runs `qgpu args...` in `dir` with stdin from /dev/null, killing it after `limitSeconds`.
ChildResult runQgpu(const std::vector<std::string>& args, const fs::path& dir, double limitSeconds) {
  ChildResult result;
  fs::path outPath = dir / ".stdout", errPath = dir / ".stderr";
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int in = open("/dev/null", O_RDONLY);
    int out = open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0 || chdir(dir.c_str()) != 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv;
    std::string bin = QGPU_BIN;
    argv.push_back(bin.data());
    std::vector<std::string> owned = args;
    for (std::string& arg : owned) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  for (;;) {
    pid_t done = wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > limitSeconds && !result.timedOut) {
      result.timedOut = true;
      kill(pid, SIGKILL);
    }
    usleep(2000);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.maxRssMb = usage.ru_maxrss / 1024;
  if (WIFEXITED(status)) result.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = readAll(outPath);
  result.err = readAll(errPath);
  return result;
}

std::vector<std::string> stringsOf(const json& array, const std::string& dir) {
  std::vector<std::string> out;
  for (const json& item : array) out.push_back(substitute(item.get<std::string>(), dir));
  return out;
}

std::string repeated(const json& step) {
  std::string unit = step.value("text", "");
  size_t times = step.value("repeat", size_t{1});
  std::string text = step.value("prefix", "");
  text.reserve(text.size() + unit.size() * times);
  for (size_t i = 0; i < times; ++i) text += unit;
  return text + step.value("suffix", "");
}

// Carries out one setup step in `dir`; returns an error message, or "" on success.
std::string runSetup(const json& step, const fs::path& dir) {
  auto path = [&](const char* key) { return dir / substitute(step.at(key).get<std::string>(), dir.string()); };
  if (step.contains("mkdir")) {
    fs::create_directories(path("mkdir"));
  } else if (step.contains("fifo")) {
    if (mkfifo(path("fifo").c_str(), 0644) != 0) return "mkfifo failed";
  } else if (step.contains("sparse")) {
    int fd = open(path("sparse").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, step.at("bytes").get<off_t>()) != 0) return "sparse file failed";
    close(fd);
  } else if (step.contains("remove")) {
    fs::remove(path("remove"));
  } else if (step.contains("extend")) {
    // Grows a file to `bytes` without writing them (the new bytes read as zeros, no disk used).
    if (truncate(path("extend").c_str(), step.at("bytes").get<off_t>()) != 0) return "extend failed";
  } else if (step.contains("symlink")) {
    fs::create_symlink(substitute(step.at("to").get<std::string>(), dir.string()), path("symlink"));
  } else if (step.contains("write") || step.contains("append")) {
    bool append = step.contains("append");
    std::ofstream out(path(append ? "append" : "write"),
                      std::ios::binary | (append ? std::ios::app : std::ios::trunc));
    out << repeated(step);
    if (!out) return "write failed";
  } else if (step.contains("replace")) {
    fs::path file = path("replace");
    std::string text = readAll(file);
    std::string from = step.at("from").get<std::string>();
    size_t at = text.find(from);
    if (at == std::string::npos) return "replace: '" + from + "' not found in " + file.string();
    text.replace(at, from.size(), step.at("to").get<std::string>());
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  } else if (step.contains("qgpu")) {
    ChildResult prep = runQgpu(stringsOf(step.at("qgpu"), dir.string()), dir, 120 * kTimeScale);
    if (prep.exitCode != 0) return "setup command failed (exit " + std::to_string(prep.exitCode) + "): " + prep.err;
  } else {
    return "unknown setup step " + step.dump();
  }
  return "";
}

std::vector<fs::path> caseFiles() {
  std::vector<fs::path> files;
  fs::path dir = fs::path(QGPU_SOURCE_DIR) / "corpus" / "hostile";
  if (fs::is_directory(dir))
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

bool qgpuHasSubcommand(const std::string& name) {
  static std::string help = [] {
    fs::path dir = fs::temp_directory_path();
    return runQgpu({"--help"}, dir, 30).out;
  }();
  return help.find("\n  " + name) != std::string::npos;
}

bool toolInstalled(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1 || test -x /usr/local/cuda/bin/" +
                      tool).c_str()) == 0;
}

// Why this build cannot run the case, or "".
std::string unmetNeed(const json& spec) {
  const json needs = spec.value("needs", json::array());
  for (const json& need : needs) {
    std::string name = need.get<std::string>();
    if (name == "torch" && !qgpuHasSubcommand("model")) return "qgpu built without LibTorch";
    if ((name == "clang-14" || name == "nvcc" || name == "ptxas") && !toolInstalled(name))
      return name + " not installed";
  }
  return "";
}

// The error kind the run reported: "[Kind]" in the text on stderr, or error.kind in JSON stdout.
bool reportsKind(const ChildResult& run, const std::string& kind) {
  if (run.err.find("[" + kind + "]") != std::string::npos) return true;
  json parsed = json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  return parsed.is_object() && parsed.contains("error") && parsed["error"].is_object() &&
         parsed["error"].value("kind", "") == kind;
}

std::string shown(const std::string& text) {
  constexpr size_t kMax = 2000;
  return text.size() <= kMax ? text : text.substr(0, kMax) + "...(" + std::to_string(text.size()) + " bytes)";
}

class Hostile : public testing::TestWithParam<fs::path> {};

TEST_P(Hostile, EndsAsSpecifiedWithinBounds) {
  json spec = json::parse(readAll(GetParam()));
  if (std::string why = unmetNeed(spec); !why.empty()) GTEST_SKIP() << why;

  fs::path dir = fs::temp_directory_path() / ("qgpu-hostile-" + GetParam().stem().string() + "-" +
                                              std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const json files = spec.value("files", json::object());
  for (const auto& [name, text] : files.items()) {
    fs::create_directories((dir / name).parent_path());
    std::ofstream(dir / name, std::ios::binary) << text.get<std::string>();
  }
  const json setup = spec.value("setup", json::array());
  for (const json& step : setup) {
    std::string error = runSetup(step, dir);
    ASSERT_EQ(error, "") << "setup step " << step.dump();
  }

  double maxSeconds = spec.value("max_seconds", 10.0) * kTimeScale;
  long maxRssMb = static_cast<long>(spec.value("max_rss_mb", 1024.0) * kMemoryScale) + kMemorySlackMb;
  std::vector<std::string> args = stringsOf(spec.at("args"), dir.string());
  ChildResult run = runQgpu(args, dir, 3 * maxSeconds + 5);
  std::string context = "case " + GetParam().filename().string() + " (" + spec.value("what", "") +
                        ")\nstdout: " + shown(run.out) + "\nstderr: " + shown(run.err);

  EXPECT_FALSE(run.timedOut) << "killed after " << run.seconds << " s\n" << context;
  EXPECT_EQ(run.signal, 0) << "died of signal " << run.signal << "\n" << context;
  EXPECT_EQ(run.exitCode, spec.at("exit").get<int>()) << context;
  if (spec.contains("kind")) {
    EXPECT_TRUE(reportsKind(run, spec["kind"].get<std::string>()))
        << "expected error kind " << spec["kind"] << "\n" << context;
  }
  if (spec.contains("stdout_contains")) {
    EXPECT_NE(run.out.find(spec["stdout_contains"].get<std::string>()), std::string::npos) << context;
  }
  if (spec.contains("stderr_contains")) {
    EXPECT_NE(run.err.find(spec["stderr_contains"].get<std::string>()), std::string::npos) << context;
  }
  EXPECT_LE(run.seconds, maxSeconds) << context;
  EXPECT_LE(run.maxRssMb, maxRssMb) << context;
  // An unexpected success is as wrong as a crash: a case states the one outcome it must have.
  if (!HasFailure()) fs::remove_all(dir);
}

std::string caseName(const testing::TestParamInfo<fs::path>& info) {
  std::string name = info.param.stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Corpus, Hostile, testing::ValuesIn(caseFiles()), caseName);

TEST(HostileSuite, EveryCaseFileIsWellFormed) {
  const std::set<std::string> keys = {"class", "what",  "args",        "files",
                                      "setup", "needs", "exit",        "kind",
                                      "stdout_contains", "stderr_contains", "max_seconds",
                                      "max_rss_mb"};
  for (const fs::path& file : caseFiles()) {
    json spec = json::parse(readAll(file), nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(spec.is_object()) << file << " is not a JSON object";
    for (const auto& [key, value] : spec.items()) EXPECT_TRUE(keys.count(key)) << file << ": unknown key " << key;
    EXPECT_TRUE(spec.contains("class") && spec["class"].is_string()) << file;
    EXPECT_TRUE(spec.contains("what") && spec["what"].is_string()) << file;
    EXPECT_TRUE(spec.contains("args") && spec["args"].is_array()) << file;
    EXPECT_TRUE(spec.contains("exit") && spec["exit"].is_number_integer()) << file;
    // A case of the `model` subcommand must say it needs LibTorch, or a build without it fails
    // the case instead of skipping it.
    std::vector<std::string> args;
    for (const json& a : spec.value("args", json::array()))
      if (a.is_string() && a.get<std::string>() != "--json") args.push_back(a.get<std::string>());
    const json needs = spec.value("needs", json::array());
    if (!args.empty() && args[0] == "model") {
      EXPECT_NE(std::find(needs.begin(), needs.end(), "torch"), needs.end())
          << file << ": a model case needs [\"torch\"]";
    }
  }
}

TEST(HostileSuite, EveryClassHasACase) {
  std::set<std::string> seen;
  for (const fs::path& file : caseFiles()) {
    json spec = json::parse(readAll(file), nullptr, false);
    if (spec.is_object() && spec.contains("class")) seen.insert(spec["class"].get<std::string>());
  }
  for (const std::string& required : kRequiredClasses)
    EXPECT_TRUE(seen.count(required)) << "no hostile case of class " << required;
  for (const std::string& cls : seen)
    EXPECT_TRUE(kRequiredClasses.count(cls)) << "unknown class " << cls << " (add it to kRequiredClasses)";
}

}  // namespace
