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

// ---- Typed expressions (cuda_gen.h) ----
namespace {
constexpr CTypeInfo kCTypes[] = {
#define QGPU_CUDAGEN_CTYPE_ROW(name, spelling, bits, isSigned) {spelling, bits, isSigned},
    QGPU_CUDAGEN_CTYPES(QGPU_CUDAGEN_CTYPE_ROW)
#undef QGPU_CUDAGEN_CTYPE_ROW
};
constexpr TypedOpInfo kTypedOps[] = {
#define QGPU_CUDAGEN_TYPED_OP_ROW(name, arity, spelling) {#name, arity, spelling},
    QGPU_CUDAGEN_TYPED_OPS(QGPU_CUDAGEN_TYPED_OP_ROW)
#undef QGPU_CUDAGEN_TYPED_OP_ROW
};
CType unsignedOf(CType t) {
  switch (t) {
    case CType::S32: return CType::U32;
    case CType::S64: return CType::U64;
    case CType::S16: return CType::U16;
    case CType::S8: return CType::U8;
    default: return t;
  }
}
int64_t sval(uint64_t bits) { return static_cast<int64_t>(bits); }
// Whether the mathematical value m (held exactly in 128 bits) is representable in signed type t.
bool fits(CType t, __int128 m) {
  int w = ctypeInfo(t).bits;
  __int128 hi = (static_cast<__int128>(1) << (w - 1)) - 1;
  return m >= -hi - 1 && m <= hi;
}
}  // namespace

const CTypeInfo& ctypeInfo(CType t) { return kCTypes[static_cast<int>(t)]; }
std::span<const TypedOpInfo> typedOpTable() { return kTypedOps; }

CType promoted(CType t) { return ctypeInfo(t).bits < 32 ? CType::S32 : t; }

CType commonType(CType a, CType b) {
  a = promoted(a);
  b = promoted(b);
  if (a == b) return a;
  const CTypeInfo &ia = ctypeInfo(a), &ib = ctypeInfo(b);
  if (ia.isSigned == ib.isSigned) return ia.bits >= ib.bits ? a : b;
  CType s = ia.isSigned ? a : b, u = ia.isSigned ? b : a;
  if (ctypeInfo(u).bits >= ctypeInfo(s).bits) return u;  // the unsigned type's rank is not lower
  if (ctypeInfo(s).bits > ctypeInfo(u).bits) return s;   // the signed type holds every value
  return unsignedOf(s);
}

uint64_t canonical(CType t, uint64_t bits) {
  const CTypeInfo& i = ctypeInfo(t);
  if (i.bits == 64) return bits;
  uint64_t mask = (uint64_t{1} << i.bits) - 1, v = bits & mask;
  if (i.isSigned && (v >> (i.bits - 1)) & 1u) v |= ~mask;
  return v;
}

CType typedOpResult(TypedOp op, CType a, CType b, CType c, CType castTo) {
  switch (op) {
    case TypedOp::Add: case TypedOp::Sub: case TypedOp::Mul: case TypedOp::And: case TypedOp::Or:
    case TypedOp::Xor: case TypedOp::Div: case TypedOp::Rem: return commonType(a, b);
    case TypedOp::Shl: case TypedOp::Shr: case TypedOp::Not: case TypedOp::Neg: return promoted(a);
    case TypedOp::Lt: case TypedOp::Le: case TypedOp::Gt: case TypedOp::Ge: case TypedOp::Eq:
    case TypedOp::Ne: return CType::S32;
    case TypedOp::Cast: return castTo;
    case TypedOp::Select: return commonType(b, c);
    case TypedOp::UMul64Hi: return CType::U64;
    case TypedOp::Mul64Hi: return CType::S64;
    case TypedOp::Popcll: case TypedOp::Clzll: case TypedOp::Ffsll: return CType::S32;
    case TypedOp::Brevll: case TypedOp::UllMin: case TypedOp::UllMax: return CType::U64;
    case TypedOp::LlMin: case TypedOp::LlMax: case TypedOp::Llabs: return CType::S64;
  }
  return CType::U32;
}

CValue evalTypedOp(TypedOp op, CValue a, CValue b, CValue c, CType castTo, bool wrap, bool* ub) {
  const CType r = typedOpResult(op, a.type, b.type, c.type, castTo);
  const bool rs = ctypeInfo(r).isSigned;
  auto out = [&](uint64_t bits) { return CValue{r, canonical(r, bits)}; };
  auto flag = [&](bool undefined) {
    if (undefined && !wrap && ub) *ub = true;
  };
  // Operands converted to the common type (binary arithmetic and comparisons).
  const CType ct = commonType(a.type, b.type);
  const bool cs = ctypeInfo(ct).isSigned;
  const uint64_t x = canonical(ct, a.bits), y = canonical(ct, b.bits);
  auto less = [&](uint64_t p, uint64_t q) { return cs ? sval(p) < sval(q) : p < q; };
  switch (op) {
    case TypedOp::Add: flag(cs && !fits(ct, static_cast<__int128>(sval(x)) + sval(y))); return out(x + y);
    case TypedOp::Sub: flag(cs && !fits(ct, static_cast<__int128>(sval(x)) - sval(y))); return out(x - y);
    case TypedOp::Mul: flag(cs && !fits(ct, static_cast<__int128>(sval(x)) * sval(y))); return out(x * y);
    case TypedOp::And: return out(x & y);
    case TypedOp::Or: return out(x | y);
    case TypedOp::Xor: return out(x ^ y);
    case TypedOp::Div:
    case TypedOp::Rem: {
      // The divisor as printed: ((b & 255) | 1) in b's promoted type when the common type is
      // signed (1..255), (b | 1) otherwise (odd, so nonzero in any wider type too).
      CType bt = promoted(b.type);
      uint64_t d = canonical(bt, b.bits);
      d = cs ? ((d & 255u) | 1u) : (d | 1u);
      d = canonical(ct, canonical(bt, d));
      if (cs) {
        int64_t q = sval(x) / sval(d), m = sval(x) % sval(d);  // d in 1..255: never -1 or 0
        return out(static_cast<uint64_t>(op == TypedOp::Div ? q : m));
      }
      return out(op == TypedOp::Div ? x / d : x % d);
    }
    case TypedOp::Shl:
    case TypedOp::Shr: {
      const uint64_t v = canonical(r, a.bits);
      const int w = ctypeInfo(r).bits;
      const unsigned s = static_cast<unsigned>(b.bits & static_cast<uint64_t>(w - 1));
      if (op == TypedOp::Shl) {
        flag(rs && (sval(v) < 0 || !fits(r, static_cast<__int128>(sval(v)) << s)));
        return out(v << s);
      }
      if (rs) return out(static_cast<uint64_t>(sval(v) >> s));  // arithmetic (C++20; both compilers)
      return out(v >> s);
    }
    case TypedOp::Lt: return out(less(x, y));
    case TypedOp::Le: return out(!less(y, x));
    case TypedOp::Gt: return out(less(y, x));
    case TypedOp::Ge: return out(!less(x, y));
    case TypedOp::Eq: return out(x == y);
    case TypedOp::Ne: return out(x != y);
    case TypedOp::Not: return out(~canonical(r, a.bits));
    case TypedOp::Neg: {
      const uint64_t v = canonical(r, a.bits);
      flag(rs && !fits(r, -static_cast<__int128>(sval(v))));
      return out(0 - v);
    }
    case TypedOp::Cast: return out(a.bits);
    case TypedOp::Select: return out(a.bits != 0 ? canonical(r, b.bits) : canonical(r, c.bits));
    // The operands converted to (unsigned) long long: canonical bits are that conversion already.
    case TypedOp::UMul64Hi:
      return out(static_cast<uint64_t>((static_cast<unsigned __int128>(a.bits) * b.bits) >> 64));
    case TypedOp::Mul64Hi:
      return out(static_cast<uint64_t>((static_cast<__int128>(sval(a.bits)) * sval(b.bits)) >> 64));
    case TypedOp::Popcll: {
      uint64_t n = 0;
      for (uint64_t v = a.bits; v != 0; v &= v - 1) ++n;
      return out(n);
    }
    case TypedOp::Clzll: {
      uint64_t n = 0;
      while (n < 64 && !((a.bits >> (63 - n)) & 1u)) ++n;
      return out(n);
    }
    case TypedOp::Ffsll: {
      if (a.bits == 0) return out(0);
      uint64_t n = 0;
      while (!((a.bits >> n) & 1u)) ++n;
      return out(n + 1);
    }
    case TypedOp::Brevll: {
      uint64_t r0 = 0;
      for (int i = 0; i < 64; ++i) r0 |= ((a.bits >> i) & 1u) << (63 - i);
      return out(r0);
    }
    case TypedOp::LlMin: return out(sval(a.bits) < sval(b.bits) ? a.bits : b.bits);
    case TypedOp::LlMax: return out(sval(a.bits) > sval(b.bits) ? a.bits : b.bits);
    case TypedOp::UllMin: return out(a.bits < b.bits ? a.bits : b.bits);
    case TypedOp::UllMax: return out(a.bits > b.bits ? a.bits : b.bits);
    case TypedOp::Llabs: {  // as printed: llabs(a | 1), never LLONG_MIN
      const int64_t v = sval(a.bits | 1u);
      return out(static_cast<uint64_t>(v < 0 ? -v : v));
    }
  }
  return out(0);
}

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
enum class ExprKind : uint8_t { Const, Var, Special, Load, LoopVar, Arg, Op, Call, Typed };
enum Special : uint32_t { kTid, kCtaid, kNtid, kNctaid, kParamK, kNumSpecials };
const char* const kSpecialNames[kNumSpecials] = {"threadIdx.x", "blockIdx.x", "blockDim.x", "gridDim.x", "k"};

