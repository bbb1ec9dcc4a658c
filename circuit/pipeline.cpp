// qgpu/circuit/pipeline.cpp — see pipeline.h: wiring only; each stage's maths is in its own file.
#include "circuit/pipeline.h"

#include <algorithm>
#include <bit>
#include <string>

#include "circuit/assembler.h"
#include "circuit/logic.h"
#include "circuit/multiply.h"
#include "circuit/tap.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

Diag pipelineUsage(const std::string& m) { return makeDiag(ErrorKind::Usage, "execute pipeline: " + m); }

// The head word's opcode bits by their name in oracle/trace.cpp's table.
Expected<Field> opcodeBits(const Field& head) {
  for (const trace::PackedField& f : trace::packedLayout(trace::PackedWord::OpHead))
    if (std::string(f.name) == "opcode") {
      if (f.width != kOpcodeBits)
        return makeDiag(ErrorKind::Internal, "execute pipeline: the head word's opcode has " +
                                                 std::to_string(f.width) + " bits, the ALU reads " +
                                                 std::to_string(kOpcodeBits));
      return head.slice(f.offset, f.width, "opcode");
    }
  return makeDiag(ErrorKind::Internal, "execute pipeline: the head word has no opcode field");
}

// The literals that hold iff the fetched head word's field `name` spells `value`, in the ROM's
// polarity (−u = 1).
Expected<std::vector<Literal>> headIs(const Field& headWord, const char* name, int width,
                                      unsigned value) {
  QGPU_TRY(f, packedSlice(headWord, trace::PackedWord::OpHead, name, width, "execute pipeline"));
  std::vector<Literal> l = spells(f, value);
  for (Literal& x : l) x.sign = -x.sign;
  return l;
}

// The context of every MLP gadget the pipeline places itself (G = 128 in the full layout).
MlpContext mlpContext(const TokenLayout& t) {
  return {t.ballast, t.lambda, 128, t.unit};
}

// Lane l's raw bit (+u = true) of the front end's predicate port k: 0 guard, 1 psrc0, 2 psrc1,
// 3 dstPred (frontend.h predPort).
Field pipelinePredLane(const FrontEnd& fe, int k, int l) {
  return fe.predPort[static_cast<size_t>(k)].slice(l, 1, "lane " + std::to_string(l));
}

// A result stage at `first`..first+3 on the held fields (pipeline.h: the atomics' and the
// multiplies' regrec at the continuation position): r_l = `values`, old_l = the held oldDst_l, the
// guard from the held head word and the held guard bits (which stand in for s_l and oldPred_l:
// only a predicate op's ANDs read them, and neither an atomic nor a multiply writes one), m = the
// WM latch; its units after those already in each layer.
Expected<ResultStage> buildHeldResultStage(CircuitWeights& w, FieldAllocator& alloc, const ExecuteSpec& s,
                                           ExecutePipeline& p, int first,
                                           const std::array<Field, kRecordLanes>& values) {
  const int E = s.layer0;
  ResultStageSpec rs;
  rs.tokens = s.tokens;
  rs.firstLayer = first;
  rs.head = p.heldHead;
  rs.headInverted = true;
  rs.mask = p.fe.mask;
  for (int l = 0; l < kRecordLanes; ++l) {
    const auto i = static_cast<size_t>(l);
    const Field g = p.heldGuard.slice(l, 1, "lane " + std::to_string(l));
    rs.lanes[i] = {values[i], g, p.heldDst[i], g, g};
  }
  for (int i = 0; i < kResultStageLayers; ++i)
    rs.firstUnit[static_cast<size_t>(i)] = p.units[static_cast<size_t>(first - E + i)];
  QGPU_TRY(stage, buildResultStage(w, alloc, rs));
  for (int i = 0; i < kResultStageLayers; ++i)
    p.units[static_cast<size_t>(first - E + i)] += stage.units[static_cast<size_t>(i)];
  return stage;
}

// One source of an outcome select: its fields where every literal holds.
struct OutcomeSource {
  std::vector<Literal> when;
  const RecordOutcomeFields* from;
};

// Outcome fields shaped like `like`, taken from `alloc` under `name`.
Expected<RecordOutcomeFields> takeOutcome(FieldAllocator& alloc, const std::string& name,
                                          const RecordOutcomeFields& like) {
  RecordOutcomeFields o;
  for (int l = 0; l < kRecordLanes; ++l) {
    QGPU_TRY(f, alloc.take(name + ".value" + std::to_string(l),
                           like.value[static_cast<size_t>(l)].dims));
    o.value[static_cast<size_t>(l)] = f;
  }
  QGPU_TRY(wm, alloc.take(name + ".wordMask", like.wordMask.dims));
  QGPU_TRY(tag, alloc.take(name + ".tag", like.tag.dims));
  o.wordMask = wm;
  o.tag = tag;
  return o;
}

