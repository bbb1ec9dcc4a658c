// qgpu/circuit/tests/memory_stage_spec_test.cpp — the memory stage's (circuit/memory_stage.h)
// cost, counted by hand from the header's construction and pinned against a count-only build at
// key head dim 64 (one-row cells, 2 banks per port) and 128 (exact 4-row cells, 4 banks), and its
// refusals. What it computes is pinned through model::Decoder in memory_stage_test (torch).
#include <gtest/gtest.h>

#include <functional>

#include <array>

#include "circuit/config.h"
#include "circuit/memory_stage.h"
#include "circuit/tests/kind_writers.h"
#include "circuit/tokens.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

constexpr int kHidden = 5120;  // the stage takes 4,035 dims (atom.add's 704, min / max's 808)

struct Built {
  Expected<MemoryStage> stage;
  int dims = 0;
  std::vector<Field> taken;  // every field the build took
  std::vector<CircuitWeights::UnitRecord>
      units;  // every MLP unit it wrote (CircuitWeights::logUnits)
};

Built build(int keyHeadDim, ReadHeight read, int layers = kMemoryStageLayers, int headWidth = 32,
            const std::function<void(MemoryStageSpec&, FieldAllocator&)>& host = {}) {
  model::Qwen35Config c = linearConfig(kHidden, layers, 8192, trace::kVocabSize);
  c.linearNumKeyHeads = c.linearNumValueHeads = 32;
  c.linearKeyHeadDim = keyHeadDim;
  CircuitWeights w(c, WeightStorage::CountOnly);
  w.logUnits();
  FieldAllocator alloc(kHidden);
  MemoryStageSpec s;
  s.tokens = planTokenLayout(alloc, kHidden).value();
  s.read = read;
  s.head = alloc.take("head", headWidth).value();
  s.offset = alloc.take("offset", 32).value();
  s.sharedWords = alloc.take("sharedWords", 7).value();
  s.blockX = alloc.take("blockX", 5).value();
  s.warp = alloc.take("warp", 2).value();
  s.exec = alloc.take("exec", 4).value();
  for (auto& l : s.lanes)
    l = {alloc.take("src0", 32).value(), alloc.take("src1", 32).value(),
         alloc.take("src2", 32).value()};
  if (host) host(s, alloc);
  Built b{buildMemoryStage(w, alloc, s), 0, {}, {}};
  b.dims = alloc.used();
  b.taken = alloc.taken();
  b.units = w.unitLog();
  return b;
}

