// qgpu/gen/cuda_gen.cpp — random CUDA kernels with the generator's own expectations
// (the contract is gen/cuda_gen.h).
#include "gen/cuda_gen.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>

#include "gen/policy_text.h"
#include "gen/rng.h"

namespace qgpu::gen {

namespace {


constexpr CudaOpInfo kOps[] = {
#define QGPU_CUDAGEN_OP_ROW(name, family, arity, spelling) {#name, CudaOpFamily::family, arity, spelling},
    QGPU_CUDAGEN_OPS(QGPU_CUDAGEN_OP_ROW)
#undef QGPU_CUDAGEN_OP_ROW
};
constexpr int kNumFamilies = 5;

int32_t s32(uint32_t x) { return static_cast<int32_t>(x); }
uint32_t u32(int64_t x) { return static_cast<uint32_t>(static_cast<uint64_t>(x)); }

// ---- The AST ----
enum class ExprKind : uint8_t { Const, Var, Special, Load, LoopVar, Arg, Op, Call };
enum Special : uint32_t { kTid, kCtaid, kNtid, kNctaid, kParamK, kNumSpecials };
const char* const kSpecialNames[kNumSpecials] = {"threadIdx.x", "blockIdx.x", "blockDim.x", "gridDim.x", "k"};

struct Expr {
  ExprKind kind = ExprKind::Const;
  CudaOp op = CudaOp::Add;
  uint32_t value = 0;  // Const: the value; Var/LoopVar/Arg/Special: the index; Call: the helper
  int a = -1, b = -1, c = -1;  // children (indices into the pool)
};

enum class StmtKind : uint8_t { Assign, Store, Atomic, If, Loop, Return, Exchange, SyncReduce, Warp };
enum class WarpKind : uint8_t { ShflIdx, ShflUp, ShflDown, ShflXor, Ballot, Any, All };
enum class AtomicKind : uint8_t { Add, Min, Max, Or, And, Xor };
const char* const kAtomicNames[] = {"atomicAdd", "atomicMin", "atomicMax", "atomicOr", "atomicAnd", "atomicXor"};
const char* const kSyncNames[] = {"__syncthreads_count", "__syncthreads_and", "__syncthreads_or"};

struct Stmt {
  StmtKind kind = StmtKind::Assign;
  int var = 0;        // Assign, Exchange, SyncReduce, Warp: the destination variable
  int e = -1, e2 = -1;  // expressions (Store: e2 = slot index or -1 for slot `id`)
  uint32_t id = 0;    // Loop: its counter; Atomic: the acc word; Store: constant slot;
                      // Exchange: the lane offset; SyncReduce: 0 count, 1 and, 2 or; Warp: delta/mask
  WarpKind warp = WarpKind::ShflIdx;
  std::vector<Stmt> body, orelse;
};

struct Helper {
  bool noinline = false;
  int cond = -1, e1 = -1, e2 = -1;  // cond < 0: `return e1;`
};

struct Thread {
  std::vector<uint32_t> vars;
  std::vector<uint32_t> loops;
  uint32_t tid = 0, ctaid = 0;
  bool returned = false;
};

class Generator {
 public:
  Generator(const CudaPolicy& p, uint64_t seed) : p_(p), rng_(seed) {}

  CudaCase generate(std::string name, std::string header) {
    CudaCase c;
    c.name = std::move(name);
    c.header = std::move(header);
    // Launch.
    c.gridX = 1 + rng_.below(p_.maxGrid);
    if (p_.maxBlockX >= 4 && rng_.chance(p_.warpBlockProb)) c.blockX = 4;
    else c.blockX = 1 + rng_.below(p_.maxBlockX);
    c.slots = 1 + rng_.below(p_.maxSlots);
    blockX_ = c.blockX;
    slots_ = c.slots;
    for (auto& w : c.in) w = constant();
    for (auto& w : c.accInit) w = rng_.chance(0.5) ? rng_.below(17) : rng_.word();
    for (auto& k : atomicOfWord_) k = static_cast<AtomicKind>(rng_.below(6));
    c.k = rng_.below(17);

    // Helpers: pure functions of (a, b); helper j may call helpers < j.
    int nh = p_.maxHelpers > 0 ? static_cast<int>(rng_.below(static_cast<uint32_t>(p_.maxHelpers) + 1)) : 0;
    for (int j = 0; j < nh; ++j) {
      inHelper_ = true;
      callable_ = j;
      Helper h;
      h.noinline = rng_.chance(p_.noinlineProb);
      if (rng_.chance(0.5)) h.cond = expr(p_.maxExprDepth);
      h.e1 = expr(p_.maxExprDepth);
      if (h.cond >= 0) h.e2 = expr(p_.maxExprDepth);
      helpers_.push_back(h);
    }
    inHelper_ = false;
    callable_ = nh;

    // Variables, each initialised from the ones before it.
    nvars_ = 1 + static_cast<int>(rng_.below(static_cast<uint32_t>(p_.maxVars)));
    for (int v = 0; v < nvars_; ++v) {
      declaredVars_ = v;
      varInit_.push_back(expr(1));
    }
    declaredVars_ = nvars_;

    // Top-level statements.
    int n = 1 + static_cast<int>(rng_.below(static_cast<uint32_t>(p_.maxTopStmts)));
    for (int i = 0; i < n; ++i) top_.push_back(stmt(0, true));

    c.hasShared = usesShared_;
    c.hasWarp = hasWarp_;
    c.hasSyncReduce = hasSync_;
    c.hasReturn = returned_;
    c.hasLoop = loops_ > 0;
    c.hasCall = hasCall_;
    c.hasAtomic = hasAtomic_;
    evaluate(c);
    c.text = print(c);
    return c;
  }

