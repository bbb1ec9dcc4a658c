// qgpu/circuit/emit.cpp — see emit.h for the maths.
#include "circuit/emit.h"

#include <algorithm>

#include "circuit/logic.h"

namespace qgpu::circuit {

Expected<double> writeEmitHead(CircuitWeights& w, const TokenLayout& t, const EmitField& e,
                               float weight) {
  const model::Qwen35Config& c = w.config();
  if (c.tieWordEmbeddings)
    return makeDiag(ErrorKind::Usage, "emit head: needs an untied lm_head");
  if (e.family.dims != trace::kNumFamilies || e.index.dims != tokenIndexBits())
    return makeDiag(ErrorKind::Usage, "emit head: the emit field needs " +
                                          std::to_string(trace::kNumFamilies) + " family and " +
                                          std::to_string(tokenIndexBits()) + " index dims");
  if (t.rowOffset < 0 || t.rowOffset + trace::kVocabSize > c.vocabSize)
    return makeDiag(ErrorKind::Usage, "emit head: trace rows do not fit the vocabulary");
  for (int id = 0; id < trace::kVocabSize; ++id) {
    const auto tok = static_cast<trace::Token>(id);
    const int64_t row = t.rowOffset + id;
    QGPU_CHECK(w.set("lm_head.weight", row,
                     e.family.at(static_cast<int>(trace::familyOf(tok))), weight));
    for (int b = 0; b < e.index.dims; ++b)
      QGPU_CHECK(w.set("lm_head.weight", row, e.index.at(b), weight * indexBit(tok, b)));
  }
  return 2.0 * weight;
}

Expected<Counter> buildCounter(CircuitWeights& w, const CounterSpec& s) {
  const model::Qwen35Config& c = w.config();
  if (c.numLayers() != 4)
    return makeDiag(ErrorKind::Usage, "counter circuit: needs exactly 4 layers");
  if (isChunkToken(s.separator) || s.separator >= trace::kVocabSize)
    return makeDiag(ErrorKind::Usage, "counter circuit: the separator must be a non-chunk token");
  const TokenLayout& t = s.tokens;
  const int hidden = c.hiddenSize;
  FieldAllocator alloc(hidden);
  // The token fields are the allocator's first fields (planTokenLayout on a fresh allocator).
  QGPU_TRY(again, planTokenLayout(alloc, hidden, t.rowOffset));
  if (t.hidden != hidden || again.isTerminal.offset != t.isTerminal.offset)
    return makeDiag(ErrorKind::Usage, "counter circuit: the token layout must be planned over "
                                      "this config's hidden size from a fresh allocator");
  Counter k;
  AssemblerSpec as;
  as.tokens = t;
  as.headGain = s.headGain;
  as.secondLevel = s.secondLevel;
  as.mlpGain = s.mlpGain;
  QGPU_TRY(a, buildAssembler(w, alloc, as));
  k.assembler = a;
  k.units[1] = a.units;
  // The full layout: λ is the layout's (1) at every layer and MLP input and at the final norm.
  k.mlpLambda = {t.lambda, t.lambda, t.lambda, t.lambda};
  k.finalLambda = t.lambda;
  const MlpContext cancelCtx{t.ballast, t.lambda, 128, t.unit};
  QGPU_TRY(held, alloc.take("counter.held", kValueBits));
  QGPU_TRY(next, alloc.take("counter.next", kValueBits));
  QGPU_TRY(ef, alloc.take("emit.family", trace::kNumFamilies));
  QGPU_TRY(ei, alloc.take("emit.index", tokenIndexBits()));
  k.held = held;
  k.next = next;
  k.emit = {ef, ei};

  LatchSpec latch;
  latch.layer = 2;
  latch.head = 0;
  latch.ballast = t.ballast;
  latch.enable = t.isTerminal.at(0);
  for (int i = 0; i < kValueBits; ++i) latch.sources.push_back(a.value.at(i));
  latch.out = held;
  latch.lambda = k.mlpLambda[2];
  latch.gain = latch.valueGain = s.headGain;
  latch.zGain = s.headGain / 4;
  latch.outUnit = t.unit;
  latch.prior = HeadPrior::Pad;  // `held` is a fresh field: the latch writes over its pad
  QGPU_TRY(lm, buildLatch(w, latch));
  k.latch = lm;

  const double one = t.unit, two = 2.0 * t.unit;
  // L2 MLP: next = held + 1.
  {
    UnitWriter units(w, 2);
    QGPU_CHECK(buildCancel(units, next, cancelCtx));  // Replace: next's pad
    AndGate g{t.ballast, k.mlpLambda[2], s.mlpGain};
    std::vector<std::pair<int, double>> base;
    for (int i = 0; i < kValueBits; ++i) base.push_back({next.at(i), -one});
    QGPU_CHECK(addAnd(units, g, {}, base));
    for (int i = 0; i < kValueBits; ++i) {
      std::vector<Literal> lower;
      for (int j = 0; j < i; ++j) lower.push_back({held.at(j), 1});
      QGPU_CHECK(addAnd(units, g, {{held.at(i), 1}}, {{next.at(i), two}}));
      std::vector<Literal> all = lower;
      all.push_back({held.at(i), 1});
      QGPU_CHECK(addAnd(units, g, all, {{next.at(i), -two}}));
      std::vector<Literal> carry = lower;
      carry.push_back({held.at(i), -1});
      QGPU_CHECK(addAnd(units, g, carry, {{next.at(i), two}}));
    }
    k.units[2] = units.used();
  }

  // L3 MLP: the next token.
  {
    UnitWriter units(w, 3);
    QGPU_CHECK(buildCancel(units, ef, cancelCtx));  // Replace: the emit field's pads
    QGPU_CHECK(buildCancel(units, ei, cancelCtx));
    AndGate g{t.ballast, k.mlpLambda[3], s.mlpGain};
    std::vector<std::pair<int, double>> base;
    for (int f = 0; f < ef.dims; ++f) base.push_back({ef.at(f), -one});
    for (int b = 0; b < ei.dims; ++b) base.push_back({ei.at(b), -one});
    QGPU_CHECK(addAnd(units, g, {}, base));
    // At a T: the separator.
    std::vector<std::pair<int, double>> sep = {
        {ef.at(static_cast<int>(trace::familyOf(s.separator))), two}};
    for (int b = 0; b < ei.dims; ++b)
      if (indexBit(s.separator, b) > 0) sep.push_back({ei.at(b), two});
    QGPU_CHECK(addAnd(units, g, {{t.isTerminal.at(0), 1}}, sep));

    const Assembler& as1 = k.assembler;
    auto isChunk = [&](int q) {
      return q == 0 ? t.isChunk.at(0) : as1.back[static_cast<size_t>(q - 1)].isChunk();
    };
    auto isTerminal = [&](int q) {
      return q == 0 ? t.isTerminal.at(0) : as1.back[static_cast<size_t>(q - 1)].isTerminal();
    };
    // R_q (q ≥ 0) as literals: ¬isT_0 always (the non-T branch), then isC_0 .. isC_{q−1}.
    auto run = [&](int q) {
      std::vector<Literal> l = {{isTerminal(0), -1}};
      for (int x = 0; x < q; ++x) {
        l.push_back({isChunk(x), 1});
        l.push_back({isTerminal(x), -1});
      }
      return l;
    };
    // L_m as a list of literal sets (a sum of ANDs): empty list = 0, {{}} = 1.
    auto lenAtMost = [&](int m) -> std::vector<std::vector<Literal>> {
      if (m <= 0) return {};
      if (m >= trace::kMaxValueChunks) return {{}};
      std::vector<Literal> ones, zeros;
      for (int b = trace::kChunkBits * m - 1; b < kValueBits; ++b) {
        ones.push_back({next.at(b), 1});
        zeros.push_back({next.at(b), -1});
      }
      return {ones, zeros};
    };
    const int famC = static_cast<int>(trace::Family::C), famT = static_cast<int>(trace::Family::T);
    for (int n = 1; n <= trace::kMaxValueChunks; ++n)
      for (int r = 0; r < n; ++r) {
        const int e = n - 1 - r;
        // Output pieces: (extra literal or none, output dim).
        std::vector<std::pair<int, int>> outs = {{-1, ef.at(e > 0 ? famC : famT)}};
        for (int j = 0; j < trace::kChunkBits; ++j)
          outs.push_back({next.at(std::min(trace::kChunkBits * e + j, kValueBits - 1)), ei.at(j)});
        for (auto [lm, lsign] : {std::pair{n, 1}, std::pair{n - 1, -1}})
          for (const std::vector<Literal>& lpart : lenAtMost(lm))
            for (auto [rq, rsign] : {std::pair{r, 1}, std::pair{r + 1, -1}}) {
              if (rq > kWindow + 1) continue;
              std::vector<Literal> cond = lpart;
              const std::vector<Literal> rl = run(rq);
              cond.insert(cond.end(), rl.begin(), rl.end());
              for (auto [lit, dim] : outs) {
                std::vector<Literal> full = cond;
                if (lit >= 0) full.push_back({lit, 1});
                QGPU_CHECK(addAnd(units, g, full, {{dim, two * lsign * rsign}}));
              }
            }
      }
    k.units[3] = units.used();
  }
  QGPU_TRY(margin, writeEmitHead(w, t, k.emit, s.emitWeight));
  k.logitMargin = margin * k.finalLambda;
  return k;
}

}  // namespace qgpu::circuit
