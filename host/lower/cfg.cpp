// qgpu/host/lower/cfg.cpp — passes 3-5: cleanup, CFG simplification and block layout.
//
// cleanup:  propagates vregs defined once by `mov v, imm|special` into their uses (immediates and
//           special registers are the same value wherever they are read), folds constant ALU
//           ops, reduces multiplies by an immediate factor to a mov or a shift (below), folds
//           `v = x + imm` into the offset of a memory access in the same block, and removes
//           side-effect-free ops whose results are never read.
//
//           Strength reduction (reduceStrength): with m the immediate factor, src[0] or src[1]
//           (as uint32), and x the other factor, an op whose result is one op without a multiply
//           becomes that op; the op keeps its guard, destinations and every other field, only
//           op and sources change (x becomes src[0], a shift amount src[1]):
//             mul x, 0 -> mov 0        mul x, 1 -> mov x    mul x, 2^k -> shl x, k        (1<=k<=31)
//             mulhi.u x, 0|1 -> mov 0                       mulhi.u x, 2^k -> shr.u x, 32-k (1<=k<=31)
//             mulhi.s x, 0 -> mov 0    mulhi.s x, 1 -> shr.s x, 31
//                                                           mulhi.s x, 2^k -> shr.s x, 32-k (1<=k<=30)
//             mad x, 0, c -> mov c     mad x, 1, c -> add x, c
//           Each is exact for every x and c by the machine's semantics (oracle/semantics.h): the
//           low word of x * 2^k is x << k; the high word of the 64-bit product x * 2^k is x
//           shifted right by 32 - k, logically for the unsigned product and arithmetically (the
//           sign-extended x) for the signed one, which for m = 1 is the sign word x >>s 31. Where
//           no one op does it the op stays: mulhi.s by 2^31 (INT_MIN as a signed factor: the high
//           word is floor(-x / 2): a negation and a shift) and mad by 2^k (a shift and an add).
//           Why: the model leg's pipeline has no multiplier yet (docs/circuit.md), and a shift is
//           also one op and needs none, so the catalog's address arithmetic (`mul.wide.s32 d, i,
//           4`: `shl`, `shr.s`) runs without one.
//           host/lower/tests/cfg_test.cpp checks every rule against evalAlu of the original op.
// simplify: removes unreachable blocks, turns jumps to empty Exit blocks into Exit, threads
//           jumps through empty blocks, turns branches with equal targets into jumps, and merges
//           a block into its single predecessor when that predecessor jumps to it (never across a
//           Barrier: a Barrier terminator is not a jump).
// layout:   orders blocks so that min-PC scheduling reconverges (docs/lowering.md §5): a reverse
//           post-order of the acyclic graph in which every loop is one node, recursively, with
//           each loop's body contiguous and its header first. Every divergent region then comes
//           before its immediate post-dominator and every loop before its exits, so lanes that
//           finish early wait (at a higher block index) for the others. Irreducible control flow
//           (a retreating edge whose target does not dominate its source) is refused.
#include <algorithm>
#include <bit>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "host/lower/vir.h"
#include "oracle/semantics.h"

namespace qgpu::lower {

using machine::Op;
using machine::OpClass;
using machine::TermKind;

int numSrc(Op op) { return machine::numGeneralSources(op); }
int numPsrc(Op op) { return machine::numPredSources(op); }
bool hasSideEffects(Op op) {
  // Loads are kept too: a load out of bounds is a machine fault, which removing it would hide.
  return machine::opInfo(op).mem != machine::MemEffect::None;
}

std::vector<std::vector<int>> successors(const VFunc& f) {
  std::vector<std::vector<int>> succ(f.blocks.size());
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    const auto& t = f.blocks[b].term;
    switch (t.kind) {
      case TermKind::Jump: case TermKind::Barrier: succ[b] = {t.next}; break;
      case TermKind::Branch:
        succ[b] = {t.taken};
        if (t.next != t.taken) succ[b].push_back(t.next);
        break;
      case TermKind::Exit: break;
    }
  }
  return succ;
}

