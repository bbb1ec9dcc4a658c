// qgpu/circuit/tests/emit_test.cpp — the emit readout and the first generating circuit
// (circuit/emit.h) through model/'s real decoder, fp32 and bf16.
//
// Inputs (circuit/tests/harness.h): per commit 9 prompts (every edge case: length changes, the
// wrap, 7-chunk values, a 70-token prompt) with 3 steps each; QGPU_CIRCUIT_FULL=1 20 prompts with
// 6 (edges) / 4 steps (the docs' 562 tokens).
//
// What it pins down:
//   - the emit head: a checkpoint whose embedding puts every token's own family / index into the
//     emit field and random signs everywhere else has argmax = the input token at every position,
//     with a top-vs-second logit gap of at least the stated margin 2·W·λf;
//   - the counter: greedy decoding (model::Decoder::generateGreedy: prefill, then one token per
//     forward) after a prompt ending with a value v writes SEP, v+1, SEP, v+2, … with every value
//     as trace::encodeValue writes it (the expected continuation is computed here from
//     encodeValue and plain integer addition, never by the circuit), 0 wrong tokens, including
//     7-chunk values, length changes (15 → 16, −17 → −16) and the wrap INT_MAX → INT_MIN;
//   - the full layout through all 4 layers: every residual dim of every position exactly ±1 at the
//     probe at every layer and MLP input (checkpoints with the later layers silenced, an identity
//     probe), so λ = 1 exactly everywhere; and prefill = decode = mixed bit for bit on the logits;
//   - its failing twin (no second assembler level) writes wrong tokens.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>

#include "circuit/emit.h"
#include "circuit/tests/harness.h"
#include "circuit/tokens.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;
using trace::Family;
using trace::Token;

constexpr int kHidden = 256;
constexpr int64_t kVocab = std::max<int64_t>(trace::kVocabSize, kHidden);  // room for a probe

// Key head dim 128, the `2b` shape: the tap heads and the latch read through a 4-hot key and a
// two-row query (circuit/tap.h "The read height"), exact in fp32 as at 64.
model::Qwen35Config config(int layers, int64_t units) {
  model::Qwen35Config c = harness::config(kHidden, layers, units, kVocab);
  c.linearNumKeyHeads = 3;
  c.linearNumValueHeads = 3;
  c.linearKeyHeadDim = 128;
  return c;
}

using harness::load;

// Top-vs-second logit gap of a row.
double gap(std::span<const float> row) {
  float top = -INFINITY, second = -INFINITY;
  for (float v : row) {
    if (v > top) {
      second = top;
      top = v;
    } else if (v > second) {
      second = v;
    }
  }
  return static_cast<double>(top) - second;
}

TEST(EmitHead, RefusesATiedHeadAndAWrongField) {
  model::Qwen35Config c = config(1, 4);
  c.tieWordEmbeddings = true;
  CircuitWeights tied(c);
  FieldAllocator alloc(kHidden);
  const TokenLayout t = planTokenLayout(alloc, kHidden).value();
  const EmitField e{alloc.take("f", trace::kNumFamilies).value(),
                    alloc.take("i", tokenIndexBits()).value()};
  EXPECT_EQ(writeEmitHead(tied, t, e).error().kind, ErrorKind::Usage);
  CircuitWeights untied(config(1, 4));
  const EmitField shortField{e.family, Field{"i", e.index.offset, 1}};
  EXPECT_EQ(writeEmitHead(untied, t, shortField).error().kind, ErrorKind::Usage);
  CircuitWeights fourLayers(config(3, 4));
  CounterSpec cs;
  cs.tokens = t;
  EXPECT_EQ(buildCounter(fourLayers, cs).error().kind, ErrorKind::Usage);
  CircuitWeights counterWeights(config(4, 4));
  cs.separator = trace::encodeValue(3).back();
  EXPECT_EQ(buildCounter(counterWeights, cs).error().kind, ErrorKind::Usage);
}

