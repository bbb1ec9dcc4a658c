// qgpu/circuit/assembler.cpp — see assembler.h for the maths.
#include "circuit/assembler.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "circuit/logic.h"

namespace qgpu::circuit {

std::vector<Literal> spells(const Field& f, unsigned value) {
  std::vector<Literal> l;
  for (int b = 0; b < f.dims; ++b) l.push_back({f.at(b), value >> b & 1u ? 1 : -1});
  return l;
}

std::vector<Literal> operator+(std::vector<Literal> a, const std::vector<Literal>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Expected<bool> addAnd(UnitWriter& units, const AndGate& g, std::vector<Literal> literals,
                      const std::vector<std::pair<int, double>>& outs) {
  std::map<int, int> bySign;
  for (const Literal& l : literals) {
    auto [it, fresh] = bySign.emplace(l.dim, l.sign);
    if (!fresh && it->second != l.sign) return false;  // x ∧ ¬x
  }
  if (g.gain * g.lambda < 178)
    return makeDiag(ErrorKind::OverLimit, "AND gate: Gλ = " + std::to_string(g.gain * g.lambda) +
                                              " < 178: the clamp's off side misses −89 (rule R2)");
  const double n = static_cast<double>(bySign.size());
  Unit hi, lo;
  for (auto [dim, sign] : bySign) {
    hi.gate.push_back({dim, g.gain * static_cast<float>(sign)});
    lo.gate.push_back({dim, g.gain * static_cast<float>(sign)});
  }
  QGPU_TRY(cHi, constantTerms(-g.gain * (n - 1.5), g.ballast));
  QGPU_TRY(cLo, constantTerms(-g.gain * (n - 0.5), g.ballast));
  hi.gate.insert(hi.gate.end(), cHi.begin(), cHi.end());
  lo.gate.insert(lo.gate.end(), cLo.begin(), cLo.end());
  hi.up.push_back({g.ballast.at(0), 1.0f});
  lo.up.push_back({g.ballast.at(0), 1.0f});
  for (auto [dim, amount] : outs) {
    const float d = bf16Round(amount / (g.gain * g.lambda * g.lambda));
    hi.down.push_back({dim, d});
    lo.down.push_back({dim, -d});
  }
  QGPU_CHECK(units.add(hi));
  QGPU_CHECK(units.add(lo));
  return true;
}

Expected<Assembler> buildAssembler(CircuitWeights& w, FieldAllocator& alloc,
                                   const AssemblerSpec& s) {
  const TokenLayout& t = s.tokens;
  const int hidden = w.config().hiddenSize;
  if (t.hidden != hidden)
    return makeDiag(ErrorKind::Usage, "assembler: the token layout was planned for hidden " +
                                          std::to_string(t.hidden) + ", the config has " +
                                          std::to_string(hidden));
  Assembler a;
  for (int k = 0; k < kWindow; ++k) {
    QGPU_TRY(f, alloc.take("asm.back" + std::to_string(k + 1), kRecordBits));
    a.back[static_cast<size_t>(k)].f = f;
  }
  QGPU_TRY(value, alloc.take("asm.value", kValueBits));
  a.value = value;

  // The full layout: every dim of every circuit token is ±unit at every layer input, so λ is the
  // layout's at each (the heads write over pads, the MLP replaces; checked by the test).
  a.lambda = {t.lambda, t.lambda, t.lambda};
  const HeadPrior prior = s.accumulateTwin ? HeadPrior::Zero : HeadPrior::Pad;

  // Level 0: the embedding record of p−k; level 1: layer0's record of p−3−k at tap 3.
  std::vector<int> embedRecord = {t.ballast.at(0)};  // present
  for (int j = 0; j < trace::kChunkBits; ++j) embedRecord.push_back(t.chunk.at(j));
  embedRecord.push_back(t.isChunk.at(0));
  embedRecord.push_back(t.isTerminal.at(0));
  for (int k = 1; k <= 3; ++k) {
    TapSpec tap;
    tap.layer = s.layer0;
    tap.head = s.firstHead + k - 1;
    tap.tap = k;
    tap.ballast = t.ballast;
    tap.sources = embedRecord;
    tap.out = a.back[static_cast<size_t>(k - 1)].f;
    tap.lambda = a.lambda[0];
    tap.gain = tap.valueGain = s.headGain;
    tap.zGain = s.headGain / 4;
    tap.outUnit = s.unit;
    tap.padding = s.padding;
    tap.prior = prior;
    tap.read = s.read;
    QGPU_TRY(m0, buildTap(w, tap));
    a.heads[static_cast<size_t>(k - 1)] = m0;

    const Field& src = a.back[static_cast<size_t>(k - 1)].f;
    tap.layer = s.layer1;
    tap.head = (s.firstHead1 < 0 ? s.firstHead : s.firstHead1) + k - 1;
    tap.tap = 3;
    tap.sources.clear();
    for (int j = 0; j < src.dims; ++j) tap.sources.push_back(src.at(j));
    tap.out = a.back[static_cast<size_t>(k + 2)].f;
    tap.lambda = a.lambda[1];
    if (!s.secondLevel) continue;
    QGPU_TRY(m1, buildTap(w, tap));
    a.heads[static_cast<size_t>(k + 2)] = m1;
  }

  // Literals of token p−k (k = 0: the embedding itself).
  auto chunk = [&](int k, int j) {
    return k == 0 ? t.chunk.at(j) : a.back[static_cast<size_t>(k - 1)].chunk(j);
  };
  auto isChunk = [&](int k) {
    return k == 0 ? t.isChunk.at(0) : a.back[static_cast<size_t>(k - 1)].isChunk();
  };
  auto isTerminal = [&](int k) {
    return k == 0 ? t.isTerminal.at(0) : a.back[static_cast<size_t>(k - 1)].isTerminal();
  };
  auto runLiterals = [&](int m) {  // A_m
    std::vector<Literal> l = {{isTerminal(0), 1}};
    for (int k = 1; k < m; ++k) {
      l.push_back({isChunk(k), 1});
      l.push_back({isTerminal(k), -1});
    }
    return l;
  };
  auto bit = [&](int m, int i) {  // bit(m, i) as a literal dim
    const int k = i / trace::kChunkBits, j = i % trace::kChunkBits;
    return k < m ? chunk(k, j) : chunk(m - 1, trace::kChunkBits - 1);
  };

  AndGate g{t.ballast, a.lambda[2], s.mlpGain};
  UnitWriter units(w, s.layer1, s.firstUnit);
  if (!s.accumulateTwin) {  // Replace: the value field's pad is cancelled first
    const MlpContext cancel{t.ballast, a.lambda[2], 128, s.unit};
    QGPU_CHECK(buildCancel(units, a.value, cancel));
  }
  const double two = 2.0 * s.unit;
  std::vector<std::pair<int, double>> base;
  for (int i = 0; i < kValueBits; ++i) base.push_back({a.value.at(i), -s.unit});
  QGPU_CHECK(addAnd(units, g, {}, base));
  constexpr int kMaxLen = trace::kMaxValueChunks;
  for (int i = 0; i < kValueBits; ++i) {
    for (int m = 1; m <= kMaxLen; ++m) {
      std::vector<Literal> run = runLiterals(m);
      a.maxFanIn = std::max(a.maxFanIn, static_cast<int>(run.size()) + 1);
      if (m == 1 || bit(m, i) != bit(m - 1, i)) {
        std::vector<Literal> on = run;
        on.push_back({bit(m, i), 1});
        QGPU_CHECK(addAnd(units, g, on, {{a.value.at(i), two}}));
      }
      if (m >= 2 && bit(m, i) != bit(m - 1, i)) {
        std::vector<Literal> off = run;
        off.push_back({bit(m - 1, i), 1});
        QGPU_CHECK(addAnd(units, g, off, {{a.value.at(i), -two}}));
      }
    }
  }
  a.units = units.used();
  a.andOn = s.mlpGain * a.lambda[2] / 2;
  a.andOff = -a.andOn;
  return a;
}

Status AndFieldWriter::add(UnitWriter& units, std::vector<Literal> literals,
                          const std::vector<std::pair<int, double>>& outs) const {
  maxFanIn = std::max(maxFanIn, static_cast<int>(literals.size()));
  QGPU_TRY(wrote, addAnd(units, gate, std::move(literals), outs));
  (void)wrote;
  return Ok{};
}

Status AndFieldWriter::start(UnitWriter& units, const std::vector<Field>& fields) const {
  std::vector<std::pair<int, double>> base;
  for (const Field& f : fields) {
    QGPU_CHECK(buildCancel(units, f, cancel));
    for (int i = 0; i < f.dims; ++i) base.push_back({f.at(i), -unit});
  }
  return add(units, {}, base);
}

}  // namespace qgpu::circuit