// The outcome select at `layer`'s MLP (its units after `firstUnit`, which it advances): every
// dim of `out` is −u + 2u·Σ_source [when ∧ from's dim], one AND per source and dim — exact when the
// sources' `when`s are exclusive — and, where every `nopWhen` literal holds (none: never), the tag
// of NOP (a multiply's first record).
Status selectOutcome(CircuitWeights& w, const TokenLayout& t, int layer, int& firstUnit,
                     const RecordOutcomeFields& out, const std::vector<OutcomeSource>& sources,
                     const std::vector<Literal>& nopWhen) {
  const AndGate gate{t.ballast, t.lambda, 256};
  int fanIn = 0;
  const AndFieldWriter fw{gate, mlpContext(t), t.unit, fanIn};
  const double two = 2.0 * t.unit;
  UnitWriter u(w, layer, firstUnit);
  std::vector<Field> outs(out.value.begin(), out.value.end());
  outs.push_back(out.wordMask);
  outs.push_back(out.tag);
  QGPU_CHECK(fw.start(u, outs));
  auto select = [&](const Field& to, auto part) -> Status {
    for (const OutcomeSource& source : sources) {
      const Field& from = part(*source.from);
      if (from.dims != to.dims)
        return makeDiag(ErrorKind::Internal,
                        "execute pipeline: the outcomes differ in shape at " + to.name);
      for (int i = 0; i < to.dims; ++i)
        QGPU_CHECK(
            fw.add(u, source.when + std::vector<Literal>{{from.at(i), 1}}, {{to.at(i), two}}));
    }
    return Ok{};
  };
  for (size_t l = 0; l < kRecordLanes; ++l)
    QGPU_CHECK(select(out.value[l],
                      [l](const RecordOutcomeFields& f) -> const Field& { return f.value[l]; }));
  QGPU_CHECK(select(out.wordMask,
                    [](const RecordOutcomeFields& f) -> const Field& { return f.wordMask; }));
  QGPU_CHECK(select(out.tag, [](const RecordOutcomeFields& f) -> const Field& { return f.tag; }));
  if (!nopWhen.empty()) {  // NOP: its family, its index bits
    const trace::Token nop = trace::single(trace::Family::Nop);
    std::vector<std::pair<int, double>> nopOuts = {
        {out.tag.at(static_cast<int>(trace::Family::Nop)), two}};
    for (int bit = 0; bit < tokenIndexBits(); ++bit)
      if (indexBit(nop, bit) > 0) nopOuts.push_back({out.tag.at(trace::kNumFamilies + bit), two});
    QGPU_CHECK(fw.add(u, nopWhen, nopOuts));
  }
  firstUnit += u.used();
  return Ok{};
}

// A latch head at `layer` (enable = exec: written at every op's executing position p, held until
// the next) from `from`'s dims, padded with the ballast to `out`'s width (tap.h: dv/V a power of 4).
Status holdAtExec(CircuitWeights& w, const TokenLayout& t, int layer, int& heads, const FrontEnd& fe,
                  std::vector<int> sources, const Field& out) {
  const float headGain = FrontEndSpec{}.headGain;
  while (static_cast<int>(sources.size()) < out.dims) sources.push_back(t.ballast.at(0));
  QGPU_CHECK(buildLatch(w, tokenLatch(t, headGain, layer, heads++, fe.exec.at(0), std::move(sources), out)));
  return Ok{};
}

std::vector<int> dimsOf(const Field& f) {
  std::vector<int> d;
  for (int i = 0; i < f.dims; ++i) d.push_back(f.at(i));
  return d;
}

// The held guard latch's dims: the guard port's lane bits, then (with multiply) isMul, isMad.
inline constexpr int kHeldIsMul = kRecordLanes;
inline constexpr int kHeldIsMad = kRecordLanes + 1;

// The atomics' regrec (ExecuteSpec::atomicRegrec; pipeline.h): at E+15 the latches, enabled by
// exec, that hold the executing op's head word, atomOld_l, oldDst_l and guard bits from its
// position p to the continuation position q after its memrec (or NOP); then the result stage
// again on them at E+15..E+18, so that at q its outcome is the atomic's regrec: r_l = the old
// word lane l's access saw, old_l = dst's value before the op (the guard-false lanes' value), the
// guard decoded from the held head word. Its s_l and oldPred_l are read only by a predicate op's
// ANDs (an atomic writes none): the held guard bits stand in. With multiply the guard latch also
// holds the op kind (isMul, isMad) in its spare dims, and no result stage is built here: the
// multiplier passes the held old words through where the held isMul fails, so the multiplies'
// result stage decides the atomic's regrec too (buildMultiplyRegrec).
Status buildAtomicRegrec(CircuitWeights& w, FieldAllocator& alloc, const ExecuteSpec& s,
                         ExecutePipeline& p) {
  const TokenLayout& t = s.tokens;
  const int E = s.layer0;
  const int L = p.regrecLayer;
  QGPU_TRY(head, alloc.take("pipe.held.head", kValueBits));
  // The guard's 4 lane bits (and the kind's 2) padded to a latch of V = 8.
  QGPU_TRY(guard, alloc.take("pipe.held.guard", 2 * kRecordLanes));
  p.heldHead = head;
  p.heldGuard = guard;
  for (int l = 0; l < kRecordLanes; ++l) {
    QGPU_TRY(old, alloc.take("pipe.held.old" + std::to_string(l), kValueBits));
    QGPU_TRY(dst, alloc.take("pipe.held.dst" + std::to_string(l), kValueBits));
    p.heldOld[static_cast<size_t>(l)] = old;
    p.heldDst[static_cast<size_t>(l)] = dst;
  }
  // With multiply the result stage reads the head word and oldDst first at E+23: their latches
  // at E+16 (kRegrecLateLatchHeads), whose pads fit E+15's MLP.
  const int late = s.multiply ? L + 1 : L;
  auto hold = [&](int layer, std::vector<int> from, const Field& out) {
    int& heads = p.heads[static_cast<size_t>(layer - E)];
    return holdAtExec(w, t, layer, heads, p.fe, std::move(from), out);
  };
  QGPU_CHECK(hold(late, dimsOf(p.fe.headWord), p.heldHead));
  std::vector<int> guardSources = dimsOf(p.fe.predPort[0]);
  if (s.multiply) {
    guardSources.push_back(p.mulKind.at(0));
    guardSources.push_back(p.mulKind.at(1));
  }
  QGPU_CHECK(hold(L, guardSources, p.heldGuard));
  const bool twin = s.twin == ExecuteTwin::RegrecFromLoad;
  for (int l = 0; l < kRecordLanes; ++l) {
    const auto i = static_cast<size_t>(l);
    QGPU_CHECK(hold(L, dimsOf(twin ? p.memory.load[i] : p.memory.atomOld[i]), p.heldOld[i]));
    QGPU_CHECK(hold(late, dimsOf(p.fe.oldDst[i]), p.heldDst[i]));
  }
  if (s.multiply) return Ok{};
  QGPU_TRY(regrec, buildHeldResultStage(w, alloc, s, p, L, p.heldOld));
  p.regrec = regrec;
  return Ok{};
}