struct Expr {
  ExprKind kind = ExprKind::Const;
  CudaOp op = CudaOp::Add;
  uint32_t value = 0;  // Const: the value; Var/LoopVar/Arg/Special: the index; Call: the helper;
                      // Typed: 0 the low word, 1 the high word (of the value as unsigned long long)
  int a = -1, b = -1, c = -1;  // children (indices into the pool; Typed: a indexes the typed pool)
};

// A typed expression (cuda_gen.h): leaves are a 32-bit expression converted, a constant, a typed
// local, or two 32-bit expressions as the high and low words of an unsigned long long.
// Since v4 also loads: `in64[E & 3u]` (long long) and the thread's own o64[g] / o8[g].
enum class TExprKind : uint8_t { FromU32, Const, Var, Pair, Op, Load64, OwnO64, OwnO8 };
struct TExpr {
  TExprKind kind = TExprKind::Const;
  CType type = CType::U32;     // the static type
  TypedOp op = TypedOp::Add;
  uint64_t value = 0;          // Const: canonical bits; Var: the index
  int a = -1, b = -1, c = -1;  // Op: typed children; FromU32/Pair: 32-bit expressions (pool_)
};

enum class StmtKind : uint8_t { Assign, Store, Atomic, If, Loop, Return, Exchange, SyncReduce, Warp, TypedAssign,
                                BarrierLoop, SharedAtomics, SharedAtomic, Fence, WideStore, Atomic64 };
// The 64-bit atomics the lowering splits into 32-bit ones (docs/lowering.md; min/max/CAS are refused).
enum class Atomic64Kind : uint8_t { Add, And, Or, Xor, Exch };
const char* const kAtomic64Names[] = {"atomicAdd", "atomicAnd", "atomicOr", "atomicXor", "atomicExch"};
enum class WarpKind : uint8_t { ShflIdx, ShflUp, ShflDown, ShflXor, Ballot, Any, All };
using AtomicKind = CudaAtomic;
constexpr CudaAtomicInfo kAtomics[] = {
#define QGPU_CUDAGEN_ATOMIC_ROW(name, fn, cast, constant) {#name, fn, cast, constant},
    QGPU_CUDAGEN_ATOMICS(QGPU_CUDAGEN_ATOMIC_ROW)
#undef QGPU_CUDAGEN_ATOMIC_ROW
};
constexpr uint32_t kNumAtomicKinds = static_cast<uint32_t>(std::size(kAtomics));
bool takesConstant(AtomicKind k) { return kAtomics[static_cast<int>(k)].constantOperand; }
// The ops of the shared words sa[0..3] (one per word, so their order cannot matter; Exch always
// writes the word's one uniform value, so the final word is that value if any thread ran it).
enum class SharedAtomicKind : uint8_t { Add, Or, Xor, And, MinU, MaxU, MinS, MaxS, Exch };
constexpr uint32_t kSharedAtomicWords = 4;
const char* const kFenceNames[] = {"__threadfence_block()", "__threadfence()", "__threadfence_system()",
                                   "__syncwarp(0xfu)"};
const char* const kSyncNames[] = {"__syncthreads_count", "__syncthreads_and", "__syncthreads_or"};

struct Stmt {
  StmtKind kind = StmtKind::Assign;
  int var = 0;        // Assign, Exchange, SyncReduce, Warp: the destination variable
  int e = -1, e2 = -1;  // expressions (Store: e2 = slot index or -1 for slot `id`)
  uint32_t id = 0;    // Loop, BarrierLoop: its counter; Atomic, SharedAtomic: the word; Fence: which; Store: constant
                      // slot; Exchange, SharedAtomics: the lane offset; SyncReduce: 0 count, 1 and,
                      // 2 or; Warp: delta/mask; TypedAssign: the typed variable
  uint32_t off = 0;   // BarrierLoop: the lane offset
  bool doubleBuffer = false;  // BarrierLoop: sb[2B] by trip parity, one barrier a trip (else sh, two)
  WarpKind warp = WarpKind::ShflIdx;
  std::vector<Stmt> body, orelse;
};

// A helper returns `cond ? e1 : e2`, or e1 where cond < 0; a table helper (v6) fills a local
// array and reads it at two data-dependent indices (a stack frame the compilers keep in local
// memory: `.local` in the helper's .func when it is __noinline__):
//   unsigned t[4]; for (i = 0..3) t[i] = e1 + i * b;  return t[e2 & 3] ^ t[b & 3];
struct Helper {
  bool noinline = false, forceinline = false, table = false;
  int cond = -1, e1 = -1, e2 = -1;
};

struct Thread {
  std::vector<uint32_t> vars;
  std::vector<uint64_t> wvars;  // typed locals, canonical bits
  std::vector<uint32_t> loops;
  uint64_t o64 = 0, o8 = 0;  // the thread's own o64[g] and o8[g] (canonical bits)
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
    for (uint32_t j = 0; j < kCudaAccWords; ++j) {
      atomicOfWord_[j] = static_cast<AtomicKind>(rng_.below(kNumAtomicKinds));
      accArg_[j] = rng_.chance(0.7) ? rng_.below(17) : rng_.word();
      accCmp_[j] = rng_.chance(0.5) ? c.accInit[j] : rng_.below(17);  // a CAS that can succeed
    }
    c.k = rng_.below(17);
    launchBounds_ = rng_.chance(p_.launchBoundsProb);
    // The wide arrays, where the launch leaves room for them (o8 counted at 2 bytes an element).
    {
      uint32_t threads = c.gridX * c.blockX, base = (kCudaInWords + threads * c.slots + kCudaAccWords + 1) & ~1u;
      uint32_t end = base + 2 * (kCudaIn64Elems + kCudaQElems + threads) + (threads * 2 + 3) / 4;
      wide_ = rng_.chance(p_.wideArraysProb) && end <= 126;
    }
    if (wide_) {
      c.wide = true;
      c.t64 = rng_.chance(0.5) ? CType::S64 : CType::U64;
      static constexpr CType kNarrow[] = {CType::U8, CType::S8, CType::U16, CType::S16};
      c.t8 = kNarrow[rng_.below(4)];
      t64_ = c.t64;
      t8_ = c.t8;
      auto wide64 = [&]() -> uint64_t { return rng_.chance(0.5) ? rng_.below(17) : rng_.next(); };
      for (auto& v : c.in64) v = wide64();
      for (uint32_t j = 0; j < kCudaQElems; ++j) {
        c.qInit[j] = wide64();
        qKind_[j] = static_cast<Atomic64Kind>(rng_.below(5));
        qExch_[j] = wide64();
      }
    }

