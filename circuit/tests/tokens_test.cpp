// qgpu/circuit/tests/tokens_test.cpp — the token embedding layout (circuit/tokens.h), torch-free.
//
// What it pins down: the full layout — every dim of every trace token's embedding row is ±16
// (the fields' signs, +16 on every pad), so mean(x²) = 256 and λ = 1 for all of them (rule R3,
// docs/circuit.md §3.2); the family one-hot, index bits, chunk bits and flags agree with oracle/trace.h's own
// familyOf / indexOf (the expectation comes from the trace, not from the layout code); the row
// offset places the rows; and what is refused.
#include <gtest/gtest.h>

#include <cmath>

#include "circuit/tokens.h"
#include "circuit/config.h"

namespace qgpu::circuit {
namespace {

model::Qwen35Config config(int hidden, int64_t vocab) {
  return linearConfig(hidden, 1, 4, vocab);
}

float embed(const CircuitWeights& w, int64_t row, int dim) {
  return w.get(w.globalTensor("embed_tokens.weight"), row, dim).value();
}

TEST(TokenLayout, EveryDimOfEveryTraceTokenIsPlusOrMinus16SoLambdaIsOne) {
  constexpr int kHidden = 256;
  CircuitWeights w(config(kHidden, trace::kVocabSize));
  FieldAllocator alloc(kHidden);
  auto t = planTokenLayout(alloc, kHidden);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_TRUE(writeTokenEmbeddings(w, t.value()).ok());
  EXPECT_EQ(t.value().hidden, kHidden);
  EXPECT_EQ(t.value().lambda, 1.0);
  for (int id = 0; id < trace::kVocabSize; ++id) {
    double sumSq = 0;
    for (int d = 0; d < kHidden; ++d) {
      const float v = embed(w, id, d);
      ASSERT_EQ(std::fabs(v), 16.0f) << "token " << id << " dim " << d;
      if (d >= alloc.used()) {
        ASSERT_EQ(v, 16.0f) << "pad dim " << d;  // pads are +16
      }
      sumSq += double{v} * v;
    }
    const double meanSq = sumSq / kHidden;
    EXPECT_EQ(meanSq, 256.0) << "token " << id;
    EXPECT_EQ(16.0 / std::sqrt(meanSq), 1.0);  // λ, before the 1e-6 eps (below half an ulp)
  }
}

TEST(TokenLayout, FieldsAgreeWithTheTraceVocabulary) {
  constexpr int kHidden = 256;
  constexpr int64_t kOffset = 5;  // the trace rows sit above 5 other rows
  CircuitWeights w(config(kHidden, kOffset + trace::kVocabSize));
  FieldAllocator alloc(kHidden);
  const TokenLayout t = planTokenLayout(alloc, kHidden, kOffset).value();
  ASSERT_TRUE(writeTokenEmbeddings(w, t).ok());
  EXPECT_EQ(t.family.dims, trace::kNumFamilies);
  for (int d = 0; d < kHidden; ++d)
    for (int64_t r = 0; r < kOffset; ++r) EXPECT_EQ(embed(w, r, d), 0.0f);  // not trace rows
  int chunks = 0, terminals = 0;
  for (int id = 0; id < trace::kVocabSize; ++id) {
    const auto tok = static_cast<trace::Token>(id);
    const int64_t row = kOffset + id;
    const int fam = static_cast<int>(trace::familyOf(tok));
    const int index = trace::indexOf(tok);
    const bool chunk = trace::familyOf(tok) == trace::Family::C ||
                       trace::familyOf(tok) == trace::Family::T;
    for (int f = 0; f < trace::kNumFamilies; ++f)
      EXPECT_EQ(embed(w, row, t.family.at(f)), f == fam ? 16.0f : -16.0f) << id;
    int decoded = 0;
    for (int b = 0; b < t.index.dims; ++b) decoded |= embed(w, row, t.index.at(b)) > 0 ? 1 << b : 0;
    EXPECT_EQ(decoded, index) << id;
    int chunkValue = 0;
    for (int b = 0; b < t.chunk.dims; ++b)
      chunkValue |= embed(w, row, t.chunk.at(b)) > 0 ? 1 << b : 0;
    EXPECT_EQ(chunkValue, chunk ? index : 0) << id;
    EXPECT_EQ(embed(w, row, t.isChunk.at(0)) > 0, chunk) << id;
    EXPECT_EQ(embed(w, row, t.isTerminal.at(0)) > 0, trace::familyOf(tok) == trace::Family::T);
    chunks += chunk;
    terminals += trace::familyOf(tok) == trace::Family::T;
  }
  EXPECT_EQ(chunks, 2 * trace::kChunkValues);
  EXPECT_EQ(terminals, trace::kChunkValues);
  // The index needs enough bits for the largest family.
  for (const trace::FamilyInfo& f : trace::kFamilies) EXPECT_LE(f.count, 1 << t.index.dims);
}

TEST(TokenLayout, RefusesASmallHiddenSizeAndRowsOutsideTheVocabulary) {
  FieldAllocator small(32);
  auto tooSmall = planTokenLayout(small, 32);  // the fields and 8 ballast dims need more
  ASSERT_FALSE(tooSmall.ok());
  EXPECT_EQ(tooSmall.error().kind, ErrorKind::OverLimit);
  FieldAllocator zero(0);
  EXPECT_EQ(planTokenLayout(zero, 0).error().kind, ErrorKind::Usage);
  FieldAllocator used(256);
  ASSERT_TRUE(used.take("x", 1).ok());
  EXPECT_EQ(planTokenLayout(used, 256).error().kind, ErrorKind::Usage);

  FieldAllocator alloc(256);
  const TokenLayout t = planTokenLayout(alloc, 256, 1).value();
  CircuitWeights w(config(256, trace::kVocabSize));  // one row short for offset 1
  auto refused = writeTokenEmbeddings(w, t);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::Usage);
  CircuitWeights wide(config(512, trace::kVocabSize + 1));  // planned for 256
  EXPECT_FALSE(writeTokenEmbeddings(wide, t).ok());
}

}  // namespace
}  // namespace qgpu::circuit