 private:
  const CudaPolicy& p_;
  Rng rng_;
  std::vector<Expr> pool_;
  std::vector<Helper> helpers_;
  std::vector<int> varInit_;
  std::vector<Stmt> top_;
  std::array<AtomicKind, kCudaAccWords> atomicOfWord_{};
  std::vector<uint32_t> loopScope_;  // counters visible where the generator is
  uint32_t blockX_ = 1, slots_ = 1;
  int nvars_ = 0, declaredVars_ = 0, callable_ = 0;
  uint32_t loops_ = 0;
  bool inHelper_ = false, returned_ = false, usesShared_ = false, hasWarp_ = false, hasSync_ = false,
       hasCall_ = false, hasAtomic_ = false;

  uint32_t constant() {
    if (rng_.chance(p_.smallConstProb)) return rng_.below(17);
    return rng_.word();
  }
  int add(Expr e) {
    pool_.push_back(e);
    return static_cast<int>(pool_.size() - 1);
  }

  int leaf() {
    // Leaf kinds by weight: const, var, special, load, loop counter, helper argument.
    std::array<uint32_t, 6> w = {2, 0, 0, 0, 0, 0};
    if (inHelper_) {
      w[5] = 4;
    } else {
      w[1] = declaredVars_ > 0 ? 4 : 0;
      w[2] = 2;
      w[3] = 1;
      w[4] = loopScope_.empty() ? 0 : 1;
    }
    Expr e;
    switch (rng_.weighted(w)) {
      case 1: e.kind = ExprKind::Var; e.value = rng_.below(static_cast<uint32_t>(declaredVars_)); break;
      case 2: e.kind = ExprKind::Special; e.value = rng_.below(kNumSpecials); break;
      case 3: {
        e.kind = ExprKind::Load;
        // The index: a leaf that is not itself a load (keeps trees small).
        Expr i;
        if (declaredVars_ > 0 && rng_.chance(0.5)) {
          i.kind = ExprKind::Var;
          i.value = rng_.below(static_cast<uint32_t>(declaredVars_));
        } else {
          i.kind = ExprKind::Special;
          i.value = rng_.below(kNumSpecials);
        }
        e.a = add(i);
        break;
      }
      case 4: e.kind = ExprKind::LoopVar; e.value = loopScope_[rng_.below(static_cast<uint32_t>(loopScope_.size()))]; break;
      case 5: e.kind = ExprKind::Arg; e.value = rng_.below(2); break;
      default: e.kind = ExprKind::Const; e.value = constant(); break;
    }
    return add(e);
  }

  int expr(int depth) {
    if (depth <= 0 || rng_.chance(p_.leafProb)) return leaf();
    std::array<uint32_t, kNumFamilies + 1> w = {p_.wArith, p_.wDiv, p_.wShift, p_.wCompare, p_.wBuiltin,
                                                callable_ > 0 ? p_.wCall : 0u};
    int fam = rng_.weighted(w);
    if (fam < 0) return leaf();
    Expr e;
    if (fam == kNumFamilies) {
      e.kind = ExprKind::Call;
      e.value = rng_.below(static_cast<uint32_t>(callable_));
      e.a = expr(depth - 1);
      e.b = expr(depth - 1);
      hasCall_ = true;
      return add(e);
    }
    std::vector<int> rows;
    for (size_t i = 0; i < std::size(kOps); ++i)
      if (static_cast<int>(kOps[i].family) == fam) rows.push_back(static_cast<int>(i));
    e.kind = ExprKind::Op;
    e.op = static_cast<CudaOp>(rows[rng_.below(static_cast<uint32_t>(rows.size()))]);
    int arity = kOps[static_cast<int>(e.op)].arity;
    e.a = expr(depth - 1);
    if (arity > 1) e.b = expr(depth - 1);
    if (arity > 2) e.c = expr(depth - 1);
    return add(e);
  }

