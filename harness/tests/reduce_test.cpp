// qgpu/harness/tests/reduce_test.cpp — the reducer (harness/reduce.h) and the bisect step's table
// (harness/bisect.h), with shell predicates that stand in for "qgpu still shows the bug": a
// planted bug in a generated ~100-line kernel shrinks to a few lines; a nondeterministic
// predicate, one not found and an empty file are refused with typed errors; a timeout is not
// interesting; the budget bounds the calls; the UB guards of generated CUDA survive reduction.
// The predicates and their expected outcomes are written here by hand, not derived from the
// reducer.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "gen/cuda_gen.h"
#include "harness/bisect.h"
#include "harness/reduce.h"

namespace qgpu::reduce {
namespace {

namespace fs = std::filesystem;

// The planted bug: "the file still multiplies two loads" (in[...] * in[...]) and is still a
// plausible kernel (its braces balance, the __global__ line is there).
const char* kMulOfLoads =
    "grep -Eq 'in\\[[^]]*\\] \\* in\\[' \"$QGPU_REDUCE_FILE\" && grep -q __global__ "
    "\"$QGPU_REDUCE_FILE\" && "
    "awk '{o+=gsub(/[{]/,\"\");c+=gsub(/[}]/,\"\")} END{exit o!=c}' \"$QGPU_REDUCE_FILE\"";

int countLines(const std::string& text) {
  return static_cast<int>(splitLines(text).size());
}
int bodyLines(const std::string& text) {
  int n = 0;
  for (const std::string& l : splitLines(text))
    if (l.rfind("//", 0) != 0 && !l.empty()) ++n;
  return n;
}

ReduceOptions optionsFor(const std::string& predicate, const std::string& file = "k.cu") {
  ReduceOptions o;
  o.predicate.command = predicate;
  o.predicate.fileName = file;
  o.predicate.timeoutSeconds = 20;
  return o;
}

// The first generated kernel of 90..140 lines that multiplies two loads (deterministic: the
// generator is a pure function of policy and seed).
gen::CudaCase plantedKernel() {
  gen::CudaPolicy p;
  p.maxTopStmts = 12;
  p.maxExprDepth = 3;
  p.maxVars = 5;
  p.maxHelpers = 2;
  p.maxDepth = 3;
  p.maxBlockStmts = 3;
  for (uint64_t seed = 1; seed < 30000; ++seed) {
    auto c = gen::generateCuda(p, seed, "k");
    if (!c) continue;
    int n = countLines(c->text);
    if (n < 90 || n > 140) continue;
    const std::string& t = c->text;
    for (size_t at = t.find("in["); at != std::string::npos; at = t.find("in[", at + 1)) {
      size_t close = t.find(']', at);
      if (close != std::string::npos && t.compare(close, 7, "] * in[") == 0) return *c;
    }
  }
  ADD_FAILURE() << "no generated kernel with a multiply of two loads";
  return {};
}

TEST(Reduce, PlantedBugInAGeneratedKernelShrinksToAFewLines) {
  gen::CudaCase c = plantedKernel();
  ASSERT_FALSE(c.text.empty());
  int before = countLines(c.text);
  EXPECT_GE(before, 90);
  auto r = reduce(c.text, FileKind::Cuda, optionsFor(kMulOfLoads));
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->linesBefore, before);
  EXPECT_FALSE(r->budgetExhausted);
  // What is left: the __global__ line, the statement with the multiply, the closing brace (and
  // perhaps one declaration it reads); the kernel file's header lines are kept.
  EXPECT_LE(bodyLines(r->text), 5) << r->text;
  EXPECT_LT(r->linesAfter, before / 4) << r->text;
  // Unused parameters left the signature and the header together (the file stays consistent).
  EXPECT_EQ(r->text.find("// param: acc"), std::string::npos) << r->text;
  EXPECT_EQ(r->text.find("unsigned* acc"), std::string::npos) << r->text;
  EXPECT_NE(r->text.find("// param: in in u32[16]"), std::string::npos) << r->text;
  // The result is itself interesting (the reducer never keeps a candidate that was not).
  PredicateOptions po = optionsFor(kMulOfLoads).predicate;
  auto again = runPredicate(r->text, po);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->interesting);
  std::printf("planted bug: %d -> %d lines (%d body lines), %d predicate calls, %d rounds\n",
              r->linesBefore, r->linesAfter, bodyLines(r->text), r->predicateCalls, r->rounds);
}

