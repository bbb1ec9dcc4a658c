// qgpu/circuit/tests/regfile_spec_test.cpp — the register file's construction (circuit/regfile.h)
// without running it: the shape derived from the machine, the index decode table, heads and MLP
// units per layer (counted by hand from the header's construction), where a register head's key,
// query, reset and pad-inverted readout land, and the spec refusals. The numbers below are
// derived by hand, not read from the gadget.
#include <gtest/gtest.h>

#include "circuit/regfile.h"
#include "circuit/config.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

constexpr int kHidden = 576;
constexpr float kUnit = 16;

model::Qwen35Config config(int heads = 12, int keyHeadDim = 64, int layers = 4) {
  model::Qwen35Config c = linearConfig(kHidden, layers, 512, trace::kVocabSize);
  c.linearNumKeyHeads = c.linearNumValueHeads = heads;
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

struct Built {
  explicit Built(const model::Qwen35Config& c) : w(c) {}
  CircuitWeights w;
  TokenLayout tokens;
  RegisterFileSpec spec;
  Expected<RegisterFile> rf = makeDiag(ErrorKind::Internal, "not built");
};

std::unique_ptr<Built> build(const model::Qwen35Config& c, int ports = 3,
                             RegisterFileTwin twin = RegisterFileTwin::None, int keyDims = 6) {
  auto b = std::make_unique<Built>(c);
  FieldAllocator alloc(c.hiddenSize);
  b->tokens = planTokenLayout(alloc, c.hiddenSize).value();
  b->spec.tokens = b->tokens;
  b->spec.ports = ports;
  b->spec.twin = twin;
  for (int p = 0; p < std::max(ports, 0); ++p)
    b->spec.readKey.push_back(alloc.take("key" + std::to_string(p), keyDims).value());
  b->rf = buildRegisterFile(b->w, alloc, b->spec);
  return b;
}

float at(const CircuitWeights& w, const std::string& name, int64_t row, int64_t col) {
  return w.get(name, row, col).value();
}

TEST(RegisterFileShape, IsDerivedFromTheMachine) {
  const RegisterFileShape s = registerFileShape();
  EXPECT_EQ(s.lanes, 4);
  EXPECT_EQ(s.regBits, 4);   // r0..r15
  EXPECT_EQ(s.warpBits, 2);  // warps 0..3
  EXPECT_EQ(s.keyBits, 6);
  EXPECT_EQ(s.rows, 64);
  EXPECT_EQ(s.writtenRows, 60);  // 4 warps × r1..r15
  EXPECT_EQ(s.thresholds, 5);    // ranks 0..3 and "past the fourth value"
}

TEST(RegisterFileDecode, TableReadsWarpMaskAndRegisterFromTheTokenIndex) {
  const std::vector<uint32_t> t = registerIndexTable();
  ASSERT_EQ(t.size(), 64u);
  // Word = w | m << 2 | r << 6. WM(w0,0001) is index 0; WM(w1,0101) is 15 + 5 − 1 = 19;
  // WM(w3,1111) is 59. WR(r1) / WU(r1) are index 0, WR(r15) is 14.
  EXPECT_EQ(t[0], 0u | 1u << 2 | 1u << 6);     // WM(w0,0001) and r1
  EXPECT_EQ(t[6], 0u | 7u << 2 | 7u << 6);     // WM(w0,0111) and r7
  EXPECT_EQ(t[14], 0u | 15u << 2 | 15u << 6);  // WM(w0,1111) and r15
  EXPECT_EQ(t[15], 1u | 1u << 2);              // WM(w1,0001), no register index
  EXPECT_EQ(t[19], 1u | 5u << 2);
  EXPECT_EQ(t[59], 3u | 15u << 2);
  EXPECT_EQ(t[60], 0u);  // no WM, WR or WU index
  EXPECT_EQ(t[63], 0u);
}

TEST(RegisterFile, UsesTheHeadsAndUnitsCountedByHand) {
  auto b = build(config());
  ASSERT_TRUE(b->rf.ok()) << b->rf.error().message;
  const RegisterFile& rf = b->rf.value();
  // Heads: L the assembler's 3 taps; L+1 its 3 taps + 2 latches + the counter; L+2 thresholds
  // N = 1..5; L+3 3 ports × 4 lanes.
  EXPECT_EQ(rf.headsUsed[0], 3);
  EXPECT_EQ(rf.headsUsed[1], 6);
  EXPECT_EQ(rf.headsUsed[2], 5);
  EXPECT_EQ(rf.headsUsed[3], 12);
  // L: lookup 64 detectors + 10 cancels; the record tag: cancel, constant, detector.
  EXPECT_EQ(rf.unitsUsed[0], 64 + 10 + 3);
  // L+2: 4 cancels, the −u base (an AND pair), 15 WR ANDs (1 + 2 + 4 + 8 lower-mask patterns)
  // and 4 WU ANDs, 2 units each.
  EXPECT_EQ(rf.unitsUsed[2], 4 + 2 + 2 * 15 + 2 * 4);
  // L+3: one flip unit per operand dim, 3 × 4 × 32.
  EXPECT_EQ(rf.unitsUsed[3], 384);
  // Lane 3, rank 3: T, isWR, ¬isWU, m3, m0, m1, m2, [n ≥ 4], ¬[n ≥ 5].
  EXPECT_EQ(rf.maxAndLiterals, 9);
  EXPECT_EQ(rf.registerHead.keyOn, 128);
  EXPECT_EQ(rf.registerHead.scratchRow, -1);  // ZeroKey: 64 rows fill the 64-dim key head
  EXPECT_EQ(rf.operand.size(), 3u);
}

TEST(RegisterFile, KeysLaneHeadsByWarpAndRegisterAndReadsIntoThePadInverted) {
  auto b = build(config());
  ASSERT_TRUE(b->rf.ok()) << b->rf.error().message;
  const RegisterFile& rf = b->rf.value();
  const CircuitWeights& w = b->w;
  const model::Qwen35Config& c = w.config();
  const std::string qkv = w.layerTensor(3, "linear_attn.in_proj_qkv.weight");
  // Port 1, lane 2 is head 6; row (w = 2, r = 7) is channel 16·2 + 7 = 39.
  const int head = 6, row = 39;
  const int64_t kRow = c.linearKeyDim() + head * c.linearKeyHeadDim + row;
  const int64_t qRow = head * c.linearKeyHeadDim + row;
  const float G = 128;
  const float rSigns[4] = {G, G, G, -G};  // 7 = 0111, bit 0 first
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(at(w, qkv, kRow, rf.writeKey.at(i)), rSigns[i]) << i;
    EXPECT_EQ(at(w, qkv, qRow, b->spec.readKey[1].at(i)), rSigns[i]) << i;
  }
  EXPECT_EQ(at(w, qkv, kRow, rf.writeKey.at(4)), -G);  // w = 2 = 10
  EXPECT_EQ(at(w, qkv, kRow, rf.writeKey.at(5)), G);
  EXPECT_EQ(at(w, qkv, qRow, b->spec.readKey[1].at(5)), G);
  EXPECT_EQ(at(w, qkv, kRow, rf.enable.at(2)), G);  // lane 2's write enable
  EXPECT_EQ(at(w, qkv, kRow, rf.enable.at(1)), 0);
  EXPECT_EQ(at(w, qkv, kRow, b->tokens.ballast.at(0)), -6 * G);
  // The write key: the tag latch's r then the WM latch's w.
  EXPECT_EQ(rf.writeKey.offset, rf.tagLatch.at(4));
  EXPECT_EQ(rf.writeKey.at(4), rf.wmLatch.at(0));
  // The value: the assembler's bits, dual rail.
  const int64_t v = 2 * c.linearKeyDim() + head * c.linearValueHeadDim;
  EXPECT_EQ(at(w, qkv, v + 2 * 5, rf.assembler.value.at(5)), 2 * G);
  EXPECT_EQ(at(w, qkv, v + 2 * 5 + 1, rf.assembler.value.at(5)), -2 * G);
  // Reset on CTA: a = G·[CTA].
  const int cta = b->tokens.family.at(static_cast<int>(trace::Family::Cta));
  EXPECT_EQ(at(w, w.layerTensor(3, "linear_attn.in_proj_a.weight"), head, cta), G);
  // Readout: only the 1 rail, −2u / (√(128/32)·λGz) = −32 / 128.
  const std::string out = w.layerTensor(3, "linear_attn.out_proj.weight");
  const int o = rf.operand[1][2].at(5);
  EXPECT_EQ(at(w, out, o, head * c.linearValueHeadDim + 2 * 5), -0.25f);
  EXPECT_EQ(at(w, out, o, head * c.linearValueHeadDim + 2 * 5 + 1), 0.0f);
  // The counter's quiet dims are 0 and the heavy pad 2u in every trace row.
  const std::string e = w.globalTensor("embed_tokens.weight");
  for (int id : {0, 100, trace::kVocabSize - 1}) {
    EXPECT_EQ(at(w, e, id, rf.quiet.at(0)), 0.0f);
    EXPECT_EQ(at(w, e, id, rf.heavy.at(0)), 2 * kUnit);
  }
}