// The multiplies' regrec (ExecuteSpec::multiply; pipeline.h), after buildAtomicRegrec: the
// multiplier two lanes at a time. Group g (lanes 2g, 2g + 1) starts at G = E+15 + 4g, beside the
// previous group's last stage: at G latch heads hold its lanes' operand words from p (as the
// atomic's fields are held), and the gated Mad (multiply.h) runs on them at G..G+4, the products
// counting where the held isMul holds and c where the held isMad does. Then the result stage on
// the products from E+23, its first layer (which reads no r_l) beside the last group's last stage.
Status buildMultiplyRegrec(CircuitWeights& w, FieldAllocator& alloc, const ExecuteSpec& s,
                           ExecutePipeline& p) {
  const TokenLayout& t = s.tokens;
  const int E = s.layer0;
  auto at = [&](int layer) -> int& { return p.units[static_cast<size_t>(layer - E)]; };
  const MlpContext ctx = mlpContext(t);
  const Literal isMul{p.heldGuard.at(kHeldIsMul), 1}, isMad{p.heldGuard.at(kHeldIsMad), 1};
  const int stages = multiplyLayers(MulOp::Mad);
  for (int l = 0; l < kRecordLanes; ++l) {
    const auto i = static_cast<size_t>(l);
    const int G = p.regrecLayer + (l / kMultiplyLanesAtOnce) * kMultiplyGroupLayers;
    int& heads = p.heads[static_cast<size_t>(G - E)];
    for (int k = 0; k < 3; ++k) {
      const auto j = static_cast<size_t>(k);
      QGPU_TRY(f, alloc.take("pipe.held.operand" + std::to_string(k) + "." + std::to_string(l),
                             kValueBits));
      p.heldOperand[i][j] = f;
      QGPU_CHECK(holdAtExec(w, t, G, heads, p.fe, dimsOf(p.operands.word[j][i]), f));
    }
    QGPU_TRY(product, alloc.take("pipe.product" + std::to_string(l), kValueBits));
    // The bus's regions as fields of their own: each stage's dims live a layer or two.
    const MultiplyBusDims regions = multiplyBusRegions(MulOp::Mad, true);
    const std::string bus = "pipe.mulBus" + std::to_string(l);
    QGPU_TRY(products, alloc.take(bus + ".products", regions.products));
    QGPU_TRY(counts, alloc.take(bus + ".counts", regions.counts));
    QGPU_TRY(rows, alloc.take(bus + ".rows", regions.rows));
    QGPU_TRY(adder, alloc.take(bus + ".adder", regions.adder));
    p.product[i] = product;
    std::vector<UnitWriter> writers;
    writers.reserve(static_cast<size_t>(stages));
    for (int k = 0; k < stages; ++k) writers.emplace_back(w, G + k, at(G + k));
    std::vector<MulStage> layers;
    for (UnitWriter& u : writers) layers.push_back({&u, ctx});
    const std::array<Field, 3> unheld = {p.operands.word[0][i], p.operands.word[1][i],
                                         p.operands.word[2][i]};
    const std::array<Field, 3>& from =
        s.twin == ExecuteTwin::MultiplyUnheld ? unheld : p.heldOperand[i];
    MultiplySpec ms;
    ms.op = MulOp::Mad;
    ms.a = from[0];
    ms.b = from[1];
    ms.c = from[2];
    ms.bus = {products, counts, rows, adder};
    ms.out = product;
    ms.outPrior = Prior::Replace;
    ms.enable = {isMul};
    ms.addendEnable = {isMad};
    ms.pass = p.heldOld[i];  // an atomic's old word where the held isMul fails
    ms.passEnable = {{isMul.dim, -1}};
    QGPU_TRY(report, buildMultiply(layers, ms));
    for (int k = 0; k < stages; ++k) at(G + k) += report.unitsPerLayer[static_cast<size_t>(k)];
  }
  QGPU_TRY(regrec, buildHeldResultStage(w, alloc, s, p, p.mulRegrecLayer, p.product));
  p.mulRegrec = regrec;
  return Ok{};
}

