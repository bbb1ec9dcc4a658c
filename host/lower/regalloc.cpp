// qgpu/host/lower/regalloc.cpp — pass 6: from laid-out VIR to a machine::Program.
//
// Steps, repeated until every block fits (docs/lowering.md §6-7):
//   1. predicates live across a block boundary are kept in a general vreg G: `selp G, 1, 0, p`
//      after each definition, `set.ne p, G, 0` before the first use in each block that needs it
//      (machine predicates are undefined at block entry);
//   2. blocks longer than their budget (16 ops, less after a failed attempt) are split into
//      consecutive pieces joined by jumps, preferring split points where no predicate is live;
//      1 and 2 alternate until neither changes anything;
//   3. general vregs are allocated to r1..r15 by graph colouring (Chaitin-Briggs, optimistic,
//      colour choice biased towards the registers of `mov` partners); a vreg that cannot be
//      coloured is spilled to its own per-thread slot: `stl` after each definition, `ldl` into a
//      fresh one-op temporary before each use, and colouring is retried. No register is reserved
//      for spilling: the temporaries live for one op and are never spilled again;
//   4. predicates are allocated to p0..p7 per block;
//   5. if spill code pushed a block over 16 ops, that block's budget is lowered by the excess and
//      the attempt restarts from step 1.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "host/lower/vir.h"