TEST(RegisterFile, NoResetTwinLeavesTheDecayUnconnected) {
  auto b = build(config(), 3, RegisterFileTwin::NoReset);
  ASSERT_TRUE(b->rf.ok()) << b->rf.error().message;
  const int cta = b->tokens.family.at(static_cast<int>(trace::Family::Cta));
  EXPECT_EQ(at(b->w, b->w.layerTensor(3, "linear_attn.in_proj_a.weight"), 0, cta), 0.0f);
  EXPECT_EQ(at(b->w, b->w.layerTensor(3, "linear_attn.A_log"), 0, 0), -1000.0f);
}

TEST(RegisterFile, OnePortNeedsFourHeads) {
  auto b = build(config(6), 1);
  ASSERT_TRUE(b->rf.ok()) << b->rf.error().message;
  EXPECT_EQ(b->rf.value().headsUsed[3], 4);
  EXPECT_EQ(b->rf.value().unitsUsed[3], 128);
}

TEST(RegisterFile, RefusesWhatDoesNotFit) {
  EXPECT_EQ(build(config(), 0)->rf.error().kind, ErrorKind::Usage);  // no port
  EXPECT_EQ(build(config(16), 5)->rf.error().kind, ErrorKind::Usage);  // > 3 sources + the dst
  EXPECT_EQ(build(config(), 3, RegisterFileTwin::None, 5)->rf.error().kind, ErrorKind::Usage);
  EXPECT_EQ(build(config(11))->rf.error().kind, ErrorKind::Usage);      // 12 heads needed
  EXPECT_EQ(build(config(12, 32))->rf.error().kind, ErrorKind::Usage);  // 64 rows > dk 32
  EXPECT_EQ(build(config(12, 64, 3))->rf.error().kind, ErrorKind::Usage);  // 4 layers needed
  model::Qwen35Config shared = config();
  shared.linearNumKeyHeads = 6;  // two value heads per key head
  EXPECT_EQ(build(shared)->rf.error().kind, ErrorKind::Usage);
}