// The memory ops' part of the pipeline (ExecuteSpec::memory), after the result stage is built:
//   E+5     the executing lanes e_l = exec ∧ m_l ∧ gt_l (gt the result stage's guard-true rule,
//           result_stage.h, from the head word's guard code and negate and port 0's lane bit),
//           after the units already there
//   E+5..   the memory stage (memory_stage.h; with ExecuteSpec::atomics its prefix atomics too):
//           head in the ROM's polarity, the flipped offset, the sharedWords and blockX latches,
//           the EXEC latch's warp (the spill slots), e, src0 / src1 = operand ports 0 / 1 of each
//           lane; its load onto the ALU's r_l (the ALU writes 0 for
//           a memory opcode), its fault into p.memFault (the control stage's supplied fault);
//           heads and units after the others' in each layer
//   E+5     with multiply: the op kind isMul, isMad from the fetched opcode
//   E+15    with atomicRegrec (buildAtomicRegrec): the latches and the second result stage; with
//           multiply (buildMultiplyRegrec) the operand latches, the multiplier and a third
//   E+13    the outcome select (E+15 with atomics, E+19 with their regrec, E+27 with multiply;
//           after the regrecs' build): per dim [writes ∧ memrec] + [¬writes ∧ the result stage's
//           outcome], writes = the memory stage's kind bit (st, st.b8, st.b16, atomics); with the
//           regrec each of the two also ∧ ¬isCont, and [isCont ∧ regrec]; with multiply the
//           result stage's also ∧ ¬isMul, [¬isCont ∧ isMul] → NOP, and at q the held isMul
//           choosing between the atomics' regrec and the multiplies'
Status buildPipelineMemory(CircuitWeights& w, FieldAllocator& alloc, const ExecuteSpec& s,
                           ExecutePipeline& p) {
  const TokenLayout& t = s.tokens;
  const int E = s.layer0;
  auto at = [&](int layer) -> int& { return p.units[static_cast<size_t>(layer - E)]; };
  const MlpContext ctx = mlpContext(t);
  const AndGate gate{t.ballast, t.lambda, 256};
  int fanIn = 0;
  const AndFieldWriter fw{gate, ctx, t.unit, fanIn};
  const double two = 2.0 * t.unit;
  auto no = [](Literal l) { return Literal{l.dim, -l.sign}; };

  // E+5: e_l = [X ∧ code = 0] + [X ∧ g ∧ ¬neg] + [X ∧ ¬g ∧ neg] − the two overlaps with code = 0,
  // X = exec ∧ m_l: exactly 0 or 1 (unguarded ops have neg = 0).
  QGPU_TRY(exec, alloc.take("pipe.memExec", kRecordLanes));
  p.memExec = exec;
  std::vector<Field> outs = {p.memExec};
  if (s.atomicRegrec) {
    QGPU_TRY(record, alloc.take("pipe.execRecord", 1));
    p.execRecord = record;
    outs.push_back(record);
  }
  if (s.multiply) {
    QGPU_TRY(kind, alloc.take("pipe.mulKind", 2));
    p.mulKind = kind;
    outs.push_back(kind);
  }
  {
    UnitWriter u(w, E + 5, at(E + 5));
    QGPU_CHECK(fw.start(u, outs));
    if (s.atomicRegrec) {  // exec ∨ isCont: exclusive (frontend.h)
      QGPU_CHECK(fw.add(u, {{p.fe.exec.at(0), 1}}, {{p.execRecord.at(0), two}}));
      QGPU_CHECK(fw.add(u, {{p.fe.isCont.at(0), 1}}, {{p.execRecord.at(0), two}}));
    }
    if (s.multiply) {  // isMul = [mul] + [mad], isMad = [mad]: the fetched opcode's
      QGPU_TRY(mul, headIs(p.fe.headWord, "opcode", kOpcodeBits,
                           static_cast<unsigned>(machine::Op::Mul)));
      QGPU_TRY(mad, headIs(p.fe.headWord, "opcode", kOpcodeBits,
                           static_cast<unsigned>(machine::Op::Mad)));
      QGPU_CHECK(fw.add(u, mul, {{p.mulKind.at(0), two}}));
      QGPU_CHECK(fw.add(u, mad, {{p.mulKind.at(0), two}, {p.mulKind.at(1), two}}));
    }
    QGPU_TRY(unguarded, headIs(p.fe.headWord, "guard predicate",
                               std::bit_width(static_cast<unsigned>(machine::kPreds)), 0));
    QGPU_TRY(negSet, headIs(p.fe.headWord, "guard negate", 1, 1));
    const Literal neg = negSet.at(0);
    for (int l = 0; l < kRecordLanes; ++l) {
      const std::vector<Literal> x = {{p.fe.exec.at(0), 1}, {p.fe.mask.at(l), 1}};
      const Literal g{pipelinePredLane(p.fe, 0, l).at(0), 1};
      const std::vector<std::pair<int, double>> plus = {{p.memExec.at(l), two}},
                                                minus = {{p.memExec.at(l), -two}};
      QGPU_CHECK(fw.add(u, x + unguarded, plus));
      QGPU_CHECK(fw.add(u, x + std::vector<Literal>{g, no(neg)}, plus));
      QGPU_CHECK(fw.add(u, x + std::vector<Literal>{no(g), neg}, plus));
      QGPU_CHECK(fw.add(u, x + unguarded + std::vector<Literal>{g, no(neg)}, minus));
      QGPU_CHECK(fw.add(u, x + unguarded + std::vector<Literal>{no(g), neg}, minus));
    }
    at(E + 5) += u.used();
  }

  // The memory stage.
  MemoryStageSpec ms;
  ms.tokens = t;
  ms.firstLayer = p.memoryLayer;
  ms.head = p.fe.headWord;
  ms.headInverted = true;
  ms.offset = p.offset;
  ms.sharedWords = p.operands.sharedWords.slice(0, kRecordWordBits, "sharedWords");
  ms.blockX = p.operands.blockX;
  ms.warp = p.fe.warp;
  ms.exec = p.memExec;
  for (int l = 0; l < kRecordLanes; ++l) {
    ms.lanes[static_cast<size_t>(l)] = {p.operands.word[0][static_cast<size_t>(l)],
                                        p.operands.word[1][static_cast<size_t>(l)],
                                        p.operands.word[2][static_cast<size_t>(l)]};
    ms.loadOnto[static_cast<size_t>(l)] = p.lanes[static_cast<size_t>(l)].r;
  }
  ms.faultInto = p.memFault;
  ms.guard = p.opClass.slice(1, 1, "memoryStage");
  ms.prefixAtomics = s.atomics;
  const int M = p.memoryLayer;
  const int stageLayers = memoryStageLayers(ms);
  for (int i = 0; i < kMemoryDataLayers; ++i) ms.firstHead[static_cast<size_t>(i)] = p.heads[static_cast<size_t>(M - E + i)];
  for (int i = 0; i < stageLayers; ++i) ms.firstUnit[static_cast<size_t>(i)] = at(M + i);
  QGPU_TRY(mem, buildMemoryStage(w, alloc, ms));
  p.memory = mem;
  for (int i = 0; i < stageLayers; ++i) {
    at(M + i) += mem.units[static_cast<size_t>(i)] + (i < kMemoryDataLayers ? mem.dm.unitsUsed[i] : 0);
    if (i < kMemoryDataLayers) p.heads[static_cast<size_t>(M - E + i)] += mem.dm.headsUsed[i];
  }

  if (s.warpOps) {
    WarpOpsSpec ws;
    ws.tokens = t;
    ws.firstLayer = p.aluLayer + 1;
    ws.opcode = p.opcode;
    ws.opcodeInverted = true;
    ws.exec = p.memExec;
    ws.sourceExecutesTwin = s.twin == ExecuteTwin::ShuffleAnySource;
    ws.guard = p.opClass.slice(2, 1, "warp");
    for (int l = 0; l < kRecordLanes; ++l)
      ws.lanes[static_cast<size_t>(l)] = p.lanes[static_cast<size_t>(l)];
    for (int i = 0; i < kWarpOpsLayers; ++i)
      ws.firstUnit[static_cast<size_t>(i)] = at(ws.firstLayer + i);
    QGPU_TRY(warp, buildWarpOps(w, alloc, ws));
    p.warp = warp;
    for (int i = 0; i < kWarpOpsLayers; ++i)
      at(ws.firstLayer + i) += warp.units[static_cast<size_t>(i)];
  }
  if (s.atomicRegrec) QGPU_CHECK(buildAtomicRegrec(w, alloc, s, p));
  if (s.multiply) QGPU_CHECK(buildMultiplyRegrec(w, alloc, s, p));

  // The outcome: at an op's position p the memrec where the op writes memory, else the result
  // stage's (a multiply's first record: NOP); at a continuation position q the regrec. One select
  // at E+13 (E+15 with atomics); with the regrec two: p's outcome at E+15 (the memrec is final
  // after E+14), so that the memrec and the result stage's outcome do not wait beside the regrec's
  // and the multiplier's layers, then at E+19 (E+27 with the multiplies) [¬isCont ∧ p's] +
  // [isCont ∧ the regrec].
  const Literal writes{p.memory.kind.at(kMemoryKindWrites), 1};
  std::vector<OutcomeSource> atP = {{{writes}, &p.memory.memrec},
                                    {{no(writes)}, &p.result.outcome}};
  if (s.multiply) atP[1].when.push_back({p.mulKind.at(0), -1});  // a multiply's is NOP
  const std::vector<Literal> nopWhen =
      s.multiply ? std::vector<Literal>{{p.mulKind.at(0), 1}} : std::vector<Literal>{};
  if (!s.atomicRegrec) {
    QGPU_TRY(o, takeOutcome(alloc, "pipe.outcome", p.result.outcome));
    p.outcome = o;
    return selectOutcome(w, t, p.selectLayer, at(p.selectLayer), p.outcome, atP, nopWhen);
  }
  QGPU_TRY(pOutcome, takeOutcome(alloc, "pipe.outcomeAtP", p.result.outcome));
  QGPU_CHECK(selectOutcome(w, t, p.regrecLayer, at(p.regrecLayer), pOutcome, atP, nopWhen));
  const Literal isCont{p.fe.isCont.at(0), 1};
  QGPU_TRY(o, takeOutcome(alloc, "pipe.outcome", p.result.outcome));
  p.outcome = o;
  const std::vector<OutcomeSource> atPOrQ = {
      {{no(isCont)}, &pOutcome}, {{isCont}, s.multiply ? &p.mulRegrec.outcome : &p.regrec.outcome}};
  return selectOutcome(w, t, p.selectLayer, at(p.selectLayer), p.outcome, atPOrQ, {});
}

