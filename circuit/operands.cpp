// qgpu/circuit/operands.cpp — see operands.h for the construction and its maths.
#include "circuit/operands.h"

#include <string>

#include "circuit/assembler.h"
#include "circuit/counter.h"
#include "circuit/logic.h"
#include "circuit/tap.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using trace::Family;

Diag operandsUsage(const std::string& message) {
  return makeDiag(ErrorKind::Usage, "operand select: " + message);
}



constexpr int kSources = 3;
constexpr int kLaneBits = 2;  // kLanes = 4
static_assert(machine::kLanes == 1 << kLaneBits);
// CTA tokens in a run: one before each CTA after the first.
constexpr int kMaxCtaTokens = machine::kMaxGridBlocks - 1;
constexpr int kLaunchBits = 5;  // gridX and blockX: packedLayout(Program) widths, checked below

}  // namespace

std::vector<int> operandStageHeads(int64_t keyHeadDim) {
  std::vector<int> h = frontEndHeads(keyHeadDim, true);
  h[0] += 1;
  h[1] += 1;
  h[2] += 2;
  h[4] += kMaxCtaTokens;
  return h;
}

Expected<Operands> buildOperands(CircuitWeights& w, FieldAllocator& alloc, const FrontEnd& fe,
                                 const OperandsSpec& s) {
  const model::Qwen35Config& c = w.config();
  const TokenLayout& t = s.tokens;
  const int L = s.layer0;
  if (fe.rf.operand.size() < static_cast<size_t>(kSources))
    return operandsUsage("the front end must have " + std::to_string(kSources) + " source ports");
  std::vector<int> need = operandStageHeads(c.linearKeyHeadDim);
  if (s.sharedWordsLatch) need[2] += 1;
  for (int i = 0; i < 5; ++i)
    if (L + i < 0 || L + i >= c.numLayers() || c.linearNumValueHeads < need[static_cast<size_t>(i)])
      return operandsUsage("layers " + std::to_string(L) + ".." + std::to_string(L + 4) + " need " +
                   std::to_string(need[static_cast<size_t>(i)]) + " value heads at layer " +
                   std::to_string(L + i) + "; the config has " +
                   std::to_string(c.linearNumValueHeads));
  if (fe.heads[3] != frontEndHeads(c.linearKeyHeadDim, true)[3])
    return operandsUsage("the front end was built without its payload banks (FrontEndSpec::payloadBanks)");
  QGPU_TRY(gridField, packedField(trace::PackedWord::Program, "gridX", "operand select"));
  QGPU_TRY(blockXField, packedField(trace::PackedWord::Program, "blockX", "operand select"));
  if (gridField.width != kLaunchBits || blockXField.width != kLaunchBits)
    return operandsUsage("the program word's gridX / blockX are not 5 bits wide");

  Operands op;
  QGPU_TRY(progTag, alloc.take("op.progTag", 8));
  QGPU_TRY(progEnable, alloc.take("op.progEnable", 1));
  QGPU_TRY(launch, alloc.take("op.launch", 16));
  QGPU_TRY(ctaAtLeast, alloc.take("op.ctaAtLeast", kMaxCtaTokens));
  op.progTag = progTag;
  op.progEnable = progEnable;
  op.launch = launch;
  op.gridX = launch.slice(0, kLaunchBits);
  op.blockX = launch.slice(8, kLaunchBits);
  op.ctaAtLeast = ctaAtLeast;
  QGPU_TRY(sharedField, packedField(trace::PackedWord::Program, "sharedWords", "operand select"));
  if (s.sharedWordsLatch) {
    QGPU_TRY(sw, alloc.take("op.sharedWords", 8));
    op.sharedWords = sw;
  }
  for (int k = 0; k < kSources; ++k) op.word.push_back(fe.rf.operand[static_cast<size_t>(k)]);

  const MlpContext ctx{t.ballast, t.lambda, s.mlpGain, t.unit};
  const AndGate g{t.ballast, t.lambda, 2 * s.mlpGain};
  const int bal = t.ballast.at(0);
  auto latch = [&](int layer, int head, int enable, std::vector<int> sources,
                   const Field& out) -> Status {
    QGPU_CHECK(buildLatch(w, tokenLatch(t, s.headGain, layer, head, enable, std::move(sources), out)));
    return Ok{};
  };

  // ---- L: the CTA counter ----
  {
    EventCounterSpec cs;
    cs.layer = L;
    cs.head = fe.heads[0];
    cs.ballast = t.ballast;
    cs.event = familyDim(t, Family::Cta);
    cs.reset = familyDim(t, Family::Run);
    cs.quiet = fe.rf.quiet.at(2);  // at(0): the register file's counter, at(1): the op counter
    cs.unit = t.unit;
    cs.gain = s.headGain;
    QGPU_CHECK(buildEventCounter(w, cs));
    op.heads[0] = 1;
  }

  // ---- L+1: the PROG-tag latch; progEnable ----
  {
    std::vector<int> src = {familyDim(t, Family::Prog)};
    while (src.size() < 8) src.push_back(bal);
    QGPU_CHECK(latch(L + 1, fe.heads[1], fe.promptTag.at(0), src, progTag));
    op.heads[1] = 1;
    UnitWriter units(w, L + 1, fe.units[1]);
    QGPU_CHECK(buildCancel(units, progEnable, ctx));
    QGPU_CHECK(addConstant(units, ctx, {{progEnable.at(0), -1}}));
    QGPU_CHECK(addAnd(units, g, {{t.isTerminal.at(0), 1}, {progTag.at(0), 1}},
                      {{progEnable.at(0), 2.0 * t.unit}}));
    op.units[1] = units.used();
  }

  // ---- L+2: the launch latches (gridX, blockX of the PROG word) ----
  {
    const Field value = fe.rf.assembler.value;
    int head = fe.heads[2];
    for (const trace::PackedField& f : {gridField, blockXField}) {
      std::vector<int> src;
      for (int i = 0; i < f.width; ++i) src.push_back(value.at(f.offset + i));
      while (src.size() < 8) src.push_back(bal);
      QGPU_CHECK(latch(L + 2, head, progEnable.at(0), src,
                       launch.slice(8 * (head - fe.heads[2]), 8)));
      ++head;
    }
    op.heads[2] = 2;
    if (s.sharedWordsLatch) {
      std::vector<int> src;
      for (int i = 0; i < sharedField.width; ++i) src.push_back(value.at(sharedField.offset + i));
      while (src.size() < 8) src.push_back(bal);
      QGPU_CHECK(latch(L + 2, head, progEnable.at(0), src, op.sharedWords));
      op.heads[2] = 3;
    }
  }

  // ---- L+4: the CTA thresholds; the select (after the register file's polarity flip) ----
  {
    ThresholdSpec ts;
    ts.layer = L + 4;
    ts.head = fe.heads[4];
    ts.ballast = t.ballast;
    ts.quiet = fe.rf.quiet.at(2);
    ts.levelExp = EventCounterSpec{}.levelExp;
    ts.unit = t.unit;
    ts.gain = s.headGain;
    ts.zGain = s.headGain / 4;
    QGPU_CHECK(buildThresholds(w, ts, ctaAtLeast));
    op.heads[4] = kMaxCtaTokens;

    UnitWriter units(w, L + 4, fe.units[4]);
    const uint32_t kImm = static_cast<uint32_t>(machine::OperandKind::Imm);
    const uint32_t kSp = static_cast<uint32_t>(machine::OperandKind::Special);
    auto sp = [](machine::Special x) { return static_cast<uint32_t>(x); };
    // Each AND adds +2u to its outputs (bits that are −u after the flip unless kind = Reg).
    for (int k = 0; k < kSources; ++k) {
      const std::string name = "src" + std::to_string(k);
      QGPU_TRY(kind, packedField(trace::PackedWord::OpSources, (name + " kind").c_str(), "operand select"));
      QGPU_TRY(index, packedField(trace::PackedWord::OpSources, (name + " index").c_str(), "operand select"));
      const std::array<Field, 4>& out = fe.rf.operand[static_cast<size_t>(k)];
      // The fetched sources word is inverted: bit set = −u.
      auto word = [&](const trace::PackedField& f, uint32_t v) {
        std::vector<Literal> l;
        for (int i = 0; i < f.width; ++i)
          l.push_back({fe.sourcesWord.at(f.offset + i), (v >> i) & 1 ? -1 : 1});
        return l;
      };
      auto isSpecial = [&](machine::Special x) {
        std::vector<Literal> l = word(kind, kSp);
        for (const Literal& i : word(index, sp(x))) l.push_back(i);
        return l;
      };
      // An AND whose outputs are bit `bit` of every lane.
      auto allLanes = [&](std::vector<Literal> lits, std::vector<int> bits) -> Status {
        std::vector<std::pair<int, double>> outs;
        for (int b : bits)
          for (int l = 0; l < machine::kLanes; ++l)
            outs.push_back({out[static_cast<size_t>(l)].at(b), 2.0 * t.unit});
        QGPU_CHECK(addAnd(units, g, std::move(lits), outs));
        return Ok{};
      };
      // An AND whose outputs are the bits of the lane index (bit b in lanes with bit b of l set).
      auto laneIndex = [&](std::vector<Literal> lits, int firstBit) -> Status {
        for (int b = 0; b < kLaneBits; ++b) {
          std::vector<std::pair<int, double>> outs;
          for (int l = 0; l < machine::kLanes; ++l)
            if ((l >> b) & 1) outs.push_back({out[static_cast<size_t>(l)].at(firstBit + b), 2.0 * t.unit});
          QGPU_CHECK(addAnd(units, g, lits, outs));
        }
        return Ok{};
      };
      // Imm: the payload word i_k (inverted: a set bit is −u).
      const int slot = s.twin == OperandsTwin::ImmFromNextSlot ? (k + 1) % kSources : k;
      const Field& imm = fe.immWord[static_cast<size_t>(slot)];
      for (int i = 0; i < imm.dims; ++i) {
        std::vector<Literal> lits = word(kind, kImm);
        lits.push_back({imm.at(i), -1});
        QGPU_CHECK(allLanes(lits, {i}));
      }
      // tid.x = 4w + l.
      QGPU_CHECK(laneIndex(isSpecial(machine::Special::TidX), 0));
      for (int j = 0; j < fe.warp.dims && s.twin != OperandsTwin::TidWithoutWarp; ++j) {
        std::vector<Literal> lits = isSpecial(machine::Special::TidX);
        lits.push_back({fe.warp.at(j), 1});
        QGPU_CHECK(allLanes(lits, {kLaneBits + j}));
      }
      QGPU_CHECK(laneIndex(isSpecial(machine::Special::LaneId), 0));
      // warpid, ntid.x, nctaid.x: a latched field's bits, the same in every lane.
      const std::pair<machine::Special, Field> copies[] = {{machine::Special::WarpId, fe.warp},
                                                           {machine::Special::NtidX, op.blockX},
                                                           {machine::Special::NctaidX, op.gridX}};
      for (const auto& [x, f] : copies)
        for (int j = 0; j < f.dims; ++j) {
          std::vector<Literal> lits = isSpecial(x);
          lits.push_back({f.at(j), 1});
          QGPU_CHECK(allLanes(lits, {j}));
        }
      // ctaid.x = c: the thermometer's window [c ≥ v] ∧ ¬[c ≥ v + 1] writes v's bits.
      for (int v = 1; v <= kMaxCtaTokens; ++v) {
        std::vector<Literal> lits = isSpecial(machine::Special::CtaidX);
        lits.push_back({ctaAtLeast.at(v - 1), 1});
        if (v < kMaxCtaTokens) lits.push_back({ctaAtLeast.at(v), -1});
        std::vector<int> bits;
        for (int b = 0; b < 32; ++b)
          if ((v >> b) & 1) bits.push_back(b);
        QGPU_CHECK(allLanes(lits, bits));
      }
    }
    op.units[4] = units.used();
  }
  return op;
}

}  // namespace qgpu::circuit
