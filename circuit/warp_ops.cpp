// qgpu/circuit/warp_ops.cpp — see warp_ops.h for the maths.
#include "circuit/warp_ops.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "circuit/assembler.h"
#include "circuit/logic.h"

namespace qgpu::circuit {
namespace {

using machine::Op;
using Outs = std::vector<std::pair<int, double>>;
using Terms = std::vector<std::vector<Literal>>;

constexpr int kLaneBits = 5;  // shuffleSource reads b[4:0], c[4:0] and c[12:8]
// The one-hot's dims, in warpOps() order.
enum WarpOpDim : int { kUp, kDown, kBfly, kIdx, kBallot, kAny, kAll };
constexpr int kSegOffset = 8;

Diag warpUsage(const std::string& m) {
  return makeDiag(ErrorKind::Usage, "warp ops: " + m);
}

Literal is(int dim, bool set) {
  return {dim, set ? 1 : -1};
}

// maxLane = v for a lane value v (0..3): m_4..m_2 clear and (m_1 m_0) = v.
std::vector<Literal> maxLaneIs(const Field& m, int v) {
  return {is(m.at(4), false), is(m.at(3), false), is(m.at(2), false), is(m.at(1), (v >> 1) & 1),
          is(m.at(0), v & 1)};
}

// The disjoint literal sets on m_0..m_4 that hold iff maxLane ≤ j (atMost) or j ≤ maxLane.
Terms maxLaneAtMost(const Field& m, int j) {
  Terms t;
  for (int v = 0; v <= j; ++v) t.push_back(maxLaneIs(m, v));
  return t;
}
Terms maxLaneAtLeast(const Field& m, int j) {
  Terms t = {{is(m.at(4), true)},
             {is(m.at(4), false), is(m.at(3), true)},
             {is(m.at(4), false), is(m.at(3), false), is(m.at(2), true)}};
  for (int v = j; v < kRecordLanes; ++v) t.push_back(maxLaneIs(m, v));
  return t;
}

}  // namespace

const std::array<machine::Op, kWarpOps>& warpOps() {
  static const std::array<machine::Op, kWarpOps> ops = {
      Op::ShflUp, Op::ShflDown, Op::ShflBfly, Op::ShflIdx, Op::Ballot, Op::VoteAny, Op::VoteAll};
  return ops;
}

Expected<WarpOps> buildWarpOps(CircuitWeights& w, FieldAllocator& alloc, const WarpOpsSpec& s) {
  const TokenLayout& t = s.tokens;
  const int S = s.firstLayer;
  if (S < 0 || S + kWarpOpsLayers > w.config().numLayers())
    return warpUsage("needs layers " + std::to_string(S) + ".." +
                     std::to_string(S + kWarpOpsLayers - 1));
  if (s.opcode.dims != kOpcodeBits || s.exec.dims != kRecordLanes)
    return warpUsage("the opcode needs " + std::to_string(kOpcodeBits) + " dims, exec " +
                     std::to_string(kRecordLanes));
  for (const AluLane& x : s.lanes)
    if (x.a.dims != kValueBits || x.b.dims != kValueBits || x.c.dims != kValueBits ||
        x.p.dims != 1 || x.r.dims != kValueBits || x.s.dims != 1)
      return warpUsage("a lane needs a, b, c, r of 32 dims and p, s of 1");
  if (s.guard.dims > 1)
    return warpUsage("the guard needs 0 or 1 dim, has " + std::to_string(s.guard.dims));
  for (Op op : warpOps())
    if (machine::opInfo(op).cls != machine::OpClass::Warp)
      return makeDiag(ErrorKind::Internal, "warp ops: isa.def's Warp class changed");

  WarpOps g;
  const int before = alloc.takenDims();
  const uint32_t kinds = s.guard.dims == 1 ? uint32_t{kKindWarp} : 0u;
  auto take = [&](const std::string& name, int dims) {
    return alloc.take("warp." + name, dims, kinds);
  };
  QGPU_TRY(op, take("op", kWarpOps));
  QGPU_TRY(isShfl, take("isShfl", 1));
  QGPU_TRY(votes, take("votes", kRecordLanes));
  QGPU_TRY(allOk, take("allOk", kRecordLanes));
  g.op = op;
  g.isShfl = isShfl;
  g.votes = votes;
  g.allOk = allOk;
  for (int l = 0; l < kRecordLanes; ++l) {
    const auto i = static_cast<size_t>(l);
    QGPU_TRY(m, take("maxLane" + std::to_string(l), kLaneBits));
    QGPU_TRY(x, take("idxLane" + std::to_string(l), kLaneBits));
    QGPU_TRY(sel, take("sel" + std::to_string(l), kRecordLanes));
    g.maxLane[i] = m;
    g.idxLane[i] = x;
    g.sel[i] = sel;
  }

  const MlpContext ctx{t.ballast, t.lambda, s.mlpGain, t.unit};
  std::optional<UnitGuard> guard;
  if (s.guard.dims == 1) guard = UnitGuard{s.guard.at(0), 1, t.ballast, t.lambda, kKindWarp};
  const AndGate gate{t.ballast, t.lambda, 2 * s.mlpGain};
  const AndFieldWriter fw{gate, ctx, t.unit, g.maxFanIn};
  const double two = 2.0 * t.unit;
  auto opIs = [&](Op o) {
    std::vector<Literal> l = spells(s.opcode, static_cast<unsigned>(o));
    if (s.opcodeInverted)
      for (Literal& x : l) x.sign = -x.sign;
    return l;
  };
  auto opLit = [&](int k) { return Literal{g.op.at(k), 1}; };
  auto bit = [](const Field& f, int i, bool set = true) { return is(f.at(i), set); };
  const Field& e = s.exec;

  // S1: the decode, maxLane, idx's lane bits, the votes.
  {
    UnitWriter u(w, S, s.firstUnit[0]);
    u.setGuard(guard);
    std::vector<Field> outs = {g.op, g.isShfl, g.votes, g.allOk};
    for (int l = 0; l < kRecordLanes; ++l) {
      outs.push_back(g.maxLane[static_cast<size_t>(l)]);
      outs.push_back(g.idxLane[static_cast<size_t>(l)]);
    }
    QGPU_CHECK(fw.start(u, outs));
    for (int k = 0; k < kWarpOps; ++k) {
      const Op o = warpOps()[static_cast<size_t>(k)];
      QGPU_CHECK(fw.add(u, opIs(o), {{g.op.at(k), two}}));
      if (machine::opInfo(o).numSources == 3)
        QGPU_CHECK(fw.add(u, opIs(o), {{g.isShfl.at(0), two}}));
    }
    for (int j = 0; j < kRecordLanes; ++j) {
      const Literal ej = bit(e, j), pj{s.lanes[static_cast<size_t>(j)].p.at(0), 1};
      QGPU_CHECK(fw.add(u, {ej, pj}, {{g.votes.at(j), two}, {g.allOk.at(j), two}}));
      QGPU_CHECK(fw.add(u, {bit(e, j, false)}, {{g.allOk.at(j), two}}));
    }
    for (int l = 0; l < kRecordLanes; ++l) {
      const AluLane& x = s.lanes[static_cast<size_t>(l)];
      const Field& m = g.maxLane[static_cast<size_t>(l)];
      const Field& idx = g.idxLane[static_cast<size_t>(l)];
      for (int i = 0; i < kLaneBits; ++i) {
        const Literal seg = bit(x.c, kSegOffset + i), noSeg = bit(x.c, kSegOffset + i, false);
        const bool laneBit = ((l >> i) & 1) != 0;
        // m_i = (l_i ∧ seg_i) ∨ (clamp_i ∧ ¬seg_i)
        if (laneBit) QGPU_CHECK(fw.add(u, {seg}, {{m.at(i), two}}));
        QGPU_CHECK(fw.add(u, {noSeg, bit(x.c, i)}, {{m.at(i), two}}));
        // idx: J_i = (l_i ∧ seg_i) ∨ (b_i ∧ ¬seg_i) for i < 2, n_i = b_i ∧ ¬seg_i above
        if (laneBit) QGPU_CHECK(fw.add(u, {seg}, {{idx.at(i), two}}));
        QGPU_CHECK(fw.add(u, {noSeg, bit(x.b, i)}, {{idx.at(i), two}}));
      }
    }
    g.units[0] = u.used();
  }

  // S2: sel_lj.
  {
    UnitWriter u(w, S + 1, s.firstUnit[1]);
    u.setGuard(guard);
    std::vector<Field> outs(g.sel.begin(), g.sel.end());
    QGPU_CHECK(fw.start(u, outs));
    for (int l = 0; l < kRecordLanes; ++l) {
      const AluLane& x = s.lanes[static_cast<size_t>(l)];
      const Field& m = g.maxLane[static_cast<size_t>(l)];
      const Field& idx = g.idxLane[static_cast<size_t>(l)];
      const Field b5 = x.b.slice(0, kLaneBits, "b");
      for (int j = 0; j < kRecordLanes; ++j) {
        if (j == l) continue;
        const Outs out = {{g.sel[static_cast<size_t>(l)].at(j), two}};
        auto add = [&](const std::vector<Literal>& source, const Terms& valid) -> Status {
          for (const std::vector<Literal>& v : valid)
            QGPU_CHECK(fw.add(
                u, s.sourceExecutesTwin ? source + v : source + v + std::vector<Literal>{bit(e, j)},
                out));
          return Ok{};
        };
        if (j < l)
          QGPU_CHECK(
              add(std::vector<Literal>{opLit(kUp)} + spells(b5, static_cast<unsigned>(l - j)),
                  maxLaneAtMost(m, j)));
        if (j > l)
          QGPU_CHECK(
              add(std::vector<Literal>{opLit(kDown)} + spells(b5, static_cast<unsigned>(j - l)),
                  maxLaneAtLeast(m, j)));
        QGPU_CHECK(
            add(std::vector<Literal>{opLit(kBfly)} + spells(b5, static_cast<unsigned>(l ^ j)),
                maxLaneAtLeast(m, j)));
        QGPU_CHECK(add({opLit(kIdx), bit(idx, 0, (j & 1) != 0), bit(idx, 1, (j & 2) != 0),
                        bit(idx, 2, false), bit(idx, 3, false), bit(idx, 4, false)},
                       maxLaneAtLeast(m, j)));
      }
    }
    g.units[1] = u.used();
  }

  // S3: onto r_l and s_l.
  {
    UnitWriter u(w, S + 2, s.firstUnit[2]);
    u.setGuard(guard);
    for (int l = 0; l < kRecordLanes; ++l) {
      const AluLane& x = s.lanes[static_cast<size_t>(l)];
      const Field& sel = g.sel[static_cast<size_t>(l)];
      std::vector<Literal> own = {{g.isShfl.at(0), 1}};
      for (int j = 0; j < kRecordLanes; ++j)
        if (j != l) own.push_back(bit(sel, j, false));
      for (int i = 0; i < kValueBits; ++i) {
        const Outs out = {{x.r.at(i), two}};
        for (int j = 0; j < kRecordLanes; ++j)
          if (j != l)
            QGPU_CHECK(fw.add(u, {bit(sel, j), bit(s.lanes[static_cast<size_t>(j)].a, i)}, out));
        QGPU_CHECK(fw.add(u, own + std::vector<Literal>{bit(x.a, i)}, out));
        if (i < kRecordLanes) QGPU_CHECK(fw.add(u, {opLit(kBallot), bit(g.votes, i)}, out));
      }
      const Outs out = {{x.s.at(0), two}};
      std::vector<Literal> none = {opLit(kAny)};
      for (int j = 0; j < kRecordLanes; ++j) {
        QGPU_CHECK(fw.add(u, none + std::vector<Literal>{bit(g.votes, j)}, out));
        none.push_back(bit(g.votes, j, false));
      }
      QGPU_CHECK(fw.add(
          u, {opLit(kAll), bit(g.allOk, 0), bit(g.allOk, 1), bit(g.allOk, 2), bit(g.allOk, 3)},
          out));
    }
    g.units[2] = u.used();
  }
  g.dims = alloc.takenDims() - before;
  return g;
}

}  // namespace qgpu::circuit
