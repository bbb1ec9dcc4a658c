// qgpu/circuit/tests/result_stage_test.cpp — the result stage (circuit/result_stage.h) and the
// record emitter (circuit/record_emit.h, reading the stage's fields: `outcomeFrom`) in one stack
// of 8 layers through model/'s real decoder, fp32 and bf16.
//
// Inputs (tests/result_stage_inputs.h, shared with the transformers cross-check). A run of
// hand-made steps (every mask 1..15, four ops each) written by the interpreter's encoder
// (oracle::appendTrace). Each op is drawn from isa.def's rows that write a register or a
// predicate without a memrec (mem None or Read), with a dst (r0 one time in eight: NOP), a
// dstPred, a guard (none, p or !p) and per lane the ALU-level inputs: r_l (random and edge
// words), s_l, old_l, g_l, oldP_l; four ops in ten make the active lanes' merged values equal
// (WU), a fifth of those then flip one bit of one lane (WR by one bit); inactive lanes are noise.
// The op's effects (OpEffects) are built from these by docs/trace.md's rule (guard-true = no guard
// or g ^ negate; guard-false lanes keep old_l / oldP_l; inactive lanes' predicate bits 0), and
// the expected record tokens are the encoder's from them — never the gadget's. Each record's
// position p (the token before its tag) becomes a carrier row: the trace token + exec (the
// emitter's `writeCarrier`, which with `outcomeFrom` writes exec and the next token only) + the
// stage's input fields (the head word from trace::packOpHead, m, the lane fields).
//
// What it pins down:
//   - teacher-forced, every record: the argmax at p .. p+k is the trace's next token (the tag
//     WU / WR / WP / NOP the stage chose, the values it merged, then the next token), 0 wrong, in
//     fp32 and bf16 on the prefill, decode and mixed paths; margin ≥ the emitter's 2Wλf;
//   - greedy decoding from a prefix ending at p writes the record and the next token;
//   - the full layout: after the last layer every non-quiet dim is exactly ±1 (λ = 1);
//   - the failing twin (WU over all four lanes, not the active ones) writes wrong tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include "circuit/tests/harness.h"
#include "circuit/tests/record_checks.h"
#include "circuit/tests/result_stage_inputs.h"
#include "circuit/tests/result_stage_stack.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;
using trace::Family;

using result_test::Record;
using result_test::Sequence;

// The inputs (result_stage_inputs.h: the hand-made run, and the carrier rows it needs); a run
// that does not build is a test failure, not a skip.
Sequence makeRun(int steps, uint32_t seed) {
  auto s = result_test::makeRun(steps, seed);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s.value()) : Sequence{};
}

struct Built {
  std::string dir;
  result_test::Stack stack;
  std::unique_ptr<CircuitWeights> weights;
  Sequence seq;
  bool ok = false;
};

Built build(const std::string& name, ResultStageTwin twin, Sequence seq) {
  Built b;
  b.weights = std::make_unique<CircuitWeights>(result_test::stackConfig(result_test::kVocab));
  CircuitWeights& w = *b.weights;
  auto st = result_test::buildStack(w, twin);
  EXPECT_TRUE(st.ok()) << st.error().message;
  if (!st.ok() || seq.records.empty()) return b;
  b.stack = st.value();
  auto c = result_test::writeCarriers(w, b.stack, seq);
  EXPECT_TRUE(c.ok()) << c.error().message;
  if (!c.ok()) return b;
  b.seq = std::move(seq);
  b.dir = harness::write(w, "result_stage_" + name);
  b.ok = true;
  return b;
}

const Built& exact() {
  static const Built b = build("exact", ResultStageTwin::None,
                               makeRun(harness::inputs(30, 240), 11));
  return b;
}

// The shared teacher-forced check (record_checks.h) and the record kinds it saw.
struct Tally : records::Forced {
  std::map<Family, int> kinds;
};