// Every token's embedding carries its own name in the emit field and random signs elsewhere (the
// layer is zero), so argmax must return the input token whatever the other dims hold.
TEST(EmitHead, ArgmaxIsTheTokenNamedByTheEmitFieldWithTheStatedMargin) {
  CircuitWeights w(config(1, 4));
  FieldAllocator alloc(kHidden);
  const EmitField e{alloc.take("emit.family", trace::kNumFamilies).value(),
                    alloc.take("emit.index", tokenIndexBits()).value()};
  TokenLayout rows;  // only rowOffset is used by the head
  std::mt19937 rng(5);
  const std::string embed = w.globalTensor("embed_tokens.weight");
  for (int id = 0; id < trace::kVocabSize; ++id) {
    const auto tok = static_cast<Token>(id);
    for (int f = 0; f < e.family.dims; ++f)
      ASSERT_TRUE(w.set(embed, id, e.family.at(f),
                        f == static_cast<int>(trace::familyOf(tok)) ? 16.0f : -16.0f).ok());
    for (int b = 0; b < e.index.dims; ++b)
      ASSERT_TRUE(
          w.set(embed, id, e.index.at(b), (trace::indexOf(tok) >> b) & 1 ? 16.0f : -16.0f).ok());
    for (int d = alloc.used(); d < kHidden; ++d)
      ASSERT_TRUE(w.set(embed, id, d, rng() % 2 ? 16.0f : -16.0f).ok());  // λf = 1
  }
  auto margin = writeEmitHead(w, rows, e, 8);
  ASSERT_TRUE(margin.ok()) << margin.error().message;
  EXPECT_EQ(margin.value(), 16.0);
  const std::string dir = harness::write(w, "emit_head");
  std::vector<int64_t> all;
  for (int id = 0; id < trace::kVocabSize; ++id) all.push_back(id);
  for (ComputeDtype dtype : {ComputeDtype::F32, ComputeDtype::BF16}) {
    auto dec = load(dir, dtype);
    ASSERT_NE(dec, nullptr);
    auto logits = dec->forward(all, true);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    double minGap = 1e30;
    for (int64_t r = 0; r < logits.value().rows; ++r) {
      EXPECT_EQ(logits.value().argmax(r), r) << computeDtypeName(dtype);
      minGap = std::min(minGap, gap(logits.value().row(r)));
    }
    EXPECT_GE(minGap, margin.value()) << computeDtypeName(dtype);  // λf = 1 here
    std::cout << "[emit head] " << computeDtypeName(dtype) << ": " << all.size()
              << " tokens, argmax = named token for all; smallest gap " << minGap
              << " logits (stated " << margin.value() << ")\n";
  }
}

// ---- The counter. ----
struct BuiltCounter {
  std::string dir;
  Counter counter;
  std::unique_ptr<CircuitWeights> weights;
};

BuiltCounter buildCounterCheckpoint(const std::string& name, bool secondLevel) {
  auto w = std::make_unique<CircuitWeights>(config(4, 2560));  // L3 needs 2,335 units
  FieldAllocator alloc(kHidden);
  CounterSpec s;
  s.tokens = planTokenLayout(alloc, kHidden).value();
  s.secondLevel = secondLevel;
  EXPECT_TRUE(writeTokenEmbeddings(*w, s.tokens).ok());
  auto k = buildCounter(*w, s);
  EXPECT_TRUE(k.ok()) << k.error().message;
  BuiltCounter b{harness::write(*w, "emit_" + name), k.ok() ? k.value() : Counter{}, std::move(w)};
  return b;
}

// The exact counter, built once for the tests that share it.
const BuiltCounter& exactCounter() {
  static const BuiltCounter b = buildCounterCheckpoint("counter", true);
  return b;
}

// The edge cases one after the other, cut to `n` tokens (several chunks; the mixed path's prompt
// crosses a chunk boundary).
std::vector<int64_t> edgeSequence(size_t n);

struct Case {
  std::vector<int64_t> prompt;
  std::vector<int64_t> expected;  // the continuation
};

const Token kSep = trace::single(Family::Cta);

// A prompt: `noise` non-chunk tokens and values, ending with the value v; the continuation has
// `steps` separator + value groups.
Case counterCase(uint32_t v, int steps, int noise, std::mt19937& rng) {
  Case c;
  for (int i = 0; i < noise; ++i) {
    Token t = static_cast<Token>(rng() % trace::kVocabSize);
    if (trace::familyOf(t) == Family::C || trace::familyOf(t) == Family::T) {
      for (Token x : trace::encodeValue(static_cast<uint32_t>(rng()))) c.prompt.push_back(x);
      continue;
    }
    c.prompt.push_back(t);
  }
  for (Token x : trace::encodeValue(v)) c.prompt.push_back(x);
  for (int s = 1; s <= steps; ++s) {
    c.expected.push_back(kSep);
    for (Token x : trace::encodeValue(v + static_cast<uint32_t>(s))) c.expected.push_back(x);
  }
  return c;
}