std::string describe(const VFunc& f) {
  std::ostringstream os;
  auto opnd = [&](const VOperand& o) {
    switch (o.kind) {
      case VKind::Reg: os << " v" << o.reg; break;
      case VKind::Imm: os << " " << o.imm; break;
      case VKind::Special: os << " " << machine::specialName(o.special); break;
      case VKind::None: break;
    }
  };
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    os << "B" << b << ":\n";
    for (const auto& i : f.blocks[b].ops) {
      os << "  ";
      if (i.guard != kNone) os << "@" << (i.guardNeg ? "!" : "") << "q" << i.guard << " ";
      os << machine::opInfo(i.op).mnemonic;
      if (i.dst != kNone) os << " v" << i.dst;
      if (i.dstPred != kNone) os << " q" << i.dstPred;
      for (int k = 0; k < numSrc(i.op); ++k) opnd(i.src[k]);
      for (int k = 0; k < numPsrc(i.op); ++k) os << " q" << i.psrc[k];
      if (machine::opInfo(i.op).cls == OpClass::Mem || machine::opInfo(i.op).cls == OpClass::Local)
        os << " +" << i.offset;
      os << "\n";
    }
    const auto& t = f.blocks[b].term;
    switch (t.kind) {
      case TermKind::Jump: os << "  jump B" << t.next << "\n"; break;
      case TermKind::Barrier: os << "  barrier B" << t.next << "\n"; break;
      case TermKind::Exit: os << "  exit\n"; break;
      case TermKind::Branch:
        os << "  branch " << (t.negate ? "!" : "") << "q" << t.pred << " B" << t.taken << " else B" << t.next << "\n";
        break;
    }
  }
  return os.str();
}

// ---- cleanup ----
namespace {

// The machine's own semantics (oracle/semantics.h), so a folded constant is what the op computes.
bool foldConstant(Op op, const std::array<VOperand, 3>& s, uint32_t& out) {
  std::optional<uint32_t> value = oracle::evalAlu(op, s[0].imm, s[1].imm, s[2].imm);
  if (value) out = *value;
  return value.has_value();
}

void forEachSrcReg(VInstr& i, const std::function<void(VOperand&)>& fn) {
  for (int k = 0; k < numSrc(i.op); ++k)
    if (i.src[k].isReg()) fn(i.src[k]);
}

}  // namespace

bool reduceStrength(VInstr& i) {
  if (i.op != Op::Mul && i.op != Op::MulHiU && i.op != Op::MulHiS && i.op != Op::Mad) return false;
  auto become = [&](Op op, const VOperand& a, const VOperand& b = {}) {
    i.op = op;
    i.src = {a, b, {}};
    return true;
  };
  // The factor in src[1] first (where translation puts a constant), then the one in src[0]: a mad
  // with two immediate factors is reduced when either is 0 or 1.
  for (int side : {1, 0}) {
    if (!i.src[side].isImm()) continue;
    const uint32_t m = i.src[side].imm;
    const VOperand x = i.src[1 - side];
    const int k = std::has_single_bit(m) ? std::countr_zero(m) : -1;  // m = 2^k
    auto amount = [](int n) { return VOperand::i(static_cast<uint32_t>(n)); };
    switch (i.op) {
      case Op::Mul:
        if (m == 0) return become(Op::Mov, VOperand::i(0));
        if (m == 1) return become(Op::Mov, x);
        if (k >= 1) return become(Op::Shl, x, amount(k));
        break;
      case Op::MulHiU:
        if (m <= 1) return become(Op::Mov, VOperand::i(0));
        if (k >= 1) return become(Op::ShrU, x, amount(32 - k));
        break;
      case Op::MulHiS:
        if (m == 0) return become(Op::Mov, VOperand::i(0));
        if (m == 1) return become(Op::ShrS, x, amount(31));
        if (k >= 1 && k <= 30) return become(Op::ShrS, x, amount(32 - k));
        break;
      case Op::Mad:
        if (m == 0) return become(Op::Mov, i.src[2]);
        if (m == 1) return become(Op::Add, x, i.src[2]);
        break;
      default:
        break;
    }
  }
  return false;
}

