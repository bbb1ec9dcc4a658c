// qgpu/circuit/tests/datamem_spec_test.cpp — the predicate file (circuit/predfile.h) and the data
// memories (circuit/datamem.h) without running them: the shapes derived from the machine, the
// heads per port for each key head dim, heads and MLP units per layer (counted by hand from the
// headers' constructions, not read from the gadgets), where a fault bit's literals land, and the
// spec refusals.
#include <gtest/gtest.h>

#include "circuit/datamem.h"
#include "circuit/predfile.h"
#include "circuit/config.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

constexpr int kHidden = 512;

model::Qwen35Config config(int heads, int keyHeadDim, int layers) {
  model::Qwen35Config c = linearConfig(kHidden, layers, 512, trace::kVocabSize);
  c.linearNumKeyHeads = c.linearNumValueHeads = heads;
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

TEST(PredicateFileShape, IsDerivedFromTheMachine) {
  const PredicateFileShape s = predicateFileShape();
  EXPECT_EQ(s.lanes, 4);
  EXPECT_EQ(s.preds, 8);  // p0..p7
  EXPECT_EQ(s.predBits, 3);
  EXPECT_EQ(s.valueBits, 8);  // 128 / 8 = 16, a power of 4 (4 would give 32)
  EXPECT_EQ(s.maxPorts, 4);  // guard, psrc0, psrc1, dstPred (the front end's ports)
}

TEST(PredicateFile, UsesTheHeadsAndUnitsCountedByHand) {
  CircuitWeights w(config(4, 64, 3));
  FieldAllocator alloc(kHidden);
  PredicateFileSpec s;
  s.tokens = planTokenLayout(alloc, kHidden).value();
  s.ports = 2;
  s.readKey = {alloc.take("k0", 3).value(), alloc.take("k1", 3).value()};
  auto pf = buildPredicateFile(w, alloc, s);
  ASSERT_TRUE(pf.ok()) << pf.error().message;
  // Heads: the assembler's 3 taps; its 3 taps + the tag latch; one predicate head per port.
  EXPECT_EQ(pf->headsUsed[0], 3);
  EXPECT_EQ(pf->headsUsed[1], 4);
  EXPECT_EQ(pf->headsUsed[2], 2);
  // L: two family detectors, each a cancel, a constant and a detector.
  EXPECT_EQ(pf->unitsUsed[0], 6);
  // L+1 after the assembler: the enable's cancel, the −u base (an AND pair), one AND pair.
  EXPECT_EQ(pf->unitsUsed[1], pf->assembler.units + 5);
  // L+2: one flip per out dim, 2 ports × 8.
  EXPECT_EQ(pf->unitsUsed[2], 16);
  EXPECT_EQ(pf->predicateHead.scratchRow, -1);  // ZeroKey
  ASSERT_EQ(pf->bits.size(), 2u);
  EXPECT_EQ(pf->bits[1].dims, 4);
  EXPECT_EQ(pf->bits[1].offset, pf->out[1].offset);
  // The write key is the latched index bits (p), after ballast ×3, isWP, isWR.
  EXPECT_EQ(pf->writeKey.offset, pf->tagLatch.at(5));
}

TEST(PredicateFileRefuses, TooFewHeadsOrLayers) {
  for (auto [heads, layers] : {std::pair{3, 3}, std::pair{4, 2}}) {
    CircuitWeights w(config(heads, 64, layers));
    FieldAllocator alloc(kHidden);
    PredicateFileSpec s;
    s.tokens = planTokenLayout(alloc, kHidden).value();
    s.readKey = {alloc.take("k0", 3).value()};
    auto pf = buildPredicateFile(w, alloc, s);
    ASSERT_FALSE(pf.ok()) << heads << " " << layers;
    EXPECT_EQ(pf.error().kind, ErrorKind::Usage);
  }
}

TEST(DataMemoryShape, IsDerivedFromTheMachine) {
  const DataMemoryShape s = dataMemoryShape();
  EXPECT_EQ(s.lanes, 4);
  EXPECT_EQ(s.words[0], 126);
  EXPECT_EQ(s.words[1], 126);
  EXPECT_EQ(s.addrBits, 7);
  EXPECT_EQ(s.rows, 128);
  EXPECT_EQ(s.thresholds, 8);  // 4 (word, value) pairs
}

TEST(DataMemoryBanks, HeadsPerPortFollowTheKeyHeadDimAndTheReadHeight) {
  // 128 cells over dk / rows-per-cell cells per head (rows per cell 4 only for Exact at a dk
  // that is no power of 4).
  EXPECT_EQ(dataMemoryBanks(64, ReadHeight::Nominal).value(), 2);
  EXPECT_EQ(dataMemoryBanks(64, ReadHeight::Exact).value(), 2);
  EXPECT_EQ(dataMemoryBanks(128, ReadHeight::Nominal).value(), 1);
  EXPECT_EQ(dataMemoryBanks(128, ReadHeight::Exact).value(), 4);
  EXPECT_EQ(dataMemoryBanks(256, ReadHeight::Nominal).value(), 1);
  EXPECT_EQ(dataMemoryBanks(16, ReadHeight::Nominal).value(), 8);
}

struct Built {
  explicit Built(const model::Qwen35Config& c) : w(c) {}
  CircuitWeights w;
  DataMemorySpec spec;
  Expected<DataMemory> dm = makeDiag(ErrorKind::Internal, "not built");
};

std::unique_ptr<Built> build(const model::Qwen35Config& c, bool shared = true, int addrDims = 8,
                             DataMemoryTwin twin = DataMemoryTwin::None) {
  auto b = std::make_unique<Built>(c);
  FieldAllocator alloc(c.hiddenSize);
  b->spec.tokens = planTokenLayout(alloc, c.hiddenSize).value();
  b->spec.spaces[1] = shared;
  b->spec.twin = twin;
  for (int sp = 0; sp < 2; ++sp)
    if (b->spec.spaces[sp])
      for (int l = 0; l < 4; ++l)
        b->spec.readAddr[static_cast<size_t>(sp)].push_back(alloc.take("a", addrDims).value());
  b->dm = buildDataMemory(b->w, alloc, b->spec);
  return b;
}

TEST(DataMemory, UsesTheHeadsAndUnitsCountedByHand) {
  auto b = build(config(16, 64, 5));
  ASSERT_TRUE(b->dm.ok()) << b->dm.error().message;
  const DataMemory& dm = b->dm.value();
  EXPECT_EQ(dm.banks, 2);
  // Heads: 3 taps; 3 taps + tag latch + counter; 8 thresholds; the address latch; 2 spaces ×
  // 4 lanes × 2 banks.
  EXPECT_EQ(dm.headsUsed[0], 3);
  EXPECT_EQ(dm.headsUsed[1], 5);
  EXPECT_EQ(dm.headsUsed[2], 8);
  EXPECT_EQ(dm.headsUsed[3], 1);
  EXPECT_EQ(dm.headsUsed[4], 16);
  // L: the tag detector (cancel, constant, detector).
  EXPECT_EQ(dm.unitsUsed[0], 3);
  // L+2: 3 cancels, the −u base pair, GMEM and GW (a pair each), 4 ranks × 2 spaces × (word,
  // value), a pair each.
  EXPECT_EQ(dm.unitsUsed[2], 3 + 2 + 2 + 2 + 4 * 2 * 2 * 2);
  // L+4, per space per lane: 32 flips, the fault's cancel, base pair, `high` pair and 2 pairs for
  // word ≥ 126 (127: bits 6..0 set; 126: the equality).
  EXPECT_EQ(dm.faultAnds, 3);
  EXPECT_EQ(dm.unitsUsed[4], 8 * (32 + 1 + 2 + 2 + 2 * 2));
  EXPECT_EQ(dm.memoryHead.scratchRow, -1);
  EXPECT_EQ(dm.writeKey.offset, dm.addrLatch.offset);
  EXPECT_EQ(dm.writeKey.dims, 7);
}

TEST(DataMemory, PairShiftTwinDropsTheLastValueRank) {
  auto b = build(config(16, 64, 5), true, 8, DataMemoryTwin::PairShift);
  ASSERT_TRUE(b->dm.ok()) << b->dm.error().message;
  // Words at ranks 1, 3, 5, 7, values at 2, 4, 6 (rank 8 has no threshold): one pair fewer per
  // space.
  EXPECT_EQ(b->dm.value().unitsUsed[2], 3 + 2 + 2 + 2 + 4 * 2 * 2 * 2 - 2 * 2);
}

TEST(DataMemoryRefuses, ASpecThatDoesNotFit) {
  auto few = build(config(15, 64, 5));  // 16 memory heads needed
  ASSERT_FALSE(few->dm.ok());
  EXPECT_NE(few->dm.error().message.find("16 value heads"), std::string::npos)
      << few->dm.error().message;
  auto shallow = build(config(16, 64, 4));
  ASSERT_FALSE(shallow->dm.ok());
  EXPECT_NE(shallow->dm.error().message.find("layers"), std::string::npos);
  auto narrow = build(config(16, 64, 5), true, 7);  // no `high` dim
  ASSERT_FALSE(narrow->dm.ok());
  EXPECT_NE(narrow->dm.error().message.find("read address"), std::string::npos);
  // Global alone at dk 128 exact: 4 lanes × 4 banks = 16 heads.
  auto exact = std::make_unique<Built>(config(8, 128, 5));
  FieldAllocator alloc(kHidden);
  exact->spec.tokens = planTokenLayout(alloc, kHidden).value();
  exact->spec.spaces[1] = false;
  exact->spec.read = ReadHeight::Exact;
  for (int l = 0; l < 4; ++l) exact->spec.readAddr[0].push_back(alloc.take("a", 8).value());
  exact->dm = buildDataMemory(exact->w, alloc, exact->spec);
  ASSERT_FALSE(exact->dm.ok());
  EXPECT_NE(exact->dm.error().message.find("16 value heads"), std::string::npos)
      << exact->dm.error().message;
  // Read addresses for a space that is not built.
  exact->spec.readAddr[1] = exact->spec.readAddr[0];
  exact->dm = buildDataMemory(exact->w, alloc, exact->spec);
  ASSERT_FALSE(exact->dm.ok());
  EXPECT_NE(exact->dm.error().message.find("not built"), std::string::npos);
  for (const auto& r : {few->dm.error(), shallow->dm.error(), narrow->dm.error()})
    EXPECT_EQ(r.kind, ErrorKind::Usage);
}

}  // namespace
}  // namespace qgpu::circuit