// clang-format off
// Units by hand (an AND or a step pair: 2 units; a cancel: 1 per dim; each layer's base −u: the
// empty AND, 2 units per `start`; the chain's sources per lane S = 2 for lane 0 (M per space),
// 1 + l for lane l ≥ 1 (none, then each earlier lane); logic.h's adder with Replace: level 1 80
// bus cancels + 417, level 2 32 out cancels + 96):
//   L    27 cancels + 2 + 2·(16 + 2 + 16) (isa.def's Mem rows: ld, st, 12 atomics, st.b8, st.b16;
//        its Local rows ldl, stl; `shared` on each Mem row with the space bit)
//        + 4 lanes × (80 bus cancels + 417 adder level 1)                     = 97 + 1,988
//   L+1  4 × (32 out cancels + 96 level 2)
//        + the slot's products: 25 cancels + 2 + 2 Local rows × 25 ANDs · 2   = 512 + 127
//   L+2  16 cancels + 2 + 4 × (hi 2 + mis 3·2 + top 2 + geS 2)
//        + 6 pairs × (4 bus cancels + Eq level 1: 4 per nibble · 2 + 1)
//        + the slot's base: 7 cancels + 2 + Σ_k ⌊127/2^k⌋ = 247 step pairs · 2 = 66 + 78 + 503
//   L+3  64 cancels + 2 + 4 × (7 × 2 word ANDs · 2 + 2 steps · 2) + the slot words' step pairs
//        · 2, each of [S ≥ 2^k], [S ≥ K + 2^k], [S ≥ 2K + 2^k] that S = K·(C_k + q_k) + T_k can
//        reach (K = max T_k + 1; q = 4w + l): per bit of lanes 0..3 {1 1 2 3 2 2 2}, {2 2 3 3 2 2
//        2}, {1 2 3 3 2 2 2}, {2 3 3 3 2 2 2}: 13 + 16 + 15 + 17 = 61
//        + 6 pairs × (1 cancel + Eq level 2: constant + detector)          = 66 + 4 · 32 + 122 + 18
//   L+4  235 cancels (4 + 1 + 128 load + 32 value_0 + 6 same + 32 + 32) + 2
//        + faults 2 spaces × Σ_l (1 + 2^l) = 38 ANDs + load 2 × 128 ANDs
//        + lane 0's chain: per bit 6 (st, exch, or's b, st.b8's b, st.b16's b, stl's a)
//          + S · 8 (and 1, or 1, xor 2, st.b8 3, st.b16 1) = 22 × 32 = 704 ANDs
//        + same 6 + words 28 + mask 4 + tags 2·15 + 1 = 69 ANDs                = 237 + 2·1,067
//        + the masked operands: 192 cancels + 2 + 6 × 32 ANDs · 2                = 578
//          + min.u's, min.s's, max.s's identity bits: 3 patterns each, 6 per bit  = 2 · 6 · 6 · 32
//   L+4+l (l = 1..3): 64 cancels (value_l, atomOld_l) + 2
//        + per bit 6 + S · 9 (the 8, and old'_l's copy) with S = 1 + l         = 66 + 2·32·(6 + 9(1+l))
//   add  L+5: lane 0's level 1 497; count rows (64 + 2) + (96 + 2) + (96 + 2) cancels and bases,
//             step pairs (3 + 4 + 5) × 32 · 2 = 768                            = 497 + 262 + 768
//        L+6: lane 0's level 2 128, lane 1's level 1 497, lanes 2, 3's 3:2 (64 + 2 + 3 · 32 · 2) · 2
//        L+7: lane 1's level 2 128, lanes 2, 3's level 1 2 · 497;  L+8: lanes 2, 3's level 2 2 · 128
//   min / max: lane l's n = l + 2 operands, n(n−1)/2 pairs: 20 lt.u compares
//        L+5: 20 × (16 bus cancels + 4 per nibble · 8 + 1);  L+6: 20 × (1 cancel + 1 + a step 2)
//        L+7: lt.s = lt.u ⊕ the signs differ: per lane its pairs' cancels + 2, 4 ANDs a pair · 2
//                                                                   = (1 + 3 + 6 + 10) + 4 · 2 + 20 · 4 · 2
//        L+8: 4 × (32 cancels + 2) + 4 kinds × Σ_l n × 32 ANDs · 2 = 4 · 14 · 32 · 2
//   inc  L+5: Z_l(t), t < l: per lane l ≥ 1 l cancels + 2, l step pairs      = 3 · 2 + 6 + 2 · 6
//        L+6: M_l + q, q ≤ l + 1: per lane (l + 1) · 32 cancels + 2, two step pairs per bit
//                                                                            = 8 + 10 · 32 · 5
//        L+7 / L+8: 10 compares [M_l + q < b_l], q ≤ l: 10 × 49;  10 × 4
//   cas  L+5 / L+6: 4 + 6 Eq compares ([M_j = b_j], [c_k = b_j]): 10 × (16 bus cancels + 33);
//        10 × (1 cancel + 2)
//        L+7: the states and swaps: 14 cancels + 2, 2 ANDs per path (1 + 3 + 9 + 27 paths)
//                                                                            = 16 + 2 · 2 · 40
//   L+9  per selected kind (add, min / max, inc, cas, dec: each its own, guarded by its kind
//        dim) 224 cancels (4 values, 3 atomOld) + 2; per bit: values 4 lanes × 2 ANDs (add's sum,
//        min/max's word), atomOld lanes 1..3 × 2 · (1 + l) sources: 8 + 18 = 26 × 32 ANDs
//                                                                          = 5 · 226 + 2 · 832
//        + inc's paths: per pattern of the lanes before l on its word, the unwrapped path's
//        32 old + 32 new ANDs (lane 0: 32 new), per wrapped path 1 new AND + 1 old AND where
//        the small word is not 0: lane 1 1, lane 2 2 · 1 + 4, lane 3 3 · 1 + 3 · 4 + 10
//                                                   = 2 · (32 + 2·64 + 4·64 + 8·64 + 1 + 6 + 25)
//        + cas's select: per lane 32 swap ANDs (new = c_l), per state (l + 1) 32 new and
//        32 old ANDs (lane 0: no old)                    = 2 · (4 · 32 + 10 · 32 + 9 · 32)
//   dec  a saturated word b_l + n: 32 × (two step pairs + the overflow's) = 192, + 2 / 6 more at
//        n = 2 / 3 (bit 0's, bit 1's corrections); a compare 49 / 4 (+ 2: the zero test's AND);
//        le.u on min / max's bus: level 2 only (4 + 2); [x = t]: 1 step pair at t = 0, else 2
//        L+3: lanes 2, 3's words: (64 + 2) + 192 + 194 + (96 + 2) + 192 + 194 + 198     = 1,134
//        L+4: lane 1's (32 + 2 + 192); [b_0 = 1, 2], [b_1 = 1]: (2 + 2 + 2·4) + (1 + 2 + 4);
//             2 compares' level 1 (r ≥ 1)                                  = 226 + 19 + 2 · 49
//        L+5: [m_kl = 0] 6 × (1 + 2 + 2); those 2 compares' level 2, 2 more level 1; [M_l = n]
//             Σ_l (l + 1 + 2 + 2 + 4l) = 50; 6 unwrapped compares' level 1
//                                                        = 30 + 2 · 6 + 2 · 49 + 50 + 6 · 49
//        L+6: 2 + 6 compares' level 2, 4 + 6 le.u's; M_l − q starts (32l + 2) and 2 words × 128
//                                                        = 8 · 6 + 10 · 6 + 198 + 2 · 128
//        L+7: b_k − r (64 + 2 + 2 · 128) + (32 + 2 + 128), 4 words M_l − q × 128; the states:
//             24 cancels + 2, 2 ANDs per path (1 + 3 + 9 + 27)        = 484 + 512 + 26 + 2 · 2 · 40
//        L+8: old'_l by the state: 96 cancels + 2, (3 + 6 + 10) states × 32 ANDs = 98 + 2 · 19 · 32
//        L+9: per lane old'_l − 1 (32 · 2 step pairs) and 32 wrap ANDs, lanes 1..3 32 old ANDs
//                                                        = 4 · (128 + 64) + 3 · 64
constexpr std::array<int, kMemoryStageLayers> kUnits = {
    97 + 1988,
    512 + 127,
    144 + 503,
    66 + 4 * 32 + 122 + 18 + 1134,
    2371 + 578 + 2 * 6 * 6 * 32 + 226 + 19 + 2 * 49,
    1602 + 497 + 262 + 768 + 20 * 49 + 3 * 2 + 6 + 2 * 6 + 10 * 49 + 30 + 2 * 6 + 2 * 49 + 50 +
        6 * 49,
    2178 + 128 + 497 + 2 * 258 + 20 * 4 + 8 + 10 * 32 * 5 + 10 * 3 + 8 * 6 + 10 * 6 + 198 +
        2 * 128,
    2754 + 128 + 2 * 497 + 20 + 4 * 2 + 20 * 4 * 2 + 10 * 49 + 16 + 2 * 2 * 40 + 484 + 512 + 26 +
        2 * 2 * 40,
    2 * 128 + 4 * 34 + 4 * 14 * 32 * 2 + 10 * 4 + 98 + 2 * 19 * 32,
    5 * 226 + 2 * 832 + 2 * (32 + 2 * 64 + 4 * 64 + 8 * 64 + 1 + 6 + 25) +
        2 * (4 * 32 + 10 * 32 + 9 * 32) + 4 * (128 + 64) + 3 * 64};
