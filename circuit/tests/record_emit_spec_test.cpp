// qgpu/circuit/tests/record_emit_spec_test.cpp — the record emitter's construction
// (circuit/record_emit.h) without running it: heads, MLP units and residual dims per layer,
// counted by hand from the header's construction (the numbers below are derived here, not read
// from the gadget), the widest AND, and the refusals of the builder and of the carrier writer.
#include <gtest/gtest.h>

#include "circuit/record_emit.h"
#include "circuit/config.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

constexpr int kHidden = 640;

model::Qwen35Config config(int heads = 11, int layers = 4, int hidden = kHidden) {
  model::Qwen35Config c = linearConfig(hidden, layers, 2560, trace::kVocabSize + 8);
  c.linearNumKeyHeads = c.linearNumValueHeads = heads;
  c.linearKeyHeadDim = 64;
  return c;
}

Expected<RecordEmitter> build(CircuitWeights& w, RecordEmitTwin twin = RecordEmitTwin::None) {
  FieldAllocator alloc(w.config().hiddenSize);
  RecordEmitSpec s;
  auto t = planTokenLayout(alloc, w.config().hiddenSize);
  if (!t.ok()) return t.error();
  s.tokens = t.value();
  s.twin = twin;
  return buildRecordEmitter(w, s);
}

TEST(RecordEmitterSpec, HeadsUnitsAndDimsPerLayerAreTheHandCount) {
  CircuitWeights w(config());
  auto r = build(w);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // L: 7 latches + 3 taps + 1 counter; L+1: 3 taps + 8 thresholds.
  EXPECT_EQ(r->heads, (std::array<int, 4>{11, 11, 0, 0}));
  // L+1: 9 cancels + 2 (base) + 2 per AND: WU one per mask (15), WR Σ_m popcount(m) = 32, MG and
  // MS 2·32 each, WP 1.
  EXPECT_EQ(r->units[1], 9 + 2 + 2 * (15 + 32 + 64 + 64 + 1));
  // L+2: 33 cancels + 2 + 2 per AND: 4 lanes × (32 value bits + 7 word bits + 1 predicate bit) + done.
  EXPECT_EQ(r->units[2], 33 + 2 + 2 * (4 * (32 + 7 + 1) + 1));
  // L+3: 28 cancels (22 families + 6 index bits) + 2 + 2 per AND: tag and next, 28 each; the
  // chunk ANDs Σ_n Σ_r (parts(n) + parts(n−1)) · 2 (r and r+1) · 6 outputs, parts(m) = the ANDs of
  // L_m (0 for m = 0, 2 for 1..6, 1 for 7): n = 1: 24, n = 2..6: 48n (960), n = 7: 252 — less the
  // 84 whose output bit contradicts an all-zeros length literal (never true, not written: for
  // L_n at r = 0 bit 5n−1, n = 1..6, and for L_{n−1} the 5 bits of chunk n−1 and bit 5n−6 of
  // chunk n−2, n = 2..7; each twice).
  EXPECT_EQ(r->units[3], 28 + 2 + 2 * (56 + 24 + 960 + 252 - 84));
  EXPECT_EQ(r->units[0], 0);
  // Token fields 8 + 22 + 6 + 5 + 2, extras 6, test fields 7·32, buffer 7·32, records 6·8,
  // thresholds 8, selection 9, cur 32, done 1, emit 28.
  EXPECT_EQ(r->dims, 43 + 6 + 224 + 224 + 48 + 8 + 9 + 32 + 1 + 28);
  // The widest AND: L_1 (bits 4..31, 28 literals) with R_2 (4), ¬exec, ¬done and the output bit.
  EXPECT_EQ(r->maxFanIn, 28 + 4 + 2 + 1);
  EXPECT_EQ(r->logitMargin, 16.0);
}

