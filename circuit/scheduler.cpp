// qgpu/circuit/scheduler.cpp — see scheduler.h for the rule, the layers and the maths.
#include "circuit/scheduler.h"

#include <cmath>
#include <string>
#include <vector>

#include "circuit/unit_builder.h"

namespace qgpu::circuit {
namespace {

Diag schedulerUsage(const std::string& message) {
  return makeDiag(ErrorKind::Usage, "scheduler: " + message);
}

using unit_builder::sgn;

// The gadget's unit-level pieces on one layer, each adding its report to `total`.
class Layer {
 public:
  Layer(CircuitWeights& w, int layer, const MlpContext& ctx, GadgetReport& total)
      : units_(w, layer), ctx_(ctx), total_(total) {}

  Status cancel(const Field& f) { return add(buildCancel(units_, f, ctx_)); }
  Status constant(const std::vector<Output>& out) { return add(addConstant(units_, ctx_, out)); }
  // A detector with up = ballast (writes d·u) or with up = one field dim (a select: d·u·x̂).
  Status detector(const LinearForm& n, const std::vector<Output>& out, int upDim = -1) {
    const int up = upDim >= 0 ? upDim : ctx_.ballast.at(0);
    return add(addDetector(units_, ctx_, n, {{up, 1.0f}}, out));
  }
  Status step(const LinearForm& n, const std::vector<Output>& out) {
    return add(addStep(units_, ctx_, n, {{ctx_.ballast.at(0), 1.0f}}, out));
  }
  Status lookup(const LookupSpec& s) { return add(buildLookup(units_, s, ctx_)); }
  Status mux(const MuxSpec& s) { return add(buildMux(units_, s, ctx_)); }
  int used() const { return units_.used(); }