// Why the pipeline `s` builds does not execute `in`, or null when it does.
const char* notExecuted(const machine::Instr& in, const ExecuteSpec& s) {
  using machine::Op;
  switch (in.op) {
    case Op::Ld:
    case Op::St:
    case Op::StB8:
    case Op::StB16:
    case Op::LdLocal:
    case Op::StLocal:
      return s.memory ? nullptr
                      : "a memory op: the pipeline is built without them (ExecuteSpec::memory)";
    case Op::Mul:
    case Op::Mad:
      return s.multiply ? nullptr
                        : "a multiply: the pipeline is built without them (ExecuteSpec::multiply)";
    case Op::MulHiU:
    case Op::MulHiS:
      return "a high-half multiply: the pipeline's multiplier gives the low half only (the host "
             "expands mulhi)";
    case Op::AtomAdd:
    case Op::AtomAnd:
    case Op::AtomOr:
    case Op::AtomXor:
    case Op::AtomExch:
    case Op::AtomMinU:
    case Op::AtomMaxU:
    case Op::AtomMinS:
    case Op::AtomMaxS:
    case Op::AtomInc:
    case Op::AtomDec:
    case Op::AtomCas:
      if (!s.atomics) return "an atomic: the pipeline is built without them (ExecuteSpec::atomics)";
      return in.dst == 0 || s.atomicRegrec
                 ? nullptr
                 : "an atomic whose old value goes to a register: the pipeline is built without "
                   "their regrec (only dst r0; ExecuteSpec::atomicRegrec)";
    default:
      break;
  }
  switch (machine::opInfo(in.op).cls) {
    case machine::OpClass::Warp:
      if (!s.warpOps) return "a warp op: the pipeline is built without them (ExecuteSpec::warpOps)";
      return std::ranges::find(warpOps(), in.op) != warpOps().end()
                 ? nullptr
                 : "a warp op the warp ops gadget does not compute (circuit/warp_ops.h)";
    case machine::OpClass::Mem:
      return "a memory op the memory stage does not compute (circuit/memory_stage.h)";
    default:
      return aluStageExclusion(in.op);
  }
}

}  // namespace