TEST(MemoryReadout, PadInvertedReadsOnlyTheOneRailAtTwiceTheUnit) {
  CircuitWeights w(linearConfig(64, 1, 8, 4));
  MemorySpec s;
  s.ballast = {"ballast", 0, 1};
  s.writeEnable = {"we", 1, 1};
  s.writeAddr = {"wa", 2, 2};
  s.value = {"v", 4, 2};
  s.readAddr = {"ra", 6, 2};
  s.out = {"out", 8, 2};
  s.readout = MemoryReadout::PadInverted;
  ASSERT_TRUE(buildMemory(w, s).ok());
  // λ = 2, G = 64: λGz = 64; √(128/2) = 8; −2·16 / (8·64) = −1/16.
  const std::string out = w.layerTensor(0, "linear_attn.out_proj.weight");
  EXPECT_EQ(at(w, out, 8, 0), -0.0625f);
  EXPECT_EQ(at(w, out, 8, 1), 0.0f);
  EXPECT_EQ(at(w, out, 9, 2), -0.0625f);
  EXPECT_EQ(at(w, out, 9, 3), 0.0f);
  s.readout = MemoryReadout::Signed;  // the default: ±1/32 on both rails
  CircuitWeights w2(linearConfig(64, 1, 8, 4));
  ASSERT_TRUE(buildMemory(w2, s).ok());
  EXPECT_EQ(at(w2, out, 8, 0), 0.03125f);
  EXPECT_EQ(at(w2, out, 8, 1), -0.03125f);
}

}  // namespace
}  // namespace qgpu::circuit