namespace qgpu::lower {
namespace {

using machine::Op;
using machine::OpClass;
using machine::TermKind;

constexpr int kColours = machine::kRegs - 1;  // r1..r15
constexpr int kOpsPerBlock = machine::kMaxOpsPerBlock;

// Predicate uses of an op (a guarded predicate definition also reads the old value).
template <typename F>
void forPredUses(const VInstr& i, F&& fn) {
  for (int k = 0; k < numPsrc(i.op); ++k) fn(i.psrc[k]);
  if (i.guard != kNone) {
    fn(i.guard);
    if (i.dstPred != kNone) fn(i.dstPred);
  }
}
template <typename F>
void forRegUses(const VInstr& i, F&& fn) {
  for (int k = 0; k < numSrc(i.op); ++k)
    if (i.src[k].isReg()) fn(i.src[k].reg);
  if (i.guard != kNone && i.dst != kNone && !i.freshDef) fn(i.dst);
}
bool kills(const VInstr& i) { return i.dst != kNone && (i.guard == kNone || i.freshDef); }

struct Bits {  // a small dynamic bitset
  std::vector<uint64_t> w;
  explicit Bits(int n = 0) : w((n + 63) / 64, 0) {}
  bool get(int i) const { return (w[i >> 6] >> (i & 63)) & 1; }
  void set(int i) { w[i >> 6] |= uint64_t{1} << (i & 63); }
  void reset(int i) { w[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  bool orWith(const Bits& o) {
    bool changed = false;
    for (size_t k = 0; k < w.size(); ++k) {
      uint64_t n = w[k] | o.w[k];
      changed = changed || n != w[k];
      w[k] = n;
    }
    return changed;
  }
  int count() const {
    int c = 0;
    for (auto x : w) c += __builtin_popcountll(x);
    return c;
  }
  template <typename F>
  void each(F&& fn) const {
    for (size_t k = 0; k < w.size(); ++k)
      for (uint64_t x = w[k]; x; x &= x - 1) fn(static_cast<int>(k * 64 + __builtin_ctzll(x)));
  }
};

// ---- Step 1: predicates across blocks ----
// `held` maps each predicate already kept in a general vreg to that vreg; its definitions are
// already followed by their `selp` (splitting never separates the two), so a later round only
// adds reloads for blocks that the splitting created.
bool globalisePreds(VFunc& f, std::map<int, int>& held) {
  const int n = static_cast<int>(f.blocks.size());
  auto succ = successors(f);
  std::vector<Bits> ue(n, Bits(f.numPreds)), kill(n, Bits(f.numPreds)), in(n, Bits(f.numPreds)), out(n, Bits(f.numPreds));
  for (int b = 0; b < n; ++b) {
    for (const auto& i : f.blocks[b].ops) {
      forPredUses(i, [&](int p) { if (!kill[b].get(p)) ue[b].set(p); });
      if (i.dstPred != kNone && i.guard == kNone) kill[b].set(i.dstPred);
    }
    const auto& t = f.blocks[b].term;
    if (t.kind == TermKind::Branch && !kill[b].get(t.pred)) ue[b].set(t.pred);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int b = n - 1; b >= 0; --b) {
      Bits o(f.numPreds);
      for (int s : succ[b]) o.orWith(in[s]);
      out[b] = o;
      Bits x = o;
      for (size_t k = 0; k < x.w.size(); ++k) x.w[k] = (x.w[k] & ~kill[b].w[k]) | ue[b].w[k];
      if (x.w != in[b].w) { in[b] = x; changed = true; }
    }
  }
  Bits global(f.numPreds);
  for (int b = 0; b < n; ++b) global.orWith(in[b]);
  if (global.count() == 0) return false;
  std::map<int, int>& reg = held;
  std::set<int> fresh;
  global.each([&](int p) {
    if (!reg.count(p)) {
      reg[p] = f.newReg();
      fresh.insert(p);
    }
  });
  for (int b = 0; b < n; ++b) {
    auto& ops = f.blocks[b].ops;
    std::vector<VInstr> res;
    std::set<int> defined;  // global preds defined (or re-read) earlier in this block
    auto reload = [&](int p, const SourceLoc& loc) {
      if (!global.get(p) || defined.count(p)) return;
      VInstr s;
      s.op = Op::SetNe;
      s.dstPred = p;
      s.src = {VOperand::r(reg[p]), VOperand::i(0), {}};
      s.loc = loc;
      res.push_back(s);
      defined.insert(p);
    };
    for (const auto& i : ops) {
      forPredUses(i, [&](int p) { reload(p, i.loc); });
      res.push_back(i);
      if (i.dstPred != kNone && i.guard == kNone) defined.insert(i.dstPred);
      if (i.dstPred != kNone && fresh.count(i.dstPred)) {
        VInstr s;
        s.op = Op::Selp;
        s.dst = reg[i.dstPred];
        s.src = {VOperand::i(1), VOperand::i(0), {}};
        s.psrc = {i.dstPred, kNone};
        s.guard = i.guard;
        s.guardNeg = i.guardNeg;
        s.loc = i.loc;
        res.push_back(s);
        defined.insert(i.dstPred);
      }
    }
    const auto& t = f.blocks[b].term;
    if (t.kind == TermKind::Branch) reload(t.pred, res.empty() ? SourceLoc{} : res.back().loc);
    ops = std::move(res);
  }
  return true;
}

// ---- Step 2: splitting ----
// The trace records an op writes (machine::recordsOf: an atomic or a multiply with a register
// destination writes two, and a block holds 16 records); a dst that allocation later drops to r0 is
// counted as written, which only cuts a piece early.
int records(const VInstr& i) {
  return machine::recordsOf(i.op, i.dst != kNone);
}
int records(const VBlock& b) {
  int n = 0;
  for (const VInstr& i : b.ops) n += records(i);
  return n;
}

bool splitBlocks(VFunc& f, const std::vector<int>& budget) {
  bool any = false;
  for (const auto& b : f.blocks) any = any || records(b) > budget[b.origin];
  if (!any) return false;
  std::vector<std::vector<VBlock>> pieces(f.blocks.size());
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    auto& blk = f.blocks[b];
    const auto& ops = blk.ops;
    const int n = static_cast<int>(ops.size());
    // A piece must hold the largest op together with the reloads of the predicates it reads and
    // the save of the predicate it writes (step 1 puts them there): with a smaller cap (a budget
    // shrunk for spill code), the piece boundary falls between reloads and their reader, the
    // reader's next piece reloads them again, and splitting never converges.
    int group = 1;
    for (const VInstr& i : ops) {
      std::set<int> reads;
      forPredUses(i, [&](int p) { reads.insert(p); });
      group = std::max(group, static_cast<int>(reads.size()) + 1 + (i.dstPred != kNone ? 1 : 0));
    }
    int cap = std::max({1, budget[blk.origin], group});
    // predLive[k]: some predicate defined before op k is read at or after op k, i.e. k lies in
    // (first definition, last read] of some predicate (the terminator reads at n). One pass with a
    // difference array: linear in the block, which may hold 10^5 ops before splitting.
    std::vector<bool> predLive(n + 1, false);
    {
      std::unordered_map<int, std::pair<int, int>> span;  // pred -> (first def, last read)
      auto read = [&](int p, int at) {
        auto it = span.find(p);
        if (it != span.end()) it->second.second = std::max(it->second.second, at);
      };
      for (int j = 0; j < n; ++j) {
        forPredUses(ops[j], [&](int p) { read(p, j); });
        if (ops[j].dstPred != kNone) span.emplace(ops[j].dstPred, std::make_pair(j, -1));
      }
      if (blk.term.kind == TermKind::Branch) read(blk.term.pred, n);
      std::vector<int> delta(n + 2, 0);
      for (const auto& [p, s] : span)
        if (s.second > s.first) {
          ++delta[s.first + 1];
          --delta[s.second + 1];
        }
      int open = 0;
      for (int k = 0; k <= n; ++k) {
        open += delta[k];
        predLive[k] = k >= 1 && k < n && open > 0;
      }
    }
    // Never split between a predicate definition and the `selp` that saves it (step 1).
    auto savesPrevious = [&](int k) {
      return k > 0 && k < n && ops[k].op == Op::Selp && ops[k - 1].dstPred != kNone &&
             ops[k].psrc[0] == ops[k - 1].dstPred && ops[k].src[0] == VOperand::i(1) &&
             ops[k].src[1] == VOperand::i(0);
    };
    // Budgets and caps count records: w[k] = the records of ops 0..k-1.
    std::vector<int> w(n + 1, 0);
    for (int j = 0; j < n; ++j) w[j + 1] = w[j] + records(ops[j]);
    int start = 0;
    while (w[n] - w[start] > cap) {
      int reach = start + 1;  // the most ops from `start` within cap records (at least one)
      while (reach < n && w[reach + 1] - w[start] <= cap) ++reach;
      int end = reach;
      while (end > start + 1 && savesPrevious(end)) --end;
      for (int e = reach; e > start + (reach - start) / 2; --e)
        if (!predLive[e] && !savesPrevious(e)) { end = e; break; }
      VBlock piece;
      piece.origin = blk.origin;
      piece.ops.assign(ops.begin() + start, ops.begin() + end);
      pieces[b].push_back(std::move(piece));
      start = end;
    }
    VBlock last;
    last.origin = blk.origin;
    last.ops.assign(ops.begin() + start, ops.end());
    last.term = blk.term;
    pieces[b].push_back(std::move(last));
  }
  // Blocks over their budget but not over their cap (the group above) stay whole: report no
  // change then, or the caller would split forever.
  bool split = false;
  for (const auto& p : pieces) split = split || p.size() > 1;
  if (!split) return false;
  std::vector<int> first(f.blocks.size());
  int count = 0;
  for (size_t b = 0; b < pieces.size(); ++b) {
    first[b] = count;
    count += static_cast<int>(pieces[b].size());
  }
  std::vector<VBlock> blocks;
  for (size_t b = 0; b < pieces.size(); ++b) {
    for (size_t k = 0; k < pieces[b].size(); ++k) {
      VBlock piece = std::move(pieces[b][k]);
      if (k + 1 < pieces[b].size()) {
        piece.term = VTerm{TermKind::Jump, kNone, false, kNone, first[b] + static_cast<int>(k) + 1};
      } else {
        if (piece.term.taken != kNone) piece.term.taken = first[piece.term.taken];
        if (piece.term.next != kNone) piece.term.next = first[piece.term.next];
      }
      blocks.push_back(std::move(piece));
    }
  }
  f.blocks = std::move(blocks);
  return true;
}

// ---- Step 3: register allocation ----
struct Allocation {
  std::vector<int> colour;       // per vreg, -1 if none (dead)
  std::vector<Bits> liveOut;     // per block
  std::vector<std::vector<bool>> deadDef;  // per block, per op: the op's dst is never read
  int slots = 0;
  int maxLive = 0;
};

struct Liveness {
  std::vector<Bits> in, out;
};

Liveness liveness(const VFunc& f) {
  const int n = static_cast<int>(f.blocks.size());
  auto succ = successors(f);
  std::vector<Bits> ue(n, Bits(f.numRegs)), kill(n, Bits(f.numRegs));
  for (int b = 0; b < n; ++b)
    for (const auto& i : f.blocks[b].ops) {
      forRegUses(i, [&](int v) { if (!kill[b].get(v)) ue[b].set(v); });
      if (kills(i)) kill[b].set(i.dst);
    }
  Liveness l{std::vector<Bits>(n, Bits(f.numRegs)), std::vector<Bits>(n, Bits(f.numRegs))};
  for (bool changed = true; changed;) {
    changed = false;
    for (int b = n - 1; b >= 0; --b) {
      Bits o(f.numRegs);
      for (int s : succ[b]) o.orWith(l.in[s]);
      l.out[b] = o;
      Bits x = o;
      for (size_t k = 0; k < x.w.size(); ++k) x.w[k] = (x.w[k] & ~kill[b].w[k]) | ue[b].w[k];
      if (x.w != l.in[b].w) { l.in[b] = x; changed = true; }
    }
  }
  return l;
}

// Loop depth per block: the layout keeps loop bodies contiguous and headers first, so a back
// edge u -> h (h <= u) spans the blocks h..u.
std::vector<int> loopDepth(const VFunc& f) {
  std::vector<int> depth(f.blocks.size(), 0);
  auto succ = successors(f);
  for (size_t u = 0; u < succ.size(); ++u)
    for (int h : succ[u])
      if (h <= static_cast<int>(u))
        for (size_t b = static_cast<size_t>(h); b <= u; ++b) ++depth[b];
  return depth;
}

// Marks guarded definitions that no other definition reaches (if-converted code): the value
// they keep in guarded-off lanes is undefined, so for liveness they are plain definitions.
void markFreshDefs(VFunc& f) {
  const int n = static_cast<int>(f.blocks.size());
  auto succ = successors(f);
  std::vector<Bits> out(n, Bits(f.numRegs)), in(n, Bits(f.numRegs));
  for (bool changed = true; changed;) {
    changed = false;
    for (int b = 0; b < n; ++b) {
      Bits x = in[b];
      for (const auto& i : f.blocks[b].ops)
        if (i.dst != kNone) x.set(i.dst);
      if (x.w != out[b].w) {
        out[b] = x;
        changed = true;
        for (int s : succ[b]) in[s].orWith(x);
      }
    }
  }
  for (int b = 0; b < n; ++b) {
    Bits defined = in[b];
    for (auto& i : f.blocks[b].ops) {
      if (i.dst == kNone) continue;
      i.freshDef = i.guard != kNone && !defined.get(i.dst);
      defined.set(i.dst);
    }
  }
}

Expected<Allocation> allocate(VFunc& f) {
  Allocation a;
  a.slots = static_cast<int>(f.localWords);  // the kernel's local frame takes the first slots
  for (int attempt = 0; attempt < 64; ++attempt) {
    markFreshDefs(f);
    // Dead pure ops (a PTX register redefined before any read) go first.
    Liveness l = liveness(f);
    for (size_t b = 0; b < f.blocks.size(); ++b) {
      Bits live = l.out[b];
      auto& ops = f.blocks[b].ops;
      std::vector<bool> keep(ops.size(), true);
      for (int k = static_cast<int>(ops.size()) - 1; k >= 0; --k) {
        const auto& i = ops[k];
        if (i.dst != kNone && !live.get(i.dst) && i.dstPred == kNone && !hasSideEffects(i.op) && kills(i)) {
          keep[k] = false;
          continue;
        }
        if (kills(i)) live.reset(i.dst);
        forRegUses(i, [&](int v) { live.set(v); });
      }
      std::vector<VInstr> kept;
      for (size_t k = 0; k < ops.size(); ++k)
        if (keep[k]) kept.push_back(ops[k]);
      ops = std::move(kept);
    }
    l = liveness(f);
    const int nv = f.numRegs;
    std::vector<std::vector<bool>> adjm(nv, std::vector<bool>(nv, false));
    std::vector<std::vector<int>> adj(nv);
    auto edge = [&](int x, int y) {
      if (x == y || adjm[x][y]) return;
      adjm[x][y] = adjm[y][x] = true;
      adj[x].push_back(y);
      adj[y].push_back(x);
    };
    std::vector<std::vector<int>> partners(nv);
    std::vector<double> cost(nv, 0);
    std::vector<bool> present(nv, false);
    auto depth = loopDepth(f);
    a.deadDef.assign(f.blocks.size(), {});
    int maxLive = 0;
    for (size_t b = 0; b < f.blocks.size(); ++b) {
      Bits live = l.out[b];
      const auto& ops = f.blocks[b].ops;
      a.deadDef[b].assign(ops.size(), false);
      double w = 1;
      for (int d = 0; d < depth[b] && d < 6; ++d) w *= 8;
      maxLive = std::max(maxLive, live.count());
      for (int k = static_cast<int>(ops.size()) - 1; k >= 0; --k) {
        const auto& i = ops[k];
        if (i.dst != kNone) {
          present[i.dst] = true;
          cost[i.dst] += w;
          if (!live.get(i.dst) && kills(i)) {
            a.deadDef[b][k] = true;  // written to r0
          } else {
            int skip = (i.op == Op::Mov && i.src[0].isReg() && i.guard == kNone) ? i.src[0].reg : kNone;
            live.each([&](int v) { if (v != skip) edge(i.dst, v); });
            if (skip != kNone) {
              partners[i.dst].push_back(skip);
              partners[skip].push_back(i.dst);
            }
            if (kills(i)) live.reset(i.dst);
          }
        }
        forRegUses(i, [&](int v) {
          live.set(v);
          present[v] = true;
          cost[v] += w;
        });
        maxLive = std::max(maxLive, live.count());
      }
    }
    if (attempt == 0) a.maxLive = maxLive;
    // Values live into the entry are undefined reads; give them registers all the same.
    l.in[0].each([&](int v) { present[v] = true; });
    // Simplify / select.
    std::vector<int> degree(nv);
    for (int v = 0; v < nv; ++v) degree[v] = static_cast<int>(adj[v].size());
    std::vector<bool> removed(nv, false);
    std::vector<int> stack;
    int remaining = 0;
    for (int v = 0; v < nv; ++v) remaining += present[v] ? 1 : 0;
    auto removeNode = [&](int v) {
      removed[v] = true;
      stack.push_back(v);
      for (int u : adj[v]) --degree[u];
      --remaining;
    };
    while (remaining > 0) {
      int pick = kNone;
      for (int v = 0; v < nv && pick == kNone; ++v)
        if (present[v] && !removed[v] && degree[v] < kColours) pick = v;
      if (pick == kNone) {
        double best = 0;
        for (int v = 0; v < nv; ++v) {
          if (!present[v] || removed[v]) continue;
          double c = f.noSpill[v] ? 1e30 : cost[v] / std::max(1, degree[v]);
          if (pick == kNone || c < best) { pick = v; best = c; }
        }
      }
      removeNode(pick);
    }
    a.colour.assign(nv, -1);
    std::vector<int> spill;
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      uint32_t used = 0;
      for (int u : adj[v])
        if (a.colour[u] >= 0) used |= 1u << a.colour[u];
      int c = -1;
      for (int p : partners[v])
        if (a.colour[p] >= 0 && !(used >> a.colour[p] & 1)) { c = a.colour[p]; break; }
      for (int k = 0; k < kColours && c < 0; ++k)
        if (!(used >> k & 1)) c = k;
      if (c < 0) spill.push_back(v);
      else a.colour[v] = c;
    }
    if (spill.empty()) {
      a.liveOut = l.out;
      return a;
    }
    for (int v : spill) {
      if (f.noSpill[v])
        return makeDiag(ErrorKind::Internal, "lowering: a spill temporary could not be coloured");
      int slot = a.slots++;
      for (auto& blk : f.blocks) {
        std::vector<VInstr> res;
        for (auto i : blk.ops) {
          bool uses = false;
          forRegUses(i, [&](int u) { uses = uses || u == v; });
          int t = kNone;
          if (uses) {
            t = f.newReg();
            f.noSpill[t] = true;
            VInstr ld;
            ld.op = Op::LdLocal;
            ld.dst = t;
            ld.offset = slot;
            ld.loc = i.loc;
            res.push_back(ld);
            for (int k = 0; k < numSrc(i.op); ++k)
              if (i.src[k].isReg() && i.src[k].reg == v) i.src[k].reg = t;
          }
          bool defines = i.dst == v;
          if (defines) {
            if (t == kNone) {
              t = f.newReg();
              f.noSpill[t] = true;
            }
            i.dst = t;
          }
          res.push_back(i);
          if (defines) {
            VInstr st;
            st.op = Op::StLocal;
            st.src = {VOperand::r(t), {}, {}};
            st.offset = slot;
            st.loc = i.loc;
            res.push_back(st);
          }
        }
        blk.ops = std::move(res);
      }
    }
  }
  return makeDiag(ErrorKind::Internal,
                  "lowering: register allocation did not converge after 64 rounds of spilling (a qgpu bug)");
}

machine::Operand mop(const VOperand& o, const std::vector<int>& colour) {
  switch (o.kind) {
    case VKind::Reg: return machine::Operand::r(static_cast<uint8_t>(colour[o.reg] + 1));
    case VKind::Imm: return machine::Operand::i(o.imm);
    case VKind::Special: return machine::Operand::s(o.special);
    case VKind::None: break;
  }
  return {};
}

// ---- Steps 4-5: emission and predicate allocation ----
struct Emitted {
  std::vector<machine::Block> blocks;
  std::vector<std::vector<SourceLoc>> locs;  // locs[b][i]: the PTX instruction of blocks[b].ops[i]
};
Expected<Emitted> emit(const VFunc& f, const Allocation& a) {
  std::vector<machine::Block> blocks;
  std::vector<std::vector<SourceLoc>> locs;
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    const auto& vb = f.blocks[b];
    machine::Block mb;
    std::vector<SourceLoc>& mlocs = locs.emplace_back();
    std::map<int, uint8_t> pmap;
    uint32_t pused = 0;
    const int n = static_cast<int>(vb.ops.size());
    auto usedLater = [&](int p, int i) {
      for (int j = i + 1; j < n; ++j) {
        bool u = false;
        forPredUses(vb.ops[j], [&](int q) { u = u || q == p; });
        if (u) return true;
        if (vb.ops[j].dstPred == p && vb.ops[j].guard == kNone) return false;
      }
      return vb.term.kind == TermKind::Branch && vb.term.pred == p;
    };
    auto phys = [&](int p, const VInstr& at) -> Expected<uint8_t> {
      auto it = pmap.find(p);
      if (it != pmap.end()) return it->second;
      return makeDiag(ErrorKind::Internal, "lowering: predicate read before its definition in its block", at.loc);
    };
    for (int k = 0; k < n; ++k) {
      const auto& i = vb.ops[k];
      machine::Instr mi;
      mi.op = i.op;
      for (int s = 0; s < numSrc(i.op); ++s) mi.src[s] = mop(i.src[s], a.colour);
      for (int s = 0; s < numPsrc(i.op); ++s) {
        QGPU_TRY(pp, phys(i.psrc[s], i));
        mi.psrc[s] = pp;
      }
      if (i.guard != kNone) {
        QGPU_TRY(g, phys(i.guard, i));
        mi.guard = machine::Guard{g, i.guardNeg};
      }
      mi.space = i.space;
      mi.offset = i.offset;
      if (i.dst != kNone && !a.deadDef[b][k]) {
        mi.dst = static_cast<uint8_t>(a.colour[i.dst] + 1);
      }
      // Predicates whose last read was this op are free for its destination.
      for (auto it = pmap.begin(); it != pmap.end();) {
        if (!usedLater(it->first, k) && it->first != i.dstPred) {
          pused &= ~(1u << it->second);
          it = pmap.erase(it);
        } else {
          ++it;
        }
      }
      if (i.dstPred != kNone) {
        auto it = pmap.find(i.dstPred);
        if (it == pmap.end()) {
          int free = -1;
          for (int p = 0; p < machine::kPreds && free < 0; ++p)
            if (!(pused >> p & 1)) free = p;
          if (free < 0)
            return makeDiag(ErrorKind::OverLimit,
                            "more than " + std::to_string(machine::kPreds) + " predicates live at once in one block", i.loc);
          pused |= 1u << free;
          it = pmap.emplace(i.dstPred, static_cast<uint8_t>(free)).first;
        }
        mi.dstPred = it->second;
        if (!usedLater(i.dstPred, k)) {
          pused &= ~(1u << it->second);
          pmap.erase(it);
        }
      }
      if (mi.op == Op::Mov && mi.guard.pred == machine::kNoPred && mi.src[0].kind == machine::OperandKind::Reg &&
          mi.src[0].reg == mi.dst)
        continue;  // coalesced copy
      mb.ops.push_back(mi);
      mlocs.push_back(i.loc);
    }
    const auto& t = vb.term;
    mb.term.kind = t.kind;
    if (t.kind == TermKind::Branch) {
      auto it = pmap.find(t.pred);
      if (it == pmap.end())
        return makeDiag(ErrorKind::Internal, "lowering: branch predicate not defined in its block");
      mb.term.pred = it->second;
      mb.term.negate = t.negate;
      mb.term.taken = static_cast<uint8_t>(t.taken);
    }
    if (t.next != kNone) mb.term.next = static_cast<uint8_t>(t.next);
    blocks.push_back(std::move(mb));
  }
  return Emitted{std::move(blocks), std::move(locs)};
}

