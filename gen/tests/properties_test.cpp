// Tests for gen/properties.cpp: every property holds for the generated cases (fixed seeds with
// GoogleTest, random seeds and policies with rapidcheck), and every check fails on an artefact
// tampered in the way it exists to catch (the failing twins): a changed value token, a dropped
// memory run, a swapped pair of steps, a wrong final memory word, a changed prompt token, a
// second run that differs, a run that hit the step limit.
#include "gen/properties.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <vector>

#ifdef QGPU_HAVE_RAPIDCHECK
#include <rapidcheck/gtest.h>
#endif

namespace qgpu::gen {
namespace {

using namespace machine;
namespace tk = trace;
using ::testing::HasSubstr;

Case gen(uint64_t seed, const Policy& policy = {}) {
  auto c = generateProgram(policy, seed);
  EXPECT_TRUE(c.ok()) << c.error().message;
  return std::move(c).value();
}

oracle::RunResult runOf(const Case& c) {
  auto r = oracle::run(c.program, c.launch, runOptions(c));
  EXPECT_TRUE(r.ok());
  return std::move(r).value();
}

// A Finished case whose trace has a register write and a global memory run.
struct Sample {
  Case c;
  oracle::RunResult r;
};
Sample finishedSampleWithWrites() {
  for (uint64_t s = 1;; ++s) {
    Sample x{gen(s), {}};
    x.r = runOf(x.c);
    const auto& t = x.r.trace;
    const bool reg = std::any_of(t.begin(), t.end(), [](tk::Token k) {
      return tk::familyOf(k) == tk::Family::Wu || tk::familyOf(k) == tk::Family::Wr;
    });
    const bool mem = std::any_of(t.begin(), t.end(),
                                 [](tk::Token k) { return tk::familyOf(k) == tk::Family::Mg; });
    const int steps = static_cast<int>(std::count_if(
        t.begin(), t.end(), [](tk::Token k) { return tk::familyOf(k) == tk::Family::Ex; }));
    const bool changed = x.r.global != x.c.launch.global;
    if (x.r.status == oracle::RunStatus::Finished && reg && mem && changed && steps >= 3) return x;
  }
}

// Index of the first token of family f at or after `from` (the test fails if there is none).
size_t find(const std::vector<tk::Token>& t, tk::Family f, size_t from = 0) {
  for (size_t i = from; i < t.size(); ++i) {
    if (tk::familyOf(t[i]) == f) return i;
  }
  ADD_FAILURE() << "no " << tk::kFamilies[static_cast<int>(f)].name << " token";
  return t.size() - 1;
}

// The value starting at token i with its last chunk's low bit flipped: same length, still the
// shortest form, another value.
void flipValue(std::vector<tk::Token>& t, size_t i) {
  while (tk::familyOf(t[i]) == tk::Family::C) ++i;
  t[i] = tk::tok(tk::Family::T, tk::indexOf(t[i]) ^ 1);
}

// ---- Every property holds ----

TEST(GenProperties, HoldForFixedSeeds) {
  int finished = 0, faulted = 0;
  for (uint64_t s = 0; s < 500; ++s) {
    const Case c = gen(s);
    auto r = checkCase(c);
    ASSERT_TRUE(r.ok()) << r.error().message;
    finished += r->status == oracle::RunStatus::Finished;
    faulted += r->status == oracle::RunStatus::Fault;
  }
  EXPECT_GT(finished, 0);
  EXPECT_GT(faulted, 0);  // the properties are also checked on runs that end in FAULT
}

TEST(GenProperties, HoldForDeepAndFaultyPolicies) {
  Policy deep;
  deep.maxDepth = 4, deep.maxRegions = 12, deep.maxArmRegions = 3, deep.maxTrips = 6;
  Policy faulty;
  faulty.outOfRangeProb = 0.1, faulty.divergentBarrierProb = 0.5;
  for (const Policy& p : {deep, faulty}) {
    for (uint64_t s = 0; s < 200; ++s) {
      auto r = checkCase(gen(s, p));
      ASSERT_TRUE(r.ok()) << r.error().message;
    }
  }
}

#ifdef QGPU_HAVE_RAPIDCHECK
RC_GTEST_PROP(GenPropertiesRc, HoldForRandomSeedsAndPolicies, ()) {
  Policy p;
  p.maxRegions = *rc::gen::inRange(1, 10);
  p.maxDepth = *rc::gen::inRange(0, 4);
  p.maxOps = *rc::gen::inRange(0, kMaxOpsPerBlock + 1);
  p.minOps = *rc::gen::inRange(0, p.maxOps + 1);
  p.guardProb = *rc::gen::inRange(0, 101) / 100.0;
  p.divergentProb = *rc::gen::inRange(0, 101) / 100.0;
  p.outOfRangeProb = *rc::gen::inRange(0, 11) / 100.0;
  p.maxTrips = *rc::gen::inRange<uint32_t>(1, 8);
  p.maxGrid = *rc::gen::inRange<uint32_t>(1, kMaxGridBlocks + 1);
  p.maxBlockX = *rc::gen::inRange<uint32_t>(1, kMaxThreadsPerBlock + 1);
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  auto c = generateProgram(p, seed);
  RC_ASSERT(c.ok());
  auto r = checkCase(*c);
  if (!r.ok()) RC_FAIL(r.error().message);
}
#endif

// ---- The failing twins ----

TEST(GenProperties, TraceMatchesStepsCatchesAChangedRegisterValue) {
  Sample x = finishedSampleWithWrites();
  ASSERT_TRUE(checkTraceMatchesSteps(x.c, x.r.trace).ok());
  std::vector<tk::Token> t = x.r.trace;
  const size_t w = std::min(find(t, tk::Family::Wu), find(t, tk::Family::Wr));
  flipValue(t, w + 1);
  const Status s = checkTraceMatchesSteps(x.c, t);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("trace-matches-steps"));
  EXPECT_THAT(s.error().message, HasSubstr(x.c.header));
}

TEST(GenProperties, TraceMatchesStepsCatchesAChangedMemoryValue) {
  Sample x = finishedSampleWithWrites();
  std::vector<tk::Token> t = x.r.trace;
  const size_t mg = find(t, tk::Family::Mg);
  size_t v = mg + 1;  // the first lane's word index, then its value
  while (tk::familyOf(t[v]) == tk::Family::C) ++v;
  flipValue(t, v + 1);
  EXPECT_THAT(checkTraceMatchesSteps(x.c, t).error().message, HasSubstr("memory write"));
}

TEST(GenProperties, TraceMatchesStepsCatchesASwappedPairOfSteps) {
  Sample x = finishedSampleWithWrites();
  std::vector<tk::Token> t = x.r.trace;
  // Steps 0 and 1 are [EX .. EX) and [EX .. next EX/CTA/END); put the second first.
  const size_t a = find(t, tk::Family::Ex), b = find(t, tk::Family::Ex, a + 1);
  size_t e = b + 1;
  while (e < t.size() && tk::familyOf(t[e]) != tk::Family::Ex &&
         tk::familyOf(t[e]) != tk::Family::Cta && tk::familyOf(t[e]) != tk::Family::End)
    ++e;
  std::vector<tk::Token> swapped(t.begin(), t.begin() + static_cast<long>(a));
  swapped.insert(swapped.end(), t.begin() + static_cast<long>(b), t.begin() + static_cast<long>(e));
  swapped.insert(swapped.end(), t.begin() + static_cast<long>(a), t.begin() + static_cast<long>(b));
  swapped.insert(swapped.end(), t.begin() + static_cast<long>(e), t.end());
  ASSERT_EQ(swapped.size(), t.size());
  if (swapped == t) GTEST_SKIP() << "the two steps are identical";
  EXPECT_FALSE(checkTraceMatchesSteps(x.c, swapped).ok());
}

TEST(GenProperties, TraceMatchesStepsCatchesATruncatedTrace) {
  Sample x = finishedSampleWithWrites();
  std::vector<tk::Token> t = x.r.trace;
  t.pop_back();  // END
  EXPECT_THAT(checkTraceMatchesSteps(x.c, t).error().message, HasSubstr("does not decode"));
}

TEST(GenProperties, TraceCompleteCatchesAWrongFinalWord) {
  Sample x = finishedSampleWithWrites();
  ASSERT_TRUE(checkTraceComplete(x.c, x.r.trace, x.r.global).ok());
  auto global = x.r.global;
  global[17] ^= 0x100;
  const Status s = checkTraceComplete(x.c, x.r.trace, global);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("trace-complete: global word 17"));
}