  std::vector<Stmt> block(int depth) {
    std::vector<Stmt> out;
    int n = 1 + static_cast<int>(rng_.below(static_cast<uint32_t>(p_.maxBlockStmts)));
    for (int i = 0; i < n; ++i) out.push_back(stmt(depth, false));
    return out;
  }

  Stmt stmt(int depth, bool top) {
    bool collective = top && !returned_;
    bool nest = depth < p_.maxDepth;
    std::array<uint32_t, 9> w = {p_.wAssign, p_.wStore, p_.wAtomic, nest ? p_.wIf : 0u, nest ? p_.wLoop : 0u,
                                 p_.wReturn, collective ? p_.wShared : 0u, collective ? p_.wSyncReduce : 0u,
                                 collective && blockX_ == 4 ? p_.wWarp : 0u};
    int kind = rng_.weighted(w);
    if (kind < 0) kind = 0;
    Stmt s;
    s.kind = static_cast<StmtKind>(kind);
    int ed = p_.maxExprDepth;
    auto pickVar = [&] { return static_cast<int>(rng_.below(static_cast<uint32_t>(nvars_))); };
    switch (s.kind) {
      case StmtKind::Assign: s.var = pickVar(); s.e = expr(ed); break;
      case StmtKind::Store:
        s.e = expr(ed);
        s.id = rng_.below(slots_);
        if (slots_ > 1 && rng_.chance(0.3)) s.e2 = expr(1);
        break;
      case StmtKind::Atomic: s.id = rng_.below(kCudaAccWords); s.e = expr(ed); hasAtomic_ = true; break;
      case StmtKind::If:
        s.e = expr(ed);
        s.body = block(depth + 1);
        if (rng_.chance(p_.elseProb)) s.orelse = block(depth + 1);
        break;
      case StmtKind::Loop:
        s.id = loops_++;
        s.e = expr(ed);  // the bound, evaluated before every trip
        loopScope_.push_back(s.id);
        s.body = block(depth + 1);
        loopScope_.pop_back();
        break;
      case StmtKind::Return:
        s.e = expr(ed);
        returned_ = true;
        break;
      case StmtKind::Exchange:
        s.var = pickVar();
        s.e = expr(ed);
        s.id = blockX_ > 1 ? 1 + rng_.below(blockX_ - 1) : 0;
        usesShared_ = true;
        break;
      case StmtKind::SyncReduce: s.var = pickVar(); s.e = expr(ed); s.id = rng_.below(3); hasSync_ = true; break;
      case StmtKind::Warp:
        s.var = pickVar();
        s.e = expr(ed);
        s.warp = static_cast<WarpKind>(rng_.below(7));
        s.id = rng_.below(4);
        if (s.warp == WarpKind::ShflIdx) s.e2 = expr(1);
        hasWarp_ = true;
        break;
    }
    return s;
  }

  // ---- The generator's own evaluation ----
  uint32_t eval(int i, const Thread& t, uint32_t argA, uint32_t argB, const CudaCase& c) const {
    const Expr& e = pool_[static_cast<size_t>(i)];
    switch (e.kind) {
      case ExprKind::Const: return e.value;
      case ExprKind::Var: return t.vars[e.value];
      case ExprKind::LoopVar: return t.loops[e.value];
      case ExprKind::Arg: return e.value == 0 ? argA : argB;
      case ExprKind::Special:
        switch (e.value) {
          case kTid: return t.tid;
          case kCtaid: return t.ctaid;
          case kNtid: return c.blockX;
          case kNctaid: return c.gridX;
          default: return c.k;
        }
      case ExprKind::Load: return c.in[eval(e.a, t, argA, argB, c) & 15u];
      case ExprKind::Op: {
        uint32_t a = eval(e.a, t, argA, argB, c);
        uint32_t b = e.b >= 0 ? eval(e.b, t, argA, argB, c) : 0;
        uint32_t cc = e.c >= 0 ? eval(e.c, t, argA, argB, c) : 0;
        return evalCudaOp(e.op, a, b, cc);
      }
      case ExprKind::Call: {
        uint32_t a = eval(e.a, t, argA, argB, c), b = eval(e.b, t, argA, argB, c);
        const Helper& h = helpers_[e.value];
        if (h.cond >= 0 && eval(h.cond, t, a, b, c) == 0) return eval(h.e2, t, a, b, c);
        return eval(h.e1, t, a, b, c);
      }
    }
    return 0;
  }

