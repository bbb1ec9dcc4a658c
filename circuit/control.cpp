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
constexpr int kTickLevels = trace::kTickLevels;
constexpr int kLimitDigits = kTickLevels + 1;  // the limit's digits c_1..c_3 in the tick ratios
static_assert(kTickLevels == 2, "the stage builds TICK(1), TICK(2) and three counters");
constexpr int kTickRatio = static_cast<int>(trace::kTickRatios[0]);
static_assert(trace::kTickRatios[0] == trace::kTickRatios[1] &&
                  trace::kTickRatios[1] == trace::kTickRatios[2],
              "one threshold per counter: the ratios are equal");

// The limit's digits: stepLimit = c_1 + R1·c_2 + R1·R2·c_3, each c_k < R_k except that c_3 may be
// R3 (the model's limit R1·R2·R3 itself).
std::array<int, kLimitDigits> limitDigits(int64_t stepLimit) {
  std::array<int, kLimitDigits> c{};
  for (int k = 0; k < kLimitDigits; ++k) {
    const int64_t r = static_cast<int64_t>(trace::kTickRatios[static_cast<size_t>(k)]);
    c[static_cast<size_t>(k)] = static_cast<int>(k + 1 < kLimitDigits ? stepLimit % r : stepLimit);
    stepLimit /= r;
  }
  return c;
}