// clang-format on

TEST(MemoryStageSpec, UnitsPerLayerAreTheHandCount) {
  int memRows = 0;
  for (int op = 0; op < machine::kNumOps; ++op)
    memRows += machine::opInfo(static_cast<machine::Op>(op)).cls == machine::OpClass::Mem ? 1 : 0;
  ASSERT_EQ(memRows, 16) << "isa.def's Mem rows changed: recount L";
  int localRows = 0;
  for (int op = 0; op < machine::kNumOps; ++op)
    localRows += machine::opInfo(static_cast<machine::Op>(op)).cls == machine::OpClass::Local;
  ASSERT_EQ(localRows, 2) << "isa.def's Local rows changed: recount L";
  const Built b = build(64, ReadHeight::Nominal);
  ASSERT_TRUE(b.stage.ok()) << b.stage.error().message;
  const MemoryStage& s = b.stage.value();
  EXPECT_EQ(s.units, kUnits);
  EXPECT_EQ(s.maxFanIn, 10);  // lane 3's lowest-fault pattern: isMem, space, e, high + 3 × 2
  // The stage's own dims: kind 27, the slot's 25 products and 7-bit base,
  // 4 × (bus 80 + addr 32 + checks 4), 8 read addresses × 8,
  // 4 lane faults + 1, 4 loads × 32, the memrec 4 × 32 + 32 + 32, 6 pairs × (compare bus 4 +
  // eq 1 + same 1), atomOld of lanes 1..3 (lane 0's is load_0) 3 × 32; atom.add's 6 masks × 32,
  // count rows (2 + 3 + 3) × 32, reduced pairs 2 × 64, its adders' buses 4 × 80, sums 4 × 32;
  // min / max's 20 compares × (bus 16 + 1), 20 lt.s and 4 words × 32; atom.inc's
  // 10 words M_l + q × 32, 10 compares × (bus 16 + 1), 1 + 2 + 3 small-word wraps; atom.cas's 10
  // compares × (bus 16 + 1) and states + swaps 2 + 3 + 4 + 5; atom.dec's 6 saturated words, 3
  // words b_k − r, 3 + 10 + 6 zero tests, 10 compares × (bus 16 + 1) and 10 outputs, 6 words
  // M_l − q, 3 old words, states + wraps 2 + 4 + 7 + 11.
  EXPECT_EQ(s.dims, 27 + 25 + 7 + 4 * 116 + 64 + 5 + 128 + 192 + 6 * 6 + 96 + 192 + 256 + 128 +
                        4 * 80 + 128 + 20 * 17 + 20 + 128 + 10 * 32 + 10 * 17 + 6 + 10 * 17 + 14 +
                        6 * 32 + 3 * 32 + 19 + 10 * 17 + 10 + 6 * 32 + 3 * 32 + 24);
}