  struct World {
    CudaCase* c;
    std::vector<uint32_t> out;
    std::array<uint32_t, kCudaAccWords> acc;
  };

  // One thread through one statement; false once the thread has returned.
  bool exec(const Stmt& s, Thread& t, World& w) const {
    const CudaCase& c = *w.c;
    auto ev = [&](int e) { return eval(e, t, 0, 0, c); };
    switch (s.kind) {
      case StmtKind::Assign: t.vars[static_cast<size_t>(s.var)] = ev(s.e); break;
      case StmtKind::Store: {
        uint32_t v = ev(s.e);
        uint32_t slot = s.e2 >= 0 ? ev(s.e2) % c.slots : s.id;
        w.out[(t.ctaid * c.blockX + t.tid) * c.slots + slot] = v;
        break;
      }
      case StmtKind::Atomic: {
        uint32_t v = ev(s.e);
        uint32_t& a = w.acc[s.id];
        switch (atomicOfWord_[s.id]) {
          case AtomicKind::Add: a += v; break;
          case AtomicKind::Min: a = std::min(a, v); break;
          case AtomicKind::Max: a = std::max(a, v); break;
          case AtomicKind::Or: a |= v; break;
          case AtomicKind::And: a &= v; break;
          case AtomicKind::Xor: a ^= v; break;
        }
        break;
      }
      case StmtKind::If:
        for (const Stmt& b : ev(s.e) != 0 ? s.body : s.orelse)
          if (!exec(b, t, w)) return false;
        break;
      case StmtKind::Loop:
        for (t.loops[s.id] = 0; t.loops[s.id] < ev(s.e) % (p_.maxTrips + 1); ++t.loops[s.id])
          for (const Stmt& b : s.body)
            if (!exec(b, t, w)) return false;
        break;
      case StmtKind::Return:
        if (ev(s.e) != 0) {
          t.returned = true;
          return false;
        }
        break;
      default: break;  // collectives: execTop
    }
    return true;
  }

  // Every live thread of a CTA through one top-level statement. Collectives are only generated
  // while every thread is live (no return generated before them).
  void execTop(const Stmt& s, std::vector<Thread>& ts, World& w) const {
    const CudaCase& c = *w.c;
    switch (s.kind) {
      case StmtKind::Exchange: {
        std::vector<uint32_t> sh(c.blockX);
        for (auto& t : ts) sh[t.tid] = eval(s.e, t, 0, 0, c);
        for (auto& t : ts) t.vars[static_cast<size_t>(s.var)] = sh[(t.tid + s.id) % c.blockX];
        return;
      }
      case StmtKind::SyncReduce: {
        uint32_t count = 0;
        for (auto& t : ts) count += eval(s.e, t, 0, 0, c) & 1u;
        uint32_t r = s.id == 0 ? count : s.id == 1 ? uint32_t{count == c.blockX} : uint32_t{count > 0};
        for (auto& t : ts) t.vars[static_cast<size_t>(s.var)] = r;
        return;
      }
      case StmtKind::Warp: {
        std::vector<uint32_t> val(c.blockX), src(c.blockX);  // blockX == 4: one warp
        for (auto& t : ts) {
          val[t.tid] = eval(s.e, t, 0, 0, c);
          src[t.tid] = s.e2 >= 0 ? eval(s.e2, t, 0, 0, c) : 0;
        }
        uint32_t ballot = 0;
        for (uint32_t l = 0; l < c.blockX; ++l) ballot |= (val[l] & 1u) << l;
        for (auto& t : ts) {
          uint32_t l = t.tid, r = 0;
          switch (s.warp) {
            case WarpKind::ShflIdx: r = val[src[l] & 3u]; break;
            case WarpKind::ShflUp: r = l >= s.id ? val[l - s.id] : val[l]; break;
            case WarpKind::ShflDown: r = l + s.id < 4 ? val[l + s.id] : val[l]; break;
            case WarpKind::ShflXor: r = val[l ^ s.id]; break;
            case WarpKind::Ballot: r = ballot; break;
            case WarpKind::Any: r = ballot != 0; break;
            case WarpKind::All: r = ballot == 0xfu; break;
          }
          t.vars[static_cast<size_t>(s.var)] = r;
        }
        return;
      }
      default:
        for (auto& t : ts)
          if (!t.returned) exec(s, t, w);
        return;
    }
  }