// Heads this stage adds per layer offset (the scheduler's 16 at S+1 included).
std::vector<int> ownHeads() {
  std::vector<int> h(kControlLayers, 0);
  h[0] = 1;                              // the CTA counter
  h[1] = 1 + kTickLevels + 1;            // the PROG-tag latch, the step and tick counters
  h[3] = 2;                              // the launch latches
  // kind/warp latch, [c ≥ 1..15], [s_k ≥ 100] per tick level, [s_k ≥ c_k] per limit digit
  h[kSchedFirst] = 1 + kControlMaxCtaTokens + kTickLevels + kLimitDigits;
  h[kSchedFirst + 1] = kSchedThreads;    // the scheduler's PC table
  h[kEmitLayer] = 2;                     // the fault latch, the EX latch
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
  if (s.stepLimit < 1 || static_cast<uint64_t>(s.stepLimit) > trace::kModelStepLimit)
    return controlUsage("step limit " + std::to_string(s.stepLimit) + " outside 1.." +
                        std::to_string(trace::kModelStepLimit) +
                        " (R1·R2·R3: trace.md \"Step ticks\")");
  if (range < kTickRatio)
    return controlUsage("a counter's thresholds reach " + std::to_string(range) +
                        ", below the tick ratio " + std::to_string(kTickRatio));
  const std::array<int, kLimitDigits> digits = limitDigits(s.stepLimit);
  int limitHeads = 0;
  for (int c : digits) limitHeads += c > 0 ? 1 : 0;
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
  QGPU_TRY(quiet, alloc.take("ctl.quiet", 6));
  QGPU_TRY(heavy, alloc.take("ctl.heavy", 2));
  QGPU_TRY(tickEvent, alloc.take("ctl.tickEvent", kTickLevels));
  QGPU_TRY(counterReset, alloc.take("ctl.counterReset", kTickLevels));
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
  QGPU_TRY(tickAtLeast, alloc.take("ctl.tickAtLeast", kTickLevels));
  QGPU_TRY(limitAtLeast, alloc.take("ctl.limitAtLeast", limitHeads));
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
  ct.tickEvent = tickEvent;
  ct.counterReset = counterReset;
  ct.tickAtLeast = tickAtLeast;
  ct.limitAtLeast = limitAtLeast;
  ct.lastCta = lastCta;
  ct.heads = ownHeads();
  ct.units.assign(kControlLayers, 0);

  // The trace rows: quiet dims 0, each heavy pad 2u (one pad per three quiet dims: Σx² as in the
  // full layout, counter.h).
  {
    const std::string embed = w.globalTensor("embed_tokens.weight");
    for (int id = 0; id < trace::kVocabSize; ++id) {
      for (int q = 0; q < quiet.dims; ++q)
        QGPU_CHECK(w.set(embed, t.rowOffset + id, quiet.at(q), 0));
      for (int h = 0; h < heavy.dims; ++h)
        QGPU_CHECK(w.set(embed, t.rowOffset + id, heavy.at(h), 2 * t.unit));
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
  auto counter = [&](int layer, int head, int event, int reset, int q) -> Status {
    EventCounterSpec cs;
    cs.layer = layer;
    cs.head = head;
    cs.ballast = t.ballast;
    cs.event = event;
    cs.reset = reset;
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

  // ---- L: the CTA counter; the tick tokens and the counters' resets ----
  // Where this stage's heads and units start in L..L+4: after the front end's and the host's.
  auto firstHead = [&](int i) { return fe.heads[i] + s.hostHeads[static_cast<size_t>(i)]; };
  auto firstUnit = [&](int i) { return fe.units[i] + s.hostUnits[static_cast<size_t>(i)]; };
  const int run = familyDim(t, Family::Run), tick = familyDim(t, Family::Tick);
  QGPU_CHECK(counter(L, firstHead(0), familyDim(t, Family::Cta), run, quiet.at(1)));
  {
    // TICK(k) = the TICK family with index k − 1; counter k (k = 1, 2) is reset by RUN or TICK(k).
    UnitWriter units(w, L, firstUnit(0));
    QGPU_CHECK(signBase(units, tickEvent));
    QGPU_CHECK(signBase(units, counterReset));
    for (int k = 0; k < kTickLevels; ++k) {
      const std::vector<Literal> lits = {{tick, 1}, {t.index.at(0), k == 1 ? 1 : -1}};
      QGPU_CHECK(orAnd(units, lits, tickEvent.at(k)));
      QGPU_CHECK(orAnd(units, lits, counterReset.at(k)));
      QGPU_CHECK(orAnd(units, {{run, 1}}, counterReset.at(k)));
    }
    ct.units[0] = units.used();
  }

  // ---- L+1: the PROG-tag latch; the step counter (EX, reset by TICK(1)) and the tick counters
  // (TICK(1), reset by TICK(2); TICK(2)); progEnable ----
  {
    std::vector<int> src = {familyDim(t, Family::Prog)};
    while (src.size() < 8) src.push_back(bal);
    QGPU_CHECK(latch(L + 1, firstHead(1), fe.promptTag.at(0), src, progTag));
    QGPU_CHECK(counter(L + 1, firstHead(1) + 1, familyDim(t, Family::Ex), counterReset.at(0),
                       quiet.at(0)));
    QGPU_CHECK(counter(L + 1, firstHead(1) + 2, tickEvent.at(0), counterReset.at(1), quiet.at(2)));
    QGPU_CHECK(counter(L + 1, firstHead(1) + 3, tickEvent.at(1), run, quiet.at(3)));
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
    const int cta = familyDim(t, Family::Cta);
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
    // The counters in step order: s_1 (EX since TICK(1)), s_2 (TICK(1) since TICK(2)), s_3.
    const std::array<int, kLimitDigits> counts = {quiet.at(0), quiet.at(2), quiet.at(3)};
    int head = 1 + kControlMaxCtaTokens;
    for (int k = 0; k < kTickLevels; ++k) {
      ThresholdSpec ts = thresholdSpec(head++, counts[static_cast<size_t>(k)]);
      ts.threshold = kTickRatio;
      ts.out = tickAtLeast.at(k);
      QGPU_CHECK(buildThreshold(w, ts));
    }
    int digit = 0;
    for (int k = 0; k < kLimitDigits; ++k) {
      if (digits[static_cast<size_t>(k)] == 0) continue;
      ThresholdSpec ts = thresholdSpec(head++, counts[static_cast<size_t>(k)]);
      ts.threshold = digits[static_cast<size_t>(k)];
      ts.out = limitAtLeast.at(digit++);
      QGPU_CHECK(buildThreshold(w, ts));
    }
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
  QGPU_TRY(exLatch, alloc.take("ctl.exLatch", 8));
  ct.faultLatch = faultLatch;
  ct.exLatch = exLatch;
  ct.emit = {family, index};
  ct.decides = decides;
  {
    std::vector<int> src = {sched.fault.at(0)};
    while (src.size() < 8) src.push_back(bal);
    QGPU_CHECK(latch(E, 0, familyDim(t, Family::Ex), src, faultLatch));
  }
  // The EX latch: at every reset or terminator position the scheduler's emit is the next step's
  // EX(b') (or a CTA / END token, which no tick follows); a tick written instead of it leaves the
  // EX to the tick's position, which reads b' back.
  if (sched.emit.index.dims > exLatch.dims)
    return makeDiag(ErrorKind::Internal, "control: the token index is wider than the EX latch");
  {
    std::vector<int> src;
    for (int i = 0; i < sched.emit.index.dims; ++i) src.push_back(sched.emit.index.at(i));
    while (src.size() < 8) src.push_back(bal);
    QGPU_CHECK(latch(E, 1, enable.at(0), src, exLatch));
  }
  {
    UnitWriter units(w, E);
    const bool supplied = s.fault.dims == 1;
    const int sf = supplied ? s.fault.at(0) : -1, wm = familyDim(t, Family::Wm), lf = faultLatch.at(0);
    const int R = reset.at(0), T = fe.isTerm.at(0), D = sched.done.at(0);
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
    // A case writes `token`, or with `latched` the EX latch's b' (a tick position's step).
    struct Case {
      LinearForm when;
      trace::Token token;
      bool latched = false;
    };
    const trace::Token fault = trace::single(Family::FaultTok), limit = trace::single(Family::Limit);
    using Lits = std::vector<std::pair<int, double>>;
    // atLimit = every nonzero digit's [s_k ≥ c_k]; dueK = [s_k ≥ R_k]: TICK(k) is due.
    Lits atLimit;
    for (int i = 0; i < limitAtLeast.dims; ++i) atLimit.push_back({limitAtLeast.at(i), 1});
    auto with = [](Lits a, const Lits& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    const int due1 = tickAtLeast.at(0), due2 = tickAtLeast.at(1);
    const int tickFam = familyDim(t, Family::Tick), tickIdx = t.index.at(0);
    const Lits tick1 = {{tickFam, 1}, {tickIdx, -1}}, tick2 = {{tickFam, 1}, {tickIdx, 1}};
    std::vector<Case> cases;
    if (supplied) cases.push_back({conj({{sf, 1}}, false), fault});
    cases.push_back({conj({{wm, 1}, {lf, 1}}), fault});
    // Where the next step's EX would come: TICK(1) when due, else LIMIT at the limit.
    for (const Lits& exWould : {Lits{{R, 1}, {D, -1}}, Lits{{T, 1}, {R, -1}, {wm, -1}, {D, -1}},
                                Lits{{T, 1}, {wm, 1}, {lf, -1}, {D, -1}}}) {
      cases.push_back({conj(with(exWould, {{due1, 1}})), trace::tick(1)});
      cases.push_back({conj(with(with(exWould, {{due1, -1}}), atLimit)), limit});
    }
    // At TICK(1): TICK(2) when due, else LIMIT at the limit, else the latched EX; at TICK(2):
    // LIMIT at the limit, else the latched EX. The latched cases take ¬atLimit as one literal
    // per digit, so they split into one exclusive case per digit that fails.
    cases.push_back({conj(with(tick1, {{due2, 1}})), trace::tick(2)});
    cases.push_back({conj(with(with(tick1, {{due2, -1}}), atLimit)), limit});
    cases.push_back({conj(with(tick2, atLimit)), limit});
    for (int i = 0; i < static_cast<int>(atLimit.size()); ++i) {
      Lits failsAt;  // the digits before i hold, digit i does not
      for (int j = 0; j < i; ++j) failsAt.push_back(atLimit[static_cast<size_t>(j)]);
      failsAt.push_back({atLimit[static_cast<size_t>(i)].first, -1});
      cases.push_back(
          {conj(with(with(tick1, {{due2, -1}}), failsAt)), trace::tok(Family::Ex, 0), true});
      cases.push_back({conj(with(tick2, failsAt)), trace::tok(Family::Ex, 0), true});
    }
    // decides = reset ∨ EX ∨ term ∨ TICK ∨ sf ∨ (WM ∧ lf), as exclusive ANDs (reset, EX, TICK and
    // the terminator position are different tokens: RUN / CTA, EX, TICK, a record end).
    QGPU_CHECK(signBase(units, decides));
    QGPU_CHECK(orAnd(units, {{R, 1}}, decides.at(0)));
    QGPU_CHECK(orAnd(units, {{ex, 1}}, decides.at(0)));
    QGPU_CHECK(orAnd(units, {{tickFam, 1}}, decides.at(0)));
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
        const int bit = static_cast<int>(d) - family.dims;
        const bool on = isFamily ? static_cast<int>(d) == fam : ((idx >> bit) & 1) != 0;
        QGPU_CHECK(add(addDetector(units, ctx, k.when, {{src, 1.0f}}, {{dst, -1}})));
        if (k.latched && !isFamily)
          QGPU_CHECK(add(addDetector(units, ctx, k.when, {{exLatch.at(bit), 1.0f}}, {{dst, 1}})));
        else
          QGPU_CHECK(add(addDetector(units, ctx, k.when, {{bal, 1.0f}}, {{dst, on ? 1.0 : -1.0}})));
      }
    }
    ct.units[kEmitLayer] = units.used();
  }
  return ct;
}

}  // namespace qgpu::circuit