// The edges cross every length change they name within 3 steps (14 → 17, 510 → 513, the wrap
// 0x7ffffffd → INT_MIN, −18 → −15, −1 → 2, INT_MIN, −18 again after 7-chunk noise).
std::vector<Case> counterCases(int randomStarts, int edgeSteps) {
  std::mt19937 rng(99);
  std::vector<Case> cases;
  const std::vector<uint32_t> edges = {0u, 0xffffffffu, 14u, 510u, 0x7ffffffdu, 0x80000000u,
                                       static_cast<uint32_t>(-18), 0xfffffffeu - 16};
  for (size_t i = 0; i < edges.size(); ++i)
    cases.push_back(counterCase(edges[i], edgeSteps, i == 0 ? 0 : i == 1 ? 70 : 3, rng));
  for (int i = 0; i < randomStarts; ++i)
    cases.push_back(counterCase(static_cast<uint32_t>(rng()), 4, static_cast<int>(rng() % 20), rng));
  return cases;
}

int countWrong(model::Decoder& dec, const Case& c, std::string* first, double* minGap) {
  dec.reset();
  auto out = dec.generateGreedy(c.prompt, static_cast<int64_t>(c.expected.size()));
  EXPECT_TRUE(out.ok()) << out.error().message;
  if (!out.ok()) return static_cast<int>(c.expected.size());
  int wrong = 0;
  for (size_t i = 0; i < c.expected.size(); ++i) {
    const bool ok = i < out.value().size() && out.value()[i] == c.expected[i];
    if (!ok && first->empty())
      *first = "token " + std::to_string(i) + ": expected " +
               trace::tokenName(static_cast<Token>(c.expected[i])) + ", got " +
               (i < out.value().size() ? trace::tokenName(static_cast<Token>(out.value()[i]))
                                       : std::string("nothing"));
    wrong += ok ? 0 : 1;
  }
  // The margin: logits of the whole (prompt + expected) sequence, at the generated positions.
  if (minGap != nullptr) {
    dec.reset();
    std::vector<int64_t> all = c.prompt;
    all.insert(all.end(), c.expected.begin(), c.expected.end() - 1);
    auto logits = dec.forward(all, true);
    EXPECT_TRUE(logits.ok());
    for (int64_t r = static_cast<int64_t>(c.prompt.size()) - 1; logits.ok() && r < logits.value().rows; ++r)
      *minGap = std::min(*minGap, gap(logits.value().row(r)));
  }
  return wrong;
}

TEST(Counter, GreedyDecodingCountsWithExactTokensInFp32AndBf16) {
  const BuiltCounter& b = exactCounter();
  const Counter& k = b.counter;
  ASSERT_GT(k.logitMargin, 0) << "the counter was not built";
  std::cout << "[counter] MLP units L1 " << k.units[1] << ", L2 " << k.units[2] << ", L3 "
            << k.units[3] << "; λ at the MLP inputs " << k.mlpLambda[1] << ", " << k.mlpLambda[2]
            << ", " << k.mlpLambda[3] << "; λf " << k.finalLambda << "; stated logit margin "
            << k.logitMargin << "\n";
  const std::vector<Case> cases = counterCases(harness::inputs(1, 12), harness::inputs(3, 6));
  int total = 0, sevens = 0;
  for (const Case& c : cases) {
    total += static_cast<int>(c.expected.size());
    for (size_t i = 0; i + 7 < c.expected.size(); ++i)  // SEP, then a T 7 tokens later
      if (c.expected[i] == kSep &&
          trace::familyOf(static_cast<Token>(c.expected[i + 7])) == Family::T)
        ++sevens;
  }
  EXPECT_GE(total, harness::inputs(100, 300));
  EXPECT_GT(sevens, harness::inputs(5, 10));
  for (ComputeDtype dtype : {ComputeDtype::F32, ComputeDtype::BF16}) {
    auto dec = load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    int wrong = 0;
    std::string first;
    double minGap = 1e30;
    // Per commit bf16 (one token ~10x slower) runs the edge prompts with a length change, the
    // wrap and the 70-token prompt; QGPU_CIRCUIT_FULL every prompt.
    const std::vector<size_t> bf16Cases = {1, 2, 3, 4, 6};
    size_t ran = 0, generated = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      if (dtype == ComputeDtype::BF16 && !harness::fullInputs() &&
          std::find(bf16Cases.begin(), bf16Cases.end(), i) == bf16Cases.end())
        continue;
      wrong += countWrong(*dec, cases[i], &first, &minGap);
      ++ran;
      generated += cases[i].expected.size();
    }
    EXPECT_EQ(wrong, 0) << computeDtypeName(dtype) << ": " << first;
    EXPECT_GE(minGap, k.logitMargin) << computeDtypeName(dtype);
    std::cout << "[counter] " << computeDtypeName(dtype) << ": " << ran << " prompts, "
              << generated << " generated tokens (of " << total << "; " << sevens
              << " values of 7 chunks in all), " << wrong
              << " wrong; smallest top-vs-second logit gap " << minGap << " (stated "
              << k.logitMargin << ")\n";
  }
}