// Renumbers the vregs and predicate vregs that the ops still use densely, keeping their order (so
// every choice below that goes by index is the same). Translation numbers vregs by PTX register,
// and cleanup leaves most of them unused: without this, liveness sets and the interference
// matrix would be sized by the 10^5 registers a large input declares, not by the program.
void compactRegisters(VFunc& f) {
  std::vector<int> reg(f.numRegs, kNone), pred(f.numPreds, kNone);
  auto useReg = [&](int v) { if (v != kNone) reg[v] = 0; };
  auto usePred = [&](int p) { if (p != kNone) pred[p] = 0; };
  for (const VBlock& b : f.blocks) {
    for (const VInstr& i : b.ops) {
      useReg(i.dst);
      for (const VOperand& o : i.src)
        if (o.isReg()) useReg(o.reg);
      usePred(i.dstPred);
      usePred(i.guard);
      for (int p : i.psrc) usePred(p);
    }
    if (b.term.kind == TermKind::Branch) usePred(b.term.pred);
  }
  std::vector<bool> noSpill;
  int nr = 0, np = 0;
  for (int v = 0; v < f.numRegs; ++v)
    if (reg[v] != kNone) {
      reg[v] = nr++;
      noSpill.push_back(f.noSpill[v]);
    }
  for (int p = 0; p < f.numPreds; ++p)
    if (pred[p] != kNone) pred[p] = np++;
  auto mapReg = [&](int& v) { if (v != kNone) v = reg[v]; };
  auto mapPred = [&](int& p) { if (p != kNone) p = pred[p]; };
  for (VBlock& b : f.blocks) {
    for (VInstr& i : b.ops) {
      mapReg(i.dst);
      for (VOperand& o : i.src)
        if (o.isReg()) mapReg(o.reg);
      mapPred(i.dstPred);
      mapPred(i.guard);
      for (int& p : i.psrc) mapPred(p);
    }
    if (b.term.kind == TermKind::Branch) mapPred(b.term.pred);
  }
  f.numRegs = nr;
  f.numPreds = np;
  f.noSpill = std::move(noSpill);
}

}  // namespace