TEST(MemoryStageSpec, HeadsAtKeyHeadDim64And128AreTheDataMemories) {
  const Built n = build(64, ReadHeight::Nominal);
  ASSERT_TRUE(n.stage.ok()) << n.stage.error().message;
  // L: the assembler's 3 taps; L+1: 3 + tag latch + counter; L+2: 8 thresholds; L+3: the address
  // latch; L+4: 2 spaces × 4 lanes × banks (64 cells per head at dk 64: 2 banks).
  // L+5..L+9 (the chain, atom.add, min / max) are MLP only.
  EXPECT_EQ(n.stage.value().heads,
            (std::array<int, kMemoryStageLayers>{3, 5, 8, 1, 16, 0, 0, 0, 0, 0}));
  const Built x = build(128, ReadHeight::Exact);
  ASSERT_TRUE(x.stage.ok()) << x.stage.error().message;
  EXPECT_EQ(x.stage.value().dm.banks, 4);  // 32 four-row cells per head
  EXPECT_EQ(x.stage.value().heads,
            (std::array<int, kMemoryStageLayers>{3, 5, 8, 1, 32, 0, 0, 0, 0, 0}));
  EXPECT_EQ(x.stage.value().units, kUnits);  // the MLPs do not depend on the read
}

// Hosted as circuit/pipeline.h hosts it: no prefix atomics (8 layers: L..L+4 as above less
// atom.add's masked operands and the identity patterns, the chain's lanes 1..3 in L+5..L+7 as
// above, nothing after), the load also onto 4 given fields (+2 spaces × 32 ANDs per lane at L+4),
// the fault into a given dim; units and heads counted from the given offsets.
TEST(MemoryStageSpec, HostedWithoutThePrefixAtomicsIsEightLayers) {
  std::array<Field, kRecordLanes> onto;
  Field fault;
  const Built b = build(64, ReadHeight::Nominal, kMemoryChainLayers, 32,
                        [&](MemoryStageSpec& s, FieldAllocator& alloc) {
                          s.prefixAtomics = false;
                          for (auto& f : onto) f = alloc.take("r", 32).value();
                          s.loadOnto = onto;
                          fault = alloc.take("fault", 1).value();
                          s.faultInto = fault;
                          s.firstHead = {4, 4, 4, 4, 4};
                          s.firstUnit.fill(100);
                        });
  ASSERT_TRUE(b.stage.ok()) << b.stage.error().message;
  const MemoryStage& m = b.stage.value();
  EXPECT_EQ(m.units, (std::array<int, kMemoryStageLayers>{2085, 639, 647, 334, 2371 + 2 * 4 * 64,
                                                          1602, 2178, 2754, 0, 0}));
  EXPECT_EQ(m.heads, (std::array<int, kMemoryStageLayers>{3, 5, 8, 1, 16, 0, 0, 0, 0, 0}));
  EXPECT_EQ(m.fault.offset, fault.offset);
  // Its own dims without atom.add's, min / max's, inc's, cas's and dec's (less its kind dim) and
  // without the fault: 4,035 − 704 − 808 − 496 − 184 − 799 − 1.
  EXPECT_EQ(m.dims, 4035 - 704 - 808 - 496 - 184 - 799 - 1);
  // 7 layers are too few without the prefix atomics; 8 are too few with them (above).
  EXPECT_FALSE(build(64, ReadHeight::Nominal, kMemoryChainLayers - 1, 32,
                     [](MemoryStageSpec& s, FieldAllocator&) { s.prefixAtomics = false; })
                   .stage.ok());
  const Built wide = build(64, ReadHeight::Nominal, kMemoryStageLayers, 32,
                           [](MemoryStageSpec& s, FieldAllocator& alloc) {
                             s.faultInto = alloc.take("fault", 2).value();
                           });
  ASSERT_FALSE(wide.stage.ok());
  EXPECT_NE(wide.stage.error().message.find("faultInto"), std::string::npos);
}