  void evaluate(CudaCase& c) const {
    World w{&c, std::vector<uint32_t>(c.gridX * c.blockX * c.slots, 0u), c.accInit};
    for (uint32_t cta = 0; cta < c.gridX; ++cta) {
      std::vector<Thread> ts(c.blockX);
      for (uint32_t i = 0; i < c.blockX; ++i) {
        Thread& t = ts[i];
        t.tid = i;
        t.ctaid = cta;
        t.vars.assign(static_cast<size_t>(nvars_), 0);
        t.loops.assign(loops_, 0);
        for (int v = 0; v < nvars_; ++v) t.vars[static_cast<size_t>(v)] = eval(varInit_[static_cast<size_t>(v)], t, 0, 0, c);
      }
      for (const Stmt& s : top_) execTop(s, ts, w);
      // The sink the printer ends the kernel with: out[o] ^= v0 + v1 + ...
      for (auto& t : ts) {
        if (t.returned) continue;
        uint32_t sum = 0;
        for (uint32_t v : t.vars) sum += v;
        w.out[(t.ctaid * c.blockX + t.tid) * c.slots] ^= sum;
      }
    }
    c.expectOut = w.out;
    c.expectAcc = w.acc;
  }

  // ---- Printing ----
  std::string printExpr(int i) const {
    const Expr& e = pool_[static_cast<size_t>(i)];
    switch (e.kind) {
      case ExprKind::Const: {
        if (e.value <= 16) return std::to_string(e.value) + "u";
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%08xu", e.value);
        return buf;
      }
      case ExprKind::Var: return "v" + std::to_string(e.value);
      case ExprKind::LoopVar: return "i" + std::to_string(e.value);
      case ExprKind::Arg: return e.value == 0 ? "a" : "b";
      case ExprKind::Special: return kSpecialNames[e.value];
      case ExprKind::Load: return "in[" + printExpr(e.a) + " & 15u]";
      case ExprKind::Call:
        return name_ + "_h" + std::to_string(e.value) + "(" + printExpr(e.a) + ", " + printExpr(e.b) + ")";
      case ExprKind::Op: {
        std::string out;
        const char* f = kOps[static_cast<int>(e.op)].spelling;
        for (; *f; ++f) {
          if (*f == '%' && f[1] >= '0' && f[1] <= '2') {
            int k = f[1] - '0';
            out += printExpr(k == 0 ? e.a : k == 1 ? e.b : e.c);
            ++f;
          } else {
            out += *f;
          }
        }
        return out;
      }
    }
    return "0u";
  }

  void printStmt(const Stmt& s, int indent, std::string& o) const {
    std::string pad(static_cast<size_t>(indent) * 2, ' ');
    std::string v = "v" + std::to_string(s.var);
    switch (s.kind) {
      case StmtKind::Assign: o += pad + v + " = " + printExpr(s.e) + ";\n"; break;
      case StmtKind::Store: {
        std::string slot = s.e2 >= 0 ? "(" + printExpr(s.e2) + ") % " + std::to_string(slots_) + "u"
                                     : std::to_string(s.id) + "u";
        o += pad + "out[o + " + slot + "] = " + printExpr(s.e) + ";\n";
        break;
      }
      case StmtKind::Atomic:
        o += pad + kAtomicNames[static_cast<int>(atomicOfWord_[s.id])] + std::string("(&acc[") +
             std::to_string(s.id) + "], " + printExpr(s.e) + ");\n";
        break;
      case StmtKind::If:
        o += pad + "if (" + printExpr(s.e) + ") {\n";
        for (const Stmt& b : s.body) printStmt(b, indent + 1, o);
        if (!s.orelse.empty()) {
          o += pad + "} else {\n";
          for (const Stmt& b : s.orelse) printStmt(b, indent + 1, o);
        }
        o += pad + "}\n";
        break;
      case StmtKind::Loop: {
        std::string i = "i" + std::to_string(s.id);
        o += pad + "for (unsigned " + i + " = 0; " + i + " < " + printExpr(s.e) + " % " +
             std::to_string(p_.maxTrips + 1) + "u; ++" + i + ") {\n";
        for (const Stmt& b : s.body) printStmt(b, indent + 1, o);
        o += pad + "}\n";
        break;
      }
      case StmtKind::Return: o += pad + "if (" + printExpr(s.e) + ") return;\n"; break;
      case StmtKind::Exchange:
        o += pad + "sh[threadIdx.x] = " + printExpr(s.e) + ";\n" + pad + "__syncthreads();\n" + pad + v +
             " = sh[(threadIdx.x + " + std::to_string(s.id) + "u) % " + std::to_string(blockX_) + "u];\n" + pad +
             "__syncthreads();\n";
        break;
      case StmtKind::SyncReduce:
        o += pad + v + " = (unsigned)(" + kSyncNames[s.id] + "((int)(" + printExpr(s.e) + " & 1u))" +
             (s.id == 0 ? ")" : " != 0)") + ";\n";
        break;
      case StmtKind::Warp: {
        std::string e = printExpr(s.e), d = std::to_string(s.id);
        std::string call;
        switch (s.warp) {
          case WarpKind::ShflIdx: call = "__shfl_sync(0xfu, " + e + ", (int)(" + printExpr(s.e2) + " & 3u), 4)"; break;
          case WarpKind::ShflUp: call = "__shfl_up_sync(0xfu, " + e + ", " + d + "u, 4)"; break;
          case WarpKind::ShflDown: call = "__shfl_down_sync(0xfu, " + e + ", " + d + "u, 4)"; break;
          case WarpKind::ShflXor: call = "__shfl_xor_sync(0xfu, " + e + ", " + d + ", 4)"; break;
          case WarpKind::Ballot: call = "__ballot_sync(0xfu, (int)(" + e + " & 1u))"; break;
          case WarpKind::Any: call = "(unsigned)(__any_sync(0xfu, (int)(" + e + " & 1u)) != 0)"; break;
          case WarpKind::All: call = "(unsigned)(__all_sync(0xfu, (int)(" + e + " & 1u)) != 0)"; break;
        }
        o += pad + v + " = " + call + ";\n";
        break;
      }
    }
  }