Status pipelineExecutes(const machine::Program& program, const ExecuteSpec& spec) {
  for (size_t b = 0; b < program.blocks.size(); ++b) {
    const std::vector<machine::Instr>& ops = program.blocks[b].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      const char* why = notExecuted(ops[i], spec);
      if (why == nullptr) continue;
      return makeDiag(ErrorKind::OverLimit, "the model leg's circuit does not execute '" +
                                                std::string(machine::opInfo(ops[i].op).mnemonic) +
                                                "' (block B" + std::to_string(b) + ", op " +
                                                std::to_string(i) + "): " + why);
    }
  }
  return Ok{};
}

std::vector<int> executePipelineHeads(int64_t keyHeadDim, const ExecuteSpec& spec) {
  std::vector<int> h(static_cast<size_t>(executeLayers(spec)), 0);
  const std::vector<int> front = operandStageHeads(keyHeadDim);
  for (size_t i = 0; i < front.size() && i < h.size(); ++i) h[i] = front[i];
  // The control stage's own heads (its per-layer count less the plain front end's).
  const std::vector<int> control = controlHeads(keyHeadDim), plain = frontEndHeads(keyHeadDim);
  for (size_t i = 0; i < control.size(); ++i)
    h[i] += control[i] - (i < plain.size() ? plain[i] : 0);
  const int r = executeLayers(spec) - kRecordLayers;
  h[static_cast<size_t>(r)] += 10;     // record_emit.h: 6 latches (no next) + 3 taps + 1 counter
  h[static_cast<size_t>(r + 1)] += 11; // 3 taps + 8 thresholds
  if (spec.memory) {
    h[2] += 1;  // the sharedWords latch (operands.h)
    // The data memories (datamem.h): the assembler's taps, the tag latch and counter, the
    // thresholds, the address latch, the memory heads (2 spaces × 4 lanes × banks).
    const Expected<int> banks = dataMemoryBanks(keyHeadDim, ReadHeight::NormRail);
    const std::array<int, kMemoryDataLayers> dm = dataMemoryHeads(banks ? *banks : 0, 2);
    for (int i = 0; i < kMemoryDataLayers; ++i) h[static_cast<size_t>(5 + i)] += dm[static_cast<size_t>(i)];
  }
  if (spec.memory && spec.atomics && spec.atomicRegrec) {
    const int late = spec.multiply ? kRegrecLateLatchHeads : 0;  // theirs at E+16
    h[5 + kMemoryStageLayers] += kRegrecLatchHeads - late;
    h[5 + kMemoryStageLayers + 1] += late;
    for (int g = 0; spec.multiply && g < kMultiplyLaneGroups; ++g)
      h[static_cast<size_t>(5 + kMemoryStageLayers + g * kMultiplyGroupLayers)] +=
          kMultiplyLatchHeads;
  }
  return h;
}

