// qgpu/circuit/regfile.cpp — see regfile.h for the construction and its maths.
#include "circuit/regfile.h"

#include <bit>
#include <string>
#include <utility>
#include <vector>

#include "circuit/tap.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

Diag regFileUsage(const std::string& message) {
  return makeDiag(ErrorKind::Usage, "register file: " + message);
}

// The record tags: a value after one of these belongs to that record (docs/trace.md grammar).
constexpr trace::Family kRecordTags[] = {trace::Family::Wr, trace::Family::Wu, trace::Family::Wp,
                                         trace::Family::Mg, trace::Family::Ms, trace::Family::Nop};

}  // namespace

RegisterFileShape registerFileShape() {
  static_assert(std::has_single_bit(static_cast<unsigned>(machine::kRegs)) &&
                    std::has_single_bit(static_cast<unsigned>(machine::kMaxWarps)),
                "the register heads' one-hot keys address powers of two");
  RegisterFileShape s;
  s.lanes = machine::kLanes;
  s.regBits = std::countr_zero(static_cast<unsigned>(machine::kRegs));
  s.warpBits = std::countr_zero(static_cast<unsigned>(machine::kMaxWarps));
  s.keyBits = s.regBits + s.warpBits;
  s.rows = 1 << s.keyBits;
  s.writtenRows = machine::kMaxWarps * trace::kWritableRegs;
  s.thresholds = s.lanes + 1;
  return s;
}

std::vector<uint32_t> registerIndexTable() {
  const RegisterFileShape s = registerFileShape();
  std::vector<uint32_t> table(size_t{1} << tokenIndexBits(), 0);
  for (size_t p = 0; p < table.size(); ++p) {
    const int idx = static_cast<int>(p);
    uint32_t word = 0;
    if (idx < machine::kMaxWarps * trace::kLaneMasks) {  // WM(w,m): p = 15w + m − 1
      const uint32_t w = static_cast<uint32_t>(idx / trace::kLaneMasks);
      const uint32_t m = static_cast<uint32_t>(idx % trace::kLaneMasks + 1);
      word |= w | m << s.warpBits;
    }
    if (idx < trace::kWritableRegs)  // WR(r), WU(r): p = r − 1
      word |= static_cast<uint32_t>(idx + 1) << (s.warpBits + s.lanes);
    table[p] = word;
  }
  return table;
}