void cleanup(VFunc& f) {
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    // Definitions per vreg.
    std::vector<int> defs(f.numRegs, 0);
    std::vector<VInstr*> def(f.numRegs, nullptr);
    for (auto& b : f.blocks)
      for (auto& i : b.ops)
        if (i.dst != kNone) {
          ++defs[i.dst];
          def[i.dst] = &i;
        }
    // Constant / special propagation of single-definition unguarded movs.
    std::vector<VOperand> constant(f.numRegs);
    for (int v = 0; v < f.numRegs; ++v) {
      const VInstr* d = def[v];
      if (defs[v] == 1 && d->op == Op::Mov && d->guard == kNone && (d->src[0].isImm() || d->src[0].kind == VKind::Special))
        constant[v] = d->src[0];
    }
    for (auto& b : f.blocks)
      for (auto& i : b.ops) {
        forEachSrcReg(i, [&](VOperand& o) {
          if (constant[o.reg].kind != VKind::None) {
            o = constant[o.reg];
            changed = true;
          }
        });
        bool allImm = numSrc(i.op) > 0 && machine::opInfo(i.op).cls == OpClass::Alu && i.op != Op::Mov;
        for (int k = 0; k < numSrc(i.op); ++k) allImm = allImm && i.src[k].isImm();
        uint32_t value = 0;
        if (allImm && foldConstant(i.op, i.src, value)) {
          i.op = Op::Mov;
          i.src = {VOperand::i(value), {}, {}};
          changed = true;
        } else if (reduceStrength(i)) {
          changed = true;  // a mov it left is propagated in the next round
        }
      }
    // Address folding inside a block: v = x + k (x an immediate, a special or a vreg not redefined
    // in between) turns `[v + off]` into `[x + off + k]`. A fact about v records the definition
    // counts of v and x when it was made; a later definition of either makes it stale, so a
    // redefinition costs O(1) instead of a scan of every fact (inputs have 10^5 ops in a block).
    std::vector<uint32_t> version(f.numRegs, 0);
    for (auto& b : f.blocks) {
      struct Fact {
        VOperand base;
        uint32_t k, vVersion, baseVersion;
      };
      std::unordered_map<int, Fact> sum;  // v -> (x, k)
      for (auto& i : b.ops) {
        auto cls = machine::opInfo(i.op).cls;
        if (cls == OpClass::Mem && i.src[0].isReg()) {
          auto it = sum.find(i.src[0].reg);
          if (it != sum.end() && it->second.vVersion == version[it->first] &&
              (!it->second.base.isReg() || it->second.baseVersion == version[it->second.base.reg])) {
            i.src[0] = it->second.base;
            i.offset = static_cast<int32_t>(static_cast<uint32_t>(i.offset) + it->second.k);
            changed = true;
          }
        }
        if (i.dst != kNone) {
          ++version[i.dst];  // forgets facts about or through the redefined vreg
          if (i.op == Op::Add && i.guard == kNone) {
            const auto& a = i.src[0];
            const auto& c = i.src[1];
            auto fact = [&](const VOperand& x, uint32_t k) {
              sum[i.dst] = Fact{x, k, version[i.dst], x.isReg() ? version[x.reg] : 0};
            };
            if (c.isImm() && !(a.isReg() && a.reg == i.dst)) fact(a, c.imm);
            else if (a.isImm() && !(c.isReg() && c.reg == i.dst)) fact(c, a.imm);
          }
        }
      }
    }
    // Dead code: pure ops whose results nobody reads.
    std::vector<int> uses(f.numRegs, 0);
    std::vector<int> puses(f.numPreds, 0);
    for (auto& b : f.blocks) {
      for (auto& i : b.ops) {
        forEachSrcReg(i, [&](VOperand& o) { ++uses[o.reg]; });
        for (int k = 0; k < numPsrc(i.op); ++k) ++puses[i.psrc[k]];
        if (i.guard != kNone) {
          ++puses[i.guard];
          if (i.dst != kNone) ++uses[i.dst];  // a guarded write keeps the old value elsewhere
          if (i.dstPred != kNone) ++puses[i.dstPred];
        }
      }
      if (b.term.kind == TermKind::Branch) ++puses[b.term.pred];
    }
    for (auto& b : f.blocks) {
      auto dead = [&](const VInstr& i) {
        if (hasSideEffects(i.op)) return false;
        bool anyLive = (i.dst != kNone && uses[i.dst] > 0) || (i.dstPred != kNone && puses[i.dstPred] > 0);
        return !anyLive;
      };
      size_t before = b.ops.size();
      b.ops.erase(std::remove_if(b.ops.begin(), b.ops.end(), dead), b.ops.end());
      changed = changed || b.ops.size() != before;
    }
    if (!changed) break;
  }
}

