// qgpu/circuit/tests/weights_test.cpp — the torch-free checks of the circuit's weight container
// and of the memory gadget's spec validation (its numerics are tested through model/ in
// memory_test.cpp).
#include <gtest/gtest.h>

#include "circuit/memory.h"
#include "circuit/weights.h"
#include "circuit/config.h"

namespace qgpu::circuit {
namespace {

model::Qwen35Config oneLayer() {
  model::Qwen35Config c = linearConfig(64, 1, 8, 16);
  c.tieWordEmbeddings = true;
  return c;
}

TEST(CircuitWeights, Bf16CheckAcceptsRepresentableWeights) {
  CircuitWeights w(oneLayer());
  ASSERT_TRUE(w.set(w.layerTensor(0, "linear_attn.in_proj_b.weight"), 0, 3, -4096.0f + 32.0f)
                  .ok());  // 8 significant bits
  EXPECT_TRUE(w.checkBf16Exact().ok());
}

TEST(CircuitWeights, Bf16CheckRejectsNineSignificantBits) {  // the twin: 64·513 needs 10 bits (the
                                                             // prototype's adder)
  CircuitWeights w(oneLayer());
  const std::string b = w.layerTensor(0, "linear_attn.in_proj_b.weight");
  ASSERT_TRUE(w.set(b, 0, 3, 64.0f * 513.0f).ok());
  auto st = w.checkBf16Exact();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Internal);
  EXPECT_NE(st.error().message.find(b), std::string::npos) << st.error().message;
}

TEST(CircuitWeights, OutOfRangeIndexIsUsageError) {
  CircuitWeights w(oneLayer());
  auto st = w.set(w.layerTensor(0, "linear_attn.conv1d.weight"), 0, 4, 1.0f);  // taps are 0..3
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Usage);
  EXPECT_FALSE(w.set("model.layers.1.mlp.up_proj.weight", 0, 0, 1.0f).ok());  // no layer 1
}

TEST(FieldAllocator, RefusesToPassTheHiddenSize) {
  FieldAllocator a(10);
  ASSERT_TRUE(a.take("x", 6).ok());
  auto f = a.take("y", 5);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().kind, ErrorKind::OverLimit);
  EXPECT_TRUE(a.take("z", 4).ok());
}

TEST(FieldAllocator, APlannedAllocatorHandsOutThePlansOffsetsAndRefusesAnotherBuild) {
  FieldAllocator a(8, {Field{"x", 4, 4}, Field{"y", 0, 4}, Field{"z", 0, 2}});
  EXPECT_TRUE(a.planned());
  EXPECT_EQ(a.take("x", 4).value().offset, 4);
  EXPECT_EQ(a.take("y", 4).value().offset, 0);  // y shares nothing with x
  EXPECT_EQ(a.used(), 8);
  EXPECT_EQ(a.takenDims(), 8);
  auto wrongName = a.take("w", 2);
  ASSERT_FALSE(wrongName.ok());
  EXPECT_EQ(wrongName.error().kind, ErrorKind::Internal);
  EXPECT_NE(wrongName.error().message.find("'z'"), std::string::npos);
  FieldAllocator b(8, {Field{"x", 0, 4}});
  EXPECT_EQ(b.take("x", 3).error().kind, ErrorKind::Internal);  // other dims
  FieldAllocator c(8, {Field{"x", 0, 4}});
  ASSERT_TRUE(c.take("x", 4).ok());
  EXPECT_EQ(c.take("more", 1).error().kind, ErrorKind::Internal);  // past the plan
  FieldAllocator d(6, {Field{"x", 4, 4}});
  EXPECT_EQ(d.take("x", 4).error().kind, ErrorKind::OverLimit);  // a plan past the hidden size
}

TEST(CircuitWeights, RecordedTouchesNameTheBlockThatReadsOrWritesEachDim) {
  model::Qwen35Config c = linearConfig(64, 2, 8, 16);
  c.tieWordEmbeddings = false;
  CircuitWeights w(c, WeightStorage::CountOnly);
  w.recordTouches(16);
  ASSERT_TRUE(w.set(w.layerTensor(1, "linear_attn.in_proj_qkv.weight"), 0, 3, 1).ok());
  ASSERT_TRUE(w.set(w.layerTensor(1, "linear_attn.in_proj_b.weight"), 0, 4, 1).ok());
  ASSERT_TRUE(w.set(w.layerTensor(1, "linear_attn.out_proj.weight"), 5, 0, 1).ok());
  ASSERT_TRUE(w.set(w.layerTensor(0, "mlp.up_proj.weight"), 0, 6, -2).ok());
  ASSERT_TRUE(w.set(w.layerTensor(0, "mlp.down_proj.weight"), 7, 1, 1).ok());
  ASSERT_TRUE(w.set(w.layerTensor(0, "mlp.gate_proj.weight"), 1, 8, 0).ok());  // zero: no touch
  const std::string embed = w.globalTensor("embed_tokens.weight");
  ASSERT_TRUE(w.set(embed, 0, 9, 16).ok());    // the pad: no touch
  ASSERT_TRUE(w.set(embed, 0, 10, -16).ok());  // a value
  ASSERT_TRUE(w.set(embed, 0, 11, 0).ok());    // a value off the norm
  ASSERT_TRUE(w.set(w.globalTensor("lm_head.weight"), 2, 12, 1).ok());
  const ResidualTouches& t = w.touches();
  EXPECT_TRUE(t.reads(3, 2));
  EXPECT_TRUE(t.reads(4, 2));
  EXPECT_TRUE(t.writes(5, 2));
  EXPECT_TRUE(t.reads(6, 1));
  EXPECT_TRUE(t.writes(7, 1));
  EXPECT_FALSE(t.reads(8, 1));
  EXPECT_FALSE(t.writes(9, -1));
  EXPECT_TRUE(t.writes(10, -1));
  EXPECT_FALSE(t.offNorm(10));
  EXPECT_TRUE(t.writes(11, -1));
  EXPECT_TRUE(t.offNorm(11));
  EXPECT_TRUE(t.reads(12, t.lastKey()));
  EXPECT_EQ(t.lastKey(), 4);
  // Nothing else: a read is not a write, and no other point is marked.
  int marks = 0;
  for (int d = 0; d < 64; ++d)
    for (int k = -1; k <= t.lastKey(); ++k) marks += t.reads(d, k) + t.writes(d, k);
  EXPECT_EQ(marks, 8);  // reads of 3, 4, 6, 12; writes of 5, 7, 10, 11
}