TEST(RecordEmitterSpec, TheTwinDiffersInWiringNotInCost) {
  CircuitWeights a(config()), b(config());
  auto exact = build(a);
  auto twin = build(b, RecordEmitTwin::LaneByValueIndex);
  ASSERT_TRUE(exact.ok() && twin.ok());
  EXPECT_EQ(exact->units, twin->units);
  // Some selection unit of L+1 reads another mask pattern's lane.
  const std::string down = a.layerTensor(1, "mlp.down_proj.weight");
  int differ = 0;
  for (int u = 0; u < exact->units[1]; ++u)
    for (int d = 0; d < exact->sel.dims; ++d)
      differ += a.get(down, exact->sel.at(d), u).value() != b.get(down, exact->sel.at(d), u).value();
  EXPECT_GT(differ, 0);
}

TEST(RecordEmitterSpec, RefusesAConfigItDoesNotFit) {
  CircuitWeights fewHeads(config(10));
  EXPECT_EQ(build(fewHeads).error().kind, ErrorKind::Usage);
  CircuitWeights shallow(config(11, 3));
  EXPECT_EQ(build(shallow).error().kind, ErrorKind::Usage);
  CircuitWeights narrow(config(11, 4, 512));  // 623 dims needed
  EXPECT_EQ(build(narrow).error().kind, ErrorKind::OverLimit);
  model::Qwen35Config dv64 = config();
  dv64.linearValueHeadDim = 64;
  CircuitWeights smallValues(dv64);
  EXPECT_EQ(build(smallValues).error().kind, ErrorKind::Usage);
}

// overrideFrom (the control stage's token, circuit/pipeline.h): accepted with a 1-dim `when` and
// an emit field of the emit encoding, without the next-token latch (10 heads at L); refused with
// a wider `when` or a short emit field.
TEST(RecordEmitterSpec, OverrideFromDropsTheNextLatchAndRefusesWrongWidths) {
  auto withOverride = [](int whenDims, int indexDims) {
    CircuitWeights w(config());
    FieldAllocator alloc(kHidden);
    RecordEmitSpec s;
    s.tokens = planTokenLayout(alloc, kHidden).value();
    const Field family = alloc.take("ctl.family", trace::kNumFamilies).value();
    const Field index = alloc.take("ctl.index", indexDims).value();
    const Field when = alloc.take("ctl.when", whenDims).value();
    s.overrideFrom = RecordEmitSpec::Override{{family, index}, when};
    s.into = &alloc;
    return buildRecordEmitter(w, s);
  };
  auto ok = withOverride(1, tokenIndexBits());
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->heads[0], 10);
  EXPECT_EQ(ok->next.dims, 0);
  EXPECT_EQ(ok->inNext.dims, 0);
  EXPECT_EQ(withOverride(2, tokenIndexBits()).error().kind, ErrorKind::Usage);
  EXPECT_EQ(withOverride(1, tokenIndexBits() - 1).error().kind, ErrorKind::Usage);
}

TEST(RecordEmitterSpec, CarrierRefusesWhatIsNoRecord) {
  CircuitWeights w(config());
  auto r = build(w);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const trace::Token run = trace::single(trace::Family::Run);
  RecordOutcome o;
  o.tag = trace::wu(3);
  EXPECT_TRUE(writeCarrier(w, r.value(), trace::kVocabSize, run, o).ok());
  EXPECT_EQ(writeCarrier(w, r.value(), trace::kVocabSize - 1, run, o).error().kind, ErrorKind::Usage);
  EXPECT_EQ(writeCarrier(w, r.value(), trace::kVocabSize + 8, run, o).error().kind, ErrorKind::Usage);
  RecordOutcome notATag = o;
  notATag.tag = trace::ex(0);
  EXPECT_EQ(writeCarrier(w, r.value(), trace::kVocabSize, run, notATag).error().kind, ErrorKind::Usage);
  RecordOutcome wideMask = o;
  wideMask.mask = 16;
  EXPECT_EQ(writeCarrier(w, r.value(), trace::kVocabSize, run, wideMask).error().kind, ErrorKind::Usage);
  RecordOutcome farWord = o;
  farWord.words[2] = 200;
  EXPECT_EQ(writeCarrier(w, r.value(), trace::kVocabSize, run, farWord).error().kind, ErrorKind::Usage);
}

}  // namespace
}  // namespace qgpu::circuit