// ---- simplify ----
namespace {

void removeUnreachable(VFunc& f) {
  auto succ = successors(f);
  std::vector<int> order;
  std::vector<bool> seen(f.blocks.size(), false);
  std::vector<int> stack{0};
  seen[0] = true;
  while (!stack.empty()) {
    int b = stack.back();
    stack.pop_back();
    order.push_back(b);
    for (int s : succ[b])
      if (!seen[s]) {
        seen[s] = true;
        stack.push_back(s);
      }
  }
  std::sort(order.begin(), order.end());  // keep the entry first and the source order otherwise
  std::vector<int> remap(f.blocks.size(), kNone);
  std::vector<VBlock> blocks;
  for (int b : order) {
    remap[b] = static_cast<int>(blocks.size());
    blocks.push_back(std::move(f.blocks[b]));
  }
  for (auto& b : blocks) {
    if (b.term.taken != kNone) b.term.taken = remap[b.term.taken];
    if (b.term.next != kNone) b.term.next = remap[b.term.next];
  }
  f.blocks = std::move(blocks);
}

std::vector<int> predCounts(const VFunc& f) {
  std::vector<int> n(f.blocks.size(), 0);
  for (const auto& s : successors(f))
    for (int t : s) ++n[t];
  return n;
}

}  // namespace

void simplifyCfg(VFunc& f) {
  for (int round = 0; round < 64; ++round) {
    bool changed = false;
    removeUnreachable(f);
    const int n = static_cast<int>(f.blocks.size());
    // Where an empty block leads (jump threading): follow the chain of empty jumping blocks to
    // its end, or, in a cycle of them, to the first block seen twice. Memoised, so a chain of
    // 10^5 empty blocks costs one walk, not one walk per block.
    // (Every memoised target is equivalent to the block itself, so the rewrites below, which
    // only replace blocks by equivalent ones, never make it wrong, at most less than complete
    // until the next round.)
    std::vector<int> threaded(n, kNone), onPath(n, kNone);
    auto forward = [&](int start) {
      std::vector<int> path;
      int b = start;
      int result = kNone;
      for (;;) {
        if (threaded[b] != kNone) { result = threaded[b]; break; }
        if (!(f.blocks[b].ops.empty() && f.blocks[b].term.kind == TermKind::Jump)) { result = b; break; }
        if (onPath[b] != kNone) {  // a cycle: its members lead to themselves, the path into it to b
          size_t entry = static_cast<size_t>(onPath[b]);
          for (size_t k = entry; k < path.size(); ++k) {
            threaded[path[k]] = path[k];
            onPath[path[k]] = kNone;
          }
          path.resize(entry);
          result = b;
          break;
        }
        onPath[b] = static_cast<int>(path.size());
        path.push_back(b);
        b = f.blocks[b].term.next;
      }
      for (int p : path) {
        onPath[p] = kNone;
        threaded[p] = result;
      }
      return threaded[start] != kNone ? threaded[start] : result;
    };
    for (int b = 0; b < n; ++b) {
      auto& t = f.blocks[b].term;
      if (t.kind == TermKind::Jump || t.kind == TermKind::Barrier || t.kind == TermKind::Branch) {
        int nx = forward(t.next);
        if (nx != t.next) { t.next = nx; changed = true; }
      }
      if (t.kind == TermKind::Branch) {
        int tk = forward(t.taken);
        if (tk != t.taken) { t.taken = tk; changed = true; }
        if (t.taken == t.next) { t = VTerm{TermKind::Jump, kNone, false, kNone, t.next}; changed = true; }
      }
      // A jump to an empty Exit block is an Exit.
      if (t.kind == TermKind::Jump && f.blocks[t.next].ops.empty() && f.blocks[t.next].term.kind == TermKind::Exit) {
        t = VTerm{TermKind::Exit};
        changed = true;
      }
    }
    // The entry itself may be an empty jump.
    if (f.blocks[0].ops.empty() && f.blocks[0].term.kind == TermKind::Jump && f.blocks[0].term.next != 0) {
      int target = forward(0);
      if (target != 0) {
        std::swap(f.blocks[0], f.blocks[target]);
        for (auto& b : f.blocks) {
          for (int* x : {&b.term.taken, &b.term.next}) {
            if (*x == 0) *x = target;
            else if (*x == target) *x = 0;
          }
        }
        changed = true;
        continue;
      }
    }
    removeUnreachable(f);
    // Merging.
    auto preds = predCounts(f);
    for (int b = 0; b < static_cast<int>(f.blocks.size()); ++b) {
      auto& t = f.blocks[b].term;
      if (t.kind != TermKind::Jump) continue;
      int s = t.next;
      if (s == b || s == 0 || preds[s] != 1) continue;
      auto& sb = f.blocks[s];
      f.blocks[b].ops.insert(f.blocks[b].ops.end(), sb.ops.begin(), sb.ops.end());
      t = sb.term;
      sb.ops.clear();
      sb.term = VTerm{TermKind::Exit};  // now unreachable
      changed = true;
      preds = predCounts(f);
    }
    if (!changed) break;
  }
  removeUnreachable(f);
}

