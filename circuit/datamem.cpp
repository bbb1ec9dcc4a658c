// qgpu/circuit/datamem.cpp — see datamem.h for the construction and its maths.
#include "circuit/datamem.h"

#include <algorithm>
#include <bit>
#include <string>

#include "circuit/logic.h"
#include "circuit/tap.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

Diag dataMemUsage(const std::string& message) {
  return makeDiag(ErrorKind::Usage, "data memory: " + message);
}

constexpr int kSpaces = 2;
const char* spaceName(int s) { return s == 0 ? "global" : "shared"; }

}  // namespace

DataMemoryShape dataMemoryShape() {
  DataMemoryShape s;
  s.lanes = machine::kLanes;
  s.words[static_cast<int>(machine::Space::Global)] = machine::kGlobalWords;
  s.words[static_cast<int>(machine::Space::Shared)] = machine::kSharedWords;
  const int most = std::max(machine::kGlobalWords, machine::kSharedWords);
  s.addrBits = std::bit_width(static_cast<unsigned>(most - 1));
  s.rows = 1 << s.addrBits;
  s.thresholds = 2 * s.lanes;
  return s;
}

std::array<int, 5> dataMemoryHeads(int banks, int spaces) {
  const DataMemoryShape sh = dataMemoryShape();
  return {3, 5, sh.thresholds, 1, spaces * sh.lanes * banks};
}

Expected<int> dataMemoryBanks(int64_t keyHeadDim, ReadHeight read) {
  auto plan = planOneRowRead(keyHeadDim, 256, read, 128);
  if (!plan.ok()) return plan.error();
  const int64_t cells = std::bit_floor(static_cast<uint64_t>(keyHeadDim / plan->keyRows));
  const int rows = dataMemoryShape().rows;
  if (cells < 2)
    return dataMemUsage("the key head dim " + std::to_string(keyHeadDim) + " holds no cells");
  return static_cast<int>(std::max<int64_t>(1, rows / cells));
}