    // Helpers: pure functions of (a, b); helper j may call helpers < j.
    int nh = p_.maxHelpers > 0 ? static_cast<int>(rng_.below(static_cast<uint32_t>(p_.maxHelpers) + 1)) : 0;
    for (int j = 0; j < nh; ++j) {
      inHelper_ = true;
      callable_ = j;
      Helper h;
      h.noinline = rng_.chance(p_.noinlineProb);
      h.forceinline = !h.noinline && rng_.chance(p_.forceinlineProb);
      h.table = rng_.chance(p_.helperTableProb);
      if (!h.table && rng_.chance(0.5)) h.cond = expr(p_.maxExprDepth);
      h.e1 = expr(p_.maxExprDepth);
      if (h.cond >= 0 || h.table) h.e2 = expr(p_.maxExprDepth);
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

    // Typed locals w0.. (64-bit and narrow), each initialised from the ones before it.
    ntv_ = p_.maxTypedVars > 0 ? static_cast<int>(rng_.below(static_cast<uint32_t>(p_.maxTypedVars) + 1)) : 0;
    for (int j = 0; j < ntv_; ++j) {
      declaredTVars_ = j;
      tvType_.push_back(kTypedVarTypes[rng_.below(static_cast<uint32_t>(std::size(kTypedVarTypes)))]);
      tvInit_.push_back(texpr(1));
    }
    declaredTVars_ = ntv_;

    // The shared atomic words: one op each, initial values, Exch's one uniform value.
    for (uint32_t j = 0; j < kSharedAtomicWords; ++j) {
      saKind_[j] = static_cast<SharedAtomicKind>(rng_.below(9));
      saInit_[j] = rng_.chance(0.5) ? rng_.below(17) : rng_.word();
      uniform_ = true;
      saExch_[j] = expr(1);
      uniform_ = false;
    }

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
    c.hasTyped = hasTyped_;
    c.hasBarrierLoop = hasBarrierLoop_;
    c.hasSharedAtomic = hasSharedAtomic_;
    // Evaluate, wrap every typed op that would be undefined, evaluate again, until none would be
    // (each round wraps at least one more op, so this ends).
    twrap_.assign(tpool_.size(), 0);
    for (;;) {
      tub_.assign(tpool_.size(), 0);
      evaluate(c);
      bool again = false;
      for (size_t i = 0; i < tpool_.size(); ++i)
        if (tub_[i] && !twrap_[i]) twrap_[i] = 1, again = true;
      if (!again) break;
    }
    c.wrappedOps = static_cast<int>(std::count(twrap_.begin(), twrap_.end(), 1));
    c.hasWideStore = hasWideStore_;
    c.hasAtomic64 = hasAtomic64_;
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
  std::array<uint32_t, kCudaAccWords> accArg_{}, accCmp_{};  // Inc/Dec/Exch: arg; Cas: (cmp, arg)
  bool launchBounds_ = false;
  // The wide arrays (cuda_gen.h): present, element types, q's ops and exch constants.
  bool wide_ = false, hasWideStore_ = false, hasAtomic64_ = false;
  CType t64_ = CType::S64, t8_ = CType::U8;
  std::array<Atomic64Kind, kCudaQElems> qKind_{};
  std::array<uint64_t, kCudaQElems> qExch_{};
  std::vector<uint32_t> loopScope_;  // counters visible where the generator is
  uint32_t blockX_ = 1, slots_ = 1;
  int nvars_ = 0, declaredVars_ = 0, callable_ = 0;
  uint32_t loops_ = 0;
  bool inHelper_ = false, returned_ = false, usesShared_ = false, hasWarp_ = false, hasSync_ = false,
       hasCall_ = false, hasAtomic_ = false;
  // Typed expressions and locals.
  static constexpr CType kTypedVarTypes[] = {CType::S64, CType::U64, CType::S16, CType::U16, CType::S8, CType::U8};
  std::vector<TExpr> tpool_;
  std::vector<CType> tvType_;
  std::vector<int> tvInit_;
  int ntv_ = 0, declaredTVars_ = 0;
  std::vector<uint8_t> twrap_;        // per typed node: printed in its wrapping form
  mutable std::vector<uint8_t> tub_;  // per typed node: the plain form was undefined in this evaluation
  // Shared atomics and barrier loops.
  std::array<SharedAtomicKind, kSharedAtomicWords> saKind_{};
  std::array<uint32_t, kSharedAtomicWords> saInit_{};
  std::array<int, kSharedAtomicWords> saExch_{};
  bool uniform_ = false;        // expressions being generated must be uniform across the CTA
  bool noReturn_ = false;       // inside a barrier loop or a shared-atomic region
  bool inSharedRegion_ = false; // shared atomics may be generated
  bool usesDouble_ = false, usesSharedAtomic_ = false, hasTyped_ = false, hasBarrierLoop_ = false,
       hasSharedAtomic_ = false;

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
      w[1] = declaredVars_ > 0 && !uniform_ ? 4 : 0;
      w[2] = 2;
      w[3] = 1;
      w[4] = loopScope_.empty() || uniform_ ? 0 : 1;
    }
    // A uniform expression reads no variable, loop counter or threadIdx.x.
    auto special = [&] { return uniform_ ? 1 + rng_.below(kNumSpecials - 1) : rng_.below(kNumSpecials); };
    Expr e;
    switch (rng_.weighted(w)) {
      case 1: e.kind = ExprKind::Var; e.value = rng_.below(static_cast<uint32_t>(declaredVars_)); break;
      case 2: e.kind = ExprKind::Special; e.value = special(); break;
      case 3: {
        e.kind = ExprKind::Load;
        // The index: a leaf that is not itself a load (keeps trees small).
        Expr i;
        if (declaredVars_ > 0 && !uniform_ && !inHelper_ && rng_.chance(0.5)) {
          i.kind = ExprKind::Var;
          i.value = rng_.below(static_cast<uint32_t>(declaredVars_));
        } else {
          i.kind = ExprKind::Special;
          i.value = special();
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
    std::array<uint32_t, kNumFamilies + 2> w = {p_.wArith, p_.wDiv, p_.wShift, p_.wCompare, p_.wBuiltin,
                                                callable_ > 0 ? p_.wCall : 0u, p_.wTyped};
    int fam = rng_.weighted(w);
    if (fam < 0) return leaf();
    Expr e;
    if (fam == kNumFamilies + 1) {
      e.kind = ExprKind::Typed;
      e.a = texpr(depth - 1);
      e.value = rng_.below(2);
      hasTyped_ = true;
      return add(e);
    }
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

  CType randomType() { return static_cast<CType>(rng_.below(kNumCTypes)); }
  int tadd(TExpr e) {
    tpool_.push_back(e);
    return static_cast<int>(tpool_.size() - 1);
  }
  int tleaf(int depth) {
    // FromU32, Const, Var, Pair, Load64, OwnO64, OwnO8 by weight (the arrays are the kernel's:
    // not in helpers; the own elements differ between threads: not in uniform expressions).
    const bool arrays = wide_ && !inHelper_, own = arrays && !uniform_;
    std::array<uint32_t, 7> w = {3, 2, declaredTVars_ > 0 && !inHelper_ && !uniform_ ? 3u : 0u, 1, arrays ? 2u : 0u,
                                 own ? 1u : 0u, own ? 1u : 0u};
    TExpr e;
    switch (rng_.weighted(w)) {
      case 4: e.kind = TExprKind::Load64; e.type = CType::S64; e.a = expr(depth - 1); break;
      case 5: e.kind = TExprKind::OwnO64; e.type = t64_; break;
      case 6: e.kind = TExprKind::OwnO8; e.type = t8_; break;
      case 0: e.kind = TExprKind::FromU32; e.type = randomType(); e.a = expr(depth - 1); break;
      case 2:
        e.kind = TExprKind::Var;
        e.value = rng_.below(static_cast<uint32_t>(declaredTVars_));
        e.type = tvType_[e.value];
        break;
      case 3:
        e.kind = TExprKind::Pair;
        e.type = CType::U64;
        e.a = expr(depth - 1);
        e.b = expr(depth - 1);
        break;
      default: {
        e.kind = TExprKind::Const;
        e.type = randomType();
        // Small values, the edges of the types (-1, the minima and maxima), any 64 bits.
        static constexpr uint64_t kEdges[] = {~uint64_t{0}, 0x7fu, 0x80u, 0xffu, 0x7fffu, 0x8000u, 0xffffu,
                                              0x7fffffffu, 0x80000000u, 0xffffffffu, 0x7fffffffffffffffu,
                                              0x8000000000000000u};
        uint64_t v = rng_.chance(p_.smallConstProb) ? rng_.below(17)
                     : rng_.chance(0.5)             ? kEdges[rng_.below(static_cast<uint32_t>(std::size(kEdges)))]
                                                    : rng_.next();
        e.value = canonical(e.type, v);
        break;
      }
    }
    return tadd(e);
  }
  int texpr(int depth) {
    if (depth <= 0 || rng_.chance(p_.leafProb)) return tleaf(depth);
    TExpr e;
    e.kind = TExprKind::Op;
    e.op = static_cast<TypedOp>(rng_.below(static_cast<uint32_t>(std::size(kTypedOps))));
    int arity = kTypedOps[static_cast<int>(e.op)].arity;
    e.a = texpr(depth - 1);
    if (arity > 1) e.b = texpr(depth - 1);
    if (arity > 2) e.c = texpr(depth - 1);
    auto ty = [&](int i) { return i >= 0 ? tpool_[static_cast<size_t>(i)].type : CType::U32; };
    e.type = typedOpResult(e.op, ty(e.a), ty(e.b), ty(e.c), randomType());
    return tadd(e);
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
    std::array<uint32_t, 16> w = {p_.wAssign, p_.wStore, p_.wAtomic, nest ? p_.wIf : 0u, nest ? p_.wLoop : 0u,
                                  noReturn_ ? 0u : p_.wReturn, collective ? p_.wShared : 0u,
                                  collective ? p_.wSyncReduce : 0u, collective && blockX_ == 4 ? p_.wWarp : 0u,
                                  ntv_ > 0 ? p_.wTypedAssign : 0u, collective ? p_.wBarrierLoop : 0u,
                                  collective ? p_.wSharedAtomic : 0u, inSharedRegion_ ? p_.wAtomic + 1 : 0u,
                                  p_.wFence, wide_ ? p_.wWideStore : 0u, wide_ ? p_.wAtomic64 : 0u};
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
      case StmtKind::Atomic:
        s.id = rng_.below(kCudaAccWords);
        if (!takesConstant(atomicOfWord_[s.id])) s.e = expr(ed);
        hasAtomic_ = true;
        break;
      case StmtKind::Fence: s.id = rng_.below(collective && blockX_ == 4 ? 4 : 3); break;
      case StmtKind::WideStore:  // id 0: o64[g], 1: o8[g]
        s.id = rng_.below(2);
        s.e = texpr(ed);
        hasWideStore_ = true;
        break;
      case StmtKind::Atomic64:
        s.id = rng_.below(kCudaQElems);
        if (qKind_[s.id] != Atomic64Kind::Exch) s.e = texpr(ed);
        hasAtomic64_ = true;
        break;
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
      case StmtKind::TypedAssign:
        s.id = rng_.below(static_cast<uint32_t>(ntv_));
        s.e = texpr(ed);
        hasTyped_ = true;
        break;
      case StmtKind::BarrierLoop: {
        s.id = loops_++;
        uniform_ = true;
        s.e = expr(ed);  // the bound: uniform across the CTA, so every thread meets every barrier
        uniform_ = false;
        s.var = pickVar();
        s.off = rng_.below(blockX_);
        s.doubleBuffer = rng_.chance(0.5);
        loopScope_.push_back(s.id);
        bool saved = noReturn_;
        noReturn_ = true;
        s.body = block(depth + 1);
        noReturn_ = saved;
        s.e2 = expr(ed);  // the value each thread publishes this trip
        loopScope_.pop_back();
        (s.doubleBuffer ? usesDouble_ : usesShared_) = true;
        hasBarrierLoop_ = true;
        break;
      }
      case StmtKind::SharedAtomics: {
        s.var = pickVar();
        s.id = rng_.below(kSharedAtomicWords);
        bool savedReturn = noReturn_, savedRegion = inSharedRegion_;
        noReturn_ = inSharedRegion_ = true;
        s.body = block(depth + 1);
        s.body.push_back(sharedAtomic());  // at least one
        noReturn_ = savedReturn;
        inSharedRegion_ = savedRegion;
        usesSharedAtomic_ = hasSharedAtomic_ = true;
        break;
      }
      case StmtKind::SharedAtomic: s = sharedAtomic(); break;
    }
    return s;
  }
  Stmt sharedAtomic() {
    Stmt s;
    s.kind = StmtKind::SharedAtomic;
    s.id = rng_.below(kSharedAtomicWords);
    s.e = saKind_[s.id] == SharedAtomicKind::Exch ? saExch_[s.id] : expr(p_.maxExprDepth);
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
        if (h.table) {
          const uint32_t base = eval(h.e1, t, a, b, c);
          auto element = [&](uint32_t i) { return base + i * b; };  // t[i], wrapping
          return element(eval(h.e2, t, a, b, c) & 3u) ^ element(b & 3u);
        }
        if (h.cond >= 0 && eval(h.cond, t, a, b, c) == 0) return eval(h.e2, t, a, b, c);
        return eval(h.e1, t, a, b, c);
      }
      case ExprKind::Typed: {
        uint64_t v = teval(e.a, t, argA, argB, c).bits;  // canonical: the value as unsigned long long
        return static_cast<uint32_t>(e.value == 0 ? v : v >> 32);
      }
    }
    return 0;
  }
  CValue teval(int i, const Thread& t, uint32_t argA, uint32_t argB, const CudaCase& c) const {
    const TExpr& e = tpool_[static_cast<size_t>(i)];
    switch (e.kind) {
      case TExprKind::FromU32: return {e.type, canonical(e.type, eval(e.a, t, argA, argB, c))};
      case TExprKind::Const: return {e.type, e.value};
      case TExprKind::Var: return {e.type, t.wvars[e.value]};
      case TExprKind::Pair:
        return {CType::U64, (uint64_t{eval(e.a, t, argA, argB, c)} << 32) | eval(e.b, t, argA, argB, c)};
      case TExprKind::Load64: return {CType::S64, c.in64[eval(e.a, t, argA, argB, c) & 3u]};
      case TExprKind::OwnO64: return {e.type, t.o64};
      case TExprKind::OwnO8: return {e.type, t.o8};
      case TExprKind::Op: {
        CValue a = teval(e.a, t, argA, argB, c);
        CValue b = e.b >= 0 ? teval(e.b, t, argA, argB, c) : CValue{};
        CValue cc = e.c >= 0 ? teval(e.c, t, argA, argB, c) : CValue{};
        bool ub = false;
        CValue r = evalTypedOp(e.op, a, b, cc, e.type, twrap_[static_cast<size_t>(i)] != 0, &ub);
        if (ub) tub_[static_cast<size_t>(i)] = 1;
        return r;
      }
    }
    return {};
  }