MemorySpec smallSpec() {
  FieldAllocator a(64);
  MemorySpec s;
  s.ballast = a.take("ballast", 4).value();
  s.writeEnable = a.take("we", 1).value();
  s.writeAddr = a.take("waddr", 3).value();
  s.value = a.take("value", 2).value();  // dv/V = 64 = 4^3
  s.readAddr = a.take("raddr", 3).value();
  s.out = a.take("out", 2).value();
  return s;
}

TEST(MemoryGadget, WritesDecoderKeysWithTheScratchRow) {
  CircuitWeights w(oneLayer());
  auto m = buildMemory(w, smallSpec());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m.value().scratchRow, 8);
  const std::string qkv = w.layerTensor(0, "linear_attn.in_proj_qkv.weight");
  // Key row 5 = 0b101 of the write address (dims 5, 6, 7), the write enable (dim 4), −3G on the
  // ballast.
  EXPECT_EQ(w.get(qkv, 128 + 5, 5).value(), 64.0f);
  EXPECT_EQ(w.get(qkv, 128 + 5, 6).value(), -64.0f);
  EXPECT_EQ(w.get(qkv, 128 + 5, 7).value(), 64.0f);
  EXPECT_EQ(w.get(qkv, 128 + 5, 4).value(), 64.0f);
  EXPECT_EQ(w.get(qkv, 128 + 5, 0).value(), -192.0f);
  EXPECT_EQ(w.get(qkv, 128 + 8, 4).value(), -64.0f);  // scratch row: −G on the write enable
  // Value rails of bit 1 (dim 9): +2G and −2G on channels 256 + 2, 256 + 3.
  EXPECT_EQ(w.get(qkv, 256 + 2, 9).value(), 128.0f);
  EXPECT_EQ(w.get(qkv, 256 + 3, 9).value(), -128.0f);
  EXPECT_TRUE(w.checkBf16Exact().ok());
}

TEST(MemoryGadget, RefusesAValueWidthWhoseReadScaleBf16CannotHold) {
  CircuitWeights w(oneLayer());
  MemorySpec s = smallSpec();
  s.value.dims = 4;  // √(128/4) is not a power of two: out_proj would need 1/(√32·64)
  s.out.dims = 4;
  auto m = buildMemory(w, s);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::Usage);
  EXPECT_NE(m.error().message.find("R4"), std::string::npos) << m.error().message;
}

TEST(MemoryGadget, RefusesGainBelowTheExactnessThreshold) {
  CircuitWeights w(oneLayer());
  MemorySpec s = smallSpec();
  s.gain = 32;  // λG = 64 < 89: silu of an off channel would leak
  auto m = buildMemory(w, s);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::OverLimit);
  s.gain = 64;
  EXPECT_TRUE(buildMemory(w, s).ok());
}

TEST(MemoryGadget, RefusesAddressWiderThanTheKeyHead) {
  CircuitWeights w(oneLayer());
  MemorySpec s = smallSpec();
  s.writeAddr.dims = 7;  // 2^7 + scratch > 128 rows
  s.readAddr.dims = 7;
  auto m = buildMemory(w, s);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::Usage);
}

TEST(MemoryGadget, DecayOffUnlessResettable) {
  CircuitWeights plain(oneLayer());
  ASSERT_TRUE(buildMemory(plain, smallSpec()).ok());
  EXPECT_EQ(plain.get(plain.layerTensor(0, "linear_attn.A_log"), 0, 0).value(), -1000.0f);

  CircuitWeights w(oneLayer());
  MemorySpec s = smallSpec();
  s.reset = Field{"reset", 15, 1};
  ASSERT_TRUE(buildMemory(w, s).ok());
  EXPECT_EQ(w.get(w.layerTensor(0, "linear_attn.A_log"), 0, 0).value(), 0.0f);
  EXPECT_EQ(w.get(w.layerTensor(0, "linear_attn.in_proj_a.weight"), 0, 15).value(), 64.0f);

  s.decay = Decay::Half;  // the decay twin and the reset exclude each other
  auto m = buildMemory(w, s);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::Usage);
}

}  // namespace
}  // namespace qgpu::circuit