  std::string print(const CudaCase& c) {
    name_ = c.name;
    auto words = [](auto begin, auto end) {
      std::string s;
      for (auto it = begin; it != end; ++it) s += (s.empty() ? "" : " ") + std::to_string(*it);
      return s;
    };
    std::string o;
    o += "// qgpu-kernel: " + c.name + "\n";
    o += "// summary: random CUDA kernel (gen/cuda_gen.h), expectations computed by the generator\n";
    o += "// launch: grid=" + std::to_string(c.gridX) + " block=" + std::to_string(c.blockX) + "\n";
    o += "// param: in in u32[16] = " + words(c.in.begin(), c.in.end()) + "\n";
    o += "// param: out out u32[" + std::to_string(c.expectOut.size()) + "]\n";
    o += "// param: acc inout u32[8] = " + words(c.accInit.begin(), c.accInit.end()) + "\n";
    o += "// param: k scalar u32 = " + std::to_string(c.k) + "\n";
    o += "// expect: out = " + words(c.expectOut.begin(), c.expectOut.end()) + "\n";
    o += "// expect: acc = " + words(c.expectAcc.begin(), c.expectAcc.end()) + "\n";
    o += "// tags: random\n";
    o += "// note: " + c.header + "\n\n";
    for (size_t j = 0; j < helpers_.size(); ++j) {
      const Helper& h = helpers_[j];
      o += std::string("__device__ ") + (h.noinline ? "__noinline__ " : "") + "unsigned " + c.name + "_h" +
           std::to_string(j) + "(unsigned a, unsigned b) {\n";
      if (h.cond >= 0) o += "  if (" + printExpr(h.cond) + ") return " + printExpr(h.e1) + ";\n  return " + printExpr(h.e2) + ";\n";
      else o += "  return " + printExpr(h.e1) + ";\n";
      o += "}\n\n";
    }
    o += "__global__ void " + c.name + "(const unsigned* in, unsigned* out, unsigned* acc, unsigned k) {\n";
    if (usesShared_) o += "  __shared__ unsigned sh[" + std::to_string(blockX_) + "];\n";
    o += "  unsigned o = (blockIdx.x * blockDim.x + threadIdx.x) * " + std::to_string(slots_) + "u;\n";
    for (int v = 0; v < nvars_; ++v)
      o += "  unsigned v" + std::to_string(v) + " = " + printExpr(varInit_[static_cast<size_t>(v)]) + ";\n";
    for (const Stmt& s : top_) printStmt(s, 1, o);
    // Every variable reaches memory (otherwise the compilers drop most of the kernel).
    o += "  out[o] ^= " + std::string(nvars_ > 0 ? "v0" : "0u");
    for (int v = 1; v < nvars_; ++v) o += " + v" + std::to_string(v);
    o += ";\n}\n";
    return o;
  }
  std::string name_;
};

}  // namespace

std::span<const CudaOpInfo> cudaOpTable() { return kOps; }
const CudaOpInfo& cudaOpInfo(CudaOp op) { return kOps[static_cast<int>(op)]; }

uint32_t evalCudaOp(CudaOp op, uint32_t a, uint32_t b, uint32_t c) {
  switch (op) {
    case CudaOp::Add: return a + b;
    case CudaOp::Sub: return a - b;
    case CudaOp::Mul: return a * b;
    case CudaOp::And: return a & b;
    case CudaOp::Or: return a | b;
    case CudaOp::Xor: return a ^ b;
    case CudaOp::Not: return ~a;
    case CudaOp::Neg: return 0u - a;
    case CudaOp::DivU: return a / (b | 1u);
    case CudaOp::RemU: return a % (b | 1u);
    case CudaOp::DivS: return u32(int64_t{s32(a)} / int64_t{s32((b & 255u) | 1u)});
    case CudaOp::RemS: return u32(int64_t{s32(a)} % int64_t{s32((b & 255u) | 1u)});
    case CudaOp::Shl: return a << (b & 31u);
    case CudaOp::ShrU: return a >> (b & 31u);
    case CudaOp::ShrS: {
      // Arithmetic shift without relying on the host's >> of a negative value.
      uint32_t s = b & 31u;
      uint32_t r = a >> s;
      if ((a & 0x80000000u) && s) r |= ~(0xffffffffu >> s);
      return r;
    }
    case CudaOp::LtU: return a < b;
    case CudaOp::LeU: return a <= b;
    case CudaOp::GtU: return a > b;
    case CudaOp::GeU: return a >= b;
    case CudaOp::LtS: return s32(a) < s32(b);
    case CudaOp::LeS: return s32(a) <= s32(b);
    case CudaOp::GtS: return s32(a) > s32(b);
    case CudaOp::GeS: return s32(a) >= s32(b);
    case CudaOp::Eq: return a == b;
    case CudaOp::Ne: return a != b;
    case CudaOp::LAnd: return a != 0 && b != 0;
    case CudaOp::LOr: return a != 0 || b != 0;
    case CudaOp::LNot: return a == 0;
    case CudaOp::Select: return a != 0 ? b : c;
    case CudaOp::MinU: return std::min(a, b);
    case CudaOp::MaxU: return std::max(a, b);
    case CudaOp::MinS: return static_cast<uint32_t>(std::min(s32(a), s32(b)));
    case CudaOp::MaxS: return static_cast<uint32_t>(std::max(s32(a), s32(b)));
    case CudaOp::Abs: {
      int64_t x = s32(a | 1u);
      return u32(x < 0 ? -x : x);
    }
    case CudaOp::Popc: {
      uint32_t n = 0;
      for (uint32_t x = a; x; x &= x - 1) ++n;
      return n;
    }
    case CudaOp::Clz: {
      uint32_t n = 0;
      for (uint32_t bit = 0x80000000u; bit && !(a & bit); bit >>= 1) ++n;
      return n;
    }
    case CudaOp::Ffs: {
      if (a == 0) return 0;
      uint32_t n = 1;
      while (!(a & 1u)) {
        a >>= 1;
        ++n;
      }
      return n;
    }
    case CudaOp::Brev: {
      uint32_t r = 0;
      for (int i = 0; i < 32; ++i) r |= ((a >> i) & 1u) << (31 - i);
      return r;
    }
    case CudaOp::BytePerm: {
      uint64_t v = (uint64_t{b} << 32) | a;
      uint32_t s = c & 0x7777u, r = 0;
      for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
      return r;
    }
    case CudaOp::UMulHi: return static_cast<uint32_t>((uint64_t{a} * b) >> 32);
    case CudaOp::MulHi: return u32((int64_t{s32(a)} * int64_t{s32(b)}) >> 32);
    case CudaOp::UMul24: return (a & 0xffffffu) * (b & 0xffffffu);
    case CudaOp::Mul24: {
      auto sx24 = [](uint32_t x) { return int64_t{s32(x << 8)} / 256; };  // bits 23..0, sign-extended
      return u32(sx24(a) * sx24(b));
    }
    case CudaOp::USad: return (a > b ? a - b : b - a) + c;
    case CudaOp::Sad: {
      int64_t d = int64_t{s32(a)} - int64_t{s32(b)};
      return u32(d < 0 ? -d : d) + c;
    }
  }
  return 0;
}

std::array<uint32_t, 126> CudaCase::initialGlobal() const {
  std::array<uint32_t, 126> g{};
  std::copy(in.begin(), in.end(), g.begin());
  std::copy(accInit.begin(), accInit.end(), g.begin() + accWord());
  return g;
}
std::array<uint32_t, 126> CudaCase::expectedGlobal() const {
  std::array<uint32_t, 126> g = initialGlobal();
  std::copy(expectOut.begin(), expectOut.end(), g.begin() + outWord());
  std::copy(expectAcc.begin(), expectAcc.end(), g.begin() + accWord());
  return g;
}
std::vector<uint32_t> CudaCase::params() const { return {0u, 4 * outWord(), 4 * accWord(), k}; }

Status validate(const CudaPolicy& p) {
  auto bad = [](const std::string& m) -> Status { return makeDiag(ErrorKind::Usage, "CUDA generator policy: " + m); };
  if (p.maxTopStmts < 1 || p.maxTopStmts > 16) return bad("maxTopStmts must be 1..16");
  if (p.maxDepth < 0 || p.maxDepth > 4) return bad("maxDepth must be 0..4");
  if (p.maxBlockStmts < 1 || p.maxBlockStmts > 8) return bad("maxBlockStmts must be 1..8");
  if (p.maxExprDepth < 0 || p.maxExprDepth > 6) return bad("maxExprDepth must be 0..6");
  if (p.maxVars < 1 || p.maxVars > 8) return bad("maxVars must be 1..8");
  if (p.maxHelpers < 0 || p.maxHelpers > 4) return bad("maxHelpers must be 0..4");
  if (p.maxTrips < 1 || p.maxTrips > 8) return bad("maxTrips must be 1..8");
  if (p.maxGrid < 1 || p.maxGrid > 16) return bad("maxGrid must be 1..16");
  if (p.maxBlockX < 1 || p.maxBlockX > 16) return bad("maxBlockX must be 1..16");
  if (p.maxSlots < 1 || p.maxSlots > 8) return bad("maxSlots must be 1..8");
  if (p.maxGrid * p.maxBlockX * p.maxSlots > 126 - kCudaInWords - kCudaAccWords)
    return bad("maxGrid * maxBlockX * maxSlots must be <= 102 (the out words)");
  for (double x : {p.noinlineProb, p.elseProb, p.leafProb, p.smallConstProb, p.warpBlockProb})
    if (!(x >= 0 && x <= 1)) return bad("probabilities must be in [0, 1]");
  if (p.wAssign + p.wStore + p.wAtomic + p.wIf + p.wLoop + p.wReturn + p.wShared + p.wSyncReduce + p.wWarp == 0)
    return bad("every statement weight is 0");
  return Ok{};
}

std::string describeCuda(const CudaPolicy& policy, uint64_t seed) {
  std::string out = "qgpu-gen cuda v" + std::to_string(kCudaGeneratorVersion) + " seed=" + std::to_string(seed) +
                    " policy:";
#define QGPU_CUDAGEN_DESCRIBE(type, name, def, doc) out += " " #name "=" + formatPolicyValue(policy.name);
  QGPU_CUDAGEN_POLICY_FIELDS(QGPU_CUDAGEN_DESCRIBE)
#undef QGPU_CUDAGEN_DESCRIBE
  return out;
}

Expected<CudaPolicy> parseCudaPolicy(std::string_view text) {
  CudaPolicy policy;
  auto set = [&](std::string_view name, std::string_view value) -> std::optional<bool> {
#define QGPU_CUDAGEN_PARSE(type, field, def, doc) \
  if (name == #field) return parsePolicyValue(value, policy.field);
    QGPU_CUDAGEN_POLICY_FIELDS(QGPU_CUDAGEN_PARSE)
#undef QGPU_CUDAGEN_PARSE
    return std::nullopt;
  };
  QGPU_CHECK(readPolicyItems(text, "CUDA generator policy", set));
  QGPU_CHECK(validate(policy));
  return policy;
}

Expected<CudaCase> generateCuda(const CudaPolicy& policy, uint64_t seed, std::string name) {
  QGPU_CHECK(validate(policy));
  if (name.empty()) name = "rk" + std::to_string(seed);
  bool ident = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
  for (char ch : name) ident = ident && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
  if (!ident || name.size() > 64) return makeDiag(ErrorKind::Usage, "CUDA generator: '" + name + "' is not a kernel name");
  return Generator(policy, seed).generate(std::move(name), describeCuda(policy, seed));
}

}  // namespace qgpu::gen