TEST(GenProperties, TraceCompleteCatchesDroppedMemoryWrites) {
  Sample x = finishedSampleWithWrites();
  // Drop every MG record (MG(e), then a word index and a value per lane of e): by the trace,
  // global memory keeps its initial image, which the sample's final memory is not. (Dropping a
  // single record may change nothing: a loop stores the same values again.)
  const std::vector<tk::Token>& t = x.r.trace;
  std::vector<tk::Token> dropped;
  for (size_t i = 0; i < t.size();) {
    if (tk::familyOf(t[i]) != tk::Family::Mg) {
      dropped.push_back(t[i++]);
      continue;
    }
    const int values = 2 * std::popcount(static_cast<unsigned>(tk::indexOf(t[i]) + 1));
    ++i;
    for (int k = 0; k < values; ++k) {
      while (tk::familyOf(t[i]) == tk::Family::C) ++i;
      ++i;
    }
  }
  ASSERT_LT(dropped.size(), t.size());
  EXPECT_THAT(checkTraceComplete(x.c, dropped, x.r.global).error().message,
              HasSubstr("by the trace"));
}

TEST(GenProperties, PromptDecodesCatchesAChangedToken) {
  const Case c = gen(3);
  std::vector<tk::Token> prompt = tk::encodePrompt(c.program, c.launch);
  ASSERT_TRUE(checkPromptDecodes(c, prompt).ok());
  // PROG v(gridX | blockX << 5 | ...) (trace v4: the launch shape is in the program word): bit 0
  // of gridX flipped, another grid size still decodes, to another launch.
  std::vector<tk::Token> changed = prompt;
  flipValue(changed, find(changed, tk::Family::Prog) + 1);
  EXPECT_THAT(checkPromptDecodes(c, changed).error().message, HasSubstr("prompt-round-trip"));
  // The first op's head word, bit 0 (its op index): the decoder refuses the op's place.
  std::vector<tk::Token> op = prompt;
  flipValue(op, find(op, tk::Family::OpWord) + 1);
  EXPECT_FALSE(checkPromptDecodes(c, op).ok());
}