  struct World {
    CudaCase* c;
    std::vector<uint32_t> out;
    std::array<uint32_t, kCudaAccWords> acc;
    std::array<uint32_t, kSharedAtomicWords> sa{};  // the CTA's sa[] during a shared-atomic region
    std::array<uint64_t, kCudaQElems> q{};
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
        uint32_t v = s.e >= 0 ? ev(s.e) : accArg_[s.id];
        w.acc[s.id] = evalCudaAtomic(atomicOfWord_[s.id], w.acc[s.id], v, accCmp_[s.id]);
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
      case StmtKind::TypedAssign: {
        CType ty = tvType_[s.id];
        t.wvars[s.id] = canonical(ty, teval(s.e, t, 0, 0, c).bits);
        break;
      }
      case StmtKind::WideStore: {
        uint64_t v = teval(s.e, t, 0, 0, c).bits;
        if (s.id == 0) t.o64 = canonical(t64_, v);
        else t.o8 = canonical(t8_, v);
        break;
      }
      case StmtKind::Atomic64: {
        uint64_t& q = w.q[s.id];
        uint64_t v = s.e >= 0 ? teval(s.e, t, 0, 0, c).bits : qExch_[s.id];  // canonical: as unsigned long long
        switch (qKind_[s.id]) {
          case Atomic64Kind::Add: q += v; break;
          case Atomic64Kind::And: q &= v; break;
          case Atomic64Kind::Or: q |= v; break;
          case Atomic64Kind::Xor: q ^= v; break;
          case Atomic64Kind::Exch: q = v; break;
        }
        break;
      }
      case StmtKind::SharedAtomic: {
        uint32_t v = ev(s.e);
        uint32_t& a = w.sa[s.id];
        switch (saKind_[s.id]) {
          case SharedAtomicKind::Add: a += v; break;
          case SharedAtomicKind::Or: a |= v; break;
          case SharedAtomicKind::Xor: a ^= v; break;
          case SharedAtomicKind::And: a &= v; break;
          case SharedAtomicKind::MinU: a = std::min(a, v); break;
          case SharedAtomicKind::MaxU: a = std::max(a, v); break;
          case SharedAtomicKind::MinS: a = static_cast<uint32_t>(std::min(s32(a), s32(v))); break;
          case SharedAtomicKind::MaxS: a = static_cast<uint32_t>(std::max(s32(a), s32(v))); break;
          case SharedAtomicKind::Exch: a = v; break;
        }
        break;
      }
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
      case StmtKind::BarrierLoop: {
        // The bound is uniform (no variable, counter or threadIdx.x), so thread 0's is every thread's.
        const uint32_t trips = eval(s.e, ts[0], 0, 0, c) % (p_.maxTrips + 1);
        for (uint32_t u = 0; u < trips; ++u) {
          std::vector<uint32_t> sh(c.blockX);
          for (auto& t : ts) {
            t.loops[s.id] = u;
            for (const Stmt& b : s.body) exec(b, t, w);  // no return inside
            sh[t.tid] = eval(s.e2, t, 0, 0, c);
          }
          for (auto& t : ts) t.vars[static_cast<size_t>(s.var)] = sh[(t.tid + u + s.off) % c.blockX];
        }
        return;
      }
      case StmtKind::SharedAtomics: {
        // One thread after another is exact: the atomics of a word all have its one op, which
        // commutes (Exch writes the word's one value), and nothing reads sa[] before the barrier.
        w.sa = saInit_;
        for (auto& t : ts)
          for (const Stmt& b : s.body) exec(b, t, w);  // no return inside
        for (auto& t : ts) t.vars[static_cast<size_t>(s.var)] = w.sa[(t.tid + s.id) % kSharedAtomicWords];
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
    w.q = c.qInit;
    const uint32_t threads = c.gridX * c.blockX;
    c.expectO64.assign(wide_ ? threads : 0, 0);
    c.expectO8.assign(wide_ ? threads : 0, 0);
    for (uint32_t cta = 0; cta < c.gridX; ++cta) {
      std::vector<Thread> ts(c.blockX);
      for (uint32_t i = 0; i < c.blockX; ++i) {
        Thread& t = ts[i];
        t.tid = i;
        t.ctaid = cta;
        t.vars.assign(static_cast<size_t>(nvars_), 0);
        t.loops.assign(loops_, 0);
        for (int v = 0; v < nvars_; ++v) t.vars[static_cast<size_t>(v)] = eval(varInit_[static_cast<size_t>(v)], t, 0, 0, c);
        t.wvars.assign(static_cast<size_t>(ntv_), 0);
        for (int j = 0; j < ntv_; ++j)
          t.wvars[static_cast<size_t>(j)] =
              canonical(tvType_[static_cast<size_t>(j)], teval(tvInit_[static_cast<size_t>(j)], t, 0, 0, c).bits);
      }
      for (const Stmt& s : top_) execTop(s, ts, w);
      if (wide_)  // every thread's own elements, returned threads' too
        for (auto& t : ts) {
          c.expectO64[t.ctaid * c.blockX + t.tid] = t.o64;
          c.expectO8[t.ctaid * c.blockX + t.tid] = t.o8;
        }
      // The sink the printer ends the kernel with: out[o] ^= v0 + v1 + ...
      for (auto& t : ts) {
        if (t.returned) continue;
        uint32_t sum = 0;
        for (uint32_t v : t.vars) sum += v;
        for (int j = 0; j < ntv_; ++j) {
          uint64_t v = t.wvars[static_cast<size_t>(j)];
          sum += static_cast<uint32_t>(v);
          if (ctypeInfo(tvType_[static_cast<size_t>(j)]).bits == 64) sum += static_cast<uint32_t>(v >> 32);
        }
        w.out[(t.ctaid * c.blockX + t.tid) * c.slots] ^= sum;
      }
    }
    c.expectOut = w.out;
    c.expectAcc = w.acc;
    c.expectQ = w.q;
  }

