// qgpu/circuit/result_stage.cpp — see result_stage.h for the maths.
#include "circuit/result_stage.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>
#include <vector>

#include "circuit/assembler.h"
#include "circuit/logic.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

constexpr int kWord = 32;

// The head word's fields by their names in oracle/trace.cpp's table.
Expected<Field> resultHeadField(const Field& head, const char* name, int width) {
  return packedSlice(head, trace::PackedWord::OpHead, name, width, "result stage");
}

}  // namespace

Expected<ResultStage> buildResultStage(CircuitWeights& w, FieldAllocator& alloc,
                                       const ResultStageSpec& s) {
  const model::Qwen35Config& c = w.config();
  const TokenLayout& t = s.tokens;
  const int F = s.firstLayer;
  if (F < 0 || F + kResultStageLayers > c.numLayers())
    return makeDiag(ErrorKind::Usage, "result stage: needs layers " + std::to_string(F) + ".." +
                                          std::to_string(F + kResultStageLayers - 1) +
                                          ", the config has " + std::to_string(c.numLayers()));
  if (s.head.dims != kWord || s.mask.dims != kRecordLanes)
    return makeDiag(ErrorKind::Usage, "result stage: the head word needs 32 dims (has " +
                                          std::to_string(s.head.dims) + "), the mask 4 (has " +
                                          std::to_string(s.mask.dims) + ")");
  for (int l = 0; l < kRecordLanes; ++l) {
    const ResultLane& x = s.lanes[static_cast<size_t>(l)];
    if (x.r.dims != kWord || x.old.dims != kWord || x.s.dims != 1 || x.guard.dims != 1 ||
        x.oldPred.dims != 1)
      return makeDiag(ErrorKind::Usage, "result stage: lane " + std::to_string(l) +
                                            " needs r and old of 32 dims, s, guard, oldPred of 1");
  }
  QGPU_TRY(opcode, resultHeadField(s.head, "opcode", std::bit_width(static_cast<unsigned>(machine::kNumOps - 1))));
  QGPU_TRY(dst, resultHeadField(s.head, "dst", std::bit_width(static_cast<unsigned>(machine::kRegs - 1))));
  QGPU_TRY(dstPred, resultHeadField(s.head, "dstPred", std::bit_width(static_cast<unsigned>(machine::kPreds))));
  QGPU_TRY(guardCode,
           resultHeadField(s.head, "guard predicate", std::bit_width(static_cast<unsigned>(machine::kPreds))));
  QGPU_TRY(negateField, resultHeadField(s.head, "guard negate", 1));

  ResultStage r;
  const int before = alloc.takenDims();
  auto take = [&](const std::string& name, int dims) { return alloc.take("res." + name, dims); };
  {
    QGPU_TRY(f, take("guardTrue", kRecordLanes)); r.guardTrue = f;
  }
  {
    QGPU_TRY(f, take("kind", 3)); r.kind = f;
  }
  for (int l = 0; l < kRecordLanes; ++l) {
    QGPU_TRY(f, take("value" + std::to_string(l), kWord));
    r.outcome.value[static_cast<size_t>(l)] = f;
  }
  {
    QGPU_TRY(f, take("differ", kResultPairs * kWord)); r.differ = f;
  }
  {
    QGPU_TRY(f, take("wordMask", kWord)); r.outcome.wordMask = f;
  }
  {
    QGPU_TRY(f, take("tag", kWord)); r.outcome.tag = f;
  }
  r.dims = alloc.takenDims() - before;

  const double one = t.unit, two = 2.0 * t.unit;
  const MlpContext cancelCtx{t.ballast, t.lambda, 128, t.unit};
  const AndGate g{t.ballast, t.lambda, s.mlpGain};
  const AndFieldWriter fw{g, cancelCtx, one, r.maxFanIn};
  const Literal isReg{r.kind.at(0), 1}, isPred{r.kind.at(1), 1}, dstZero{r.kind.at(2), 1};
  auto no = [](Literal l) { return Literal{l.dim, -l.sign}; };
  // A literal on the head word: its sign flips when the word is read in the ROM's polarity.
  const int headSign = s.headInverted ? -1 : 1;
  auto headEquals = [&](const Field& f, unsigned value) {
    std::vector<Literal> l = spells(f, value);
    for (Literal& x : l) x.sign *= headSign;
    return l;
  };
  auto gt = [&](int l) { return Literal{r.guardTrue.at(l), 1}; };
  auto m = [&](int l) { return Literal{s.mask.at(l), 1}; };
  auto lane = [&](int l) -> const ResultLane& { return s.lanes[static_cast<size_t>(l)]; };
  auto value = [&](int l) -> const Field& { return r.outcome.value[static_cast<size_t>(l)]; };

  // ---- F: guard-true per lane, the destination kind, dst = r0. ----
  {
    UnitWriter u(w, F, s.firstUnit[0]);
    QGPU_CHECK(fw.start(u, {r.guardTrue, r.kind}));
    const std::vector<Literal> unguarded = headEquals(guardCode, 0);
    const Literal neg{negateField.at(0), headSign};
    std::vector<std::pair<int, double>> all;
    for (int l = 0; l < kRecordLanes; ++l) all.push_back({r.guardTrue.at(l), two});
    QGPU_CHECK(fw.add(u, unguarded, all));
    for (int l = 0; l < kRecordLanes; ++l) {
      const Literal gl{lane(l).guard.at(0), 1};
      QGPU_CHECK(fw.add(u, {gl, no(neg)}, {{r.guardTrue.at(l), two}}));
      QGPU_CHECK(fw.add(u, {no(gl), neg}, {{r.guardTrue.at(l), two}}));
      QGPU_CHECK(fw.add(u, unguarded + std::vector<Literal>{gl, no(neg)}, {{r.guardTrue.at(l), -two}}));
      QGPU_CHECK(fw.add(u, unguarded + std::vector<Literal>{no(gl), neg}, {{r.guardTrue.at(l), -two}}));
    }
    for (int op = 0; op < machine::kNumOps; ++op) {
      const machine::DstKind d = machine::opInfo(static_cast<machine::Op>(op)).dst;
      if (d == machine::DstKind::Reg)
        QGPU_CHECK(fw.add(u, headEquals(opcode, static_cast<unsigned>(op)), {{isReg.dim, two}}));
      else if (d == machine::DstKind::Pred)
        QGPU_CHECK(fw.add(u, headEquals(opcode, static_cast<unsigned>(op)), {{isPred.dim, two}}));
    }
    QGPU_CHECK(fw.add(u, headEquals(dst, 0), {{dstZero.dim, two}}));
    r.units[0] = u.used();
  }

  // ---- F+1: the guard merge; bit 0 of a predicate op is the lane's WP bit. ----
  {
    UnitWriter u(w, F + 1, s.firstUnit[1]);
    std::vector<Field> fields(r.outcome.value.begin(), r.outcome.value.end());
    QGPU_CHECK(fw.start(u, fields));
    for (int l = 0; l < kRecordLanes; ++l) {
      const ResultLane& x = lane(l);
      for (int i = 0; i < kWord; ++i) {
        std::vector<Literal> regOnly;
        if (i == 0) regOnly.push_back(no(isPred));
        QGPU_CHECK(fw.add(u, regOnly + std::vector<Literal>{gt(l), {x.r.at(i), 1}},
                       {{value(l).at(i), two}}));
        QGPU_CHECK(fw.add(u, regOnly + std::vector<Literal>{no(gt(l)), {x.old.at(i), 1}},
                       {{value(l).at(i), two}}));
      }
      QGPU_CHECK(fw.add(u, {isPred, m(l), gt(l), {x.s.at(0), 1}}, {{value(l).at(0), two}}));
      QGPU_CHECK(fw.add(u, {isPred, m(l), no(gt(l)), {x.oldPred.at(0), 1}}, {{value(l).at(0), two}}));
    }
    r.units[1] = u.used();
  }

  // ---- F+2: per lane pair and bit, the merged values differ. ----
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < kRecordLanes; ++a)
    for (int b = a + 1; b < kRecordLanes; ++b) pairs.push_back({a, b});
  {
    UnitWriter u(w, F + 2, s.firstUnit[2]);
    QGPU_CHECK(fw.start(u, {r.differ}));
    for (size_t p = 0; p < pairs.size(); ++p) {
      const auto [a, b] = pairs[p];
      for (int i = 0; i < kWord; ++i) {
        const int out = r.differ.at(static_cast<int>(p) * kWord + i);
        const Literal va{value(a).at(i), 1}, vb{value(b).at(i), 1};
        QGPU_CHECK(fw.add(u, {va, no(vb)}, {{out, two}}));
        QGPU_CHECK(fw.add(u, {no(va), vb}, {{out, two}}));
      }
    }
    r.units[2] = u.used();
  }

  // ---- F+3: the tag and the mask. ----
  {
    UnitWriter u(w, F + 3, s.firstUnit[3]);
    QGPU_CHECK(fw.start(u, {r.outcome.tag, r.outcome.wordMask}));
    const Field& tag = r.outcome.tag;
    auto fam = [&](trace::Family f) { return tag.at(static_cast<int>(f)); };
    auto indexOuts = [&](trace::Token tok, int family) {
      std::vector<std::pair<int, double>> outs = {{tag.at(family), two}};
      for (int b = 0; b < tokenIndexBits(); ++b)
        if (indexBit(tok, b) > 0) outs.push_back({tag.at(trace::kNumFamilies + b), two});
      return outs;
    };
    const int maskAt = kRecordLanes * kRecordWordBits;
    for (int l = 0; l < kRecordLanes; ++l)
      QGPU_CHECK(fw.add(u, {m(l)}, {{r.outcome.wordMask.at(maskAt + l), two}}));
    for (int reg = 1; reg < machine::kRegs; ++reg)
      QGPU_CHECK(fw.add(u, std::vector<Literal>{isReg} + headEquals(dst, static_cast<unsigned>(reg)),
                     indexOuts(trace::wr(reg), static_cast<int>(trace::Family::Wr))));
    for (unsigned mm = 1; mm < (1u << kRecordLanes); ++mm) {
      std::vector<Literal> l = std::vector<Literal>{isReg, no(dstZero)} + spells(s.mask, mm);
      for (size_t p = 0; p < pairs.size(); ++p) {
        const auto [a, b] = pairs[p];
        const bool inM = (mm >> a & 1u) && (mm >> b & 1u);
        if (!inM && s.twin != ResultStageTwin::WuOverAllLanes) continue;
        for (int i = 0; i < kWord; ++i)
          l.push_back({r.differ.at(static_cast<int>(p) * kWord + i), -1});
      }
      QGPU_CHECK(fw.add(u, l, {{fam(trace::Family::Wu), two}, {fam(trace::Family::Wr), -two}}));
    }
    for (int p = 0; p < machine::kPreds; ++p)
      QGPU_CHECK(fw.add(u, std::vector<Literal>{isPred} + headEquals(dstPred, static_cast<unsigned>(p + 1)),
                     indexOuts(trace::wp(p), static_cast<int>(trace::Family::Wp))));
    QGPU_CHECK(fw.add(u, {no(isReg), no(isPred)}, {{fam(trace::Family::Nop), two}}));
    QGPU_CHECK(fw.add(u, {no(isPred), isReg, dstZero}, {{fam(trace::Family::Nop), two}}));
    r.units[3] = u.used();
  }
  return r;
}

}  // namespace qgpu::circuit