// A predicate that is interesting on every other call (a counter outside the scratch dir).
TEST(Reduce, RefusesANondeterministicPredicate) {
  fs::path counter =
      fs::temp_directory_path() / ("qgpu_reduce_counter_" + std::to_string(::getpid()));
  fs::remove(counter);
  std::string pred = "n=$(cat " + counter.string() + " 2>/dev/null || echo 0); echo $((n+1)) > " +
                     counter.string() + "; test $((n % 2)) -eq 0";
  auto r = reduce("__global__ void k() {\n  int a = 1;\n}\n", FileKind::Cuda, optionsFor(pred));
  fs::remove(counter);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  EXPECT_NE(r.error().message.find("nondeterministic"), std::string::npos) << r.error().str();
}

// The twin: the same file with a deterministic predicate is reduced.
TEST(Reduce, AcceptsADeterministicPredicate) {
  auto r = reduce("__global__ void k() {\n  int a = 1;\n  int b = 2;\n}\n", FileKind::Cuda,
                  optionsFor("grep -q 'b = 2' \"$QGPU_REDUCE_FILE\""));
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->text, "  int b = 2;\n");
}

TEST(Reduce, RefusesAPredicateNotInterestingOnTheOriginal) {
  auto r = reduce("__global__ void k() {\n}\n", FileKind::Cuda, optionsFor("exit 1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  EXPECT_NE(r.error().message.find("not interesting on the original"), std::string::npos)
      << r.error().str();
}

TEST(Reduce, RefusesAPredicateThatDoesNotExist) {
  auto r =
      reduce("__global__ void k() {\n}\n", FileKind::Cuda, optionsFor("/no/such/predicate-xyz"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  EXPECT_NE(r.error().message.find("not found"), std::string::npos) << r.error().str();
}

TEST(Reduce, RefusesAnEmptyFile) {
  auto r = reduce("", FileKind::Ptx, optionsFor("true", "k.ptx"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Usage);
  auto blank = reduce("\n  \n", FileKind::Ptx, optionsFor("true", "k.ptx"));
  ASSERT_FALSE(blank.ok());
  EXPECT_EQ(blank.error().kind, ErrorKind::Usage);
}

TEST(Reduce, ATimeoutIsNotInteresting) {
  PredicateOptions po;
  po.command = "sleep 30";
  po.fileName = "k.cu";
  po.timeoutSeconds = 0.3;
  auto t0 = std::chrono::steady_clock::now();
  auto p = runPredicate("x\n", po);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_TRUE(p->timedOut);
  EXPECT_FALSE(p->interesting);
  EXPECT_LT(s, 5.0);
  // In a reduction: candidates under 4 lines make the predicate hang, so none of them is kept
  // although the rest of the predicate (the marker line) would hold.
  ReduceOptions o = optionsFor("[ $(wc -l < k.cu) -lt 4 ] && sleep 30; grep -q marker k.cu");
  o.predicate.timeoutSeconds = 0.5;
  auto r = reduce("a\nb\nmarker\nc\nd\ne\nf\n", FileKind::Cuda, o);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->linesAfter, 4) << r->text;
  EXPECT_NE(r->text.find("marker"), std::string::npos);
}

TEST(Reduce, ACrashOfThePredicateIsNotInteresting) {
  PredicateOptions po;
  po.command = "kill -SEGV $$";
  po.fileName = "k.ptx";
  auto p = runPredicate("x\n", po);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->signal, SIGSEGV);
  EXPECT_FALSE(p->interesting);
}

TEST(Reduce, TheBudgetBoundsThePredicateCalls) {
  std::string text;
  for (int i = 0; i < 64; ++i) text += "line" + std::to_string(i) + "\n";
  ReduceOptions o = optionsFor("grep -q line17 k.ptx && grep -q line40 k.ptx", "k.ptx");
  o.budget = 8;
  auto r = reduce(text, FileKind::Ptx, o);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->predicateCalls, 8);
  EXPECT_TRUE(r->budgetExhausted);
  EXPECT_NE(r->text.find("line17"), std::string::npos);
  EXPECT_NE(r->text.find("line40"), std::string::npos);
  // Unbounded, it reaches the two lines.
  o.budget = 2000;
  auto full = reduce(text, FileKind::Ptx, o);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->text, "line17\nline40\n");
  EXPECT_FALSE(full->budgetExhausted);
}

// Everything but the division is interesting to remove: the divisor's guard stays (never `/ 0u`),
// the mask `& 31u` and the subscripts are never rewritten.
TEST(Reduce, KeepsTheGeneratedKernelsUbGuards) {
  std::string k =
      "__global__ void k(const unsigned* in, unsigned* out) {\n"
      "  unsigned o = (threadIdx.x) * 2u;\n"
      "  unsigned v0 = (in[(v0 & 15u)] + 7u);\n"
      "  unsigned v1 = ((v0 + 3u) / ((v0 * 5u) | 1u));\n"
      "  unsigned v2 = (unsigned)((int)v1 % (int)((v0 & 255u) | 1u));\n"
      "  out[o] = (v1 << (v2 & 31u));\n"
      "}\n";
  auto r =
      reduce(k, FileKind::Cuda,
             optionsFor("grep -q ' / ' k.cu && grep -q ' % ' k.cu && grep -q '<< (v2 &' k.cu && "
                        "grep -q 'unsigned o = ' k.cu"));
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->text.find("/ 0u"), std::string::npos) << r->text;
  EXPECT_EQ(r->text.find("% 0u"), std::string::npos) << r->text;
  EXPECT_NE(r->text.find("/ 1u"), std::string::npos) << r->text;  // the divisor went to 1, not 0
  EXPECT_NE(r->text.find("& 31u)"), std::string::npos) << r->text;
  EXPECT_NE(r->text.find("out[o]"), std::string::npos) << r->text;
  EXPECT_NE(r->text.find("unsigned o = (threadIdx.x) * 2u;"), std::string::npos)
      << r->text;  // the slot
}