TEST(MemoryStageSpec, EveryWriterOfAFieldOfKindsIsGuarded) {
  const Built b = build(
      64, ReadHeight::Nominal, kMemoryStageLayers, 32,
      [](MemoryStageSpec& s, FieldAllocator& alloc) { s.guard = alloc.take("guard", 1).value(); });
  ASSERT_TRUE(b.stage.ok()) << b.stage.error().message;
  const auto n = kindWriters(b.taken, b.units);
  // Every atomic kind's fields and the address path have writers, all of them guarded.
  for (uint32_t kinds :
       {uint32_t{kKindAtomAdd}, uint32_t{kKindAtomMinMax}, uint32_t{kKindAtomMinMax | kKindAtomDec},
        uint32_t{kKindAtomAdd | kKindAtomMinMax | kKindAtomDec}, uint32_t{kKindAtomInc},
        uint32_t{kKindAtomDec}, uint32_t{kKindAtomCas}, kKindMemoryStage}) {
    ASSERT_EQ(n.count(kinds), 1u) << kinds;
    EXPECT_GT(n.at(kinds).units, 0) << kinds;
    EXPECT_EQ(n.at(kinds).unguarded, 0) << kinds << ": unguarded writers";
  }
  // Twin: without the pipeline's guard the address path is every token's (no kinds, no guard).
  const Built plain = build(64, ReadHeight::Nominal);
  ASSERT_TRUE(plain.stage.ok());
  EXPECT_EQ(kindWriters(plain.taken, plain.units).count(kKindMemoryStage), 0u);
}