  // ---- Printing ----
  static std::string literal(uint32_t v) {
    if (v <= 16) return std::to_string(v) + "u";
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08xu", v);
    return buf;
  }
  std::string printExpr(int i) const {
    const Expr& e = pool_[static_cast<size_t>(i)];
    switch (e.kind) {
      case ExprKind::Const: return literal(e.value);
      case ExprKind::Var: return "v" + std::to_string(e.value);
      case ExprKind::LoopVar: return "i" + std::to_string(e.value);
      case ExprKind::Arg: return e.value == 0 ? "a" : "b";
      case ExprKind::Special: return kSpecialNames[e.value];
      case ExprKind::Load: return "in[" + printExpr(e.a) + " & 15u]";
      case ExprKind::Call:
        return name_ + "_h" + std::to_string(e.value) + "(" + printExpr(e.a) + ", " + printExpr(e.b) + ")";
      case ExprKind::Typed:
        if (e.value == 0) return "((unsigned)" + printTExpr(e.a) + ")";
        return "((unsigned)((unsigned long long)" + printTExpr(e.a) + " >> 32))";
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

  static std::string cast(CType t) { return std::string("(") + ctypeInfo(t).spelling + ")"; }
  std::string printTExpr(int i) const {
    const TExpr& e = tpool_[static_cast<size_t>(i)];
    switch (e.kind) {
      case TExprKind::FromU32: return "(" + cast(e.type) + "(" + printExpr(e.a) + "))";
      case TExprKind::Var: return "w" + std::to_string(e.value);
      case TExprKind::Load64: return "in64[" + printExpr(e.a) + " & 3u]";
      case TExprKind::OwnO64: return "o64[g]";
      case TExprKind::OwnO8: return "o8[g]";
      case TExprKind::Pair:
        return "(((unsigned long long)(" + printExpr(e.a) + ") << 32) | (" + printExpr(e.b) + "))";
      case TExprKind::Const: {
        const CTypeInfo& ti = ctypeInfo(e.type);
        uint64_t v = ti.bits == 64 ? e.value : e.value & ((uint64_t{1} << ti.bits) - 1);
        char buf[32];
        if (v <= 16) std::snprintf(buf, sizeof buf, "%llu%s", static_cast<unsigned long long>(v), ti.bits == 64 ? "ull" : "u");
        else std::snprintf(buf, sizeof buf, "0x%llx%s", static_cast<unsigned long long>(v), ti.bits == 64 ? "ull" : "u");
        return "(" + cast(e.type) + buf + ")";
      }
      case TExprKind::Op: break;
    }
    const TypedOpInfo& info = kTypedOps[static_cast<int>(e.op)];
    const bool wrap = twrap_.size() > static_cast<size_t>(i) && twrap_[static_cast<size_t>(i)];
    std::string a = printTExpr(e.a), b = e.b >= 0 ? printTExpr(e.b) : "", c = e.c >= 0 ? printTExpr(e.c) : "";
    std::string op = info.spelling;
    const CType r = e.type;
    const std::string ur = cast(unsignedOf(r));
    switch (e.op) {
      case TypedOp::Add: case TypedOp::Sub: case TypedOp::Mul:
        if (wrap) return "(" + cast(r) + "(" + ur + a + " " + op + " " + ur + b + "))";
        return "(" + a + " " + op + " " + b + ")";
      case TypedOp::And: case TypedOp::Or: case TypedOp::Xor: return "(" + a + " " + op + " " + b + ")";
      case TypedOp::Div: case TypedOp::Rem:
        if (ctypeInfo(r).isSigned) return "(" + a + " " + op + " ((" + b + " & 255) | 1))";
        return "(" + a + " " + op + " (" + b + " | 1))";
      case TypedOp::Shl: case TypedOp::Shr: {
        std::string amount = "(" + b + " & " + std::to_string(ctypeInfo(r).bits - 1) + ")";
        if (wrap) return "(" + cast(r) + "(" + ur + a + " << " + amount + "))";
        return "(" + a + " " + op + " " + amount + ")";
      }
      case TypedOp::Lt: case TypedOp::Le: case TypedOp::Gt: case TypedOp::Ge: case TypedOp::Eq: case TypedOp::Ne:
        return "((int)(" + a + " " + op + " " + b + "))";
      case TypedOp::Not: return "(~" + a + ")";
      case TypedOp::Neg:
        if (wrap) return "(" + cast(r) + "(0u - " + ur + a + "))";
        return "(-" + a + ")";
      case TypedOp::Cast: return "(" + cast(r) + a + ")";
      case TypedOp::Select: return "(" + a + " ? " + b + " : " + c + ")";
      case TypedOp::UMul64Hi: case TypedOp::Mul64Hi: case TypedOp::LlMin: case TypedOp::LlMax:
      case TypedOp::UllMin: case TypedOp::UllMax: {
        std::string t = cast(r);
        return op + "(" + t + "(" + a + "), " + t + "(" + b + "))";
      }
      case TypedOp::Popcll: case TypedOp::Brevll: return op + "((unsigned long long)(" + a + "))";
      case TypedOp::Clzll: case TypedOp::Ffsll: return op + "((long long)(" + a + "))";
      case TypedOp::Llabs: return op + "(((long long)(" + a + ") | 1ll))";
    }
    return a;
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
      case StmtKind::Atomic: {
        AtomicKind k = atomicOfWord_[s.id];
        const CudaAtomicInfo& info = kAtomics[static_cast<int>(k)];
        bool sgn = *info.cast != 0;
        std::string word = std::string(sgn ? "(int*)" : "") + "&acc[" + std::to_string(s.id) + "]";
        std::string val = s.e >= 0 ? (sgn ? "(int)" : "") + printExpr(s.e) : literal(accArg_[s.id]);
        if (k == AtomicKind::Cas) val = literal(accCmp_[s.id]) + ", " + val;
        o += pad + info.function + std::string("(") + word + ", " + val + ");\n";
        break;
      }
      case StmtKind::Fence: o += pad + kFenceNames[s.id] + ";\n"; break;
      case StmtKind::WideStore:
        o += pad + (s.id == 0 ? "o64[g] = " + cast(t64_) : "o8[g] = " + cast(t8_)) + "(" + printTExpr(s.e) + ");\n";
        break;
      case StmtKind::Atomic64: {
        std::string val;
        if (s.e >= 0) {
          val = "(unsigned long long)(" + printTExpr(s.e) + ")";
        } else {
          char buf[32];
          std::snprintf(buf, sizeof buf, "0x%llxull", static_cast<unsigned long long>(qExch_[s.id]));
          val = buf;
        }
        o += pad + kAtomic64Names[static_cast<int>(qKind_[s.id])] + std::string("(&q[") + std::to_string(s.id) +
             "], " + val + ");\n";
        break;
      }
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
      case StmtKind::TypedAssign: o += pad + "w" + std::to_string(s.id) + " = " + printTExpr(s.e) + ";\n"; break;
      case StmtKind::BarrierLoop: {
        std::string i = "i" + std::to_string(s.id), b = std::to_string(blockX_) + "u";
        o += pad + "for (unsigned " + i + " = 0; " + i + " < " + printExpr(s.e) + " % " +
             std::to_string(p_.maxTrips + 1) + "u; ++" + i + ") {\n";
        for (const Stmt& st : s.body) printStmt(st, indent + 1, o);
        std::string in = pad + "  ", other = "(threadIdx.x + " + i + " + " + std::to_string(s.off) + "u) % " + b;
        if (s.doubleBuffer) {
          std::string half = "(" + i + " & 1u) * " + b;
          o += in + "sb[" + half + " + threadIdx.x] = " + printExpr(s.e2) + ";\n" + in + "__syncthreads();\n" + in + v +
               " = sb[" + half + " + " + other + "];\n" + pad + "}\n" + pad + "__syncthreads();\n";
        } else {
          o += in + "sh[threadIdx.x] = " + printExpr(s.e2) + ";\n" + in + "__syncthreads();\n" + in + v + " = sh[" +
               other + "];\n" + in + "__syncthreads();\n" + pad + "}\n";
        }
        break;
      }
      case StmtKind::SharedAtomics: {
        o += pad + "if (threadIdx.x == 0u) {";
        for (uint32_t j = 0; j < kSharedAtomicWords; ++j) o += " sa[" + std::to_string(j) + "] = " + std::to_string(saInit_[j]) + "u;";
        o += " }\n" + pad + "__syncthreads();\n";
        for (const Stmt& st : s.body) printStmt(st, indent, o);
        o += pad + "__syncthreads();\n" + pad + v + " = sa[(threadIdx.x + " + std::to_string(s.id) + "u) % " +
             std::to_string(kSharedAtomicWords) + "u];\n" + pad + "__syncthreads();\n";
        break;
      }
      case StmtKind::SharedAtomic: {
        static const char* const kFn[] = {"atomicAdd", "atomicOr", "atomicXor", "atomicAnd", "atomicMin",
                                          "atomicMax", "atomicMin", "atomicMax", "atomicExch"};
        SharedAtomicKind k = saKind_[s.id];
        std::string word = "&sa[" + std::to_string(s.id) + "]", val = printExpr(s.e);
        if (k == SharedAtomicKind::MinS || k == SharedAtomicKind::MaxS) word = "(int*)" + word, val = "(int)" + val;
        o += pad + kFn[static_cast<int>(k)] + "(" + word + ", " + val + ");\n";
        break;
      }
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
    std::vector<uint32_t> in64w, qw, qe, o64e, o8e;
    if (c.wide) {
      auto split = [](const auto& xs, std::vector<uint32_t>& out) {
        for (uint64_t x : xs) out.push_back(static_cast<uint32_t>(x)), out.push_back(static_cast<uint32_t>(x >> 32));
      };
      split(c.in64, in64w);
      split(c.qInit, qw);
      split(c.expectQ, qe);
      split(c.expectO64, o64e);
      auto g = c.expectedGlobal();
      o8e.assign(g.begin() + c.o8Word(), g.begin() + c.o8Word() + c.o8Words());
      o += "// param: in64 in u32[" + std::to_string(in64w.size()) + "] = " + words(in64w.begin(), in64w.end()) + "\n";
      o += "// param: q inout u32[" + std::to_string(qw.size()) + "] = " + words(qw.begin(), qw.end()) + "\n";
      o += "// param: o64 out u32[" + std::to_string(o64e.size()) + "]\n";
      o += "// param: o8 out u32[" + std::to_string(o8e.size()) + "]\n";
    }
    o += "// param: k scalar u32 = " + std::to_string(c.k) + "\n";
    o += "// expect: out = " + words(c.expectOut.begin(), c.expectOut.end()) + "\n";
    o += "// expect: acc = " + words(c.expectAcc.begin(), c.expectAcc.end()) + "\n";
    if (c.wide) {
      o += "// expect: q = " + words(qe.begin(), qe.end()) + "\n";
      o += "// expect: o64 = " + words(o64e.begin(), o64e.end()) + "\n";
      o += "// expect: o8 = " + words(o8e.begin(), o8e.end()) + "\n";
    }
    o += "// tags: random\n";
    o += "// note: " + c.header + "\n\n";
    for (size_t j = 0; j < helpers_.size(); ++j) {
      const Helper& h = helpers_[j];
      o += std::string("__device__ ") + (h.noinline ? "__noinline__ " : h.forceinline ? "__forceinline__ " : "") +
           "unsigned " + c.name + "_h" +
           std::to_string(j) + "(unsigned a, unsigned b) {\n";
      if (h.table)
        o += "  unsigned t[4];\n  for (unsigned i = 0; i < 4u; ++i) t[i] = (" + printExpr(h.e1) +
             ") + i * b;\n  return t[(" + printExpr(h.e2) + ") & 3u] ^ t[b & 3u];\n";
      else if (h.cond >= 0) o += "  if (" + printExpr(h.cond) + ") return " + printExpr(h.e1) + ";\n  return " + printExpr(h.e2) + ";\n";
      else o += "  return " + printExpr(h.e1) + ";\n";
      o += "}\n\n";
    }
    o += "__global__ void " + (launchBounds_ ? "__launch_bounds__(" + std::to_string(blockX_) + ") " : std::string()) +
         c.name + "(const unsigned* in, unsigned* out, unsigned* acc, " +
         (c.wide ? std::string("const long long* in64, unsigned long long* q, ") + ctypeInfo(t64_).spelling + "* o64, " +
                       ctypeInfo(t8_).spelling + "* o8, "
                 : std::string()) +
         "unsigned k) {\n";
    if (usesShared_) o += "  __shared__ unsigned sh[" + std::to_string(blockX_) + "];\n";
    if (usesDouble_) o += "  __shared__ unsigned sb[" + std::to_string(2 * blockX_) + "];\n";
    if (usesSharedAtomic_) o += "  __shared__ unsigned sa[" + std::to_string(kSharedAtomicWords) + "];\n";
    o += "  unsigned o = (blockIdx.x * blockDim.x + threadIdx.x) * " + std::to_string(slots_) + "u;\n";
    if (c.wide) o += "  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;\n";
    for (int v = 0; v < nvars_; ++v)
      o += "  unsigned v" + std::to_string(v) + " = " + printExpr(varInit_[static_cast<size_t>(v)]) + ";\n";
    for (int j = 0; j < ntv_; ++j)
      o += std::string("  ") + ctypeInfo(tvType_[static_cast<size_t>(j)]).spelling + " w" + std::to_string(j) + " = " +
           printTExpr(tvInit_[static_cast<size_t>(j)]) + ";\n";
    for (const Stmt& s : top_) printStmt(s, 1, o);
    // Every variable reaches memory (otherwise the compilers drop most of the kernel).
    o += "  out[o] ^= " + std::string(nvars_ > 0 ? "v0" : "0u");
    for (int v = 1; v < nvars_; ++v) o += " + v" + std::to_string(v);
    for (int j = 0; j < ntv_; ++j) {
      std::string w = "w" + std::to_string(j);
      o += " + (unsigned)" + w;
      if (ctypeInfo(tvType_[static_cast<size_t>(j)]).bits == 64) o += " + (unsigned)((unsigned long long)" + w + " >> 32)";
    }
    o += ";\n}\n";
    return o;
  }
  std::string name_;
};

}  // namespace

namespace {
// One row per name of kernels/qgpu_cuda.h (the test reads the header and holds this table to it).
constexpr const char* kVectorWhy = "a vector type's constructor: vector arrays are not parameters of the generated kernel";
constexpr const char* kQgpuOnly = "a qgpu extension nvcc's headers lack: the same .cu must compile under both";
constexpr DialectName kDialect[] = {
    {"__global__", true, "the kernel"},
    {"__device__", true, "the helpers"},
    {"__shared__", true, "sh, sb, sa"},
    {"__noinline__", true, "helpers (noinlineProb)"},
    {"__forceinline__", true, "helpers (forceinlineProb)"},
    {"__launch_bounds__", true, "the kernel (launchBoundsProb)"},
    {"__host__", false, "host code: the generator writes device code only"},
    {"__constant__", false, "a module .const variable: its use is refused by the PTX front end"},
    {"threadIdx", true, "leaves"}, {"blockIdx", true, "leaves"}, {"blockDim", true, "leaves"},
    {"gridDim", true, "leaves"},
    {"warpSize", false, "4 on the machine, 32 on a GPU: the expectation would depend on the leg"},
    {"__qgpu_warp_size", false, "warpSize's implementation"},
    {"__syncthreads", true, "shared exchanges, barrier loops, shared atomics"},
    {"__syncthreads_count", true, "SyncReduce"}, {"__syncthreads_and", true, "SyncReduce"},
    {"__syncthreads_or", true, "SyncReduce"},
    {"__syncwarp", true, "Fence, top level in a block of 4 (mask 0xf)"},
    {"__threadfence_block", true, "Fence"}, {"__threadfence", true, "Fence"},
    {"__threadfence_system", true, "Fence"},
    {"atomicAdd", true, "acc, sa"}, {"atomicSub", true, "acc"}, {"atomicExch", true, "acc (constant), sa"},
    {"atomicMin", true, "acc, sa (unsigned and int)"}, {"atomicMax", true, "acc, sa (unsigned and int)"},
    {"atomicInc", true, "acc (constant bound)"}, {"atomicDec", true, "acc (constant bound)"},
    {"atomicCAS", true, "acc (constant compare and value)"}, {"atomicAnd", true, "acc, sa"},
    {"atomicOr", true, "acc, sa"}, {"atomicXor", true, "acc, sa"},
    {"__shfl_sync", true, "Warp"}, {"__shfl_up_sync", true, "Warp"}, {"__shfl_down_sync", true, "Warp"},
    {"__shfl_xor_sync", true, "Warp"}, {"__ballot_sync", true, "Warp"}, {"__any_sync", true, "Warp"},
    {"__all_sync", true, "Warp"},
    {"__activemask", false, "which lanes are active is not defined by CUDA (no convergence guarantee)"},
    {"__popc", true, "Popc"}, {"__clz", true, "Clz"}, {"__ffs", true, "Ffs"}, {"__brev", true, "Brev"},
    {"__byte_perm", true, "BytePerm"}, {"__umulhi", true, "UMulHi"}, {"__mulhi", true, "MulHi"},
    {"__umul64hi", true, "typed UMul64Hi"}, {"__mul64hi", true, "typed Mul64Hi"},
    {"__popcll", true, "typed Popcll"}, {"__clzll", true, "typed Clzll"}, {"__ffsll", true, "typed Ffsll"},
    {"__brevll", true, "typed Brevll"}, {"llmin", true, "typed LlMin"}, {"llmax", true, "typed LlMax"},
    {"ullmin", true, "typed UllMin"}, {"ullmax", true, "typed UllMax"}, {"llabs", true, "typed Llabs"},
    {"__umul24", true, "UMul24"}, {"__mul24", true, "Mul24"}, {"__usad", true, "USad"}, {"__sad", true, "Sad"},
    {"min", true, "MinU, MinS, MinMixed"}, {"max", true, "MaxU, MaxS, MaxMixed"}, {"abs", true, "Abs"},
    {"umin", true, "UMinFn"}, {"umax", true, "UMaxFn"},
    {"__qgpu_laneid", false, kQgpuOnly},
    {"__qgpu_lanemask_eq", false, kQgpuOnly}, {"__qgpu_lanemask_lt", false, kQgpuOnly},
    {"__qgpu_lanemask_le", false, kQgpuOnly}, {"__qgpu_lanemask_gt", false, kQgpuOnly},
    {"__qgpu_lanemask_ge", false, kQgpuOnly},
    {"make_char2", false, kVectorWhy}, {"make_char4", false, kVectorWhy}, {"make_uchar2", false, kVectorWhy},
    {"make_uchar4", false, kVectorWhy}, {"make_short2", false, kVectorWhy}, {"make_short4", false, kVectorWhy},
    {"make_ushort2", false, kVectorWhy}, {"make_ushort4", false, kVectorWhy}, {"make_int2", false, kVectorWhy},
    {"make_int4", false, kVectorWhy}, {"make_uint2", false, kVectorWhy}, {"make_uint4", false, kVectorWhy},
};
}  // namespace

std::span<const DialectName> cudaDialectCoverage() { return kDialect; }

std::span<const CudaOpInfo> cudaOpTable() { return kOps; }
std::span<const CudaAtomicInfo> cudaAtomicTable() { return kAtomics; }

uint32_t evalCudaAtomic(CudaAtomic op, uint32_t a, uint32_t v, uint32_t cmp) {
  switch (op) {
    case CudaAtomic::Add: return a + v;
    case CudaAtomic::Min: return std::min(a, v);
    case CudaAtomic::Max: return std::max(a, v);
    case CudaAtomic::Or: return a | v;
    case CudaAtomic::And: return a & v;
    case CudaAtomic::Xor: return a ^ v;
    case CudaAtomic::Sub: return a - v;
    case CudaAtomic::MinS: return static_cast<uint32_t>(std::min(s32(a), s32(v)));
    case CudaAtomic::MaxS: return static_cast<uint32_t>(std::max(s32(a), s32(v)));
    case CudaAtomic::Inc: return a >= v ? 0u : a + 1u;          // CUDA's atomicInc
    case CudaAtomic::Dec: return a == 0 || a > v ? v : a - 1u;  // CUDA's atomicDec
    case CudaAtomic::Exch: return v;
    case CudaAtomic::Cas: return a == cmp ? v : a;
  }
  return a;
}
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
    case CudaOp::UMinFn: return std::min(a, b);
    case CudaOp::UMaxFn: return std::max(a, b);
    // min(int, unsigned) / max(unsigned, int): CUDA's mixed overloads compare as unsigned.
    case CudaOp::MinMixed: return std::min(a, b);
    case CudaOp::MaxMixed: return std::max(a, b);
  }
  return 0;
}