// The blocks pass: a wrapper's braces go and its body stays; of an if/else only the arm that
// matters stays. The predicate wants the two marker statements and balanced braces.
TEST(Reduce, UnwrapsBlocksAndKeepsOneArmOfAnIfElse) {
  std::string k =
      "__global__ void k(unsigned* out) {\n"
      "  if (threadIdx.x) {\n"
      "    out[0] = 1u;\n"
      "  } else {\n"
      "    out[1] = 2u;\n"
      "  }\n"
      "  for (unsigned i0 = 0; i0 < 3u; ++i0) {\n"
      "    out[2] = 3u;\n"
      "  }\n"
      "}\n";
  const std::string pred =
      "grep -q 'out\\[1\\] = 2u' k.cu && grep -q 'out\\[2\\] = 3u' k.cu && grep -q __global__ k.cu && "
      "awk '{o+=gsub(/[{]/,\"\");c+=gsub(/[}]/,\"\")} END{exit o!=c}' k.cu";
  auto r = reduce(k, FileKind::Cuda, optionsFor(pred));
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->text,
            "__global__ void k(unsigned* out) {\n"
            "    out[1] = 2u;\n"
            "    out[2] = 3u;\n"
            "}\n");
}

TEST(Reduce, SharedExchangesStayRaceFree) {
  std::string ok =
      "  __shared__ unsigned sh[4];\n"
      "  sh[threadIdx.x] = v0;\n"
      "  __syncthreads();\n"
      "  v1 = sh[(threadIdx.x + 1u) % 4u];\n"
      "  __syncthreads();\n"
      "  sh[threadIdx.x] = v1;\n";
  EXPECT_TRUE(sharedExchangesRaceFree(ok));
  // The failing twins: no barrier between the store and the read; no barrier between the read
  // and the next store; a read of a slot nobody stored.
  auto without = [&](const std::string& line) {
    std::string s = ok;
    s.erase(s.find(line), line.size());
    return s;
  };
  std::string noFirst = ok;
  noFirst.erase(noFirst.find("  __syncthreads();\n"), 19);
  EXPECT_FALSE(sharedExchangesRaceFree(noFirst));
  std::string noSecond = ok;
  noSecond.erase(noSecond.rfind("  __syncthreads();\n"), 19);
  EXPECT_FALSE(sharedExchangesRaceFree(noSecond));
  EXPECT_FALSE(sharedExchangesRaceFree(without("  sh[threadIdx.x] = v0;\n")));
  EXPECT_TRUE(sharedExchangesRaceFree("  v1 = v0;\n"));  // no shared memory at all
}

