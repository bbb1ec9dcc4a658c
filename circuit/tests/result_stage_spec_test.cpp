// qgpu/circuit/tests/result_stage_spec_test.cpp — the result stage's construction
// (circuit/result_stage.h) without running it: MLP units, dims and the widest AND, counted by hand
// from the header's construction (isa.def's rows counted by reading the table: 53 write a
// register, 18 a predicate), the twin's wiring, the refusals, and the emitter's `outcomeFrom`
// option (its latches read the stage's fields; its own test fields are not allocated).
#include <gtest/gtest.h>

#include "circuit/tests/result_stage_stack.h"

namespace qgpu::circuit {
namespace {

using result_test::buildStack;
using result_test::stackConfig;

constexpr int64_t kVocab = trace::kVocabSize + 8;

TEST(ResultStageSpec, UnitsDimsAndFanInAreTheHandCount) {
  CircuitWeights w(stackConfig(kVocab));
  auto s = buildStack(w);
  ASSERT_TRUE(s.ok()) << s.error().message;
  const ResultStage& r = s->stage;
  // F: cancels 4 + 3, base 2, ANDs: [code = 0] once, 4 per lane, 53 Reg rows, 18 Pred rows, dst = 0.
  EXPECT_EQ(r.units[0], 7 + 2 + 2 * (1 + 4 * 4 + 53 + 18 + 1));
  // F+1: 128 cancels, base, per lane 31 bits × 2 + bit 0 × 4.
  EXPECT_EQ(r.units[1], 128 + 2 + 2 * (4 * (31 * 2 + 4)));
  // F+2: 6 pairs × 32 bits, 2 ANDs each.
  EXPECT_EQ(r.units[2], 192 + 2 + 2 * (6 * 32 * 2));
  // F+3: tag + wordMask cancels, base, mask 4, WR 15, WU 15, WP 8, NOP 2.
  EXPECT_EQ(r.units[3], 64 + 2 + 2 * (4 + 15 + 15 + 8 + 2));
  EXPECT_EQ(r.dims, 4 + 3 + 4 * 32 + 6 * 32 + 32 + 32);
  // WU for m = 1111: isReg, ¬dstZero, 4 mask literals, 6 pairs × 32 ¬differ.
  EXPECT_EQ(r.maxFanIn, 2 + 4 + 6 * 32);
}

TEST(ResultStageSpec, TheEmitterReadsTheStageAndAllocatesNoTestFieldsButNext) {
  CircuitWeights w(stackConfig(kVocab));
  auto s = buildStack(w);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->emitter.inTag.dims, 0);
  EXPECT_EQ(s->emitter.inWordMask.dims, 0);
  for (const Field& f : s->emitter.inValue) EXPECT_EQ(f.dims, 0);
  EXPECT_EQ(s->emitter.inNext.dims, 32);
  // The emitter's fields start after the stage's: no dim is shared.
  EXPECT_GE(s->emitter.exec.offset, s->stage.outcome.tag.offset + 32);
  // The emitter's unit counts are those of record_emit_spec_test (the selection, mux and emit
  // layers do not depend on where the buffer reads from).
  EXPECT_EQ(s->emitter.units[1], 9 + 2 + 2 * (15 + 32 + 64 + 64 + 1));
  EXPECT_EQ(s->emitter.units[2], 33 + 2 + 2 * (4 * (32 + 7 + 1) + 1));
}

TEST(ResultStageSpec, TheTwinReadsEveryPairForEveryMask) {
  CircuitWeights a(stackConfig(kVocab)), b(stackConfig(kVocab));
  auto exact = buildStack(a);
  auto twin = buildStack(b, ResultStageTwin::WuOverAllLanes);
  ASSERT_TRUE(exact.ok() && twin.ok());
  EXPECT_EQ(exact->stage.units, twin->stage.units);
  // The WU AND of m = 0001 reads no differ dim in the gadget, all 192 in the twin: count the
  // nonzero gate weights on differ dims in layer F+3 over all units.
  auto differReads = [](CircuitWeights& w, const ResultStage& r) {
    const std::string gate = w.layerTensor(3, "mlp.gate_proj.weight");
    int n = 0;
    for (int u = 0; u < r.units[3]; ++u)
      for (int d = 0; d < r.differ.dims; ++d) n += w.get(gate, u, r.differ.at(d)).value() != 0;
    return n;
  };
  // Gadget: Σ_M (pairs in M)·32 per AND, 2 units each: pairs summed over the 15 masks = 6·4 = 24.
  EXPECT_EQ(differReads(a, exact->stage), 2 * 24 * 32);
  EXPECT_EQ(differReads(b, twin->stage), 2 * 15 * 6 * 32);
}

TEST(ResultStageSpec, RefusesFieldsAndLayersThatDoNotFit) {
  CircuitWeights w(stackConfig(kVocab));
  FieldAllocator alloc(result_test::kHidden);
  ResultStageSpec s;
  s.tokens = planTokenLayout(alloc, result_test::kHidden).value();
  s.head = alloc.take("head", 32).value();
  s.mask = alloc.take("mask", 4).value();
  for (ResultLane& x : s.lanes)
    x = {alloc.take("r", 32).value(), alloc.take("s", 1).value(), alloc.take("old", 32).value(),
         alloc.take("g", 1).value(), alloc.take("op", 1).value()};
  {
    FieldAllocator a2 = alloc;
    EXPECT_TRUE(buildResultStage(w, a2, s).ok());
  }
  ResultStageSpec narrowHead = s;
  narrowHead.head.dims = 31;
  FieldAllocator a3 = alloc;
  EXPECT_EQ(buildResultStage(w, a3, narrowHead).error().kind, ErrorKind::Usage);
  ResultStageSpec wideMask = s;
  wideMask.mask.dims = 5;
  EXPECT_EQ(buildResultStage(w, a3, wideMask).error().kind, ErrorKind::Usage);
  ResultStageSpec shortOld = s;
  shortOld.lanes[2].old.dims = 16;
  EXPECT_EQ(buildResultStage(w, a3, shortOld).error().kind, ErrorKind::Usage);
  ResultStageSpec deep = s;
  deep.firstLayer = result_test::kLayers - 3;
  EXPECT_EQ(buildResultStage(w, a3, deep).error().kind, ErrorKind::Usage);
  ResultStageSpec lowGain = s;
  lowGain.mlpGain = 128;  // Gλ = 128 < 178
  EXPECT_EQ(buildResultStage(w, a3, lowGain).error().kind, ErrorKind::OverLimit);
  CircuitWeights narrow(stackConfig(kVocab, 600));
  EXPECT_EQ(buildStack(narrow).error().kind, ErrorKind::OverLimit);
}

TEST(ResultStageSpec, TheEmitterRefusesAnOutcomeOfTheWrongShape) {
  CircuitWeights w(stackConfig(kVocab));
  FieldAllocator alloc(result_test::kHidden);
  RecordEmitSpec e;
  e.tokens = planTokenLayout(alloc, result_test::kHidden).value();
  e.firstLayer = kResultStageLayers;
  RecordOutcomeFields o;
  for (Field& v : o.value) v = alloc.take("v", 32).value();
  o.wordMask = alloc.take("wm", 32).value();
  o.tag = alloc.take("tag", 31).value();
  e.outcomeFrom = o;
  e.into = &alloc;
  EXPECT_EQ(buildRecordEmitter(w, e).error().kind, ErrorKind::Usage);
  e.outcomeFrom->tag.dims = 32;
  EXPECT_TRUE(buildRecordEmitter(w, e).ok());
}

}  // namespace
}  // namespace qgpu::circuit