Expected<ExecutePipeline> buildExecutePipeline(CircuitWeights& w, FieldAllocator& alloc,
                                               const ExecuteSpec& s) {
  const int E = s.layer0;
  if (s.atomics && !s.memory)
    return pipelineUsage("atomics need the memory ops (ExecuteSpec::memory)");
  if (s.atomicRegrec && !s.atomics)
    return pipelineUsage("the atomics' regrec needs the atomics (ExecuteSpec::atomics)");
  if (s.multiply && !s.atomicRegrec)
    return pipelineUsage("the multiplies need the atomics' regrec (ExecuteSpec::atomicRegrec)");
  if (s.warpOps && !s.memory)
    return pipelineUsage("the warp ops need the memory ops' executing lanes (ExecuteSpec::memory)");
  const int layers = executeLayers(s);
  if (E < 0 || E + layers > w.config().numLayers())
    return pipelineUsage("layers " + std::to_string(E) + ".." + std::to_string(E + layers - 1) +
                         " outside the config's " + std::to_string(w.config().numLayers()));
  ExecutePipeline p;
  p.tokens = s.tokens;
  p.aluLayer = E + 5;
  p.resultLayer = p.aluLayer + kAluStageLayers;
  p.emitLayer = E + layers - kRecordLayers;
  if (s.memory) {
    p.memoryLayer = E + 5;
    p.selectLayer = p.emitLayer - 1;
  }
  if (s.atomicRegrec) p.regrecLayer = p.memoryLayer + kMemoryStageLayers;
  if (s.multiply) p.mulRegrecLayer = p.regrecLayer + kMultiplyLaneGroups * kMultiplyGroupLayers;
  p.heads.assign(static_cast<size_t>(layers), 0);
  p.units.assign(static_cast<size_t>(layers), 0);
  const TokenLayout& t = s.tokens;
  const MlpContext ctx = mlpContext(t);
  auto at = [&](int layer) -> int& { return p.units[static_cast<size_t>(layer - E)]; };

  // Front end and operand select: E .. E+4.
  FrontEndSpec fs;
  fs.tokens = s.tokens;
  fs.layer0 = E;
  fs.payloadBanks = true;
  QGPU_TRY(fe, buildFrontEnd(w, alloc, fs));
  p.fe = fe;
  OperandsSpec os;
  os.tokens = s.tokens;
  os.layer0 = E;
  os.sharedWordsLatch = s.memory;
  QGPU_TRY(op, buildOperands(w, alloc, p.fe, os));
  p.operands = op;
  for (int i = 0; i < 5; ++i) {
    p.heads[static_cast<size_t>(i)] = p.fe.heads[i] + p.operands.heads[i];
    at(E + i) = p.fe.units[i] + p.operands.units[i];
  }
  // With memory: the fetched offset word flipped to +u = 1 at E+4 (the memory stage's adder reads
  // it so; the ROM's polarity is −u = 1), after the select's units; the memory stage's fault,
  // which the control stage reads.
  int hostUnits4 = p.operands.units[4];
  if (s.memory) {
    QGPU_TRY(offset, alloc.take("pipe.offset", 32));
    QGPU_TRY(fault, alloc.take("pipe.memFault", 1));
    p.offset = offset;
    p.memFault = fault;
    UnitWriter u(w, E + 4, at(E + 4));
    QGPU_CHECK(buildCancel(u, p.offset, ctx));
    for (int i = 0; i < p.offset.dims; ++i)
      QGPU_CHECK(addDetector(u, ctx, LinearForm{{}, 1.0}, {{p.fe.offsetWord.at(i), 1.0f}},
                             {{p.offset.at(i), -1}}));
    // The op's class: one AND of the opcode's bits per op (the ROM's polarity, −u = 1).
    QGPU_TRY(cls, alloc.take("pipe.opClass", s.warpOps ? 3 : 2));
    QGPU_TRY(groups, alloc.take("pipe.aluGroup", kAluGroups));
    p.opClass = cls;
    p.aluGroup = groups;
    int fanIn = 0;
    const AndFieldWriter fw{AndGate{t.ballast, t.lambda, 256}, ctx, t.unit, fanIn};
    QGPU_CHECK(fw.start(u, {p.opClass, p.aluGroup}));
    auto addClass = [&](machine::Op op, int dim) -> Status {
      QGPU_TRY(isOp, headIs(p.fe.headWord, "opcode", kOpcodeBits, static_cast<unsigned>(op)));
      return fw.add(u, isOp, {{dim, 2.0 * t.unit}});
    };
    for (machine::Op op : aluStageOps()) {
      QGPU_CHECK(addClass(op, p.opClass.at(0)));
      if (const std::optional<AluGroup> g = aluGroup(op))
        QGPU_CHECK(addClass(op, p.aluGroup.at(static_cast<int>(*g))));
    }
    for (int op = 0; op < machine::kNumOps; ++op) {
      const machine::OpClass c = machine::opInfo(static_cast<machine::Op>(op)).cls;
      if (c == machine::OpClass::Mem || c == machine::OpClass::Local)
        QGPU_CHECK(addClass(static_cast<machine::Op>(op), p.opClass.at(1)));
    }
    if (s.warpOps)
      for (machine::Op op : warpOps()) QGPU_CHECK(addClass(op, p.opClass.at(2)));
    at(E + 4) += u.used();
    hostUnits4 += u.used();
  }

  // Control stage: its heads and units in E..E+4 after the operand select's, its scheduler in
  // E+5..E+12 (the ALU's and result stage's layers: they are MLP only, their units follow the
  // scheduler's), its emit at E+13 = R. The branch predicate is the front end's port 0 at the
  // terminator position, read before the predicate file's flip; no op here faults.
  ControlSpec cs;
  cs.tokens = s.tokens;
  cs.layer0 = E;
  cs.pred = p.fe.predPort[0];
  cs.predInverted = true;
  cs.stepLimit = s.stepLimit;
  for (int i = 0; i < 5; ++i) {
    cs.hostHeads[static_cast<size_t>(i)] = p.operands.heads[i];
    cs.hostUnits[static_cast<size_t>(i)] = i == 4 ? hostUnits4 : p.operands.units[i];
  }
  if (s.memory) cs.fault = p.memFault;
  QGPU_TRY(control, buildControl(w, alloc, p.fe, cs));
  p.control = control;
  for (int i = 0; i < kControlLayers; ++i) {
    p.heads[static_cast<size_t>(i)] += p.control.heads[static_cast<size_t>(i)];
    at(E + i) += p.control.units[static_cast<size_t>(i)];
  }
  auto controlUnits = [&](int layer) {
    const int i = layer - E;
    return i >= 5 && i < kControlLayers ? p.control.units[static_cast<size_t>(i)] : 0;
  };

  // ALU stage: A .. A+3, the opcode in the ROM's polarity.
  QGPU_TRY(opcode, opcodeBits(p.fe.headWord));
  p.opcode = opcode;
  AluStageSpec as;
  as.opcode = p.opcode;
  as.opcodeInverted = s.twin != ExecuteTwin::OpcodeWrongPolarity;
  // With memory the op's class guards the stage and its groups guard their own fields, which then
  // share dims (alu_stage.h AluBusLayout::ByGroup); the bus is the ALU's ops' alone, so the
  // memory stage's address path and the warp ops' fields may share its dims.
  const bool guarded = p.opClass.dims >= 2;
  as.busLayout = guarded ? AluBusLayout::ByGroup : AluBusLayout::Liveness;
  for (int l = 0; l < kRecordLanes; ++l) {
    const auto port = [&](int k) { return p.operands.word[static_cast<size_t>(k)][static_cast<size_t>(l)]; };
    AluLane lane;
    const bool swap = s.twin == ExecuteTwin::OperandsSwapped;
    lane.a = port(swap ? 1 : 0);
    lane.b = port(swap ? 0 : 1);
    lane.c = port(2);
    lane.p = pipelinePredLane(p.fe, 1, l);  // psrc0
    lane.q = pipelinePredLane(p.fe, 2, l);  // psrc1
    QGPU_TRY(r, alloc.take("alu.r" + std::to_string(l), 32));
    QGPU_TRY(sp, alloc.take("alu.s" + std::to_string(l), 1));
    lane.r = r;
    lane.s = sp;
    as.lanes.push_back(lane);
  }
  QGPU_TRY(bus, alloc.take("alu.bus", aluStageBusDims(kRecordLanes, as.busLayout),
                           guarded ? uint32_t{kKindAlu} : 0u));
  as.bus = bus;
  if (guarded) {
    as.guard = p.opClass.slice(0, 1, "alu");
    as.groupGuard = p.aluGroup;
  }
  p.aluBus = bus;
  p.lanes = as.lanes;
  {
    std::vector<UnitWriter> writers;
    writers.reserve(kAluStageLayers);
    for (int i = 0; i < kAluStageLayers; ++i)
      writers.emplace_back(w, p.aluLayer + i, controlUnits(p.aluLayer + i));
    const MlpContext ctx = mlpContext(s.tokens);
    std::vector<AluLayer> layers;
    for (UnitWriter& u : writers) layers.push_back({&u, ctx});
    QGPU_TRY(report, buildAluStage(layers, as));
    p.alu = report;
    for (int i = 0; i < kAluStageLayers; ++i) at(p.aluLayer + i) += report.unitsPerLayer[static_cast<size_t>(i)];
  }

  // Result stage: F .. F+3, the head word in the ROM's polarity.
  ResultStageSpec rs;
  rs.tokens = s.tokens;
  rs.firstLayer = p.resultLayer;
  rs.head = p.fe.headWord;
  rs.headInverted = true;
  rs.mask = p.fe.mask;
  for (int l = 0; l < kRecordLanes; ++l) {
    const AluLane& lane = p.lanes[static_cast<size_t>(l)];
    const Field guard = pipelinePredLane(p.fe, s.twin == ExecuteTwin::GuardFromPsrc0Port ? 1 : 0, l);
    rs.lanes[static_cast<size_t>(l)] = {lane.r, lane.s, p.fe.oldDst[static_cast<size_t>(l)], guard,
                                        pipelinePredLane(p.fe, 3, l)};
  }
  p.resultIn = rs.lanes;
  for (int i = 0; i < kResultStageLayers; ++i)
    rs.firstUnit[static_cast<size_t>(i)] = controlUnits(p.resultLayer + i);
  QGPU_TRY(result, buildResultStage(w, alloc, rs));
  p.result = result;
  for (int i = 0; i < kResultStageLayers; ++i) at(p.resultLayer + i) += result.units[static_cast<size_t>(i)];

  RecordOutcomeFields outcome = p.result.outcome;
  if (s.memory) {
    QGPU_CHECK(buildPipelineMemory(w, alloc, s, p));
    outcome = p.outcome;
  }

  // Record emitter: R .. R+3, its buffer latching the outcome (the result stage's, or the select's).
  RecordEmitSpec es;
  es.tokens = s.tokens;
  es.firstLayer = p.emitLayer;
  es.outcomeFrom = outcome;
  es.into = &alloc;
  es.execFrom = s.atomicRegrec ? p.execRecord : p.fe.exec;
  // Without memory R is the control stage's emit layer: its fault and EX latches come first.
  es.firstHead = s.memory ? 0 : p.control.heads.back();
  es.overrideFrom = RecordEmitSpec::Override{p.control.emit, p.control.decides};
  QGPU_TRY(emitter, buildRecordEmitter(w, es));
  p.emitter = emitter;
  QGPU_CHECK(writeRecordExtras(w, p.emitter));
  for (int i = 0; i < kRecordLayers; ++i) {
    p.heads[static_cast<size_t>(p.emitLayer - E + i)] += emitter.heads[static_cast<size_t>(i)];
    at(p.emitLayer + i) += emitter.units[static_cast<size_t>(i)];
  }
  return p;
}

