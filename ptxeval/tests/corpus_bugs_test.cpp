// Runs the PTX entries of the regression corpus, corpus/bugs/*/case.ptx (format:
// corpus/bugs/README.md): the PTX evaluator must give the hand-worked `expect`; lowering + the
// interpreter must give it too when the bug is fixed, and must still fail while it is open (an
// unexpected pass is a failure); an entry with `lowering: unsupported` (an evaluator bug on PTX
// that lowering refuses) requires lowering's refusal to stay PtxUnsupported. The CUDA entries (kernel.cu) run through `qgpu run` with their
// compilers (corpus/bugs/run.sh, corpus_bugs_cli_test); every entry is one or the other.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "common/file.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"
#include "ptxeval/eval.h"

namespace qgpu::ptxeval {
namespace {

namespace fs = std::filesystem;

std::map<std::string, std::string> headerOf(const std::string& text) {
  std::map<std::string, std::string> h;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line) && line.rfind("// ", 0) == 0) {
    size_t colon = line.find(": ");
    if (colon != std::string::npos) h[line.substr(3, colon - 3)] = line.substr(colon + 2);
  }
  return h;
}

std::vector<uint64_t> numbers(const std::string& s) {
  std::vector<uint64_t> v;
  std::istringstream in(s);
  int64_t x;
  while (in >> x) v.push_back(static_cast<uint64_t>(x));
  return v;
}

// What lowering + the interpreter give: the final memory, or why there is none.
Expected<std::array<uint32_t, kGlobalWords>> lowered(const ptx::Module& m, const Launch& l) {
  lower::LowerOptions lo;
  lo.verifyPasses = true;
  for (uint64_t p : l.params) lo.params.push_back(static_cast<uint32_t>(p));
  QGPU_TRY(program, lower::lower(m, lo));
  machine::Launch ml;
  ml.gridX = l.gridX;
  ml.blockX = l.blockX;
  ml.global = l.global;
  QGPU_CHECK(machine::verify(program, ml));
  oracle::RunOptions ro;
  ro.recordTrace = false;
  QGPU_TRY(run, oracle::run(program, ml, ro));
  if (run.status != oracle::RunStatus::Finished) return run.fault;
  return run.global;
}

TEST(CorpusBugs, EveryCaseHasItsExpectedResultAndItsStatus) {
  fs::path dir = fs::path(QGPU_SOURCE_DIR) / "corpus" / "bugs";
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory()) continue;
    fs::path file = entry.path() / "case.ptx";
    bool cuda = fs::exists(entry.path() / "kernel.cu");
    EXPECT_NE(cuda, fs::exists(file)) << entry.path() << ": an entry holds case.ptx or kernel.cu, exactly one";
    if (cuda) continue;
    auto text = readInputFile(file.string(), size_t{1} << 20, "bug case");
    ASSERT_TRUE(text.ok()) << text.error().str();
    auto h = headerOf(*text);
    std::string name = entry.path().filename().string();
    EXPECT_EQ(h["qgpu-bug"], name);
    for (const char* key : {"wrong", "found-by", "status", "launch", "params", "expect"})
      EXPECT_TRUE(h.count(key)) << name << ": no '" << key << "' line";
    auto m = ptx::parse(*text, file.string());
    ASSERT_TRUE(m.ok()) << m.error().str();
    Launch l;
    ASSERT_EQ(std::sscanf(h["launch"].c_str(), "grid=%u block=%u", &l.gridX, &l.blockX), 2) << name;
    l.params = numbers(h["params"]);
    std::vector<uint64_t> g = numbers(h["global"]), want = numbers(h["expect"]);
    for (size_t i = 0; i < g.size() && i < kGlobalWords; ++i) l.global[i] = static_cast<uint32_t>(g[i]);
    std::array<uint32_t, kGlobalWords> expect{};
    for (size_t i = 0; i < want.size() && i < kGlobalWords; ++i) expect[i] = static_cast<uint32_t>(want[i]);

    auto ev = evaluate(*m, l);
    ASSERT_TRUE(ev.ok()) << name << ": " << ev.error().str();
    EXPECT_EQ(ev->status, EvalStatus::Finished) << name << ": " << ev->fault.str();
    EXPECT_EQ(ev->global, expect) << name << ": the PTX evaluator disagrees with the hand-worked result";

    auto low = lowered(*m, l);
    bool agrees = low.ok() && *low == expect;
    if (h.count("lowering")) {
      // A bug of the evaluator on PTX that lowering legitimately refuses (a typed gap, lit's
      // UNSUPPORTED): the refusal must stay typed; once lowering handles it, its result must be
      // the expectation and the key must go (an unexpected pass is a failure).
      EXPECT_EQ(h["lowering"], "unsupported") << name;
      EXPECT_FALSE(low.ok()) << name << ": lowering now handles it ("
                             << (agrees ? "and agrees: drop the 'lowering: unsupported' line" : "and disagrees") << ")";
      if (!low.ok()) {
        EXPECT_EQ(low.error().kind, ErrorKind::PtxUnsupported) << name << ": " << low.error().str();
      }
    } else if (h["status"].rfind("fixed", 0) == 0) {
      EXPECT_TRUE(agrees) << name << " (fixed) fails again: "
                          << (low.ok() ? std::string("final memory differs") : low.error().str());
    } else {
      EXPECT_EQ(h["status"], "open") << name;
      EXPECT_FALSE(agrees) << name << " is open but lowering + interpreter now give the expected result: "
                                      "mark it 'fixed <commit>'";
      if (!low.ok()) std::printf("%s (open): %s\n", name.c_str(), low.error().str().c_str());
    }
    ++cases;
  }
  EXPECT_GE(cases, 1);
}

}  // namespace
}  // namespace qgpu::ptxeval