// ---- if-conversion ----
namespace {

bool isWarpOp(Op op) { return machine::opInfo(op).cls == OpClass::Warp; }

// The one block holding every occurrence of each vreg (or -2 if several, -1 if none).
void homes(const VFunc& f, std::vector<int>& reg, std::vector<int>& pred) {
  reg.assign(f.numRegs, -1);
  pred.assign(f.numPreds, -1);
  auto note = [](std::vector<int>& h, int v, int b) { h[v] = (h[v] == -1 || h[v] == b) ? b : -2; };
  for (int b = 0; b < static_cast<int>(f.blocks.size()); ++b) {
    for (const auto& i : f.blocks[b].ops) {
      if (i.dst != kNone) note(reg, i.dst, b);
      if (i.dstPred != kNone) note(pred, i.dstPred, b);
      for (int k = 0; k < numSrc(i.op); ++k)
        if (i.src[k].isReg()) note(reg, i.src[k].reg, b);
      for (int k = 0; k < numPsrc(i.op); ++k) note(pred, i.psrc[k], b);
      if (i.guard != kNone) note(pred, i.guard, b);
    }
    if (f.blocks[b].term.kind == TermKind::Branch) note(pred, f.blocks[b].term.pred, b);
  }
}

}  // namespace

bool ifConvert(VFunc& f) {
  constexpr size_t kMaxOps = machine::kMaxOpsPerBlock - 2;  // room for predicate reloads
  std::vector<int> regHome, predHome;
  homes(f, regHome, predHome);
  auto preds = predCounts(f);
  const int n = static_cast<int>(f.blocks.size());
  for (int x = 0; x < n; ++x) {
    const VTerm t = f.blocks[x].term;
    if (t.kind != TermKind::Branch) continue;
    // T can be folded into x: only x reaches it, it jumps on to `join`, no warp ops, and it
    // does not overwrite the branch predicate its ops will be guarded by.
    auto foldable = [&](int b, int join) {
      if (b == x || b == 0 || preds[b] != 1) return false;
      const auto& blk = f.blocks[b];
      if (blk.term.kind != TermKind::Jump || blk.term.next != join) return false;
      for (const auto& i : blk.ops)
        if (isWarpOp(i.op) || i.dstPred == t.pred) return false;
      return true;
    };
    auto cost = [&](int b) {
      size_t c = f.blocks[b].ops.size();
      for (const auto& i : f.blocks[b].ops) c += i.guard != kNone ? 1 : 0;
      return c;
    };
    std::vector<std::pair<int, bool>> parts;  // (block, guard negated)
    int join = kNone;
    const VBlock& A = f.blocks[t.taken];
    const VBlock& B = f.blocks[t.next];
    if (foldable(t.taken, A.term.next) && foldable(t.next, A.term.next) && A.term.next != x) {
      parts = {{t.taken, t.negate}, {t.next, !t.negate}};
      join = A.term.next;
    } else if (foldable(t.next, t.taken)) {
      parts = {{t.next, !t.negate}};
      join = t.taken;
    } else if (foldable(t.taken, t.next)) {
      parts = {{t.taken, t.negate}};
      join = t.next;
    } else {
      continue;
    }
    (void)B;
    size_t total = f.blocks[x].ops.size();
    for (auto [b, neg] : parts) total += cost(b);
    if (total > kMaxOps) continue;
    std::vector<VInstr> ops = f.blocks[x].ops;
    for (auto [b, neg] : parts) {
      std::map<std::pair<int, bool>, std::pair<int, bool>> combined;  // own guard -> new guard
      for (VInstr i : f.blocks[b].ops) {
        bool local = (i.dst == kNone || regHome[i.dst] == b) && (i.dstPred == kNone || predHome[i.dstPred] == b);
        if (local && !hasSideEffects(i.op)) {
          ops.push_back(i);  // lanes outside the branch compute a value nobody reads
          continue;
        }
        if (i.guard == kNone) {
          i.guard = t.pred;
          i.guardNeg = neg;
        } else {
          // Guard by (branch condition) and (own guard), computed once per distinct own guard:
          // a & g = pand; !a & !g = !(a | g) = negated por; mixed signs need one pnot.
          auto key = std::make_pair(i.guard, i.guardNeg);
          auto it = combined.find(key);
          if (it == combined.end()) {
            int a = t.pred, g = i.guard;
            bool an = neg, gn = i.guardNeg, resultNeg = false;
            Op op = Op::PAnd;
            if (an && gn) {
              op = Op::POr;
              resultNeg = true;
            } else if (an || gn) {
              VInstr v;
              v.op = Op::PNot;
              v.dstPred = f.newPred();
              v.psrc = {an ? a : g, kNone};
              v.loc = i.loc;
              ops.push_back(v);
              (an ? a : g) = v.dstPred;
            }
            VInstr both;
            both.op = op;
            both.dstPred = f.newPred();
            both.psrc = {a, g};
            both.loc = i.loc;
            ops.push_back(both);
            it = combined.emplace(key, std::make_pair(both.dstPred, resultNeg)).first;
          }
          i.guard = it->second.first;
          i.guardNeg = it->second.second;
        }
        ops.push_back(i);
      }
    }
    f.blocks[x].ops = std::move(ops);
    f.blocks[x].term = VTerm{TermKind::Jump, kNone, false, kNone, join};
    return true;
  }
  return false;
}