 private:
  Status add(const Expected<GadgetReport>& r) {
    if (!r.ok()) return r.error();
    total_ += r.value();
    return Ok{};
  }
  UnitWriter units_;
  const MlpContext& ctx_;
  GadgetReport& total_;
};

// A clean bit d = f(...) written as: cancel, −u everywhere, +2u where a detector fires.
Status clearToZero(Layer& l, const Field& f) {
  QGPU_CHECK(l.cancel(f));
  std::vector<Output> minus;
  for (int i = 0; i < f.dims; ++i) minus.push_back({f.at(i), -1});
  return l.constant(minus);
}

Status checkWidth(const Field& f, int dims, const char* name) {
  if (f.dims != dims)
    return schedulerUsage(std::string("input field '") + name + "' has " + std::to_string(f.dims) +
                          " dims, needs " + std::to_string(dims));
  return Ok{};
}

}  // namespace

int chooseWarp(int warp, bool barrier, const std::array<bool, kSchedWarps>& anyLive,
               SchedulerTwin twin) {
  if (warp < 0 || warp >= kSchedWarps) return -1;
  if (!barrier && anyLive[static_cast<size_t>(warp)]) return warp;
  for (int v = warp + 1; v < kSchedWarps; ++v)
    if (anyLive[static_cast<size_t>(v)]) return v;
  if (twin == SchedulerTwin::NoRelease) return -1;
  for (int v = 0; v <= warp; ++v)
    if (anyLive[static_cast<size_t>(v)]) return v;
  return -1;
}

SchedChoice scheduleNext(const SchedView& view, SchedulerTwin twin) {
  std::array<bool, kSchedWarps> anyLive{};
  for (int t = 0; t < kSchedThreads; ++t)
    if (view.live[static_cast<size_t>(t)]) anyLive[static_cast<size_t>(t / kSchedLanes)] = true;
  SchedChoice c;
  const int w = chooseWarp(view.warp, view.barrier, anyLive, twin);
  if (w < 0) {
    c.done = true;
    return c;
  }
  c.warp = w;
  int best = -1;
  for (int l = 0; l < kSchedLanes; ++l) {
    const size_t t = static_cast<size_t>(w * kSchedLanes + l);
    if (!view.live[t]) continue;
    const int pc = view.pc[t];
    if (best < 0 || (twin == SchedulerTwin::MaxPc ? pc > best : pc < best)) best = pc;
  }
  c.block = best;
  for (int l = 0; l < kSchedLanes; ++l) {
    const size_t t = static_cast<size_t>(w * kSchedLanes + l);
    if (view.live[t] && view.pc[t] == best) c.mask = static_cast<uint8_t>(c.mask | (1u << l));
  }
  return c;
}

bool divergentBarrier(const SchedView& view, const SchedChoice& choice, bool nextBar) {
  if (!nextBar || choice.done) return false;
  for (int l = 0; l < kSchedLanes; ++l)
    if (view.live[static_cast<size_t>(choice.warp * kSchedLanes + l)] && !(choice.mask >> l & 1))
      return true;
  return false;
}

std::array<std::pair<int, int>, 12> lePairs() {
  std::array<std::pair<int, int>, 12> p{};
  size_t i = 0;
  for (int a = 0; a < kSchedLanes; ++a)
    for (int b = 0; b < kSchedLanes; ++b)
      if (a != b) p[i++] = {a, b};
  return p;
}

Expected<Scheduler> buildScheduler(CircuitWeights& weights, FieldAllocator& alloc,
                                   const SchedulerSpec& spec) {
  const model::Qwen35Config& c = weights.config();
  const SchedulerInputs& in = spec.in;
  const int layers = spec.emit ? 8 : 7;
  if (spec.firstLayer < 0 || spec.firstLayer + layers > c.numLayers())
    return schedulerUsage("needs " + std::to_string(layers) + " layers from layer " +
                          std::to_string(spec.firstLayer) + ", the config has " +
                          std::to_string(c.numLayers()));
  if (c.linearNumKeyHeads != c.linearNumValueHeads ||
      spec.firstHead < 0 || spec.firstHead + kSchedThreads > c.linearNumValueHeads)
    return schedulerUsage("needs 16 value heads from head " + std::to_string(spec.firstHead) +
                          " with their own key heads (Hv = Hk); the config has " +
                          std::to_string(c.linearNumValueHeads) + " / " +
                          std::to_string(c.linearNumKeyHeads));
  if (in.ballast.dims < 2) return schedulerUsage("the ballast needs at least 2 dims");
  QGPU_CHECK(checkWidth(in.reset, 1, "reset"));
  QGPU_CHECK(checkWidth(in.term, 1, "term"));
  QGPU_CHECK(checkWidth(in.warp, 2, "warp"));
  QGPU_CHECK(checkWidth(in.mask, kSchedLanes, "mask"));
  QGPU_CHECK(checkWidth(in.kind, 2, "kind"));
  QGPU_CHECK(checkWidth(in.taken, kSchedTargetBits, "taken"));
  QGPU_CHECK(checkWidth(in.next, kSchedTargetBits, "next"));
  QGPU_CHECK(checkWidth(in.pred, kSchedLanes, "pred"));
  QGPU_CHECK(checkWidth(in.blockX, 5, "blockX"));
  if (spec.emit) {
    QGPU_CHECK(checkWidth(in.lastCta, 1, "lastCta"));
    QGPU_CHECK(checkWidth(in.nextBar, 1, "nextBar"));
  }

  Scheduler s;
  for (int l = 0; l < kSchedLanes; ++l) {
    QGPU_TRY(f, alloc.take("sched.target" + std::to_string(l), kSchedTargetBits));
    s.target[static_cast<size_t>(l)] = f;
  }
  QGPU_TRY(enable, alloc.take("sched.enable", kSchedThreads));
  QGPU_TRY(exists, alloc.take("sched.exists", kSchedThreads));
  QGPU_TRY(isBar, alloc.take("sched.isBar", 1));
  s.enable = enable;
  s.exists = exists;
  s.isBar = isBar;
  for (int t = 0; t < kSchedThreads; ++t) {
    QGPU_TRY(f, alloc.take("sched.pc" + std::to_string(t), kSchedRowBits));
    s.pc[static_cast<size_t>(t)] = f;
  }
  QGPU_TRY(live, alloc.take("sched.live", kSchedThreads));
  QGPU_TRY(anyLive, alloc.take("sched.anyLive", kSchedWarps));
  QGPU_TRY(oneHot, alloc.take("sched.nextWarpOneHot", kSchedWarps));
  QGPU_TRY(nextWarp, alloc.take("sched.nextWarp", 2));
  QGPU_TRY(done, alloc.take("sched.done", 1));
  s.live = live;
  s.anyLive = anyLive;
  s.nextWarpOneHot = oneHot;
  s.nextWarp = nextWarp;
  s.done = done;
  for (int l = 0; l < kSchedLanes; ++l) {
    QGPU_TRY(f, alloc.take("sched.pcSel" + std::to_string(l), kSchedPcBits));
    s.pcSel[static_cast<size_t>(l)] = f;
  }
  QGPU_TRY(liveSel, alloc.take("sched.liveSel", kSchedLanes));
  QGPU_TRY(le, alloc.take("sched.le", 12));
  QGPU_TRY(nextMask, alloc.take("sched.nextMask", kSchedLanes));
  QGPU_TRY(nextBlock, alloc.take("sched.nextBlock", kSchedPcBits));
  s.liveSel = liveSel;
  s.le = le;
  s.nextMask = nextMask;
  s.nextBlock = nextBlock;

  const MlpContext ctx{in.ballast, spec.lambda, spec.gain, spec.unit, false};
  const int L = spec.firstLayer;
  const int R = in.reset.at(0), T = in.term.at(0), k0 = in.kind.at(0), k1 = in.kind.at(1);

  // ---- L: the rows to write, the enables, exists, isBar ----
  {
    Layer l0(weights, L, ctx, s.mlp);
    for (int l = 0; l < kSchedLanes; ++l) {
      const Field& tg = s.target[static_cast<size_t>(l)];
      const int p = in.pred.at(l);
      QGPU_CHECK(l0.cancel(tg));
      for (int j = 0; j < kSchedTargetBits; ++j) {
        const int d = tg.at(j);
        // reset → (block 0, not exited)
        QGPU_CHECK(l0.detector({{{R, 1}}, 0}, {{d, -1}}));
        // jmp or bar (k0 = 0) → next
        QGPU_CHECK(l0.detector({{{R, -1}, {k0, -1}}, -1}, {{d, 1}}, in.next.at(j)));
        // br (k0 = 1, k1 = 0): pred ? taken : next
        QGPU_CHECK(l0.detector({{{R, -1}, {k0, 1}, {k1, -1}, {p, -1}}, -3}, {{d, 1}}, in.next.at(j)));
        QGPU_CHECK(l0.detector({{{R, -1}, {k0, 1}, {k1, -1}, {p, 1}}, -3}, {{d, 1}}, in.taken.at(j)));
        // exit → (block 0, exited)
        QGPU_CHECK(l0.detector({{{R, -1}, {k0, 1}, {k1, 1}}, -2},
                               {{d, j == kSchedPcBits ? 1.0 : -1.0}}));
      }
    }
    QGPU_CHECK(clearToZero(l0, s.enable));
    for (int w = 0; w < kSchedWarps; ++w)
      for (int l = 0; l < kSchedLanes; ++l) {
        const int d = s.enable.at(w * kSchedLanes + l);
        QGPU_CHECK(l0.detector({{{R, 1}}, 0}, {{d, 2}}));
        QGPU_CHECK(l0.detector({{{R, -1},
                                 {T, 1},
                                 {in.warp.at(0), sgn(w & 1)},
                                 {in.warp.at(1), sgn(w & 2)},
                                 {in.mask.at(l), 1}},
                                -4},
                               {{d, 2}}));
      }
    LookupSpec ex;
    ex.in = in.blockX;
    ex.out = s.exists;
    ex.prior = Prior::Replace;
    for (uint32_t bx = 0; bx < 32; ++bx) ex.table.push_back(bx >= 16 ? 0xffffu : (1u << bx) - 1u);
    QGPU_CHECK(l0.lookup(ex));
    QGPU_CHECK(clearToZero(l0, s.isBar));
    QGPU_CHECK(l0.detector({{{k0, -1}, {k1, 1}}, -1}, {{s.isBar.at(0), 2}}));
    s.units[0] = l0.used();
  }

  // ---- L+1: the PC table (16 latches) and live ----
  for (int t = 0; t < kSchedThreads; ++t) {
    LatchSpec ls;
    ls.layer = L + 1;
    ls.head = spec.firstHead + t;
    ls.ballast = in.ballast;
    ls.enable = s.enable.at(t);
    const Field& tg = s.target[static_cast<size_t>(t % kSchedLanes)];
    for (int j = 0; j < kSchedTargetBits; ++j) ls.sources.push_back(tg.at(j));
    while (static_cast<int>(ls.sources.size()) < kSchedRowBits) ls.sources.push_back(in.ballast.at(0));
    ls.out = s.pc[static_cast<size_t>(t)];
    ls.lambda = spec.lambda;
    ls.gain = spec.gain;
    ls.valueGain = spec.gain;
    ls.zGain = spec.gain / 4;
    ls.outUnit = spec.unit;
    QGPU_TRY(m, buildLatch(weights, ls));
    s.latch = m;
    ++s.heads;
  }
  {
    Layer l1(weights, L + 1, ctx, s.mlp);
    QGPU_CHECK(clearToZero(l1, s.live));
    for (int t = 0; t < kSchedThreads; ++t)
      QGPU_CHECK(l1.detector(
          {{{s.exists.at(t), 1}, {s.pc[static_cast<size_t>(t)].at(kSchedPcBits), -1}}, -1},
          {{s.live.at(t), 2}}));
    s.units[1] = l1.used();
  }

  // ---- L+2: anyLive_w = [Σ_l live ≥ 1] ----
  {
    Layer l2(weights, L + 2, ctx, s.mlp);
    QGPU_CHECK(clearToZero(l2, s.anyLive));
    for (int w = 0; w < kSchedWarps; ++w) {
      LinearForm n;  // T = Σ_l (x̂ + 1)/2; N = T − 1 + 1
      for (int l = 0; l < kSchedLanes; ++l) n.terms.push_back({s.live.at(w * kSchedLanes + l), 0.5});
      n.constant = 0.5 * kSchedLanes;
      QGPU_CHECK(l2.step(n, {{s.anyLive.at(w), 2}}));
    }
    s.units[2] = l2.used();
  }

  // ---- L+3: the warp choice, a lookup over (warp, isBar, anyLive) ----
  {
    Layer l3(weights, L + 3, ctx, s.mlp);
    QGPU_CHECK(l3.cancel(s.nextWarpOneHot));
    QGPU_CHECK(l3.cancel(s.nextWarp));
    QGPU_CHECK(l3.cancel(s.done));
    const std::vector<int> inputs = {in.warp.at(0), in.warp.at(1), s.isBar.at(0), s.anyLive.at(0),
                                     s.anyLive.at(1), s.anyLive.at(2), s.anyLive.at(3)};
    const int k = static_cast<int>(inputs.size());
    for (uint32_t p = 0; p < (1u << k); ++p) {
      const int warp = static_cast<int>(p & 3);
      const bool bar = (p >> 2) & 1;
      std::array<bool, kSchedWarps> any{};
      for (int v = 0; v < kSchedWarps; ++v) any[static_cast<size_t>(v)] = (p >> (3 + v)) & 1;
      const int chosen = chooseWarp(warp, bar, any, spec.twin);
      const int w = chosen < 0 ? 0 : chosen;
      LinearForm n;
      for (int i = 0; i < k; ++i) n.terms.push_back({inputs[static_cast<size_t>(i)], sgn((p >> i) & 1)});
      n.constant = -(k - 1);
      std::vector<Output> word;
      for (int v = 0; v < kSchedWarps; ++v) word.push_back({s.nextWarpOneHot.at(v), sgn(v == w)});
      word.push_back({s.nextWarp.at(0), sgn(w & 1)});
      word.push_back({s.nextWarp.at(1), sgn(w & 2)});
      word.push_back({s.done.at(0), sgn(chosen < 0)});
      QGPU_CHECK(l3.detector(n, word));
    }
    s.units[3] = l3.used();
  }

  // ---- L+4: the lanes of w' ----
  {
    Layer l4(weights, L + 4, ctx, s.mlp);
    for (int l = 0; l < kSchedLanes; ++l) {
      MuxSpec pcMux, liveMux;
      pcMux.select = liveMux.select = s.nextWarpOneHot;
      pcMux.selector = liveMux.selector = Selector::OneHot;
      pcMux.prior = liveMux.prior = Prior::Replace;
      for (int v = 0; v < kSchedWarps; ++v) {
        const Field& row = s.pc[static_cast<size_t>(v * kSchedLanes + l)];
        pcMux.inputs.push_back({row.name, row.offset, kSchedPcBits});
        liveMux.inputs.push_back({"live", s.live.at(v * kSchedLanes + l), 1});
      }
      pcMux.out = s.pcSel[static_cast<size_t>(l)];
      liveMux.out = {"liveSel", s.liveSel.at(l), 1};
      QGPU_CHECK(l4.mux(pcMux));
      QGPU_CHECK(l4.mux(liveMux));
    }
    s.units[4] = l4.used();
  }

  // ---- L+5: le_{l,l'} = [key_l ≤ key_l'], key = pc + 32·¬live ----
  {
    Layer l5(weights, L + 5, ctx, s.mlp);
    QGPU_CHECK(clearToZero(l5, s.le));
    const auto pairs = lePairs();
    const double pcSign = spec.twin == SchedulerTwin::MaxPc ? -1 : 1;
    for (size_t i = 0; i < pairs.size(); ++i) {
      const auto [a, b] = pairs[i];
      LinearForm n;  // T = key_b − key_a; N = T + 1
      for (int j = 0; j < kSchedPcBits; ++j) {
        const double w = pcSign * std::ldexp(1.0, j - 1);
        n.terms.push_back({s.pcSel[static_cast<size_t>(b)].at(j), w});
        n.terms.push_back({s.pcSel[static_cast<size_t>(a)].at(j), -w});
      }
      n.terms.push_back({s.liveSel.at(b), -16});
      n.terms.push_back({s.liveSel.at(a), 16});
      n.constant = 1;
      QGPU_CHECK(l5.step(n, {{s.le.at(static_cast<int>(i)), 2}}));
    }
    s.units[5] = l5.used();
  }

  // ---- L+6: m' and b' ----
  {
    Layer l6(weights, L + 6, ctx, s.mlp);
    const auto pairs = lePairs();
    auto leDim = [&](int a, int b) {
      for (size_t i = 0; i < pairs.size(); ++i)
        if (pairs[i].first == a && pairs[i].second == b) return s.le.at(static_cast<int>(i));
      return -1;
    };
    QGPU_CHECK(clearToZero(l6, s.nextMask));
    for (int l = 0; l < kSchedLanes; ++l) {
      LinearForm n;
      n.terms.push_back({s.liveSel.at(l), 1});
      for (int o = 0; o < kSchedLanes; ++o)
        if (o != l) n.terms.push_back({leDim(l, o), 1});
      n.constant = -kSchedLanes + 1;
      QGPU_CHECK(l6.detector(n, {{s.nextMask.at(l), 2}}));
    }
    QGPU_CHECK(l6.cancel(s.nextBlock));
    for (int l = 0; l < kSchedLanes; ++l) {
      LinearForm first;
      first.terms.push_back({s.liveSel.at(l), 1});
      for (int o = 0; o < l; ++o) first.terms.push_back({leDim(o, l), -1});
      for (int o = l + 1; o < kSchedLanes; ++o) first.terms.push_back({leDim(l, o), 1});
      first.constant = -kSchedLanes + 1;
      for (int j = 0; j < kSchedPcBits; ++j)
        QGPU_CHECK(l6.detector(first, {{s.nextBlock.at(j), 1}},
                               s.pcSel[static_cast<size_t>(l)].at(j)));
    }
    LinearForm none;  // no live lane in w' (the CTA is done): b' = 0
    for (int l = 0; l < kSchedLanes; ++l) none.terms.push_back({s.liveSel.at(l), -1});
    none.constant = -kSchedLanes + 1;
    std::vector<Output> zero;
    for (int j = 0; j < kSchedPcBits; ++j) zero.push_back({s.nextBlock.at(j), -1});
    QGPU_CHECK(l6.detector(none, zero));
    s.units[6] = l6.used();
  }

  // ---- L+7: the next token (EX(b') / WM(w', m') / CTA / END) as an emit field ----
  if (spec.emit) {
    QGPU_TRY(family, alloc.take("sched.emit.family", trace::kNumFamilies));
    QGPU_TRY(index, alloc.take("sched.emit.index", tokenIndexBits()));
    s.emit = {family, index};
    for (int b = 0; b < 32; ++b)
      if (trace::indexOf(trace::ex(b)) != b)
        return makeDiag(ErrorKind::Internal, "scheduler: EX(b)'s index is not b");
    Layer l7(weights, L + 7, ctx, s.mlp);
    const int D = s.done.at(0), last = in.lastCta.at(0);
    auto famDim = [&](trace::Family f) { return family.at(static_cast<int>(f)); };
    QGPU_CHECK(clearToZero(l7, family));
    // EX(b'): (reset ∨ term) ∧ ¬done, as the two disjoint cases reset ∧ ¬done, ¬reset ∧ term ∧ ¬done
    const LinearForm exCases[2] = {{{{R, 1}, {D, -1}}, -1}, {{{R, -1}, {T, 1}, {D, -1}}, -2}};
    for (const LinearForm& n : exCases) QGPU_CHECK(l7.detector(n, {{famDim(trace::Family::Ex), 2}}));
    QGPU_CHECK(l7.detector({{{R, -1}, {T, -1}, {D, -1}}, -2}, {{famDim(trace::Family::Wm), 2}}));
    QGPU_CHECK(l7.detector({{{D, 1}, {last, -1}}, -1}, {{famDim(trace::Family::Cta), 2}}));
    QGPU_CHECK(l7.detector({{{D, 1}, {last, 1}}, -1}, {{famDim(trace::Family::End), 2}}));
    QGPU_CHECK(l7.cancel(index));
    for (const LinearForm& n : exCases) {
      for (int j = 0; j < kSchedPcBits; ++j)
        QGPU_CHECK(l7.detector(n, {{index.at(j), 1}}, s.nextBlock.at(j)));
      std::vector<Output> high;
      for (int j = kSchedPcBits; j < index.dims; ++j) high.push_back({index.at(j), -1});
      QGPU_CHECK(l7.detector(n, high));
    }
    for (uint32_t p = 0; p < 64; ++p) {  // WM(w', m'): p = w' | m' << 2
      const int w = static_cast<int>(p & 3), m = static_cast<int>(p >> 2);
      LinearForm n{{{R, -1}, {T, -1}, {D, -1}}, 0};
      for (int i = 0; i < 2; ++i) n.terms.push_back({s.nextWarp.at(i), sgn((w >> i) & 1)});
      for (int i = 0; i < kSchedLanes; ++i) n.terms.push_back({s.nextMask.at(i), sgn((m >> i) & 1)});
      n.constant = -static_cast<double>(n.terms.size() - 1);
      const int idx = m == 0 ? 0 : trace::indexOf(trace::wm(w, m));  // m' = 0 never follows
      std::vector<Output> word;
      for (int j = 0; j < index.dims; ++j) word.push_back({index.at(j), sgn((idx >> j) & 1)});
      QGPU_CHECK(l7.detector(n, word));
    }
    std::vector<Output> zero;  // CTA, END: index 0
    for (int j = 0; j < index.dims; ++j) zero.push_back({index.at(j), -1});
    QGPU_CHECK(l7.detector({{{D, 1}}, 0}, zero));
    QGPU_TRY(fault, alloc.take("sched.fault", 1));
    s.fault = fault;
    QGPU_CHECK(clearToZero(l7, fault));
    LinearForm div;  // T = Σ_l (liveSel_l − m'_l) + 8·(nextBar − 1), in x̂: N = T
    for (int l = 0; l < kSchedLanes; ++l) {
      div.terms.push_back({s.liveSel.at(l), 0.5});
      div.terms.push_back({s.nextMask.at(l), -0.5});
    }
    div.terms.push_back({in.nextBar.at(0), 4});
    div.constant = -4;
    QGPU_CHECK(l7.step(div, {{fault.at(0), 2}}));
    s.units[7] = l7.used();
  }
  return s;
}

}  // namespace qgpu::circuit
