// qgpu/circuit/predfile.cpp — see predfile.h for the construction and its maths.
#include "circuit/predfile.h"

#include <algorithm>
#include <bit>
#include <string>

#include "circuit/logic.h"
#include "circuit/tap.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

Diag predFileUsage(const std::string& message) {
  return makeDiag(ErrorKind::Usage, "predicate file: " + message);
}

// The record tags (docs/trace.md grammar): a value after one of these belongs to its record.
constexpr trace::Family kRecordTags[] = {trace::Family::Wr, trace::Family::Wu, trace::Family::Wp,
                                         trace::Family::Mg, trace::Family::Ms, trace::Family::Nop};
// Block entry and CTA start: predicates are unset after either (docs/machine.md §4).
constexpr trace::Family kResetTags[] = {trace::Family::Ex, trace::Family::Cta};

// dim ← +u iff the token's family is one of `fams`, else −u (the dim is cancelled first).
template <size_t N>
Status familyDetector(UnitWriter& units, const MlpContext& ctx, const TokenLayout& t, int dim,
                      const trace::Family (&fams)[N]) {
  QGPU_CHECK(buildCancel(units, Field{"det", dim, 1}, ctx));
  QGPU_CHECK(addConstant(units, ctx, {{dim, -1}}));
  // Σ_{f ∈ fams} x̂_f = 2 − N on one of them (a one-hot sign field), −N on any other token.
  LinearForm n;
  for (trace::Family f : fams) n.terms.push_back({familyDim(t, f), 1.0});
  n.constant = static_cast<double>(N) - 1;
  QGPU_CHECK(addDetector(units, ctx, n, {{t.ballast.at(0), 1.0f}}, {{dim, 2}}));
  return Ok{};
}

}  // namespace

PredicateFileShape predicateFileShape() {
  static_assert(std::has_single_bit(static_cast<unsigned>(machine::kPreds)),
                "the predicate heads' one-hot keys address a power of two");
  PredicateFileShape s;
  s.lanes = machine::kLanes;
  s.preds = machine::kPreds;
  s.predBits = std::countr_zero(static_cast<unsigned>(machine::kPreds));
  return s;
}