void checkForced(model::Decoder& dec, const Sequence& s, Path path, size_t n, Tally& t) {
  const std::vector<int64_t> ids(s.ids.begin(), s.ids.begin() + static_cast<std::ptrdiff_t>(std::min(n, s.ids.size())));
  const auto rows = harness::run(dec, ids, path, trace::kVocabSize);
  for (const Record& r : s.records)
    if (records::checkForced(t, rows, s.trace, {r.p, r.k},
                             std::string(machine::opInfo(r.op.in.op).mnemonic) + ", m " + std::to_string(r.op.mask)))
      ++t.kinds[trace::familyOf(s.trace[r.p + 1])];
}

std::string counts(const Tally& t) {
  const std::map<Family, const char*> names = {
      {Family::Wu, "WU"}, {Family::Wr, "WR"}, {Family::Wp, "WP"}, {Family::Nop, "NOP"}};
  std::string out;
  for (auto [f, n] : t.kinds)
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + names.at(f);
  return out;
}

TEST(ResultStage, InputsCoverEveryRecordKindAndTheWuRuleOverActiveLanes) {
  const Built& b = exact();
  ASSERT_TRUE(b.ok);
  std::map<Family, int> kinds;
  int wuPartial = 0, guardedMixed = 0;
  for (const Record& r : b.seq.records) {
    const Family f = trace::familyOf(b.seq.trace[r.p + 1]);
    ++kinds[f];
    if (f == Family::Wu && r.op.mask != 15) ++wuPartial;
    if (r.op.in.guard.pred != machine::kNoPred && (r.op.g & r.op.mask) != 0 && (~r.op.g & r.op.mask) != 0)
      ++guardedMixed;
  }
  EXPECT_GT(kinds[Family::Wu], 5);
  EXPECT_GT(kinds[Family::Wr], 5);
  EXPECT_GT(kinds[Family::Wp], 5);
  EXPECT_GT(kinds[Family::Nop], 2);
  EXPECT_GT(wuPartial, 3);     // the twin's inputs: WU with inactive lanes (noise there)
  EXPECT_GT(guardedMixed, 5);  // the merge: guard-true and guard-false lanes in one op
  std::cout << "[result stage] " << b.seq.trace.size() << " tokens, " << b.seq.records.size()
            << " records: " << kinds[Family::Wu] << " WU (" << wuPartial << " with inactive lanes), "
            << kinds[Family::Wr] << " WR, " << kinds[Family::Wp] << " WP, " << kinds[Family::Nop]
            << " NOP; units per layer " << b.stack.stage.units[0] << ", " << b.stack.stage.units[1]
            << ", " << b.stack.stage.units[2] << ", " << b.stack.stage.units[3] << "; dims "
            << b.stack.stage.dims << "; widest AND " << b.stack.stage.maxFanIn << "\n";
}

TEST(ResultStage, TeacherForcedEveryRecordTokenIsTheEncodersOnEveryPathAndDtype) {
  const Built& b = exact();
  ASSERT_TRUE(b.ok);
  for (ComputeDtype dtype : harness::kDtypes) {
    auto dec = harness::load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    for (Path path : harness::kPaths) {
      // Per commit: fp32 prefill the whole run; the one-token paths and bf16 a prefix (the mixed
      // path's prompt and continuation cross the 64-token chunk boundary).
      const bool full = harness::fullInputs() || (dtype == ComputeDtype::F32 && path == Path::Prefill);
      const bool bf16 = dtype == ComputeDtype::BF16;
      const size_t n = full ? SIZE_MAX : !bf16 ? 150 : path == Path::Prefill ? 200 : 110;
      Tally t;
      checkForced(*dec, b.seq, path, n, t);
      const int records = t.records;
      EXPECT_GE(records, 6);  // the smallest per-commit input: bf16 decode, 110 tokens
      EXPECT_EQ(t.wrong, 0) << computeDtypeName(dtype) << " " << harness::pathName(path) << ": " << t.first;
      EXPECT_GE(t.minGap, b.stack.emitter.logitMargin) << computeDtypeName(dtype) << " " << harness::pathName(path);
      std::cout << "[result stage forced] " << computeDtypeName(dtype) << " " << harness::pathName(path)
                << ": " << records << " records (" << counts(t) << "), " << t.positions
                << " positions, " << t.wrong << " wrong; smallest gap " << t.minGap << "\n";
    }
  }
}

