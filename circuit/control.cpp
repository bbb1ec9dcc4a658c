// qgpu/circuit/control.cpp — see control.h for the construction and its maths.
#include "circuit/control.h"

#include <algorithm>
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

Diag controlUsage(const std::string& message) {
  return makeDiag(ErrorKind::Usage, "control: " + message);
}

constexpr int kFrontLayers = 5;
constexpr int kSchedFirst = kFrontLayers;    // S − L
constexpr int kEmitLayer = kSchedFirst + 8;  // E − L
static_assert(kEmitLayer + 1 == kControlLayers);
constexpr int kControlMaxCtaTokens = machine::kMaxGridBlocks - 1;  // one before each CTA after the first
constexpr int kControlLaunchBits = 5;
static_assert(machine::kMaxGridBlocks == 16 && machine::kMaxThreadsPerBlock == 16,
              "gridX and blockX are 5-bit fields of the program word (1..16)");

// Heads this stage adds per layer offset (the scheduler's 16 at S+1 included).
std::vector<int> ownHeads() {
  std::vector<int> h(kControlLayers, 0);
  h[0] = 2;                              // the step and CTA counters
  h[1] = 1;                              // the PROG-tag latch
  h[3] = 2;                              // the launch latches
  h[kSchedFirst] = 1 + kControlMaxCtaTokens + 1;  // kind/warp latch, [c ≥ 1..15], [s ≥ limit]
  h[kSchedFirst + 1] = kSchedThreads;    // the scheduler's PC table
  h[kEmitLayer] = 1;                     // the fault latch
  return h;
}

}  // namespace

std::vector<int> controlHeads(int64_t keyHeadDim) {
  std::vector<int> h = ownHeads();
  const std::vector<int> fe = frontEndHeads(keyHeadDim);
  for (size_t i = 0; i < fe.size(); ++i) h[i] += fe[i];
  return h;
}