FinalizeResult finalize(const VFunc& input) {
  VFunc base = input;
  compactRegisters(base);
  for (size_t b = 0; b < base.blocks.size(); ++b) base.blocks[b].origin = static_cast<int>(b);
  std::vector<int> budget(base.blocks.size(), kOpsPerBlock);
  for (int attempt = 0; attempt < 32; ++attempt) {
    VFunc g = base;
    std::map<int, int> held;
    for (int round = 0;; ++round) {
      globalisePreds(g, held);
      if (!splitBlocks(g, budget)) break;
      if (round > 32) return {makeDiag(ErrorKind::Internal, "lowering: block splitting did not converge")};
    }
    if (static_cast<int>(g.blocks.size()) > machine::kMaxBlocks) {
      return {makeDiag(ErrorKind::OverLimit,
                       "kernel `" + g.name + "` needs " + std::to_string(g.blocks.size()) +
                           " program blocks; the machine has " + std::to_string(machine::kMaxBlocks) + " (" +
                           std::to_string(g.blocks.size() - machine::kMaxBlocks) + " too many)"),
              /*tooManyBlocks=*/true};
    }
    auto allocated = allocate(g);
    if (!allocated) return {allocated.error()};
    Allocation& alloc = *allocated;
    auto emitted = emit(g, alloc);
    if (!emitted) return {emitted.error()};
    std::vector<machine::Block>& blocks = emitted->blocks;
    // Shrink each overflowing origin's budget once, from its worst piece, in proportion: a piece
    // of `budget` ops that emitted 16 + excess ops (spill code) needs about budget x 16 /
    // (16 + excess) to fit. The pieces of one origin share its budget: subtracting every piece's
    // excess in turn drove a block split into many pieces straight to the floor (2 ops), past
    // 32 blocks, and below the size of a reload group (see splitBlocks).
    std::map<int, int> worst;  // origin -> largest excess of its pieces
    for (size_t b = 0; b < blocks.size(); ++b) {
      // Records, not ops (machine::blockRecords: an atomic with a register destination writes
      // two, and the prompt keys the ROM by record index): what verify() limits to 16.
      int excess = machine::blockRecords(blocks[b]) - kOpsPerBlock;
      if (excess > 0) worst[g.blocks[b].origin] = std::max(worst[g.blocks[b].origin], excess);
    }
    const bool overflow = !worst.empty();
    for (const auto& [origin, excess] : worst)
      budget[origin] = std::max(2, std::min(budget[origin] - 1, budget[origin] * kOpsPerBlock / (kOpsPerBlock + excess)));
    if (overflow) continue;
    const int spills = alloc.slots - static_cast<int>(g.localWords);
    if (g.sharedWords + static_cast<uint32_t>(alloc.slots) > static_cast<uint32_t>(machine::kSharedWords))
      return {makeDiag(ErrorKind::OverLimit,
                       "kernel `" + g.name + "` needs " + std::to_string(g.sharedWords) + " words of shared memory and " +
                           (g.localWords > 0 ? std::to_string(g.localWords) + " local words + " : std::string()) +
                           std::to_string(spills) + " spill slots per thread; the machine has " +
                           std::to_string(machine::kSharedWords) + " words (" +
                           std::to_string(g.sharedWords + alloc.slots - machine::kSharedWords) + " over for one thread)")};
    machine::Program p;
    p.name = g.name;
    p.blocks = std::move(blocks);
    p.sharedWords = static_cast<uint8_t>(g.sharedWords);
    p.spillSlots = static_cast<uint8_t>(alloc.slots);
    return {Finalized{std::move(p), alloc.maxLive, spills, std::move(emitted->locs)}};
  }
  // Budgets only shrink (to 2 ops, whose spill code fits 16), so this is an allocator bug.
  return {makeDiag(ErrorKind::Internal,
                   "lowering: kernel `" + input.name + "`: spill code still overflows 16-op blocks after 32 attempts")};
}

}  // namespace qgpu::lower