Expected<DataMemory> buildDataMemory(CircuitWeights& w, FieldAllocator& alloc,
                                     const DataMemorySpec& s) {
  const model::Qwen35Config& c = w.config();
  const TokenLayout& t = s.tokens;
  DataMemory dm;
  dm.shape = dataMemoryShape();
  const DataMemoryShape& sh = dm.shape;
  const int L = s.layer0;
  for (int l = L; l < L + 5; ++l)
    if (l < 0 || l >= c.numLayers() ||
        c.layerTypes[static_cast<size_t>(l)] != model::LayerType::Linear)
      return dataMemUsage("layers " + std::to_string(L) + ".." + std::to_string(L + 4) +
                          " must be linear_attention layers of the config");
  if (!s.spaces[0] && !s.spaces[1]) return dataMemUsage("builds no space");
  for (int sp = 0; sp < kSpaces; ++sp) {
    const auto& keys = s.readAddr[static_cast<size_t>(sp)];
    if (!s.spaces[sp]) {
      if (!keys.empty())
        return dataMemUsage(std::string("read addresses for ") + spaceName(sp) +
                            " memory, which is not built");
      continue;
    }
    if (static_cast<int>(keys.size()) != sh.lanes)
      return dataMemUsage(std::string("needs one read address per lane for ") + spaceName(sp) +
                          " memory");
    for (const Field& k : keys)
      if (k.dims != sh.addrBits + 1)
        return dataMemUsage("a read address needs " + std::to_string(sh.addrBits + 1) +
                            " dims (the word index, then high)");
  }
  QGPU_TRY(banks, dataMemoryBanks(c.linearKeyHeadDim, s.read));
  dm.banks = banks;
  const int spaces = (s.spaces[0] ? 1 : 0) + (s.spaces[1] ? 1 : 0);
  const std::array<int, 5>& fh = s.firstHead;
  const std::array<int, 5> own = dataMemoryHeads(banks, spaces);
  int heads = 0;
  for (size_t i = 0; i < own.size(); ++i) heads = std::max(heads, fh[i] + own[i]);
  if (c.linearNumValueHeads < heads || c.linearNumKeyHeads != c.linearNumValueHeads)
    return dataMemUsage("needs " + std::to_string(heads) +
                        " value heads per layer, each with its own "
                        "key head; the config has " +
                        std::to_string(c.linearNumValueHeads) + " / " +
                        std::to_string(c.linearNumKeyHeads));
  if (t.hidden != c.hiddenSize || t.lambda != 1.0)
    return dataMemUsage("the token layout must be the full layout (λ = 1) of this hidden size");

  AssemblerSpec as;
  as.tokens = t;
  as.layer0 = L;
  as.layer1 = L + 1;
  as.firstHead = fh[0];
  as.firstHead1 = fh[1];
  as.firstUnit = s.firstUnit[1];
  as.headGain = s.headGain;
  as.mlpGain = 2 * s.mlpGain;
  as.unit = t.unit;
  QGPU_TRY(assembler, buildAssembler(w, alloc, as));
  dm.assembler = assembler;
  dm.unitsUsed[1] = assembler.units;
  dm.headsUsed[0] = 3;

  QGPU_TRY(tag, alloc.take("dm.tag", 1));
  QGPU_TRY(tagLatch, alloc.take("dm.tagLatch", 8));
  QGPU_TRY(quiet, alloc.take("dm.quiet", 3));
  QGPU_TRY(heavy, alloc.take("dm.heavy", 1));
  QGPU_TRY(atLeast, alloc.take("dm.atLeast", sh.thresholds));
  QGPU_TRY(addrEnable, alloc.take("dm.addrEnable", 1));
  QGPU_TRY(write, alloc.take("dm.write", 2));
  QGPU_TRY(addrLatch, alloc.take("dm.addrLatch", 8));
  dm.tag = tag;
  dm.tagLatch = tagLatch;
  dm.quiet = quiet;
  dm.heavy = heavy;
  dm.atLeast = atLeast;
  dm.addrEnable = addrEnable;
  dm.write = write;
  dm.addrLatch = addrLatch;
  dm.writeKey = addrLatch.slice(0, sh.addrBits);
  for (int sp = 0; sp < kSpaces; ++sp) {
    if (!s.spaces[sp]) continue;
    for (int l = 0; l < sh.lanes; ++l) {
      QGPU_TRY(o, alloc.take(std::string("dm.") + spaceName(sp) + ".out" + std::to_string(l),
                             sh.wordBits));
      QGPU_TRY(f, alloc.take(std::string("dm.") + spaceName(sp) + ".fault" + std::to_string(l), 1));
      dm.out[static_cast<size_t>(sp)].push_back(o);
      dm.fault[static_cast<size_t>(sp)].push_back(f);
    }
  }

  // The trace rows: quiet dims 0, the heavy pad 2u (Σx² as in the full layout, counter.h).
  const std::string embed = w.globalTensor("embed_tokens.weight");
  for (int id = 0; id < trace::kVocabSize; ++id) {
    for (int q = 0; q < quiet.dims; ++q) QGPU_CHECK(w.set(embed, t.rowOffset + id, quiet.at(q), 0));
    QGPU_CHECK(w.set(embed, t.rowOffset + id, heavy.at(0), 2 * t.unit));
  }

  const MlpContext ctx{t.ballast, t.lambda, s.mlpGain, t.unit};
  const AndGate g{t.ballast, t.lambda, 2 * s.mlpGain};
  const int T = t.isTerminal.at(0);

  // Layer L's MLP: tag = a family token other than a value chunk.
  {
    UnitWriter units(w, L, s.firstUnit[0]);
    QGPU_CHECK(buildCancel(units, tag, ctx));
    QGPU_CHECK(addConstant(units, ctx, {{tag.at(0), -1}}));
    // Σ over the families but C and T of x̂_f: 2 − F' on such a token, −F' on a chunk or a
    // token of no family (a probe).
    LinearForm n;
    for (int f = 0; f < trace::kNumFamilies; ++f) {
      const auto fam = static_cast<trace::Family>(f);
      if (fam != trace::Family::C && fam != trace::Family::T) n.terms.push_back({t.family.at(f), 1.0});
    }
    n.constant = static_cast<double>(n.terms.size()) - 1;
    QGPU_CHECK(addDetector(units, ctx, n, {{t.ballast.at(0), 1.0f}}, {{tag.at(0), 2}}));
    dm.unitsUsed[0] = units.used();
  }

  // Layer L+1: the tag latch (head 3) and the counter (head 4).
  {
    LatchSpec ls;
    ls.layer = L + 1;
    ls.head = fh[1] + 3;
    ls.ballast = t.ballast;
    ls.enable = tag.at(0);
    ls.sources = {t.ballast.at(0), t.ballast.at(0), t.ballast.at(0), t.ballast.at(0),
                  familyDim(t, trace::Family::Gmem), familyDim(t, trace::Family::Gw),
                  familyDim(t, trace::Family::Mg), familyDim(t, trace::Family::Ms)};
    ls.out = tagLatch;
    ls.gain = ls.valueGain = s.headGain;
    ls.zGain = s.headGain / 4;
    ls.outUnit = t.unit;
    QGPU_TRY(lm, buildLatch(w, ls));
    dm.latch = lm;
    EventCounterSpec cs;
    cs.layer = L + 1;
    cs.head = fh[1] + 4;
    cs.ballast = t.ballast;
    cs.event = T;
    cs.reset = tag.at(0);
    cs.quiet = quiet.at(0);
    cs.unit = t.unit;
    cs.gain = s.headGain;
    QGPU_TRY(cm, buildEventCounter(w, cs));
    dm.counter = cm;
    dm.headsUsed[1] = 5;
  }

  // Layer L+2: thresholds, then the enables.
  {
    ThresholdSpec ts;
    ts.layer = L + 2;
    ts.head = fh[2];
    ts.ballast = t.ballast;
    ts.quiet = quiet.at(0);
    ts.levelExp = EventCounterSpec{}.levelExp;
    ts.unit = t.unit;
    ts.gain = s.headGain;
    ts.zGain = s.headGain / 4;
    QGPU_TRY(tm, buildThresholds(w, ts, atLeast));
    dm.threshold = tm;
  }
  dm.headsUsed[2] = sh.thresholds;
  {
    UnitWriter units(w, L + 2, s.firstUnit[2]);
    QGPU_CHECK(buildCancel(units, addrEnable, ctx));
    QGPU_CHECK(buildCancel(units, write, ctx));
    QGPU_CHECK(addAnd(units, g, {}, {{addrEnable.at(0), -t.unit}, {write.at(0), -t.unit},
                                     {write.at(1), -t.unit}}));
    // The latch holds X: X's flag +1 and one other −1 (the empty latch has every flag +1).
    const int gmem = tagLatch.at(4), gw = tagLatch.at(5), mg = tagLatch.at(6), ms = tagLatch.at(7);
    auto rank = [&](std::vector<Literal>& lits, int j) {  // the j-th value (0-based): n = j + 1
      lits.push_back({atLeast.at(j), 1});
      if (j + 1 < sh.thresholds) lits.push_back({atLeast.at(j + 1), -1});
    };
    const std::pair<int, double> toAddr = {addrEnable.at(0), 2.0 * t.unit};
    const std::pair<int, double> toGlobal = {write.at(0), 2.0 * t.unit};
    const std::pair<int, double> toShared = {write.at(1), 2.0 * t.unit};
    QGPU_CHECK(addAnd(units, g, {{T, 1}, {gmem, 1}, {gw, -1}}, {toAddr}));
    QGPU_CHECK(addAnd(units, g, {{T, 1}, {gw, 1}, {gmem, -1}}, {toGlobal}));
    const int shift = s.twin == DataMemoryTwin::PairShift ? 1 : 0;
    for (int k = 0; k < sh.lanes; ++k) {
      const int word = 2 * k + shift, value = 2 * k + 1 + shift;
      for (int space = 0; space < kSpaces; ++space) {
        const int self = space == 0 ? mg : ms, other = space == 0 ? ms : mg;
        if (word < sh.thresholds) {
          std::vector<Literal> a = {{T, 1}, {self, 1}, {other, -1}};
          rank(a, word);
          QGPU_CHECK(addAnd(units, g, a, {toAddr}));
        }
        if (value < sh.thresholds) {
          std::vector<Literal> v = {{T, 1}, {self, 1}, {other, -1}};
          rank(v, value);
          QGPU_CHECK(addAnd(units, g, v, {space == 0 ? toGlobal : toShared}));
        }
      }
    }
    dm.unitsUsed[2] = units.used();
  }

  // Layer L+3: the address latch.
  {
    LatchSpec ls;
    ls.layer = L + 3;
    ls.head = fh[3];
    ls.ballast = t.ballast;
    ls.enable = addrEnable.at(0);
    for (int i = 0; i < sh.addrBits; ++i) ls.sources.push_back(dm.assembler.value.at(i));
    while (static_cast<int>(ls.sources.size()) < addrLatch.dims) ls.sources.push_back(t.ballast.at(0));
    ls.out = addrLatch;
    ls.gain = ls.valueGain = s.headGain;
    ls.zGain = s.headGain / 4;
    ls.outUnit = t.unit;
    QGPU_CHECK(buildLatch(w, ls));
    dm.headsUsed[3] = 1;
  }

  // Layer L+4: the memory heads, the polarity flip and the fault bits.
  {
    UnitWriter units(w, L + 4, s.firstUnit[4]);
    MemorySpec m;
    m.layer = L + 4;
    m.ballast = t.ballast;
    m.writeAddr = dm.writeKey;
    m.value = dm.assembler.value;
    m.lambda = t.lambda;
    m.gain = s.headGain;
    m.outUnit = t.unit;
    m.noWrite = NoWrite::ZeroKey;
    m.readout = MemoryReadout::PadInverted;
    m.read = s.read;
    m.banks = banks;
    int head = fh[4];
    for (int sp = 0; sp < kSpaces; ++sp) {
      if (!s.spaces[sp]) continue;
      m.writeEnable = write.slice(sp, 1);
      m.reset = sp == static_cast<int>(machine::Space::Shared) && s.twin != DataMemoryTwin::NoCtaClear
                    ? Field{"cta", familyDim(t, trace::Family::Cta), 1}
                    : Field{};
      const int words = sh.words[sp];
      for (int l = 0; l < sh.lanes; ++l) {
        const Field& key = s.readAddr[static_cast<size_t>(sp)][static_cast<size_t>(l)];
        m.head = head;
        head += banks;
        m.readAddr = key.slice(0, sh.addrBits);
        m.out = dm.out[static_cast<size_t>(sp)][static_cast<size_t>(l)];
        QGPU_TRY(mm, buildMemory(w, m));
        dm.memoryHead = mm;
        for (int i = 0; i < m.out.dims; ++i)
          QGPU_CHECK(addDetector(units, ctx, LinearForm{{}, 1.0}, {{m.out.at(i), 1.0f}},
                                 {{m.out.at(i), -2}}));
        // fault = high ∨ [word ≥ words]: exclusive ANDs (high; ¬high ∧ the word's bits above i
        // equal to words' and bit i set where words has a 0; ¬high ∧ word = words).
        const int f = dm.fault[static_cast<size_t>(sp)][static_cast<size_t>(l)].at(0);
        const int high = key.at(sh.addrBits);
        QGPU_CHECK(buildCancel(units, Field{"fault", f, 1}, ctx));
        QGPU_CHECK(addAnd(units, g, {}, {{f, -t.unit}}));
        QGPU_CHECK(addAnd(units, g, {{high, 1}}, {{f, 2.0 * t.unit}}));
        int ands = 1;
        if (words < sh.rows) {
          for (int i = sh.addrBits - 1; i >= -1; --i) {
            if (i >= 0 && ((words >> i) & 1)) continue;
            std::vector<Literal> lits = {{high, -1}};
            for (int j = sh.addrBits - 1; j > i; --j)
              lits.push_back({key.at(j), (words >> j) & 1 ? 1 : -1});
            if (i >= 0) lits.push_back({key.at(i), 1});  // i = −1: the equality
            QGPU_CHECK(addAnd(units, g, lits, {{f, 2.0 * t.unit}}));
            ++ands;
          }
        }
        dm.faultAnds = ands;
      }
    }
    dm.headsUsed[4] = head - fh[4];
    dm.unitsUsed[4] = units.used();
  }
  return dm;
}

}  // namespace qgpu::circuit