Expected<Control> buildControl(CircuitWeights& w, FieldAllocator& alloc, const FrontEnd& fe,
                               const ControlSpec& s) {
  const model::Qwen35Config& c = w.config();
  const TokenLayout& t = s.tokens;
  const int L = s.layer0;
  const int S = L + kSchedFirst, E = L + kEmitLayer;
  if (L < 0 || L + kControlLayers > c.numLayers())
    return controlUsage("layers " + std::to_string(L) + ".." + std::to_string(L + kControlLayers - 1) +
                        " outside the config's " + std::to_string(c.numLayers()));
  // The heads per layer: the front end's as built (with or without payload banks) and the host's
  // in L..L+4, then this stage's. A layer holding any must be a linear_attention layer (the
  // others are MLP only here: either kind).
  std::vector<int> need = ownHeads();
  for (int i = 0; i < kFrontLayers; ++i)
    need[static_cast<size_t>(i)] += fe.heads[i] + s.hostHeads[static_cast<size_t>(i)];
  for (int i = 0; i < kControlLayers; ++i)
    if (need[static_cast<size_t>(i)] > 0 &&
        c.layerTypes[static_cast<size_t>(L + i)] != model::LayerType::Linear)
      return controlUsage("layer " + std::to_string(L + i) + " holds " +
                          std::to_string(need[static_cast<size_t>(i)]) +
                          " heads and must be a linear_attention layer of the config");
  const int most = *std::max_element(need.begin(), need.end());
  if (c.linearNumValueHeads < most || c.linearNumKeyHeads != c.linearNumValueHeads)
    return controlUsage("needs " + std::to_string(most) +
                        " value heads per layer, each with its own key head; the config has " +
                        std::to_string(c.linearNumValueHeads) + " / " +
                        std::to_string(c.linearNumKeyHeads));
  if (s.pred.dims != kSchedLanes) return controlUsage("the pred field needs 4 dims");
  if (s.fault.dims != 0 && s.fault.dims != 1)
    return controlUsage("the fault field needs 1 dim (or 0: no faults supplied)");
  const int range = thresholdRange(EventCounterSpec{}.levelExp, t.lambda, t.unit);
  if (s.stepLimit < 1 || s.stepLimit > range)
    return controlUsage("step limit " + std::to_string(s.stepLimit) + " outside 1.." +
                        std::to_string(range) + " (one event counter; the step ticks are not built)");
  QGPU_TRY(gridField, packedField(trace::PackedWord::Program, "gridX", "control"));
  QGPU_TRY(blockXField, packedField(trace::PackedWord::Program, "blockX", "control"));
  QGPU_TRY(kindField, packedField(trace::PackedWord::Term, "terminator kind", "control"));
  QGPU_TRY(nextField, packedField(trace::PackedWord::Term, "next target", "control"));
  QGPU_TRY(takenField, packedField(trace::PackedWord::Term, "taken target", "control"));
  QGPU_TRY(negField, packedField(trace::PackedWord::Term, "branch negate", "control"));
  if (gridField.width != kControlLaunchBits || blockXField.width != kControlLaunchBits || kindField.width != 2 ||
      nextField.width != kSchedTargetBits || takenField.width != kSchedTargetBits ||
      negField.width != 1)
    return controlUsage("the program or terminator word's fields are not the widths the stage reads");
  // The TERM word's targets: block b as b, exit as 32 = bit 5 (the scheduler's target code).
  if (trace::packedLayout(trace::PackedWord::Term).empty())
    return makeDiag(ErrorKind::Internal, "control: no terminator word layout");

  Control ct;
  ct.stepLimit = s.stepLimit;
  QGPU_TRY(quiet, alloc.take("ctl.quiet", 3));
  QGPU_TRY(heavy, alloc.take("ctl.heavy", 1));
  QGPU_TRY(progTag, alloc.take("ctl.progTag", 8));
  QGPU_TRY(progEnable, alloc.take("ctl.progEnable", 1));
  QGPU_TRY(launch, alloc.take("ctl.launch", 16));
  QGPU_TRY(reset, alloc.take("ctl.reset", 1));
  QGPU_TRY(enable, alloc.take("ctl.enable", 1));
  QGPU_TRY(kindWarp, alloc.take("ctl.kindWarp", 4));
  QGPU_TRY(taken, alloc.take("ctl.taken", kSchedTargetBits));
  QGPU_TRY(next, alloc.take("ctl.next", kSchedTargetBits));
  QGPU_TRY(pred, alloc.take("ctl.pred", kSchedLanes));
  QGPU_TRY(nextBar, alloc.take("ctl.nextBar", 1));
  QGPU_TRY(latchOut, alloc.take("ctl.latch", 8));
  QGPU_TRY(ctaAtLeast, alloc.take("ctl.ctaAtLeast", kControlMaxCtaTokens));
  QGPU_TRY(atLimit, alloc.take("ctl.atLimit", 1));
  QGPU_TRY(lastCta, alloc.take("ctl.lastCta", 1));
  ct.quiet = quiet;
  ct.heavy = heavy;
  ct.progTag = progTag;
  ct.progEnable = progEnable;
  ct.launch = launch;
  ct.gridX = launch.slice(0, kControlLaunchBits);
  ct.blockX = launch.slice(8, kControlLaunchBits);
  ct.reset = reset;
  ct.enable = enable;
  ct.kindWarp = kindWarp;
  ct.taken = taken;
  ct.next = next;
  ct.pred = pred;
  ct.nextBar = nextBar;
  ct.latch = latchOut;
  ct.ctaAtLeast = ctaAtLeast;
  ct.atLimit = atLimit;
  ct.lastCta = lastCta;
  ct.heads = ownHeads();
  ct.units.assign(kControlLayers, 0);

  // The trace rows: quiet dims 0, the heavy pad 2u (Σx² as in the full layout, counter.h).
  {
    const std::string embed = w.globalTensor("embed_tokens.weight");
    for (int id = 0; id < trace::kVocabSize; ++id) {
      for (int q = 0; q < quiet.dims; ++q)
        QGPU_CHECK(w.set(embed, t.rowOffset + id, quiet.at(q), 0));
      QGPU_CHECK(w.set(embed, t.rowOffset + id, heavy.at(0), 2 * t.unit));
    }
  }

  const MlpContext ctx{t.ballast, t.lambda, s.mlpGain, t.unit};
  const AndGate g{t.ballast, t.lambda, 2 * s.mlpGain};
  const int bal = t.ballast.at(0);
  auto signBase = [&](UnitWriter& units, const Field& f) -> Status {
    QGPU_CHECK(buildCancel(units, f, ctx));
    std::vector<Output> base;
    for (int i = 0; i < f.dims; ++i) base.push_back({f.at(i), -1});
    QGPU_CHECK(addConstant(units, ctx, base));
    return Ok{};
  };
  auto orAnd = [&](UnitWriter& units, std::vector<Literal> lits, int dim) -> Status {
    QGPU_CHECK(addAnd(units, g, std::move(lits), {{dim, 2.0 * t.unit}}));
    return Ok{};
  };
  auto latch = [&](int layer, int head, int en, std::vector<int> sources,
                   const Field& out) -> Status {
    LatchSpec ls;
    ls.layer = layer;
    ls.head = head;
    ls.ballast = t.ballast;
    ls.enable = en;
    ls.sources = std::move(sources);
    ls.out = out;
    ls.gain = ls.valueGain = s.headGain;
    ls.zGain = s.headGain / 4;
    ls.outUnit = t.unit;
    QGPU_CHECK(buildLatch(w, ls));
    return Ok{};
  };
  auto counter = [&](int head, Family event, int q) -> Status {
    EventCounterSpec cs;
    cs.layer = L;
    cs.head = head;
    cs.ballast = t.ballast;
    cs.event = familyDim(t, event);
    cs.reset = familyDim(t, Family::Run);
    cs.quiet = q;
    cs.unit = t.unit;
    cs.gain = s.headGain;
    QGPU_CHECK(buildEventCounter(w, cs));
    return Ok{};
  };
  auto thresholdSpec = [&](int head, int q) {
    ThresholdSpec ts;
    ts.layer = S;
    ts.head = head;
    ts.ballast = t.ballast;
    ts.quiet = q;
    ts.levelExp = EventCounterSpec{}.levelExp;
    ts.unit = t.unit;
    ts.gain = s.headGain;
    ts.zGain = s.headGain / 4;
    return ts;
  };
  // The TERM word is fetched inverted: −u = bit set, so "bit i of field f set" is sign −1.
  auto termBit = [&](const trace::PackedField& f, int i) { return fe.termWord.at(f.offset + i); };

  // ---- L: the step counter (EX) and the CTA counter ----
  // Where this stage's heads and units start in L..L+4: after the front end's and the host's.
  auto firstHead = [&](int i) { return fe.heads[i] + s.hostHeads[static_cast<size_t>(i)]; };
  auto firstUnit = [&](int i) { return fe.units[i] + s.hostUnits[static_cast<size_t>(i)]; };
  QGPU_CHECK(counter(firstHead(0), Family::Ex, quiet.at(0)));
  QGPU_CHECK(counter(firstHead(0) + 1, Family::Cta, quiet.at(1)));

  // ---- L+1: the PROG-tag latch; progEnable ----
  {
    std::vector<int> src = {familyDim(t, Family::Prog)};
    while (src.size() < 8) src.push_back(bal);
    QGPU_CHECK(latch(L + 1, firstHead(1), fe.promptTag.at(0), src, progTag));
    UnitWriter units(w, L + 1, firstUnit(1));
    QGPU_CHECK(signBase(units, progEnable));
    QGPU_CHECK(orAnd(units, {{t.isTerminal.at(0), 1}, {progTag.at(0), 1}}, progEnable.at(0)));
    ct.units[1] = units.used();
  }

  // ---- L+3: the launch latches (gridX, blockX of the PROG word) ----
  {
    const Field value = fe.rf.assembler.value;
    int head = firstHead(3);
    int slot = 0;
    for (const trace::PackedField& f : {gridField, blockXField}) {
      std::vector<int> src;
      for (int i = 0; i < f.width; ++i) src.push_back(value.at(f.offset + i));
      while (src.size() < 8) src.push_back(bal);
      QGPU_CHECK(latch(L + 3, head++, progEnable.at(0), src, launch.slice(8 * slot++, 8)));
    }
  }

  // ---- L+4: the decode of the scheduler's inputs ----
  {
    UnitWriter units(w, L + 4, firstUnit(4));
    const int R = reset.at(0);
    QGPU_CHECK(signBase(units, reset));
    QGPU_CHECK(orAnd(units, {{familyDim(t, Family::Run), 1}}, R));
    QGPU_CHECK(orAnd(units, {{familyDim(t, Family::Cta), 1}}, R));
    // reset is read below from its inputs (this MLP's output is not visible to itself).
    const int run = familyDim(t, Family::Run), cta = familyDim(t, Family::Cta);
    QGPU_CHECK(signBase(units, enable));
    QGPU_CHECK(orAnd(units, {{run, 1}}, enable.at(0)));
    QGPU_CHECK(orAnd(units, {{cta, 1}}, enable.at(0)));
    QGPU_CHECK(orAnd(units, {{fe.isTerm.at(0), 1}, {run, -1}, {cta, -1}}, enable.at(0)));
    QGPU_CHECK(signBase(units, kindWarp));
    for (int i = 0; i < 2; ++i) {
      QGPU_CHECK(orAnd(units, {{termBit(kindField, i), -1}, {run, -1}, {cta, -1}}, kindWarp.at(i)));
      QGPU_CHECK(orAnd(units, {{fe.warp.at(i), 1}, {run, -1}, {cta, -1}}, kindWarp.at(2 + i)));
    }
    const bool swap = s.twin == ControlTwin::SwapTargets;
    QGPU_CHECK(signBase(units, taken));
    QGPU_CHECK(signBase(units, next));
    for (int i = 0; i < kSchedTargetBits; ++i) {
      QGPU_CHECK(orAnd(units, {{termBit(swap ? nextField : takenField, i), -1}}, taken.at(i)));
      QGPU_CHECK(orAnd(units, {{termBit(swap ? takenField : nextField, i), -1}}, next.at(i)));
    }
    const int neg = termBit(negField, 0);
    QGPU_CHECK(signBase(units, pred));
    // "p set" is sign +1, or −1 when the field is read before the predicate file's flip.
    const int ps = s.predInverted ? -1 : 1;
    for (int l = 0; l < kSchedLanes; ++l) {
      QGPU_CHECK(orAnd(units, {{s.pred.at(l), ps}, {neg, 1}}, pred.at(l)));
      QGPU_CHECK(orAnd(units, {{s.pred.at(l), -ps}, {neg, -1}}, pred.at(l)));
    }
    const uint32_t bar = static_cast<uint32_t>(SchedKind::Barrier);
    QGPU_CHECK(signBase(units, nextBar));
    QGPU_CHECK(orAnd(units,
                     {{termBit(kindField, 0), (bar & 1) ? -1 : 1},
                      {termBit(kindField, 1), (bar & 2) ? -1 : 1}},
                     nextBar.at(0)));
    ct.units[4] = units.used();
  }

  // ---- S: the kind/warp latch, the thresholds; then the scheduler ----
  {
    std::vector<int> src;
    for (int i = 0; i < 4; ++i) src.push_back(kindWarp.at(i));
    while (src.size() < 8) src.push_back(bal);
    QGPU_CHECK(latch(S, 0, enable.at(0), src, latchOut));
    QGPU_CHECK(buildThresholds(w, thresholdSpec(1, quiet.at(1)), ctaAtLeast));
    ThresholdSpec lim = thresholdSpec(1 + kControlMaxCtaTokens, quiet.at(0));
    lim.threshold = s.stepLimit;
    lim.out = atLimit.at(0);
    QGPU_CHECK(buildThreshold(w, lim));
  }
  SchedulerSpec ss;
  ss.firstLayer = S;
  ss.firstHead = 0;
  ss.in.ballast = t.ballast;
  ss.in.reset = reset;
  ss.in.term = fe.isTerm;
  ss.in.warp = latchOut.slice(2, 2);
  ss.in.mask = fe.mask;
  ss.in.kind = latchOut.slice(0, 2);
  ss.in.taken = taken;
  ss.in.next = next;
  ss.in.pred = pred;
  ss.in.blockX = ct.blockX;
  ss.in.lastCta = lastCta;
  ss.in.nextBar = nextBar;
  ss.lambda = t.lambda;
  ss.gain = s.mlpGain;
  ss.unit = t.unit;
  ss.emit = true;
  QGPU_TRY(sched, buildScheduler(w, alloc, ss));
  ct.sched = sched;
  for (int i = 0; i < 8; ++i) ct.units[static_cast<size_t>(kSchedFirst + i)] = sched.units[static_cast<size_t>(i)];
  // lastCta = OR_g (gridX = g ∧ [c ≥ g − 1]), in S's MLP after the scheduler's units.
  {
    UnitWriter units(w, S, sched.units[0]);
    QGPU_CHECK(signBase(units, lastCta));
    for (uint32_t gx = 1; gx <= machine::kMaxGridBlocks; ++gx) {
      std::vector<Literal> lits;
      for (int i = 0; i < kControlLaunchBits; ++i) lits.push_back({ct.gridX.at(i), (gx >> i) & 1 ? 1 : -1});
      if (gx >= 2) lits.push_back({ctaAtLeast.at(static_cast<int>(gx) - 2), 1});
      QGPU_CHECK(orAnd(units, lits, lastCta.at(0)));
    }
    ct.units[kSchedFirst] += units.used();
  }

  // ---- E: the fault latch; the final emit field ----
  QGPU_TRY(faultLatch, alloc.take("ctl.faultLatch", 8));
  QGPU_TRY(family, alloc.take("ctl.emit.family", trace::kNumFamilies));
  QGPU_TRY(index, alloc.take("ctl.emit.index", tokenIndexBits()));
  QGPU_TRY(decides, alloc.take("ctl.decides", 1));
  ct.faultLatch = faultLatch;
  ct.emit = {family, index};
  ct.decides = decides;
  {
    std::vector<int> src = {sched.fault.at(0)};
    while (src.size() < 8) src.push_back(bal);
    QGPU_CHECK(latch(E, 0, familyDim(t, Family::Ex), src, faultLatch));
  }
  {
    UnitWriter units(w, E);
    const bool supplied = s.fault.dims == 1;
    const int sf = supplied ? s.fault.at(0) : -1, wm = familyDim(t, Family::Wm), lf = faultLatch.at(0);
    const int R = reset.at(0), T = fe.isTerm.at(0), D = sched.done.at(0), lim = atLimit.at(0);
    const int ex = familyDim(t, Family::Ex);
    // The conjunctions of the override cases (exclusive): N = Σ sign·x̂ − (k − 1); ¬sf joins
    // every case but the first when a fault is supplied.
    auto conj = [&](std::vector<std::pair<int, double>> lits, bool notFault = true) {
      if (supplied && notFault) lits.insert(lits.begin(), {sf, -1});
      LinearForm n;
      n.terms = std::move(lits);
      n.constant = -static_cast<double>(n.terms.size() - 1);
      return n;
    };
    struct Case {
      LinearForm when;
      trace::Token token;
    };
    const trace::Token fault = trace::single(Family::FaultTok), limit = trace::single(Family::Limit);
    std::vector<Case> cases;
    if (supplied) cases.push_back({conj({{sf, 1}}, false), fault});
    cases.push_back({conj({{wm, 1}, {lf, 1}}), fault});
    cases.push_back({conj({{R, 1}, {D, -1}, {lim, 1}}), limit});
    cases.push_back({conj({{T, 1}, {R, -1}, {wm, -1}, {D, -1}, {lim, 1}}), limit});
    cases.push_back({conj({{T, 1}, {wm, 1}, {lf, -1}, {D, -1}, {lim, 1}}), limit});
    // decides = reset ∨ EX ∨ term ∨ sf ∨ (WM ∧ lf), as exclusive ANDs (reset, EX and the
    // terminator position are different tokens: RUN / CTA, EX, a record end).
    QGPU_CHECK(signBase(units, decides));
    QGPU_CHECK(orAnd(units, {{R, 1}}, decides.at(0)));
    QGPU_CHECK(orAnd(units, {{ex, 1}}, decides.at(0)));
    QGPU_CHECK(orAnd(units, {{T, 1}}, decides.at(0)));
    if (supplied) QGPU_CHECK(orAnd(units, {{T, -1}, {sf, 1}}, decides.at(0)));
    std::vector<Literal> wmFault = {{T, -1}, {wm, 1}, {lf, 1}};
    if (supplied) wmFault.push_back({sf, -1});
    QGPU_CHECK(orAnd(units, wmFault, decides.at(0)));
    std::vector<std::pair<int, int>> dims;  // (source, destination)
    for (int i = 0; i < family.dims; ++i) dims.push_back({sched.emit.family.at(i), family.at(i)});
    for (int i = 0; i < index.dims; ++i) dims.push_back({sched.emit.index.at(i), index.at(i)});
    GadgetReport report;
    auto add = [&](const Expected<GadgetReport>& r) -> Status {
      if (!r.ok()) return r.error();
      report += r.value();
      return Ok{};
    };
    QGPU_CHECK(add(buildCancel(units, family, ctx)));
    QGPU_CHECK(add(buildCancel(units, index, ctx)));
    for (const auto& [src, dst] : dims)
      QGPU_CHECK(add(addDetector(units, ctx, LinearForm{{}, 1.0}, {{src, 1.0f}}, {{dst, 1}})));
    for (const Case& k : cases) {
      const int fam = static_cast<int>(trace::familyOf(k.token)), idx = trace::indexOf(k.token);
      for (size_t d = 0; d < dims.size(); ++d) {
        const auto [src, dst] = dims[d];
        const bool isFamily = static_cast<int>(d) < family.dims;
        const bool on = isFamily ? static_cast<int>(d) == fam
                                 : ((idx >> (static_cast<int>(d) - family.dims)) & 1) != 0;
        QGPU_CHECK(add(addDetector(units, ctx, k.when, {{src, 1.0f}}, {{dst, -1}})));
        QGPU_CHECK(add(addDetector(units, ctx, k.when, {{bal, 1.0f}}, {{dst, on ? 1.0 : -1.0}})));
      }
    }
    ct.units[kEmitLayer] = units.used();
  }
  return ct;
}

}  // namespace qgpu::circuit