TEST(ResultStage, GreedyDecodingWritesTheRecordAndTheNextToken) {
  const Built& b = exact();
  ASSERT_TRUE(b.ok);
  for (ComputeDtype dtype : harness::kDtypes) {
    auto dec = harness::load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    records::Greedy g;
    const size_t every = harness::fullInputs() ? 1 : dtype == ComputeDtype::F32 ? 9 : 5;
    const size_t below = harness::fullInputs() ? SIZE_MAX : dtype == ComputeDtype::F32 ? 500 : 150;
    for (size_t j = 0; j < b.seq.records.size(); j += every) {
      const Record& r = b.seq.records[j];
      if (r.p >= below || r.p + r.k + 1 >= b.seq.trace.size()) continue;
      records::checkGreedy(g, *dec, b.seq.ids, b.seq.trace, {r.p, r.k}, machine::opInfo(r.op.in.op).mnemonic);
    }
    EXPECT_GT(g.records, 3);
    EXPECT_EQ(g.wrong, 0) << computeDtypeName(dtype) << ": " << g.first;
    std::cout << "[result stage greedy] " << computeDtypeName(dtype) << ": " << g.records << " records, "
              << g.tokens << " generated tokens, " << g.wrong << " wrong\n";
  }
}

TEST(ResultStage, EveryDimAfterTheLastLayerIsExactlyPlusMinusOne) {
  const Built& b = exact();
  ASSERT_TRUE(b.ok);
  // The same weights with an identity probe on every dim but the counter's quiet dims and its
  // heavy dim (+2u by design).
  CircuitWeights probed = *b.weights;
  ASSERT_TRUE(probed.fill("lm_head.weight", 0).ok());
  const RecordEmitter& e = b.stack.emitter;
  int probes = 0;
  for (int d = 0; d < result_test::kHidden; ++d) {
    if (d >= e.quiet.offset && d < e.quiet.offset + e.quiet.dims) continue;
    if (d == e.heavy.at(0)) continue;
    ASSERT_TRUE(probed.set("lm_head.weight", probes++, d, 1.0f).ok());
  }
  const std::string dir = harness::write(probed, "result_stage_layout");
  for (ComputeDtype dtype : harness::kDtypes) {
    auto dec = harness::load(dir, dtype);
    ASSERT_NE(dec, nullptr);
    const size_t n = std::min<size_t>(dtype == ComputeDtype::F32 ? 300 : 100, b.seq.ids.size());
    const std::vector<int64_t> ids(b.seq.ids.begin(), b.seq.ids.begin() + static_cast<std::ptrdiff_t>(n));
    const harness::LayoutCheck c = harness::checkLayout(harness::run(*dec, ids, Path::Prefill, probes), 1.0f);
    EXPECT_TRUE(c.ok()) << computeDtypeName(dtype) << ": " << c.summary();
    std::cout << "[result stage λ] " << computeDtypeName(dtype) << ": " << c.summary() << "\n";
  }
}

TEST(ResultStage, FailingTwinDecidingWuOverAllFourLanesWritesWrongTokens) {
  const Built b = build("twin", ResultStageTwin::WuOverAllLanes, makeRun(30, 11));
  ASSERT_TRUE(b.ok);
  auto dec = harness::load(b.dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  Tally t;
  checkForced(*dec, b.seq, Path::Prefill, SIZE_MAX, t);
  EXPECT_GT(t.wrong, 0);
  std::cout << "[result stage twin WU over all lanes] " << t.wrong << " wrong of " << t.positions
            << " positions; first: " << t.first << "\n";
}

}  // namespace
}  // namespace qgpu::circuit