// ---- layout ----
Status layout(VFunc& f) {
  const int n = static_cast<int>(f.blocks.size());
  auto succ = successors(f);
  std::vector<std::vector<int>> pred(n);
  for (int b = 0; b < n; ++b)
    for (int s : succ[b]) pred[s].push_back(b);

  // Dominators (iterative, on a DFS reverse post-order).
  std::vector<int> rpo;
  {
    std::vector<int> state(n, 0);
    std::vector<std::pair<int, size_t>> st{{0, 0}};
    state[0] = 1;
    std::vector<int> post;
    while (!st.empty()) {
      auto& [b, k] = st.back();
      if (k < succ[b].size()) {
        int s = succ[b][k++];
        if (!state[s]) {
          state[s] = 1;
          st.push_back({s, 0});
        }
      } else {
        post.push_back(b);
        st.pop_back();
      }
    }
    rpo.assign(post.rbegin(), post.rend());
  }
  std::vector<int> rpoIndex(n, -1);
  for (size_t k = 0; k < rpo.size(); ++k) rpoIndex[rpo[k]] = static_cast<int>(k);
  std::vector<int> idom(n, -1);
  idom[0] = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (int b : rpo) {
      if (b == 0) continue;
      int nd = -1;
      for (int p : pred[b]) {
        if (idom[p] < 0) continue;
        if (nd < 0) { nd = p; continue; }
        int x = p, y = nd;
        while (x != y) {
          while (rpoIndex[x] > rpoIndex[y]) x = idom[x];
          while (rpoIndex[y] > rpoIndex[x]) y = idom[y];
        }
        nd = x;
      }
      if (nd != idom[b]) { idom[b] = nd; changed = true; }
    }
  }
  auto dominates = [&](int a, int b) {
    while (true) {
      if (a == b) return true;
      if (b == 0) return false;
      b = idom[b];
    }
  };
  // Back edges: u -> h with h dominating u. Any other edge to a block not later in the RPO
  // (a retreating edge) makes the CFG irreducible.
  std::map<int, std::set<int>> loops;  // header -> body
  for (int u = 0; u < n; ++u) {
    for (int h : succ[u]) {
      if (rpoIndex[h] > rpoIndex[u]) continue;
      if (!dominates(h, u)) {
        const auto& ops = f.blocks[h].ops;
        SourceLoc loc = ops.empty() ? SourceLoc{} : ops.front().loc;
        return makeDiag(ErrorKind::PtxUnsupported,
                        "unsupported PTX: irreducible control flow (a loop entered other than through its header)", loc);
      }
      auto& body = loops[h];
      body.insert(h);
      std::vector<int> work{u};
      while (!work.empty()) {
        int x = work.back();
        work.pop_back();
        if (body.insert(x).second)
          for (int p : pred[x]) work.push_back(p);
      }
    }
  }
  // Recursive ordering. A unit of `body` is a block, or the outermost loop strictly inside
  // `body` that contains it (named by its header); loops are nested or disjoint (reducible).
  std::function<std::vector<int>(const std::set<int>&, int)> order = [&](const std::set<int>& body, int head) {
    auto isSubLoop = [&](int h) { return loops.count(h) && loops[h].size() < body.size(); };
    std::map<int, int> unit;
    for (int b : body) {
      int best = b;
      size_t bestSize = 0;
      for (auto& [h, lb] : loops)
        if (lb.size() < body.size() && lb.size() > bestSize && lb.count(b)) {
          best = h;
          bestSize = lb.size();
        }
      unit[b] = best;
    }
    std::map<int, std::vector<int>> usucc;
    for (int b : body)
      for (int s : succ[b]) {
        if (!body.count(s) || s == head) continue;  // exits and back edges
        if (unit[b] != unit[s]) usucc[unit[b]].push_back(unit[s]);
      }
    std::vector<int> post;
    std::set<int> seen{unit[head]};
    std::vector<std::pair<int, size_t>> st{{unit[head], 0}};
    while (!st.empty()) {
      auto& [u, k] = st.back();
      auto& ss = usucc[u];
      if (k < ss.size()) {
        int s = ss[k++];
        if (seen.insert(s).second) st.push_back({s, 0});
      } else {
        post.push_back(u);
        st.pop_back();
      }
    }
    std::vector<int> result;
    for (auto it = post.rbegin(); it != post.rend(); ++it) {
      if (isSubLoop(*it)) {
        auto sub = order(loops[*it], *it);
        result.insert(result.end(), sub.begin(), sub.end());
      } else {
        result.push_back(*it);
      }
    }
    return result;
  };
  std::set<int> all;
  for (int b : rpo) all.insert(b);
  std::vector<int> ord = order(all, 0);
  if (static_cast<int>(ord.size()) != static_cast<int>(rpo.size()))
    return makeDiag(ErrorKind::Internal, "lowering: layout lost blocks (" + std::to_string(ord.size()) + " of " +
                                             std::to_string(rpo.size()) + ")");
  std::vector<int> remap(n, kNone);
  std::vector<VBlock> blocks;
  for (int b : ord) {
    remap[b] = static_cast<int>(blocks.size());
    blocks.push_back(std::move(f.blocks[b]));
  }
  for (auto& b : blocks) {
    if (b.term.taken != kNone) b.term.taken = remap[b.term.taken];
    if (b.term.next != kNone) b.term.next = remap[b.term.next];
  }
  f.blocks = std::move(blocks);
  return Ok{};
}

}  // namespace qgpu::lower