Expected<PredicateFile> buildPredicateFile(CircuitWeights& w, FieldAllocator& alloc,
                                           const PredicateFileSpec& s) {
  const model::Qwen35Config& c = w.config();
  const TokenLayout& t = s.tokens;
  PredicateFile pf;
  pf.shape = predicateFileShape();
  const PredicateFileShape& sh = pf.shape;
  const int L = s.layer0;
  const int R = s.shared ? s.shared->readLayer : L + 2;
  if (R < L + 2)
    return predFileUsage("the predicate heads' layer " + std::to_string(R) + " must be at least " +
                         std::to_string(L + 2));
  for (int l = L; l <= R; ++l)
    if (l < 0 || l >= c.numLayers() ||
        c.layerTypes[static_cast<size_t>(l)] != model::LayerType::Linear)
      return predFileUsage("layers " + std::to_string(L) + ".." + std::to_string(R) +
                           " must be linear_attention layers of the config");
  if (s.ports < 1 || s.ports > sh.maxPorts)
    return predFileUsage("ports must be 1.." + std::to_string(sh.maxPorts) + ", not " +
                         std::to_string(s.ports));
  if (static_cast<int>(s.readKey.size()) != s.ports)
    return predFileUsage("needs one read key per port");
  for (const Field& k : s.readKey)
    if (k.dims != sh.predBits)
      return predFileUsage("a read key needs " + std::to_string(sh.predBits) +
                           " dims (the predicate)");
  const int latchHead = s.shared ? s.shared->latchHead : 3;
  const int readHead = s.shared ? s.shared->readHead : 0;
  const int heads = std::max(latchHead + 1, readHead + s.ports);
  if (c.linearNumValueHeads < heads || c.linearNumKeyHeads != c.linearNumValueHeads)
    return predFileUsage("needs " + std::to_string(heads) +
                         " value heads per layer, each with its own "
                         "key head; the config has " +
                         std::to_string(c.linearNumValueHeads) + " / " +
                         std::to_string(c.linearNumKeyHeads));
  if (t.hidden != c.hiddenSize || t.lambda != 1.0)
    return predFileUsage("the token layout must be the full layout (λ = 1) of this hidden size");
  if (t.index.dims < sh.predBits) return predFileUsage("the token index has too few bits for p");

  if (s.shared) {
    pf.assembler = s.shared->assembler;
  } else {
    AssemblerSpec as;
    as.tokens = t;
    as.layer0 = L;
    as.layer1 = L + 1;
    as.headGain = s.headGain;
    as.mlpGain = 2 * s.mlpGain;
    as.unit = t.unit;
    QGPU_TRY(assembler, buildAssembler(w, alloc, as));
    pf.assembler = assembler;
    pf.headsUsed[0] = 3;
  }
  const Assembler& assembler = pf.assembler;
  const std::array<int, 3> first = s.shared ? s.shared->firstUnit : std::array<int, 3>{0, assembler.units, 0};

  Field recordTag;
  if (s.shared) {
    recordTag = s.shared->recordTag;
  } else {
    QGPU_TRY(own, alloc.take("pf.recordTag", 1));
    recordTag = own;
  }
  QGPU_TRY(reset, alloc.take("pf.reset", 1));
  QGPU_TRY(latch, alloc.take("pf.tagLatch", 8));
  QGPU_TRY(enable, alloc.take("pf.enable", 1));
  pf.recordTag = recordTag;
  pf.reset = reset;
  pf.tagLatch = latch;
  pf.writeKey = latch.slice(5, sh.predBits);
  pf.enable = enable;
  for (int p = 0; p < s.ports; ++p) {
    QGPU_TRY(o, alloc.take("pf.out" + std::to_string(p), sh.valueBits));
    pf.out.push_back(o);
    pf.bits.push_back(o.slice(0, sh.lanes));
  }

  const MlpContext ctx{t.ballast, t.lambda, s.mlpGain, t.unit};

  // Layer L's MLP: the record-tag and reset detectors.
  {
    UnitWriter units(w, L, first[0]);
    if (!s.shared) QGPU_CHECK(familyDetector(units, ctx, t, recordTag.at(0), kRecordTags));
    QGPU_CHECK(familyDetector(units, ctx, t, reset.at(0), kResetTags));
    pf.unitsUsed[0] = units.used();
  }

  // Layer L+1: the tag latch (head 3, or the host's), then the write enable after the
  // assembler's (or the host's) units.
  {
    std::vector<int> sources = {t.ballast.at(0), t.ballast.at(0), t.ballast.at(0),
                                familyDim(t, trace::Family::Wp), familyDim(t, trace::Family::Wr)};
    for (int i = 0; i < sh.predBits; ++i) sources.push_back(t.index.at(i));
    QGPU_TRY(lm, buildLatch(w, tokenLatch(t, s.headGain, L + 1, latchHead, recordTag.at(0),
                                           std::move(sources), latch)));
    pf.latch = lm;
    pf.headsUsed[1] = s.shared ? 1 : 4;

    UnitWriter units(w, L + 1, first[1]);
    QGPU_CHECK(buildCancel(units, enable, ctx));
    const AndGate g{t.ballast, t.lambda, 2 * s.mlpGain};
    QGPU_CHECK(addAnd(units, g, {}, {{enable.at(0), -t.unit}}));
    std::vector<Literal> lits = {{t.isTerminal.at(0), 1}};
    if (s.twin != PredicateFileTwin::AnyValue) {
      lits.push_back({latch.at(3), 1});   // isWP
      lits.push_back({latch.at(4), -1});  // ¬isWR: refuses the empty latch's pad
    }
    QGPU_CHECK(addAnd(units, g, lits, {{enable.at(0), 2.0 * t.unit}}));
    pf.unitsUsed[1] = (s.shared ? 0 : assembler.units) + units.used();
  }

  // The read layer (L+2, or the host's): the predicate heads (head = readHead + port) and the
  // polarity flip.
  {
    MemorySpec m;
    m.layer = R;
    m.ballast = t.ballast;
    m.writeEnable = enable;
    m.writeAddr = pf.writeKey;
    m.value = pf.assembler.value.slice(0, sh.valueBits);
    m.reset = s.twin == PredicateFileTwin::CtaOnly ? Field{"cta", familyDim(t, trace::Family::Cta), 1}
                                                   : reset;
    m.lambda = t.lambda;
    m.gain = s.headGain;
    m.outUnit = t.unit;
    m.noWrite = NoWrite::ZeroKey;
    m.readout = MemoryReadout::PadInverted;
    m.read = s.read;
    UnitWriter units(w, R, first[2]);
    for (int p = 0; p < s.ports; ++p) {
      m.head = readHead + p;
      m.readAddr = s.readKey[static_cast<size_t>(p)];
      m.out = pf.out[static_cast<size_t>(p)];
      QGPU_TRY(mm, buildMemory(w, m));
      pf.predicateHead = mm;
      for (int i = 0; i < m.out.dims; ++i)
        QGPU_CHECK(addDetector(units, ctx, LinearForm{{}, 1.0}, {{m.out.at(i), 1.0f}},
                               {{m.out.at(i), -2}}));
    }
    pf.headsUsed[2] = s.ports;
    pf.unitsUsed[2] = units.used();
  }
  return pf;
}

}  // namespace qgpu::circuit