Expected<RegisterFile> buildRegisterFile(CircuitWeights& w, FieldAllocator& alloc,
                                         const RegisterFileSpec& s) {
  const model::Qwen35Config& c = w.config();
  const TokenLayout& t = s.tokens;
  RegisterFile rf;
  rf.shape = registerFileShape();
  const RegisterFileShape& sh = rf.shape;
  const int L = s.layer0;
  const int R = s.readLayer < 0 ? L + 3 : s.readLayer;
  if (R < L + 3)
    return regFileUsage("the register heads' layer " + std::to_string(R) + " must be at least " +
                        std::to_string(L + 3));
  for (int l = L; l <= R; ++l)
    if (l < 0 || l >= c.numLayers() ||
        c.layerTypes[static_cast<size_t>(l)] != model::LayerType::Linear)
      return regFileUsage("layers " + std::to_string(L) + ".." + std::to_string(R) +
                          " must be linear_attention layers of the config");
  if (s.ports < 1 || s.ports > sh.maxPorts)
    return regFileUsage("ports must be 1.." + std::to_string(sh.maxPorts) + ", not " +
                        std::to_string(s.ports));
  if (static_cast<int>(s.readKey.size()) != s.ports)
    return regFileUsage("needs one read key per port");
  for (const Field& k : s.readKey)
    if (k.dims != sh.keyBits)
      return regFileUsage("a read key needs " + std::to_string(sh.keyBits) +
                          " dims (register, warp)");
  const int heads = std::max(6, s.ports * sh.lanes);
  if (c.linearNumValueHeads < heads || c.linearNumKeyHeads != c.linearNumValueHeads)
    return regFileUsage("needs " + std::to_string(heads) +
                        " value heads per layer, each with its own "
                        "key head; the config has " +
                        std::to_string(c.linearNumValueHeads) + " / " +
                        std::to_string(c.linearNumKeyHeads));
  if (c.linearKeyHeadDim < sh.rows)
    return regFileUsage("the key head dim " + std::to_string(c.linearKeyHeadDim) + " cannot hold " +
                        std::to_string(sh.rows) + " register rows");
  if (t.hidden != c.hiddenSize || t.lambda != 1.0)
    return regFileUsage("the token layout must be the full layout (λ = 1) of this hidden size");

  // Layers L, L+1: the assembler (heads 0..2 in both, L+1's MLP).
  AssemblerSpec as;
  as.tokens = t;
  as.layer0 = L;
  as.layer1 = L + 1;
  as.headGain = s.headGain;
  as.mlpGain = 2 * s.mlpGain;
  as.unit = t.unit;
  QGPU_TRY(assembler, buildAssembler(w, alloc, as));
  rf.assembler = assembler;
  rf.unitsUsed[1] = assembler.units;
  rf.headsUsed[0] = 3;

  QGPU_TRY(decoded, alloc.take("rf.decoded", sh.warpBits + sh.lanes + sh.regBits));
  QGPU_TRY(recordTag, alloc.take("rf.recordTag", 1));
  QGPU_TRY(latches, alloc.take("rf.latches", 16));
  QGPU_TRY(quiet, alloc.take("rf.quiet", 3));
  QGPU_TRY(heavy, alloc.take("rf.heavy", 1));
  QGPU_TRY(atLeast, alloc.take("rf.atLeast", sh.thresholds));
  QGPU_TRY(enable, alloc.take("rf.enable", sh.lanes));
  rf.decoded = decoded;
  rf.recordTag = recordTag;
  rf.tagLatch = latches.slice(0, 8);
  rf.wmLatch = latches.slice(8, 8);
  rf.writeKey = latches.slice(4, sh.keyBits);  // tag latch's r, then the WM latch's w
  rf.quiet = quiet;
  rf.heavy = heavy;
  rf.atLeast = atLeast;
  rf.enable = enable;
  for (int p = 0; p < s.ports; ++p) {
    std::array<Field, 4> lanes;
    for (int l = 0; l < sh.lanes; ++l) {
      QGPU_TRY(f, alloc.take("rf.operand" + std::to_string(p) + "." + std::to_string(l),
                             sh.wordBits));
      lanes[static_cast<size_t>(l)] = f;
    }
    rf.operand.push_back(lanes);
  }

  // The trace rows: quiet dims 0, the heavy pad 2u (Σx² as in the full layout, counter.h).
  const std::string embed = w.globalTensor("embed_tokens.weight");
  for (int id = 0; id < trace::kVocabSize; ++id) {
    for (int q = 0; q < quiet.dims; ++q) QGPU_CHECK(w.set(embed, t.rowOffset + id, quiet.at(q), 0));
    QGPU_CHECK(w.set(embed, t.rowOffset + id, heavy.at(0), 2 * t.unit));
  }

  const MlpContext ctx{t.ballast, t.lambda, s.mlpGain, t.unit};
  const Field decW = decoded.slice(0, sh.warpBits), decM = decoded.slice(sh.warpBits, sh.lanes);
  const Field decR = decoded.slice(sh.warpBits + sh.lanes, sh.regBits);

  // Layer L's MLP: the index decode and the record-tag detector.
  {
    UnitWriter units(w, L);
    LookupSpec lk;
    lk.in = t.index;
    lk.out = decoded;
    lk.table = registerIndexTable();
    lk.prior = Prior::Replace;
    QGPU_CHECK(buildLookup(units, lk, ctx));
    QGPU_CHECK(buildCancel(units, recordTag, ctx));
    QGPU_CHECK(addConstant(units, ctx, {{recordTag.at(0), -1}}));
    // Family one-hot: Σ_{f ∈ tags} x̂_f = 2 − |tags| on a tag, −|tags| elsewhere.
    LinearForm n;
    for (trace::Family f : kRecordTags) n.terms.push_back({familyDim(t, f), 1.0});
    n.constant = static_cast<double>(std::size(kRecordTags)) - 1;
    QGPU_CHECK(addDetector(units, ctx, n, {{t.ballast.at(0), 1.0f}}, {{recordTag.at(0), 2}}));
    rf.unitsUsed[0] = units.used();
  }

  // Layer L+1: the latches and the counter (heads 3..5, after the assembler's taps).
  {
    std::vector<int> tagSources = {t.ballast.at(0), t.ballast.at(0), familyDim(t, trace::Family::Wr),
                                   familyDim(t, trace::Family::Wu)};
    for (int i = 0; i < sh.regBits; ++i) tagSources.push_back(decR.at(i));
    QGPU_TRY(tm, buildLatch(w, tokenLatch(t, s.headGain, L + 1, 3, recordTag.at(0),
                                           std::move(tagSources), rf.tagLatch)));
    rf.latch = tm;
    std::vector<int> wmSources;
    for (int i = 0; i < sh.warpBits; ++i) wmSources.push_back(decW.at(i));
    for (int i = 0; i < sh.lanes; ++i) wmSources.push_back(decM.at(i));
    wmSources.push_back(t.ballast.at(0));
    wmSources.push_back(t.ballast.at(0));
    QGPU_CHECK(buildLatch(w, tokenLatch(t, s.headGain, L + 1, 4, familyDim(t, trace::Family::Wm),
                                        std::move(wmSources), rf.wmLatch)));
    EventCounterSpec cs;
    cs.layer = L + 1;
    cs.head = 5;
    cs.ballast = t.ballast;
    cs.event = t.isTerminal.at(0);
    cs.reset = recordTag.at(0);
    cs.quiet = quiet.at(0);
    cs.unit = t.unit;
    cs.gain = s.headGain;
    QGPU_TRY(cm, buildEventCounter(w, cs));
    rf.counter = cm;
    rf.headsUsed[1] = 6;
  }

  // Layer L+2: thresholds, then the write enables.
  {
    ThresholdSpec ts;
    ts.layer = L + 2;
    ts.head = 0;
    ts.ballast = t.ballast;
    ts.quiet = quiet.at(0);
    ts.levelExp = EventCounterSpec{}.levelExp;
    ts.unit = t.unit;
    ts.gain = s.headGain;
    ts.zGain = s.headGain / 4;
    QGPU_TRY(tm, buildThresholds(w, ts, atLeast));
    rf.threshold = tm;
  }
  rf.headsUsed[2] = sh.thresholds;
  {
    UnitWriter units(w, L + 2);
    QGPU_CHECK(buildCancel(units, enable, ctx));
    std::vector<std::pair<int, double>> base;
    for (int l = 0; l < sh.lanes; ++l) base.push_back({enable.at(l), -t.unit});
    const AndGate g{t.ballast, t.lambda, 2 * s.mlpGain};
    QGPU_CHECK(addAnd(units, g, {}, base));
    const int isWR = rf.tagLatch.at(2), isWU = rf.tagLatch.at(3);
    const Field mask = rf.wmLatch.slice(sh.warpBits, sh.lanes);
    const int T = t.isTerminal.at(0);
    // [n ≥ N] as a literal; N past the last threshold is never true (no value has that rank).
    auto rank = [&](std::vector<Literal>& lits, int k) {  // n = k + 1
      lits.push_back({atLeast.at(k), 1});
      if (k + 1 < sh.thresholds) lits.push_back({atLeast.at(k + 1), -1});
    };
    for (int l = 0; l < sh.lanes; ++l) {
      const std::pair<int, double> out = {enable.at(l), 2.0 * t.unit};
      for (uint32_t lower = 0; lower < (1u << l); ++lower) {
        std::vector<Literal> lits = {{T, 1}, {isWR, 1}, {isWU, -1}, {mask.at(l), 1}};
        for (int j = 0; j < l; ++j) lits.push_back({mask.at(j), (lower >> j) & 1 ? 1 : -1});
        int k = std::popcount(lower);
        if (s.twin == RegisterFileTwin::RankOffByOne) ++k;  // lane l's own bit counted
        if (k >= sh.thresholds) continue;
        rank(lits, k);
        rf.maxAndLiterals = std::max(rf.maxAndLiterals, static_cast<int>(lits.size()));
        QGPU_CHECK(addAnd(units, g, lits, {out}));
      }
      std::vector<Literal> wu = {{T, 1}, {isWU, 1}, {isWR, -1}, {mask.at(l), 1}};
      rank(wu, 0);
      QGPU_CHECK(addAnd(units, g, wu, {out}));
    }
    rf.unitsUsed[2] = units.used();
  }

  // Layer L+3: the register heads (port p, lane l: head 4p + l) and the polarity flip.
  {
    MemorySpec m;
    m.layer = R;
    m.ballast = t.ballast;
    m.writeAddr = rf.writeKey;
    m.value = rf.assembler.value;
    m.reset = s.twin == RegisterFileTwin::NoReset ? Field{}
                                                  : Field{"cta", familyDim(t, trace::Family::Cta), 1};
    m.lambda = t.lambda;
    m.gain = s.headGain;
    m.outUnit = t.unit;
    m.noWrite = NoWrite::ZeroKey;
    m.readout = MemoryReadout::PadInverted;
    // One-row cells, exact at any dk with the norm rail (memory.h "Key head dim").
    m.read = s.twin == RegisterFileTwin::NominalRead ? ReadHeight::Nominal : ReadHeight::NormRail;
    UnitWriter units(w, R);
    for (int p = 0; p < s.ports; ++p)
      for (int l = 0; l < sh.lanes; ++l) {
        m.head = p * sh.lanes + l;
        m.writeEnable = enable.slice(l, 1);
        m.readAddr = s.readKey[static_cast<size_t>(p)];
        m.out = rf.operand[static_cast<size_t>(p)][static_cast<size_t>(l)];
        QGPU_TRY(mm, buildMemory(w, m));
        rf.registerHead = mm;
        // x → −x in place: an always-on linear unit adding −2u·x̂.
        for (int i = 0; i < m.out.dims; ++i)
          QGPU_CHECK(addDetector(units, ctx, LinearForm{{}, 1.0}, {{m.out.at(i), 1.0f}},
                                 {{m.out.at(i), -2}}));
      }
    rf.headsUsed[3] = s.ports * sh.lanes;
    rf.unitsUsed[3] = units.used();
  }
  return rf;
}

}  // namespace qgpu::circuit