TEST(MemoryStageSpec, RefusesTooFewLayersAndWrongWidths) {
  const Built layers = build(64, ReadHeight::Nominal, kMemoryStageLayers - 1);
  ASSERT_FALSE(layers.stage.ok());
  EXPECT_EQ(layers.stage.error().kind, ErrorKind::Usage);
  const Built head = build(64, ReadHeight::Nominal, kMemoryStageLayers, 31);
  ASSERT_FALSE(head.stage.ok());
  EXPECT_EQ(head.stage.error().kind, ErrorKind::Usage);
  // The spill slots' inputs: blockX 5 bits, the warp 2.
  const Built warp = build(64, ReadHeight::Nominal, kMemoryStageLayers, 32,
                           [](MemoryStageSpec& s, FieldAllocator& alloc) {
                             s.warp = alloc.take("warp.wide", 3).value();
                           });
  ASSERT_FALSE(warp.stage.ok());
  EXPECT_EQ(warp.stage.error().kind, ErrorKind::Usage);
  EXPECT_NE(warp.stage.error().message.find("warp 2"), std::string::npos)
      << warp.stage.error().message;
  // atom.cas's swap value: 32 dims per lane with the prefix atomics, none needed without them.
  auto narrowSrc2 = [](MemoryStageSpec& s, FieldAllocator& alloc) {
    s.lanes[2].src2 = alloc.take("src2.narrow", 31).value();
  };
  const Built src2 = build(64, ReadHeight::Nominal, kMemoryStageLayers, 32, narrowSrc2);
  ASSERT_FALSE(src2.stage.ok());
  EXPECT_EQ(src2.stage.error().kind, ErrorKind::Usage);
  // The address path's guard: one literal (0 or 1 dim).
  const Built guard = build(64, ReadHeight::Nominal, kMemoryStageLayers, 32,
                            [](MemoryStageSpec& s, FieldAllocator& alloc) {
                              s.guard = alloc.take("guard.wide", 2).value();
                            });
  ASSERT_FALSE(guard.stage.ok());
  EXPECT_EQ(guard.stage.error().kind, ErrorKind::Usage);
  EXPECT_NE(guard.stage.error().message.find("guard needs 0 or 1 dim"), std::string::npos)
      << guard.stage.error().message;
  EXPECT_NE(src2.stage.error().message.find("lane 2 needs src2"), std::string::npos)
      << src2.stage.error().message;
  EXPECT_TRUE(build(64, ReadHeight::Nominal, kMemoryChainLayers, 32,
                    [&](MemoryStageSpec& s, FieldAllocator& alloc) {
                      narrowSrc2(s, alloc);
                      s.prefixAtomics = false;
                    })
                  .stage.ok());
}

}  // namespace
}  // namespace qgpu::circuit