// PTX: the passes drop lines, operands and unused entry parameters; the header stays.
TEST(Reduce, ReducesPtxOperandsAndParameters) {
  std::string ptx =
      "// qgpu-bug: x\n"
      ".version 6.4\n"
      ".target sm_75\n"
      ".address_size 64\n"
      ".visible .entry k(\n"
      "\t.param .u64 k_param_0,\n"
      "\t.param .u32 k_param_1\n"
      ")\n"
      "{\n"
      "\t.reg .b32 \t%r<4>;\n"
      "\tadd.s32 \t%r1, %r2, 77;\n"
      "\tmul.lo.s32 \t%r3, %r1, %r2;\n"
      "\tret;\n"
      "}\n";
  auto r = reduce(
      ptx, FileKind::Ptx,
      optionsFor("grep -q 'mul.lo' k.ptx && grep -q '^{' k.ptx && grep -q '^)' k.ptx", "k.ptx"));
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_NE(r->text.find("// qgpu-bug: x\n.version 6.4\n.target sm_75\n.address_size 64\n"),
            std::string::npos)
      << r->text;
  EXPECT_NE(r->text.find("mul.lo.s32\t%r3, 0, 0;"), std::string::npos) << r->text;
  EXPECT_EQ(r->text.find("add.s32"), std::string::npos) << r->text;
}

}  // namespace
}  // namespace qgpu::reduce

namespace qgpu::bisect {
namespace {

// git bisect run's answers for every qgpu exit code (bisect.h's table, written out by hand).
TEST(Bisect, ClassifiesEveryQgpuExitCode) {
  EXPECT_EQ(classifyCase(0, 0, false, true).answer, Answer::Good);
  EXPECT_EQ(classifyCase(1, 0, false, true).answer, Answer::Bad);
  EXPECT_EQ(classifyCase(2, 0, false, true).answer, Answer::Skip);
  EXPECT_EQ(classifyCase(3, 0, false, true).answer, Answer::Bad);
  EXPECT_EQ(classifyCase(3, 0, false, false).answer, Answer::Skip);
  EXPECT_EQ(classifyCase(4, 0, false, true).answer, Answer::Skip);
  EXPECT_EQ(classifyCase(5, 0, false, true).answer, Answer::Skip);
  EXPECT_EQ(classifyCase(-1, 0, true, true).answer, Answer::Skip);   // timeout
  EXPECT_EQ(classifyCase(-1, 11, false, true).answer, Answer::Bad);  // a crash
  EXPECT_EQ(classifyCase(-1, 11, false, false).answer, Answer::Skip);
  EXPECT_EQ(static_cast<int>(Answer::Skip), 125);
}

TEST(Bisect, ABuildThatFailsIsSkipped) {
  BisectOptions o;
  o.buildCommand = "exit 2";
  o.caseCommand = {"true"};
  auto s = bisectStep(o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->answer, Answer::Skip);
  EXPECT_EQ(s->reason, "build failed (exit 2)");
  o.buildCommand = "true";  // the twin: the same case after a good build is good
  s = bisectStep(o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->answer, Answer::Good);
}

TEST(Bisect, ACaseThatHangsIsSkipped) {
  BisectOptions o;
  o.buildCommand = "true";
  o.caseCommand = {"sleep", "30"};
  o.caseTimeoutSeconds = 0.3;
  auto s = bisectStep(o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->answer, Answer::Skip);
  EXPECT_EQ(s->reason, "case timed out (inconclusive)");
}

}  // namespace
}  // namespace qgpu::bisect