TEST(Counter, FailingTwinWithoutTheSecondAssemblerLevelWritesWrongTokens) {
  BuiltCounter b = buildCounterCheckpoint("counter_one_level", false);
  ASSERT_GT(b.counter.logitMargin, 0) << "the counter was not built";
  const std::vector<Case> cases = counterCases(harness::inputs(0, 4), harness::inputs(3, 6));
  auto dec = load(b.dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  int wrong = 0;
  std::string first;
  for (const Case& c : cases) wrong += countWrong(*dec, c, &first, nullptr);
  EXPECT_GT(wrong, 0);
  std::cout << "[counter twin one level] " << wrong << " wrong tokens; first: " << first << "\n";
}

// The whole prompt + continuation of a few cases through the three paths: the logits agree bit for
// bit (the decode path is what generateGreedy uses after its prefill).
std::vector<int64_t> edgeSequence(size_t n) {
  std::vector<int64_t> seq;
  for (const Case& c : counterCases(0, 6)) {
    seq.insert(seq.end(), c.prompt.begin(), c.prompt.end());
    seq.insert(seq.end(), c.expected.begin(), c.expected.end());
  }
  seq.resize(std::min(seq.size(), n));
  return seq;
}

TEST(Counter, PrefillDecodeAndMixedLogitsAreBitIdentical) {
  const BuiltCounter& b = exactCounter();
  ASSERT_GT(b.counter.logitMargin, 0) << "the counter was not built";
  for (ComputeDtype dtype : harness::kDtypes) {
    // Per commit bf16 runs 100 tokens (its one-token forwards are the slow part), fp32 130 (the
    // mixed path's prompt then crosses a chunk boundary); QGPU_CIRCUIT_FULL 400 in both.
    const int n = harness::inputs(dtype == ComputeDtype::F32 ? 130 : 100, 400);
    const std::vector<int64_t> seq = edgeSequence(static_cast<size_t>(n));
    auto dec = load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    std::vector<std::vector<float>> byPath[3];
    for (Path path : harness::kPaths)
      byPath[static_cast<int>(path)] = harness::run(*dec, seq, path, static_cast<int>(kVocab));
    EXPECT_EQ(byPath[0], byPath[1]) << computeDtypeName(dtype) << ": prefill != decode";
    EXPECT_EQ(byPath[0], byPath[2]) << computeDtypeName(dtype) << ": prefill != mixed";
    std::cout << "[counter paths] " << computeDtypeName(dtype) << ": " << seq.size()
              << " tokens, prefill = decode: " << (byPath[0] == byPath[1])
              << ", prefill = mixed: " << (byPath[0] == byPath[2]) << "\n";
  }
}

// λ at every layer and MLP input, measured: the counter's weights with an identity probe and
// everything after a stage silenced; every dim of every position must read exactly ±1. Per commit
// bf16 checks the last stage only (its prefill is ~10x slower); QGPU_CIRCUIT_FULL every stage.
TEST(Counter, EveryLayerInputHoldsTheFullLayoutSoLambdaIsExactlyOne) {
  const BuiltCounter& b = exactCounter();
  ASSERT_GT(b.counter.logitMargin, 0) << "the counter was not built";
  const std::vector<int64_t> seq = edgeSequence(static_cast<size_t>(harness::inputs(130, 400)));
  CircuitWeights probed = *b.weights;
  ASSERT_TRUE(probed.fill("lm_head.weight", 0).ok());
  for (int d = 0; d < kHidden; ++d) ASSERT_TRUE(probed.set("lm_head.weight", d, d, 1.0f).ok());
  for (int layer = 0; layer < 4; ++layer)
    for (bool withMlp : {false, true}) {
      if (layer == 0 && !withMlp) continue;  // layer 0 has no MLP: after its heads = after it
      CircuitWeights w = probed;
      harness::silenceAfter(w, layer, withMlp);
      const std::string dir = harness::write(w, "emit_stage");
      const std::string stage = "after layer " + std::to_string(layer) + (withMlp ? "" : " heads");
      for (ComputeDtype dtype : harness::kDtypes) {
        const bool last = layer == 3 && withMlp;
        if (dtype == ComputeDtype::BF16 && !last && !harness::fullInputs()) continue;
        auto dec = load(dir, dtype);
        ASSERT_NE(dec, nullptr);
        const harness::LayoutCheck c =
            harness::checkLayout(harness::run(*dec, seq, Path::Prefill, kHidden), 1.0f);
        EXPECT_TRUE(c.ok()) << stage << " " << computeDtypeName(dtype) << ": " << c.summary();
        std::cout << "[counter λ] " << stage << " " << computeDtypeName(dtype) << ": "
                  << c.summary() << "\n";
      }
    }
}

}  // namespace
}  // namespace qgpu::circuit