namespace {

// The plan's pad restores (layout.h), each after the units the pipeline put in its layer.
Status writePads(CircuitWeights& w, const std::vector<PadRestore>& pads, int E,
                 ExecutePipeline& p) {
  const MlpContext ctx = mlpContext(p.tokens);
  for (const PadRestore& pad : pads) {
    const int i = pad.layer - E;
    if (i < 0 || i >= static_cast<int>(p.units.size()))
      return makeDiag(ErrorKind::Internal, "pad restore of '" + pad.field.name + "' at layer " +
                                               std::to_string(pad.layer) +
                                               ", outside the pipeline");
    UnitWriter units(w, pad.layer, p.units[static_cast<size_t>(i)]);
    QGPU_CHECK(buildPad(units, pad.field, ctx));
    p.units[static_cast<size_t>(i)] += units.used();
  }
  return Ok{};
}

}  // namespace

Expected<ExecutePipeline> buildExecuteModel(CircuitWeights& w, FieldAllocator& alloc,
                                            ExecuteSpec s, const ExecuteExtra& extra) {
  const int hidden = static_cast<int>(w.config().hiddenSize);
  QGPU_TRY(tokens, planTokenLayout(alloc, hidden, s.tokens.rowOffset));
  s.tokens = tokens;
  QGPU_CHECK(writeTokenEmbeddings(w, s.tokens));
  QGPU_TRY(pipe, buildExecutePipeline(w, alloc, s));
  if (extra) QGPU_CHECK(extra(w, pipe));
  if (s.twin != ExecuteTwin::NoPads) QGPU_CHECK(writePads(w, alloc.pads(), s.layer0, pipe));
  return pipe;
}

Expected<LivenessPlan> planExecuteLayout(model::Qwen35Config config, const ExecuteSpec& s,
                                         const ExecuteExtra& extra, int scratchHidden) {
  config.hiddenSize = scratchHidden;
  CircuitWeights w(config, WeightStorage::CountOnly);
  w.recordTouches(s.tokens.unit);  // the pads: +unit
  FieldAllocator alloc(scratchHidden);
  QGPU_TRY(pipe, buildExecuteModel(w, alloc, s, extra));
  std::vector<int> units;  // by layer, for the pads (none: each at the latest MLP)
  if (s.padsUnderWidest) {
    units.assign(static_cast<size_t>(s.layer0), 0);
    units.insert(units.end(), pipe.units.begin(), pipe.units.end());
  }
  return planByLiveness(alloc.taken(), w.touches(), pipe.tokens.fieldDims(), units);
}

}  // namespace qgpu::circuit
