// qgpu/circuit/tests/alu_bits_bench.h — the shared bench of the bit-ALU gadget tests
// (bitops_test, shift_test, bfe_test): operand fields a, b, c (32 sign bits each) on every token,
// the full layout (every dim ±16, pads +16, outputs written with Prior::Replace, so λ = 1 at every
// MLP and every probe reads exactly ±1), one probed 32-bit result field per op, and a runner that
// checks every result bit of every token in fp32 and bf16 × prefill / decode / mixed.
//
// The expected words are the test's own plain expressions (each test file's `expected` lambdas),
// never the gadget's and never oracle/'s evaluator. Built on harness.h as it is.
#pragma once

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "circuit/alu_bits.h"
#include "circuit/tests/harness.h"

namespace qgpu::circuit::alubench {

using namespace harness;

constexpr float kUnit = 16;
constexpr int64_t kVocab = 2048;  // one token per input: a checkpoint holds 2,048 inputs

struct Operands {
  uint32_t a = 0, b = 0, c = 0;
  uint32_t op = 0;  // the bits of Bench::op (a test's opcode one-hot), when it has dims
};

struct Result {
  std::string name;
  Field out;  // 32 dims
  std::function<uint32_t(const Operands&)> expected;
};

struct Bench {
  CircuitWeights weights;
  FieldAllocator alloc;
  Field ballast, a, b, c;
  Field op;                     // optional (0 dims): per-token bits from Operands::op
  std::vector<Result> results;  // probed in this order, 32 logits each
  MlpContext ctx;

  Bench(int hidden, int layers, int units)
      : weights(config(hidden, layers, units, kVocab)), alloc(hidden) {
    ballast = alloc.take("ballast", 4).value();
    a = alloc.take("a", 32).value();
    b = alloc.take("b", 32).value();
    c = alloc.take("c", 32).value();
    ctx = MlpContext{ballast, 1.0, 128, kUnit, false};
  }
  Field take(const std::string& name, int dims) {
    auto f = alloc.take(name, dims);
    EXPECT_TRUE(f.ok()) << f.error().message;
    return f.ok() ? f.value() : Field{};
  }
  // A probed 32-bit result field.
  Field result(const std::string& name, std::function<uint32_t(const Operands&)> expected) {
    const Field out = take(name, 32);
    results.push_back({name, out, std::move(expected)});
    return out;
  }
  int probes() const { return static_cast<int>(results.size()) * 32; }
};

inline void expectOk(const Expected<GadgetReport>& r, const std::string& what) {
  EXPECT_TRUE(r.ok()) << what << ": " << (r.ok() ? "" : r.error().message);
}

// A checkpoint whose token t carries inputs[t] (inputs.size() == kVocab).
inline std::string checkpoint(const Bench& bench, const std::vector<Operands>& inputs,
                              const std::string& name) {
  CircuitWeights w = bench.weights;
  for (size_t r = 0; r < bench.results.size(); ++r)
    probe(w, static_cast<int>(32 * r), bench.results[r].out);
  for (size_t t = 0; t < inputs.size(); ++t) {
    const auto tok = static_cast<int64_t>(t);
    fillRow(w, tok, kUnit);
    setSigns(w, tok, bench.a, inputs[t].a, kUnit);
    setSigns(w, tok, bench.b, inputs[t].b, kUnit);
    setSigns(w, tok, bench.c, inputs[t].c, kUnit);
    if (bench.op.dims > 0) setSigns(w, tok, bench.op, inputs[t].op, kUnit);
  }
  return write(w, name);
}

inline std::vector<int64_t> tokens(size_t n) {
  std::vector<int64_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int64_t>(i);
  return t;
}

struct RunPlan {
  ComputeDtype dtype;
  Path path;
  size_t tokens;  // the first `tokens` inputs
};

// One SignCheck per result, accumulated over `plans` on one checkpoint.
inline std::vector<SignCheck> runPlans(const Bench& bench, const std::vector<Operands>& inputs,
                                       const std::string& dir, const std::vector<RunPlan>& plans,
                                       const std::string& tag, bool print = true) {
  std::vector<SignCheck> total(bench.results.size());
  for (ComputeDtype dtype : kDtypes) {
    std::unique_ptr<model::Decoder> dec;
    for (const RunPlan& p : plans) {
      if (p.dtype != dtype) continue;
      if (!dec) dec = load(dir, dtype);
      if (!dec) return total;
      const auto rows = run(*dec, tokens(p.tokens), p.path, bench.probes());
      EXPECT_EQ(rows.size(), p.tokens);
      if (rows.size() != p.tokens) return total;
      std::vector<SignCheck> here(bench.results.size());
      for (size_t t = 0; t < p.tokens; ++t) {
        const Operands& in = inputs[t];
        const std::string where = "a=" + std::to_string(in.a) + " b=" + std::to_string(in.b) +
                                  " c=" + std::to_string(in.c) + " op=" + std::to_string(in.op);
        for (size_t r = 0; r < bench.results.size(); ++r) {
          std::vector<float> row(rows[t].begin() + static_cast<long>(32 * r),
                                 rows[t].begin() + static_cast<long>(32 * (r + 1)));
          checkBits(here[r], row, bitsOf(bench.results[r].expected(in), 32), 1.0, where);
        }
      }
      for (size_t r = 0; r < bench.results.size(); ++r) {
        if (print)
          std::cout << "[" << tag << " " << bench.results[r].name << "] "
                    << computeDtypeName(dtype) << " " << pathName(p.path) << ", " << p.tokens
                    << " inputs: " << here[r].summary() << "\n";
        SignCheck& t = total[r];
        t.values += here[r].values;
        t.wrongSign += here[r].wrongSign;
        t.inexact += here[r].inexact;
        t.minRatio = std::min(t.minRatio, here[r].minRatio);
        t.maxRatio = std::max(t.maxRatio, here[r].maxRatio);
        t.magnitudes.insert(here[r].magnitudes.begin(), here[r].magnitudes.end());
        if (t.first.empty() && !here[r].first.empty())
          t.first = std::string(computeDtypeName(dtype)) + " " + pathName(p.path) + ": " +
                    here[r].first;
      }
    }
  }
  return total;
}

// The default plan: fp32 prefill on every input, decode and mixed on the first 160; bf16 (about
// 20x slower in LibTorch on this CPU) prefill on the first `bf16Tokens`, decode and mixed on 160.
inline std::vector<RunPlan> standardPlan(size_t fp32Tokens, size_t bf16Tokens) {
  return {{ComputeDtype::F32, Path::Prefill, fp32Tokens}, {ComputeDtype::F32, Path::Decode, 160},
          {ComputeDtype::F32, Path::Mixed, 160},          {ComputeDtype::BF16, Path::Prefill, bf16Tokens},
          {ComputeDtype::BF16, Path::Decode, 160},        {ComputeDtype::BF16, Path::Mixed, 160}};
}

inline bool fullRun() {
  return std::getenv("QGPU_CIRCUIT_FULL") != nullptr;
}

}  // namespace qgpu::circuit::alubench