namespace {
void put64(std::array<uint32_t, 126>& g, uint32_t word, uint64_t v) {
  g[word] = static_cast<uint32_t>(v);
  g[word + 1] = static_cast<uint32_t>(v >> 32);
}
}  // namespace

uint32_t CudaCase::o8Words() const {
  return (static_cast<uint32_t>(expectO8.size()) * static_cast<uint32_t>(ctypeInfo(t8).bits / 8) + 3) / 4;
}
uint32_t CudaCase::endWord() const { return wide ? o8Word() + o8Words() : accWord() + kCudaAccWords; }

std::array<uint32_t, 126> CudaCase::initialGlobal() const {
  std::array<uint32_t, 126> g{};
  std::copy(in.begin(), in.end(), g.begin());
  std::copy(accInit.begin(), accInit.end(), g.begin() + accWord());
  if (wide) {
    for (uint32_t j = 0; j < kCudaIn64Elems; ++j) put64(g, in64Word() + 2 * j, in64[j]);
    for (uint32_t j = 0; j < kCudaQElems; ++j) put64(g, qWord() + 2 * j, qInit[j]);
  }
  return g;
}
std::array<uint32_t, 126> CudaCase::expectedGlobal() const {
  std::array<uint32_t, 126> g = initialGlobal();
  std::copy(expectOut.begin(), expectOut.end(), g.begin() + outWord());
  std::copy(expectAcc.begin(), expectAcc.end(), g.begin() + accWord());
  if (wide) {
    for (uint32_t j = 0; j < kCudaQElems; ++j) put64(g, qWord() + 2 * j, expectQ[j]);
    for (size_t j = 0; j < expectO64.size(); ++j) put64(g, o64Word() + 2 * static_cast<uint32_t>(j), expectO64[j]);
    // o8: element j is bytes [j*size, (j+1)*size) from the array's start, little-endian.
    const uint32_t size = static_cast<uint32_t>(ctypeInfo(t8).bits / 8);
    for (size_t j = 0; j < expectO8.size(); ++j)
      for (uint32_t b = 0; b < size; ++b) {
        uint32_t byte = static_cast<uint32_t>(j) * size + b;
        uint32_t& word = g[o8Word() + byte / 4];
        word |= static_cast<uint32_t>((expectO8[j] >> (8 * b)) & 0xffu) << (8 * (byte % 4));
      }
  }
  return g;
}
std::vector<uint32_t> CudaCase::params() const {
  if (!wide) return {0u, 4 * outWord(), 4 * accWord(), k};
  return {0u, 4 * outWord(), 4 * accWord(), 4 * in64Word(), 4 * qWord(), 4 * o64Word(), 4 * o8Word(), k};
}

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
  if (p.maxTypedVars < 0 || p.maxTypedVars > 4) return bad("maxTypedVars must be 0..4");
  if (p.maxGrid * p.maxBlockX * p.maxSlots > 126 - kCudaInWords - kCudaAccWords)
    return bad("maxGrid * maxBlockX * maxSlots must be <= 102 (the out words)");
  for (double x : {p.noinlineProb, p.forceinlineProb, p.helperTableProb, p.launchBoundsProb, p.elseProb, p.leafProb, p.smallConstProb, p.warpBlockProb})
    if (!(x >= 0 && x <= 1)) return bad("probabilities must be in [0, 1]");
  if (uint64_t{p.wAssign} + p.wStore + p.wAtomic + p.wIf + p.wLoop + p.wReturn + p.wShared + p.wSyncReduce + p.wWarp +
          p.wTypedAssign + p.wBarrierLoop + p.wSharedAtomic + p.wFence ==
      0)
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