TEST(GenProperties, SameRunCatchesADifferentSecondRun) {
  Sample x = finishedSampleWithWrites();
  ASSERT_TRUE(checkSameRun(x.c, x.r, x.r).ok());
  oracle::RunResult other = x.r;
  other.trace[other.trace.size() / 2] ^= 1;
  EXPECT_THAT(checkSameRun(x.c, x.r, other).error().message,
              HasSubstr("deterministic: trace token"));
  other = x.r;
  other.global[3] += 1;
  EXPECT_THAT(checkSameRun(x.c, x.r, other).error().message, HasSubstr("final global word 3"));
  other = x.r;
  other.status = oracle::RunStatus::Fault;
  EXPECT_FALSE(checkSameRun(x.c, x.r, other).ok());
}

TEST(GenProperties, TerminatesCatchesAStepLimit) {
  Sample x = finishedSampleWithWrites();
  ASSERT_TRUE(checkTerminates(x.c, x.r).ok());
  // The real thing: the same case with a step limit one below its step count.
  oracle::RunOptions o = runOptions(x.c);
  o.maxSteps = x.r.blockExecs - 1;
  auto limited = oracle::run(x.c.program, x.c.launch, o);
  ASSERT_TRUE(limited.ok());
  EXPECT_THAT(checkTerminates(x.c, *limited).error().message, HasSubstr("terminates"));
}

TEST(GenProperties, VerifiesCatchesAnInvalidProgram) {
  Case c = gen(5);
  ASSERT_TRUE(checkVerifies(c).ok());
  c.program.sharedWords = 200;  // more shared memory than the machine has
  EXPECT_THAT(checkVerifies(c).error().message, HasSubstr("verifies"));
}

}  // namespace
}  // namespace qgpu::gen
