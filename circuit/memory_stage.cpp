// qgpu/circuit/memory_stage.cpp — see memory_stage.h for the maths.
#include "circuit/memory_stage.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "circuit/assembler.h"
#include "circuit/logic.h"
#include "oracle/machine.h"
#include "oracle/semantics.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

constexpr int kMemoryWord = 32;
constexpr int kWordBits = kRecordWordBits;  // the word index a_2..a_8
constexpr int kLanes = kRecordLanes;

// clang-format off
enum Kind : int {
  kIsMem, kAcc4, kAcc2, kIsLoad, kIsStore, kIsB8, kIsB16, kIsAtom, kWrites,
  kIsAnd, kIsOr, kIsXor, kIsExch, kIsAdd,
  kIsMinU, kIsMaxU, kIsMinS, kIsMaxS, kIsMinMax, kIsInc, kIsCas, kIsDec, kIsMinMaxDec,
  kIsAddMinMaxDec, kIsSpill, kIsStl, kShared
};
// clang-format on
static_assert(kWrites == kMemoryKindWrites && kShared + 1 == kMemoryKinds);
constexpr int kMinMaxKinds[4] = {kIsMinU, kIsMaxU, kIsMinS, kIsMaxS};

// The op kinds (weights.h FieldKind) at whose positions alone a kind dim that guards units holds
// (UnitGuard::kinds); 0 for a dim no guard uses.
constexpr uint32_t guardKindsOf(int kind) {
  switch (kind) {
    case kIsAdd:
      return kKindAtomAdd;
    case kIsMinMax:
      return kKindAtomMinMax;
    case kIsInc:
      return kKindAtomInc;
    case kIsCas:
      return kKindAtomCas;
    case kIsDec:
      return kKindAtomDec;
    case kIsMinMaxDec:
      return kKindAtomMinMax | kKindAtomDec;
    case kIsAddMinMaxDec:
      return kKindAtomAdd | kKindAtomMinMax | kKindAtomDec;
    default:
      return 0;
  }
}
// The operand a lane without the pair's same-word literal contributes: add's and max.u's 0, min.u's
// 0xffffffff, min.s's 0x7fffffff, max.s's 0x80000000 (the identity of each).
bool identityBit(int kind, int i) {
  return kind == kIsMinU || (kind == kIsMinS && i < 31) || (kind == kIsMaxS && i == 31);
}

// The same-word pair (k, l), k < l, in the order of MemoryStage::same.
constexpr int pairIndex(int k, int l) { return l * (l - 1) / 2 + k; }
constexpr int kCmpBits = 8;  // a_2..a_9: the word index and one bit above (a nibble multiple)

// The spill slots' inputs: blockX ≤ 16 threads, warps 0..3.
constexpr int kBlockXBits = std::bit_width(static_cast<unsigned>(machine::kMaxThreadsPerBlock));
constexpr int kWarpBits = std::bit_width(static_cast<unsigned>(machine::kMaxWarps - 1));
// What holds a spill word's step pairs off where the op is no spill op: more than their S.
constexpr double kSpillGate = 256;
// The slot's products p_ij = s_i ∧ x_j of weight 2^{i+j} < 2^kWordBits, in order of j, then i.
struct SlotProduct {
  int i = 0, j = 0;
};
std::vector<SlotProduct> slotProducts() {
  std::vector<SlotProduct> p;
  for (int j = 0; j < kBlockXBits; ++j)
    for (int i = 0; i + j < kWordBits; ++i) p.push_back({i, j});
  return p;
}

// Adds weight·bit of the sign dim `dim` to f, in x̂ units (bit = (x̂ + 1)/2).
void addBitTerm(LinearForm& f, int dim, double weight) {
  f.terms.push_back({dim, weight / 2});
  f.constant += weight / 2;
}

// The head word's fields by their names in oracle/trace.cpp's table.
Expected<Field> memoryHeadField(const Field& head, const char* name, int width) {
  return packedSlice(head, trace::PackedWord::OpHead, name, width, "memory stage");
}

// The kind dims an op row sets, from isa.def's columns and accessBytes (the one definition).
std::vector<int> kindsOf(machine::Op op) {
  const machine::OpInfo& info = machine::opInfo(op);
  std::vector<int> k;
  if (info.cls == machine::OpClass::Local) {
    k = {kIsSpill, kShared};
    if (info.mem == machine::MemEffect::Read) k.push_back(kIsLoad);
    if (machine::writesMemory(op)) k.insert(k.end(), {kIsStl, kWrites});
    return k;
  }
  if (info.cls != machine::OpClass::Mem) return k;
  k.push_back(kIsMem);
  const int bytes = oracle::accessBytes(op);
  if (bytes == 4) k.push_back(kAcc4);
  if (bytes == 2) k.push_back(kAcc2);
  if (info.mem == machine::MemEffect::Read) k.push_back(kIsLoad);
  if (op == machine::Op::St) k.push_back(kIsStore);
  if (op == machine::Op::StB8) k.push_back(kIsB8);
  if (op == machine::Op::StB16) k.push_back(kIsB16);
  if (info.mem == machine::MemEffect::ReadWrite) k.push_back(kIsAtom);
  if (machine::writesMemory(op)) k.push_back(kWrites);
  if (op == machine::Op::AtomAnd) k.push_back(kIsAnd);
  if (op == machine::Op::AtomOr) k.push_back(kIsOr);
  if (op == machine::Op::AtomXor) k.push_back(kIsXor);
  if (op == machine::Op::AtomExch) k.push_back(kIsExch);
  if (op == machine::Op::AtomAdd) k.push_back(kIsAdd);
  if (op == machine::Op::AtomMinU) k.push_back(kIsMinU);
  if (op == machine::Op::AtomMaxU) k.push_back(kIsMaxU);
  if (op == machine::Op::AtomMinS) k.push_back(kIsMinS);
  if (op == machine::Op::AtomMaxS) k.push_back(kIsMaxS);
  const bool minMax = op == machine::Op::AtomMinU || op == machine::Op::AtomMaxU ||
                      op == machine::Op::AtomMinS || op == machine::Op::AtomMaxS;
  if (minMax) k.push_back(kIsMinMax);
  if (op == machine::Op::AtomInc) k.push_back(kIsInc);
  if (op == machine::Op::AtomCas) k.push_back(kIsCas);
  if (op == machine::Op::AtomDec) k.push_back(kIsDec);
  if (minMax || op == machine::Op::AtomDec) k.push_back(kIsMinMaxDec);
  if (minMax || op == machine::Op::AtomDec || op == machine::Op::AtomAdd)
    k.push_back(kIsAddMinMaxDec);
  return k;
}

// atom.dec's states for lane l: the word M − n after n earlier lanes (n = 0..l), then b_k − r,
// r lanes after lane k < l wrapped it (r = 0..l − k − 1), in that order.
struct DecWord {
  bool wrapped = false;
  int k = 0;  // the lane that wrapped it (wrapped)
  int n = 0;  // lanes so far (unwrapped) or lanes since the wrap (wrapped)
};
constexpr int decStates(int l) {
  return (l + 1) + l * (l + 1) / 2;
}
int decStateIndex(int l, DecWord w) {
  if (!w.wrapped) return w.n;
  int at = l + 1;
  for (int k = 0; k < w.k; ++k) at += l - k;
  return at + w.n;
}

// [x ≤ t] for a 32-bit sign field x and a small t ≤ 3, onto `out` (weight·u when true): one step
// pair on N = t − (4·Σ_{i≥2} x_i + 2x_1 + x_0) + 1 — any bit above 1 puts the sum over 3.
Status addAtMostSmall(UnitWriter& u, const MlpContext& ctx, const Field& x, int t, int out,
                      double weight = 2) {
  LinearForm n;  // in x̂ units: bit = (x̂ + 1)/2
  double weightSum = 0;
  for (int i = 0; i < x.dims; ++i) {
    const double wi = i >= 2 ? 4 : i == 1 ? 2 : 1;
    n.terms.push_back({x.at(i), -wi / 2});
    weightSum += wi;
  }
  n.constant = t - weightSum / 2 + 1;
  QGPU_TRY(rep, addStep(u, ctx, n, {{ctx.ballast.at(0), 1.0f}}, {{out, weight}}));
  (void)rep;
  return Ok{};
}

// [x = t] for a 32-bit sign field x and a small t ≤ 3, onto `out` (+2u when true; out holds −u
// before): [x ≤ t] − [x ≤ t − 1], two step pairs (one for t = 0).
Status addEqualsSmall(UnitWriter& u, const MlpContext& ctx, const Field& x, int t, int out) {
  QGPU_CHECK(addAtMostSmall(u, ctx, x, t, out, 2));
  if (t > 0) QGPU_CHECK(addAtMostSmall(u, ctx, x, t - 1, out, -2));
  return Ok{};
}

// +2u·([V ≥ θ] − [V ≥ K + θ]) onto `out`, V = v + constant (an integer, in x̂ units): for V = K·x +
// T with a bit x, T ≥ 0 and K > max T, that is x ⊕ [T ≥ θ] — one XOR of a bit and a threshold.
Status addXorSteps(UnitWriter& u, const MlpContext& ctx, const LinearForm& v, double constant,
                   double theta, double k, int out) {
  for (const double at : {theta, k + theta}) {
    LinearForm n = v;
    n.constant = constant - at + 1;
    QGPU_TRY(rep,
             addStep(u, ctx, n, {{ctx.ballast.at(0), 1.0f}}, {{out, at == theta ? 2.0 : -2.0}}));
    (void)rep;
  }
  return Ok{};
}

// How addSmallConstant combines m with its constant q.
enum class SmallOp : uint8_t { Add, Subtract };

// out = m + q or m − q mod 2^32 for a constant 1 ≤ q ≤ 4, in one layer (out's dims hold −u
// before: the caller's AndFieldWriter::start). Bit i of m + q is M'_i ⊕ c_i with M' = m ⊕ q and
// the carry c_i = [T_i ≥ θ_i]: for i < 3 T_i = m mod 2^i + q mod 2^i, θ_i = 2^i; for i ≥ 3 T_i =
// 4·Σ_{3≤j<i} m_j + m mod 8 + q, θ_i = 4(i − 3) + 8 — all of m_3..m_{i−1} set gives T_i = θ_i − 8
// + (m mod 8) + q, and one of them clear keeps T_i ≤ θ_i − 12 + 7 + q ≤ θ_i − 1 (q ≤ 4). The XOR
// in one threshold form: with V = K·M'_i + T_i and K = max T_i + 1, [V ≥ θ_i] − [V ≥ K + θ_i] is
// c_i when M'_i = 0 and 1 − c_i when it is 1. |V − θ| ≤ 244 (bit 31), inside the step pair's bf16
// range.
//   Subtract: m − q = ~(~m + q), so bit i is m_i ⊕ q_i ⊕ c_i with c_i the carry of ~m + q: the
// same form with T_i read from the complemented bits.
//   carryOut (Add; −1: none): +2u onto that dim when m + q ≥ 2^32 (T_32 ≥ θ_32, one step pair).
Status addSmallConstant(UnitWriter& u, const MlpContext& ctx, const Field& m, int q,
                        const Field& out, SmallOp op = SmallOp::Add, int carryOut = -1) {
  if (q < 1 || q > 4 || m.dims != kMemoryWord || out.dims != kMemoryWord ||
      (carryOut >= 0 && op != SmallOp::Add))
    return makeDiag(ErrorKind::Usage, "memory stage: a small constant 1..4 onto 32-bit words");
  const bool complement = op == SmallOp::Subtract;
  for (int i = 0; i <= kMemoryWord; ++i) {
    if (i == kMemoryWord && carryOut < 0) break;
    LinearForm v;
    double constant = 0;
    auto addBit = [&](int dim, double weight, bool inverted) {
      v.terms.push_back({dim, inverted ? -weight / 2 : weight / 2});
      constant += weight / 2;
    };
    double maxT = 0, theta = 0;
    if (i < 3) {
      for (int j = 0; j < i; ++j) addBit(m.at(j), 1 << j, complement);
      constant += q % (1 << i);
      maxT = (1 << i) - 1 + q % (1 << i);
      theta = 1 << i;
    } else {
      for (int j = 3; j < i; ++j) addBit(m.at(j), 4, complement);
      for (int j = 0; j < 3; ++j) addBit(m.at(j), 1 << j, complement);
      constant += q;
      maxT = 4 * (i - 3) + 7 + q;
      theta = 4 * (i - 3) + 8;
    }
    if (i == kMemoryWord) {  // the carry out: T_32 ≥ θ_32
      LinearForm n = v;
      n.constant = constant - theta + 1;
      QGPU_TRY(rep, addStep(u, ctx, n, {{ctx.ballast.at(0), 1.0f}}, {{carryOut, 2.0}}));
      (void)rep;
      break;
    }
    const double k = maxT + 1;
    addBit(m.at(i), k, i < 3 && ((q >> i) & 1));
    QGPU_CHECK(addXorSteps(u, ctx, v, constant, theta, k, out.at(i)));
  }
  return Ok{};
}

// out = min(b + n, 2^32 − 1) for a constant 1 ≤ n ≤ 3, in one layer (out's dims hold −u before):
// addSmallConstant's b + n mod 2^32, plus the overflow O = [b + n ≥ 2^32] onto every bit that is
// not already set. With S = 4·Σ_{i≥2} b_i + 2b_1 + b_0 (≤ 123), O = [S ≥ 124 − n], and under O
// the sum mod 2^32 is v = S − 124 + n < 4: bits 2.. are 0, bit 0 is [v odd], bit 1 [v ≥ 2], so
// bit 0 adds O − [S = 125 − n] − [S = 127 − n], bit 1 O − [S ≥ 126 − n] (S ≤ 123 drops the
// thresholds above), the others O.
Status addSaturatingSmall(UnitWriter& u, const MlpContext& ctx, const Field& b, int n,
                          const Field& out) {
  if (n < 1 || n > 3) return makeDiag(ErrorKind::Usage, "memory stage: saturating 1..3 onto words");
  QGPU_CHECK(addSmallConstant(u, ctx, b, n, out));
  LinearForm sum;  // S in x̂ units: bit = (x̂ + 1)/2
  double base = 0;
  for (int i = 0; i < kMemoryWord; ++i) {
    const double wi = i >= 2 ? 4 : i == 1 ? 2 : 1;
    sum.terms.push_back({b.at(i), wi / 2});
    base += wi / 2;
  }
  constexpr int kMaxS = 4 * (kMemoryWord - 2) + 3;
  auto atLeast = [&](int theta, int dim, double weight) -> Status {  // weight·u·[S ≥ θ]
    if (theta > kMaxS) return Ok{};
    LinearForm f = sum;
    f.constant = base - theta + 1;
    QGPU_TRY(rep, addStep(u, ctx, f, {{ctx.ballast.at(0), 1.0f}}, {{dim, weight}}));
    (void)rep;
    return Ok{};
  };
  for (int i = 0; i < kMemoryWord; ++i) QGPU_CHECK(atLeast(124 - n, out.at(i), 2));
  for (const int theta : {125 - n, 127 - n}) {
    QGPU_CHECK(atLeast(theta, out.at(0), -2));
    QGPU_CHECK(atLeast(theta + 1, out.at(0), 2));
  }
  QGPU_CHECK(atLeast(126 - n, out.at(1), -2));
  return Ok{};
}

// out = m − 1 mod 2^32 unless one of the exclusive literals `off` holds, then 0 (out's dims hold −u
// before), in one layer. Bit i of m − 1 is m_i ⊕ c_i with the borrow c_i = [m_0..m_{i−1} all 0] =
// [T_i ≥ θ_i], T_i = 1 + Σ_{j<i} ¬m_j, θ_i = i + 1; addSmallConstant's XOR form with K = i + 2 and
// V = K·m_i + T_i + (K + θ_i)·[off]: off puts both steps on, so the bit adds nothing. |V − θ| ≤ 98.
Status addMinusOneUnless(UnitWriter& u, const MlpContext& ctx, const Field& m,
                         const std::vector<Literal>& off, const Field& out) {
  if (m.dims != kMemoryWord || out.dims != kMemoryWord)
    return makeDiag(ErrorKind::Usage, "memory stage: minus one on 32-bit words");
  for (int i = 0; i < kMemoryWord; ++i) {
    LinearForm v;  // in x̂ units: bit = (x̂ + 1)/2, [literal] = (sign·x̂ + 1)/2
    double constant = 1;
    for (int j = 0; j < i; ++j) {
      v.terms.push_back({m.at(j), -0.5});
      constant += 0.5;
    }
    const double theta = i + 1, k = i + 2, gate = k + theta;
    v.terms.push_back({m.at(i), k / 2});
    constant += k / 2;
    for (const Literal& l : off) {
      v.terms.push_back({l.dim, gate * l.sign / 2});
      constant += gate / 2;
    }
    QGPU_CHECK(addXorSteps(u, ctx, v, constant, theta, k, out.at(i)));
  }
  return Ok{};
}

}  // namespace

Expected<MemoryStage> buildMemoryStage(CircuitWeights& w, FieldAllocator& alloc,
                                       const MemoryStageSpec& s) {
  const model::Qwen35Config& c = w.config();
  const TokenLayout& t = s.tokens;
  const int L = s.firstLayer;
  const int layers = memoryStageLayers(s);
  if (L < 0 || L + layers > c.numLayers())
    return makeDiag(ErrorKind::Usage, "memory stage: needs layers " + std::to_string(L) + ".." +
                                          std::to_string(L + layers - 1) +
                                          ", the config has " + std::to_string(c.numLayers()));
  if (s.head.dims != kMemoryWord || s.offset.dims != kMemoryWord ||
      s.sharedWords.dims != kWordBits || s.blockX.dims != kBlockXBits || s.warp.dims != kWarpBits ||
      s.exec.dims != kLanes)
    return makeDiag(ErrorKind::Usage,
                    "memory stage: head and offset need 32 dims, sharedWords 7, blockX 5, warp 2, "
                    "exec 4 (have " +
                        std::to_string(s.head.dims) + ", " + std::to_string(s.offset.dims) + ", " +
                        std::to_string(s.sharedWords.dims) + ", " + std::to_string(s.blockX.dims) +
                        ", " + std::to_string(s.warp.dims) + ", " + std::to_string(s.exec.dims) +
                        ")");
  for (int l = 0; l < kLanes; ++l)
    if (s.lanes[static_cast<size_t>(l)].src0.dims != kMemoryWord ||
        s.lanes[static_cast<size_t>(l)].src1.dims != kMemoryWord)
      return makeDiag(ErrorKind::Usage,
                      "memory stage: lane " + std::to_string(l) + " needs src0 and src1 of 32 dims");
  for (int l = 0; l < kLanes && s.prefixAtomics; ++l)
    if (s.lanes[static_cast<size_t>(l)].src2.dims != kMemoryWord)
      return makeDiag(ErrorKind::Usage, "memory stage: lane " + std::to_string(l) +
                                            " needs src2 of 32 dims (atom.cas's swap value)");
  if (s.guard.dims > 1)
    return makeDiag(ErrorKind::Usage, "memory stage: the guard needs 0 or 1 dim, has " +
                                          std::to_string(s.guard.dims));
  QGPU_TRY(opcode, memoryHeadField(s.head, "opcode",
                             std::bit_width(static_cast<unsigned>(machine::kNumOps - 1))));
  QGPU_TRY(spaceField, memoryHeadField(s.head, "space", 1));

  MemoryStage r;
  const std::vector<SlotProduct> products = slotProducts();
  const int before = alloc.takenDims();
  // The atomics' own fields carry their kinds (Field::kinds): fields of exclusive kinds share dims
  // on the layout by liveness, and every unit that writes one is guarded by its kind (below).
  auto take = [&](const std::string& name, int dims, uint32_t kinds = 0) {
    return alloc.take("mem." + name, dims, kinds);
  };
  // A 32-bit compare's fields (logic.h): its bus and its 1-dim result.
  auto takeCompare = [&](const std::string& name,
                         uint32_t kinds = 0) -> Expected<std::pair<Field, Field>> {
    QGPU_TRY(bus, take(name + "Bus", compareBusDims(kMemoryWord), kinds));
    QGPU_TRY(out, take(name, 1, kinds));
    return std::pair<Field, Field>{bus, out};
  };
  {
    QGPU_TRY(f, take("kind", kMemoryKinds)); r.kind = f;
  }
  // The address path's fields: the stage's ops' alone where the pipeline guards them (s.guard).
  const uint32_t addressKinds = s.guard.dims == 1 ? kKindMemoryStage : 0;
  for (int l = 0; l < kLanes; ++l) {
    const std::string n = std::to_string(l);
    QGPU_TRY(bus, take("bus" + n, adderBusDims(kMemoryWord), addressKinds));
    QGPU_TRY(addr, take("addr" + n, kMemoryWord, addressKinds));
    QGPU_TRY(checks, take("checks" + n, 4, addressKinds));
    r.bus[static_cast<size_t>(l)] = bus;
    r.addr[static_cast<size_t>(l)] = addr;
    r.checks[static_cast<size_t>(l)] = checks;
  }
  {
    QGPU_TRY(productDims, take("spillProducts", static_cast<int>(products.size())));
    QGPU_TRY(base, take("spillBase", kWordBits));
    r.spillProducts = productDims;
    r.spillBase = base;
  }
  for (int sp = 0; sp < 2; ++sp)
    for (int l = 0; l < kLanes; ++l) {
      QGPU_TRY(f, take(std::string(sp == 0 ? "global" : "shared") + ".readAddr" + std::to_string(l),
                       kWordBits + 1, addressKinds));
      r.readAddr[static_cast<size_t>(sp)][static_cast<size_t>(l)] = f;
    }
  for (int l = 0; l < kLanes; ++l) {
    QGPU_TRY(f, take("laneFault" + std::to_string(l), 1));
    r.laneFault[static_cast<size_t>(l)] = f;
  }
  if (s.faultInto.dims == 1) {
    r.fault = s.faultInto;
  } else if (s.faultInto.dims != 0) {
    return makeDiag(ErrorKind::Usage, "memory stage: faultInto needs 1 dim, has " +
                                          std::to_string(s.faultInto.dims));
  } else {
    QGPU_TRY(f, take("fault", 1)); r.fault = f;
  }
  for (const Field& f : s.loadOnto)
    if (f.dims != 0 && f.dims != kMemoryWord)
      return makeDiag(ErrorKind::Usage, "memory stage: loadOnto needs 32 dims per lane, has " +
                                            std::to_string(f.dims));
  for (int l = 0; l < kLanes; ++l) {
    QGPU_TRY(f, take("load" + std::to_string(l), kMemoryWord));
    r.load[static_cast<size_t>(l)] = f;
  }
  for (int l = 0; l < kLanes; ++l) {
    QGPU_TRY(f, take("memrec.value" + std::to_string(l), kMemoryWord));
    r.memrec.value[static_cast<size_t>(l)] = f;
  }
  for (int p = 0; p < kSameWordPairs; ++p) {
    const std::string n = std::to_string(p);
    QGPU_TRY(bus, take("cmpBus" + n, compareBusDims(kCmpBits)));
    QGPU_TRY(eq, take("eq" + n, 1));
    QGPU_TRY(same, take("same" + n, 1));
    r.cmpBus[static_cast<size_t>(p)] = bus;
    r.eq[static_cast<size_t>(p)] = eq;
    r.same[static_cast<size_t>(p)] = same;
  }
  r.atomOld[0] = r.load[0];
  // atom.add's prefix sum: masked operands per pair, the count rows (lanes 1..3: 2, 3, 3 rows),
  // the reduced pair (lanes 2, 3), the adder's bus (its own, so that the address adders' dies
  // after L+1), the sum.
  // The pairs' masked operands are read by atom.add, min / max and dec alone.
  for (int p = 0; p < kSameWordPairs && s.prefixAtomics; ++p) {
    QGPU_TRY(f, take("addMask" + std::to_string(p), kMemoryWord,
                     kKindAtomAdd | kKindAtomMinMax | kKindAtomDec));
    r.addMask[static_cast<size_t>(p)] = f;
  }
  for (int l = 0; l < kLanes && s.prefixAtomics; ++l) {
    const std::string n = std::to_string(l);
    const int rows = l == 0 ? 0 : l == 1 ? 2 : 3;
    if (rows > 0) {
      QGPU_TRY(f, take("addRows" + n, rows * kMemoryWord, kKindAtomAdd));
      r.addRows[static_cast<size_t>(l)] = f;
    }
    if (rows == 3) {
      QGPU_TRY(f, take("addPair" + n, 2 * kMemoryWord, kKindAtomAdd));
      r.addPair[static_cast<size_t>(l)] = f;
    }
    QGPU_TRY(bus, take("addBus" + n, adderBusDims(kMemoryWord), kKindAtomAdd));
    r.addBus[static_cast<size_t>(l)] = bus;
    QGPU_TRY(f, take("addNew" + n, kMemoryWord, kKindAtomAdd));
    r.addNew[static_cast<size_t>(l)] = f;
  }
  // atom.min / max: per lane the l + 2 operands' pairwise lt.u (bus + 1 dim each) and lt.s (1 dim
  // each, from lt.u and the sign bits), the selected word.
  for (int l = 0; l < kLanes && s.prefixAtomics; ++l) {
    const int n = l + 2, pairs = n * (n - 1) / 2;
    auto& cmp = r.mmCompare[static_cast<size_t>(l)];
    for (int q = 0; q < pairs; ++q) {
      // atom.dec reads the bus too (its wrap tests' le.u, wrapTestOnMinMaxBus).
      QGPU_TRY(bus, take("mmBus" + std::to_string(l) + "." + std::to_string(q),
                         compareBusDims(kMemoryWord), kKindAtomMinMax | kKindAtomDec));
      QGPU_TRY(lt, take("mmLt" + std::to_string(l) + "." + std::to_string(q), 1, kKindAtomMinMax));
      cmp.push_back({bus, lt});
    }
    QGPU_TRY(ltS, take("mmLtS" + std::to_string(l), pairs, kKindAtomMinMax));
    r.mmLtS[static_cast<size_t>(l)] = ltS;
    QGPU_TRY(f, take("mmNew" + std::to_string(l), kMemoryWord, kKindAtomMinMax));
    r.mmNew[static_cast<size_t>(l)] = f;
  }
  // atom.inc: per lane the words M_l + q (q = 1..l + 1), the compares [M_l + q < b_l] (q = 0..l:
  // bus + 1 dim each), the small-word wraps [b_l ≤ t] (t = 0..l − 1).
  for (int l = 0; l < kLanes && s.prefixAtomics; ++l) {
    const std::string n = std::to_string(l);
    for (int q = 1; q <= l + 1; ++q) {
      QGPU_TRY(f, take("incPlus" + n + "." + std::to_string(q), kMemoryWord, kKindAtomInc));
      r.incPlus[static_cast<size_t>(l)].push_back(f);
    }
    for (int q = 0; q <= l; ++q) {
      QGPU_TRY(cmp, takeCompare("incLt" + n + "." + std::to_string(q), kKindAtomInc));
      r.incCompare[static_cast<size_t>(l)].push_back(cmp);
    }
    if (l > 0) {
      QGPU_TRY(f, take("incSmall" + n, l, kKindAtomInc));
      r.incSmall[static_cast<size_t>(l)] = f;
    }
  }
  // atom.cas: 4 + 6 Eq compares (bus + 1 dim each), per lane the states and the swap.
  for (int l = 0; l < kLanes && s.prefixAtomics; ++l) {
    const std::string n = std::to_string(l);
    QGPU_TRY(self, takeCompare("casSelf" + n, kKindAtomCas));
    r.casSelf[static_cast<size_t>(l)] = self;
    QGPU_TRY(state, take("casState" + n, l + 2));
    r.casState[static_cast<size_t>(l)] = state;
  }
  for (int p = 0; p < kSameWordPairs && s.prefixAtomics; ++p) {
    QGPU_TRY(pair, takeCompare("casPair" + std::to_string(p), kKindAtomCas));
    r.casPair[static_cast<size_t>(p)] = pair;
  }
  // atom.dec: the b words and zero tests, the wrap compares (bus + 1 dim each; the test after
  // no earlier lane an output only, on min / max's bus), the M words, the states, the old words.
  for (int l = 0; l < kLanes && s.prefixAtomics; ++l) {
    const std::string n = std::to_string(l);
    const size_t li = static_cast<size_t>(l);
    if (l > 0) {
      QGPU_TRY(sat, take("decSat" + n, l * kMemoryWord, kKindAtomDec));
      r.decSat[li] = sat;
    }
    if (l + 2 < kLanes) {
      QGPU_TRY(minus, take("decBMinus" + n, (kLanes - 2 - l) * kMemoryWord, kKindAtomDec));
      r.decBMinus[li] = minus;
    }
    if (l + 2 < kLanes) {
      QGPU_TRY(zero, take("decZeroB" + n, kLanes - 2 - l, kKindAtomDec));
      r.decZeroB[li] = zero;
    }
    for (int k = 0; k < l; ++k) {
      QGPU_TRY(zero, take("decZeroMask" + std::to_string(k) + n, 1, kKindAtomDec));
      r.decZeroMask[static_cast<size_t>(pairIndex(k, l))] = zero;
    }
    QGPU_TRY(zeroM, take("decZeroM" + n, l + 1, kKindAtomDec));
    r.decZeroM[li] = zeroM;
    {
      QGPU_TRY(out, take("decWrapM" + n + ".0", 1, kKindAtomDec));
      r.decWrapM[li].push_back({Field{}, out});
    }
    for (int q = 1; q <= l; ++q) {
      QGPU_TRY(cmp, takeCompare("decWrapM" + n + "." + std::to_string(q), kKindAtomDec));
      r.decWrapM[li].push_back(cmp);
    }
    for (int k = 0; k < l; ++k)
      for (int q = 0; q < l - k; ++q) {
        const std::string name = "decWrapB" + std::to_string(k) + n + "." + std::to_string(q);
        if (q == 0) {
          QGPU_TRY(out, take(name, 1, kKindAtomDec));
          r.decWrapB[static_cast<size_t>(pairIndex(k, l))].push_back({Field{}, out});
          continue;
        }
        QGPU_TRY(cmp, takeCompare(name, kKindAtomDec));
        r.decWrapB[static_cast<size_t>(pairIndex(k, l))].push_back(cmp);
      }
    if (l > 0) {
      QGPU_TRY(minusM, take("decMinus" + n, l * kMemoryWord, kKindAtomDec));
      QGPU_TRY(old, take("decOld" + n, kMemoryWord, kKindAtomDec));
      r.decMinus[li] = minusM;
      r.decOld[li] = old;
    }
    QGPU_TRY(state, take("decState" + n, decStates(l) + 1));
    r.decState[li] = state;
  }
  for (int l = 1; l < kLanes; ++l) {
    QGPU_TRY(f, take("atomOld" + std::to_string(l), kMemoryWord));
    r.atomOld[static_cast<size_t>(l)] = f;
  }
  {
    QGPU_TRY(f, take("memrec.wordMask", kMemoryWord)); r.memrec.wordMask = f;
  }
  {
    QGPU_TRY(f, take("memrec.tag", kMemoryWord)); r.memrec.tag = f;
  }
  r.dims = alloc.takenDims() - before;

  // The data memories, reading at the stage's addresses.
  DataMemorySpec ds;
  ds.tokens = t;
  ds.layer0 = L;
  ds.read = s.read;
  ds.mlpGain = s.mlpGain;
  for (int i = 0; i < kMemoryDataLayers; ++i) {
    ds.firstHead[static_cast<size_t>(i)] = s.firstHead[static_cast<size_t>(i)];
    ds.firstUnit[static_cast<size_t>(i)] = s.firstUnit[static_cast<size_t>(i)];
  }
  for (int sp = 0; sp < 2; ++sp)
    for (int l = 0; l < kLanes; ++l)
      ds.readAddr[static_cast<size_t>(sp)].push_back(
          r.readAddr[static_cast<size_t>(sp)][static_cast<size_t>(l)]);
  QGPU_TRY(dm, buildDataMemory(w, alloc, ds));
  r.dm = dm;
  for (int i = 0; i < kMemoryDataLayers; ++i) r.heads[static_cast<size_t>(i)] = dm.headsUsed[i];

  const double one = t.unit, two = 2.0 * t.unit;
  const MlpContext ctx{t.ballast, t.lambda, s.mlpGain, t.unit};
  const AndGate g{t.ballast, t.lambda, 2 * s.mlpGain};
  const AndFieldWriter fw{g, ctx, one, r.maxFanIn};
  // +2u on `out` when Σ_k bit_k ≥ 1 over sign dims (bit = (x̂ + 1)/2) and the sign dim `unless`
  // (−1: none) is not set — it subtracts more than the dims can add: one step pair.
  auto anyOf = [&](UnitWriter& u, const std::vector<int>& dims, int out,
                   int unless = -1) -> Status {
    LinearForm n;
    for (int d : dims) n.terms.push_back({d, 0.5});
    n.constant = 0.5 * static_cast<double>(dims.size());
    if (unless >= 0) addBitTerm(n, unless, -static_cast<double>(dims.size()));
    QGPU_TRY(rep, addStep(u, ctx, n, {{t.ballast.at(0), 1.0f}}, {{out, 2}}));
    (void)rep;
    return Ok{};
  };
  auto kind = [&](int k) { return Literal{r.kind.at(k), 1}; };
  // The guard of the units that write a kind's own fields (those taken with Field::kinds): silent
  // unless the kind dim holds, so that other kinds' fields may share the dims.
  auto guardOf = [&](int k) {
    return UnitGuard{r.kind.at(k), 1, t.ballast, t.lambda, guardKindsOf(k)};
  };
  // The address path's guard (s.guard): no writer is guarded without it.
  std::optional<UnitGuard> addressGuard;
  if (s.guard.dims == 1)
    addressGuard = UnitGuard{s.guard.at(0), 1, t.ballast, t.lambda, kKindMemoryStage};
  auto no = [](Literal l) { return Literal{l.dim, -l.sign}; };
  auto bit = [&](int l, int i) { return Literal{r.addr[static_cast<size_t>(l)].at(i), 1}; };
  auto e = [&](int l) { return Literal{s.exec.at(l), 1}; };
  // A head literal in the head word's polarity (headInverted: −u = 1).
  const int headSign = s.headInverted ? -1 : 1;
  auto headLits = [&](std::vector<Literal> lits) {
    for (Literal& x : lits) x.sign *= headSign;
    return lits;
  };
  const Literal space{spaceField.at(0), headSign};
  // The space the op reads and writes (the kind dim `shared`, not the head's bit: spill ops).
  auto spaceIs = [&](int sp) { return sp == 1 ? kind(kShared) : no(kind(kShared)); };

  // ---- L: the adder's level 1, the op kind. L+1: the adder's level 2, the spill slot's
  // products. ----
  {
    UnitWriter u1(w, L, s.firstUnit[0] + dm.unitsUsed[0]);
    UnitWriter u2(w, L + 1, s.firstUnit[1] + dm.unitsUsed[1]);
    const MlpContext c2 = ctx;
    QGPU_CHECK(fw.start(u1, {r.kind}));
    for (int op = 0; op < machine::kNumOps; ++op) {
      const std::vector<int> ks = kindsOf(static_cast<machine::Op>(op));
      if (ks.empty()) continue;
      std::vector<std::pair<int, double>> outs;
      for (int k : ks) outs.push_back({r.kind.at(k), two});
      const std::vector<Literal> isOp = headLits(spells(opcode, static_cast<unsigned>(op)));
      QGPU_CHECK(fw.add(u1, isOp, outs));
      if (machine::opInfo(static_cast<machine::Op>(op)).cls == machine::OpClass::Mem)
        QGPU_CHECK(fw.add(u1, isOp + std::vector<Literal>{space}, {{r.kind.at(kShared), two}}));
    }
    // L+1: the spill slot's products s_i ∧ blockX_j (s: the offset word's low bits, +u = 1), at a
    // spill op's position only: elsewhere the offset is any byte offset, and C would pass the step
    // pairs' range.
    QGPU_CHECK(fw.start(u2, {r.spillProducts}));
    for (int op = 0; op < machine::kNumOps; ++op) {
      if (machine::opInfo(static_cast<machine::Op>(op)).cls != machine::OpClass::Local) continue;
      for (size_t q = 0; q < products.size(); ++q)
        QGPU_CHECK(fw.add(u2,
                          headLits(spells(opcode, static_cast<unsigned>(op))) +
                              std::vector<Literal>{{s.offset.at(products[q].i), 1},
                                                   {s.blockX.at(products[q].j), 1}},
                          {{r.spillProducts.at(static_cast<int>(q)), two}}));
    }
    const GuardScope guard({&u1, &u2}, addressGuard);
    for (int l = 0; l < kLanes; ++l) {
      AdderSpec a;
      a.a = s.lanes[static_cast<size_t>(l)].src0;
      a.b = s.offset;
      a.bus = r.bus[static_cast<size_t>(l)];
      a.out = r.addr[static_cast<size_t>(l)];
      a.busPrior = a.outPrior = Prior::Replace;
      QGPU_TRY(rep, buildAdder(u1, ctx, u2, c2, a));
      (void)rep;
    }
    r.units[0] = u1.used();
    r.units[1] = u2.used();
  }

  // ---- L+2: hi, mis, top, geS per lane; the spill slot's base; the compares' level 1. ----
  UnitWriter u2(w, L + 2, s.firstUnit[2] + dm.unitsUsed[2]);
  UnitWriter u3(w, L + 3, s.firstUnit[3] + dm.unitsUsed[3]);
  {
    UnitWriter& u = u2;
    // C = sharedWords + Σ 2^{i+j} p_ij in bits, by the thresholds m·2^k.
    LinearForm base;  // in x̂ units: bit = (x̂ + 1)/2
    for (int i = 0; i < kWordBits; ++i) addBitTerm(base, s.sharedWords.at(i), 1 << i);
    for (size_t q = 0; q < products.size(); ++q)
      addBitTerm(base, r.spillProducts.at(static_cast<int>(q)),
                 1 << (products[q].i + products[q].j));
    QGPU_CHECK(fw.start(u, {r.spillBase}));
    for (int k = 0; k < kWordBits; ++k)
      for (int m = 1; m << k < 1 << kWordBits; ++m) {
        LinearForm n = base;
        n.constant += 1 - (m << k);  // N ≥ 1 iff C ≥ m·2^k
        QGPU_TRY(rep, addStep(u, ctx, n, {{t.ballast.at(0), 1.0f}},
                              {{r.spillBase.at(k), m % 2 == 1 ? 2.0 : -2.0}}));
        (void)rep;
      }
    std::vector<Field> outs(r.checks.begin(), r.checks.end());
    const GuardScope guard({&u}, addressGuard);
    QGPU_CHECK(fw.start(u, outs));
    for (int l = 0; l < kLanes; ++l) {
      const Field& ck = r.checks[static_cast<size_t>(l)];
      const Field& a = r.addr[static_cast<size_t>(l)];
      std::vector<int> high;
      for (int i = 2 + kWordBits; i < kMemoryWord; ++i) high.push_back(a.at(i));
      QGPU_CHECK(anyOf(u, high, ck.at(0)));
      QGPU_CHECK(fw.add(u, {kind(kAcc4), bit(l, 0)}, {{ck.at(1), two}}));
      QGPU_CHECK(fw.add(u, {kind(kAcc4), no(bit(l, 0)), bit(l, 1)}, {{ck.at(1), two}}));
      QGPU_CHECK(fw.add(u, {kind(kAcc2), bit(l, 0)}, {{ck.at(1), two}}));
      std::vector<Literal> top;
      for (int i = 3; i < 2 + kWordBits; ++i) top.push_back(bit(l, i));
      QGPU_CHECK(fw.add(u, top, {{ck.at(2), two}}));
      // w − sharedWords + 1 (twin: w − sharedWords), in x̂ units: bit = (x̂ + 1)/2.
      LinearForm n;
      for (int i = 0; i < kWordBits; ++i) {
        const double c2i = static_cast<double>(1 << i) / 2;
        n.terms.push_back({a.at(2 + i), c2i});
        n.terms.push_back({s.sharedWords.at(i), -c2i});
      }
      n.constant = s.twin == MemoryStageTwin::SharedBoundOffByOne ? 0 : 1;
      QGPU_TRY(rep, addStep(u, ctx, n, {{t.ballast.at(0), 1.0f}}, {{ck.at(3), 2}}));
      (void)rep;
    }
  }

  // ---- L+3: the read addresses (word bits, high per space); the compares' level 2. ----
  {
    UnitWriter& u = u3;
    std::vector<Field> outs;
    for (const auto& sp : r.readAddr) outs.insert(outs.end(), sp.begin(), sp.end());
    const GuardScope guard({&u}, addressGuard);
    QGPU_CHECK(fw.start(u, outs));
    for (int l = 0; l < kLanes; ++l) {
      const Field& ck = r.checks[static_cast<size_t>(l)];
      const Field& shared = r.readAddr[1][static_cast<size_t>(l)];
      // weight·q_j in x̂ units for q = 4w + l (a constant of the lane for j < 2, the warp's bit
      // j − 2 above it); returns q_j's largest value.
      auto addQBit = [&](LinearForm& f, int j, double weight) -> int {
        if (j < 2) {
          f.constant += ((l >> j) & 1) ? weight : 0;
          return (l >> j) & 1;
        }
        if (j - 2 >= kWarpBits || s.twin == MemoryStageTwin::SpillWithoutTheWarp) return 0;
        addBitTerm(f, s.warp.at(j - 2), weight);
        return 1;
      };
      for (int i = 0; i < kWordBits; ++i) {
        QGPU_CHECK(
            fw.add(u, {bit(l, 2 + i)}, {{r.readAddr[0][static_cast<size_t>(l)].at(i), two}}));
        // Shared: the address's word, or a spill op's slot word v = C + q — bit i = parity(C_i +
        // q_i + c_i), c_i = [T_i ≥ 2^i] — as [S ≥ 2^i] − [S ≥ K + 2^i] + [S ≥ 2K + 2^i] with S =
        // K·(C_i + q_i) + T_i, each step held off by −kSpillGate·¬isSpill (S ≤ 236 < the gate).
        QGPU_CHECK(fw.add(u, {no(kind(kIsSpill)), bit(l, 2 + i)}, {{shared.at(i), two}}));
        LinearForm v;
        double maxT = 0;
        for (int j = 0; j < i; ++j) {
          addBitTerm(v, r.spillBase.at(j), 1 << j);
          maxT += (1 + addQBit(v, j, 1 << j)) * (1 << j);
        }
        const double k = maxT + 1;
        addBitTerm(v, r.spillBase.at(i), k);
        const double maxS = k * (1 + addQBit(v, i, k)) + maxT;
        addBitTerm(v, r.kind.at(kIsSpill), kSpillGate);  // − kSpillGate·¬isSpill
        v.constant -= kSpillGate;
        const double theta = 1 << i;
        for (const auto& [at, sign] :
             {std::pair{theta, 2.0}, std::pair{k + theta, -2.0}, std::pair{2 * k + theta, 2.0}}) {
          if (at > maxS) continue;  // never reached where q_i is 0
          LinearForm n = v;
          n.constant += 1 - at;
          QGPU_TRY(rep, addStep(u, ctx, n, {{t.ballast.at(0), 1.0f}}, {{shared.at(i), sign}}));
          (void)rep;
        }
      }
      QGPU_CHECK(anyOf(u, {ck.at(0), ck.at(1), ck.at(2)},
                       r.readAddr[0][static_cast<size_t>(l)].at(kWordBits)));
      QGPU_CHECK(anyOf(u, {ck.at(0), ck.at(1), ck.at(2), ck.at(3)},
                       r.readAddr[1][static_cast<size_t>(l)].at(kWordBits), r.kind.at(kIsSpill)));
    }
  }
  // [w_k = w_l] for the 6 pairs: logic.h's Eq compare on a_2..a_9, level 1 in L+2, level 2 in
  // L+3. When the op does not fault every executing lane's word is < 126, so a_9 = 0 and the
  // compare is word equality; when it faults no lane acts and the values are unspecified.
  for (int l = 1; l < kLanes; ++l)
    for (int k = 0; k < l; ++k) {
      const int p = pairIndex(k, l);
      CompareSpec cs;
      cs.op = CompareOp::Eq;
      cs.a = r.addr[static_cast<size_t>(k)].slice(2, kCmpBits);
      cs.b = r.addr[static_cast<size_t>(l)].slice(2, kCmpBits);
      cs.bus = r.cmpBus[static_cast<size_t>(p)];
      cs.out = r.eq[static_cast<size_t>(p)];
      cs.busPrior = cs.outPrior = Prior::Replace;
      QGPU_TRY(rep, buildCompare(u2, ctx, u3, ctx, cs));
      (void)rep;
    }
  // The chain (lane-serial order inside one op). A source of lane l's old word old'_l: the
  // literals that pick it (exclusive over the sources) and its bit i as a literal.
  struct Source {
    std::vector<Literal> pick;
    std::function<Literal(int)> bitOf;
  };
  auto same = [&](int k, int l) {
    return Literal{r.same[static_cast<size_t>(pairIndex(k, l))].at(0), 1};
  };
  // The paths through the lanes before l on its word (atom.inc, atom.cas): per pattern of the
  // s_kl (k < l: which lanes share l's word), those lanes in order, each branching on one literal
  // — its test in the state the word is in so far. `branch(k, state)` gives {test, the state when
  // it holds, the state when it does not}. Every path starts with kindLit and the pattern's
  // literals, so the paths of one lane are exclusive ANDs; the order is the pattern's, then the
  // test's before its negation.
  auto lanePaths = [&]<typename State>(int l, Literal kindLit, State start, auto branch) {
    struct Path {
      std::vector<Literal> lits;
      State state;
    };
    std::vector<Path> all;
    for (unsigned pattern = 0; pattern < (1u << l); ++pattern) {
      std::vector<Path> paths(1, Path{{kindLit}, start});
      for (int k = 0; k < l; ++k)
        paths[0].lits.push_back((pattern >> k) & 1u ? same(k, l) : no(same(k, l)));
      for (int k = 0; k < l; ++k) {
        if (!((pattern >> k) & 1u)) continue;
        std::vector<Path> next;
        for (const Path& p : paths) {
          const auto [test, taken, kept] = branch(k, p.state);
          next.push_back({p.lits + std::vector<Literal>{test}, taken});
          next.push_back({p.lits + std::vector<Literal>{no(test)}, kept});
        }
        paths = std::move(next);
      }
      all.insert(all.end(), paths.begin(), paths.end());
    }
    return all;
  };
  // Lane l ≥ 1: old'_l = new_k for the nearest earlier lane k on l's word (s_kl ∧ ¬s_k'l for
  // k < k' < l; the twin: the first, ¬s_k'l for k' < k), else M_l = load_l.
  auto sourcesOf = [&](int l, const std::array<Field, kLanes>& news) {
    std::vector<Source> src;
    Source none;
    for (int k = 0; k < l; ++k) none.pick.push_back(no(same(k, l)));
    none.bitOf = [&, l](int i) { return Literal{r.load[static_cast<size_t>(l)].at(i), 1}; };
    src.push_back(none);
    for (int k = 0; k < l; ++k) {
      Source sk;
      sk.pick.push_back(same(k, l));
      const bool first = s.twin == MemoryStageTwin::FirstSameWordLane;
      for (int k2 = first ? 0 : k + 1; k2 < (first ? k : l); ++k2) sk.pick.push_back(no(same(k2, l)));
      sk.bitOf = [&news, k](int i) { return Literal{news[static_cast<size_t>(k)].at(i), 1}; };
      src.push_back(sk);
    }
    return src;
  };
  // new_l = f(old'_l, b_l) for the kinds whose bit i depends on (old'_i, b_i) alone, as disjoint
  // ANDs onto memrec.value[l] (and old'_l onto atomOld[l] when `old` is set):
  //   st, exch: b_i;  stl: a_i (its value is src0);  and: b_i ∧ o;  or: b_i + ¬b_i ∧ o;
  //   xor: b_i ∧ ¬o + ¬b_i ∧ o;  st.b8: the addressed byte from b, the other bytes o;  st.b16
  //   likewise (evalSubwordStore).
  auto chainLane = [&](UnitWriter& u, int l, const std::vector<Source>& src,
                       const Field* old) -> Status {
    const Field& src0 = s.lanes[static_cast<size_t>(l)].src0;
    const Field& src1 = s.lanes[static_cast<size_t>(l)].src1;
    const Field& value = r.memrec.value[static_cast<size_t>(l)];
    for (int i = 0; i < kMemoryWord; ++i) {
      const Literal b{src1.at(i), 1};
      const std::vector<std::pair<int, double>> out = {{value.at(i), two}};
      QGPU_CHECK(fw.add(u, {kind(kIsStore), b}, out));
      QGPU_CHECK(fw.add(u, {kind(kIsStl), {src0.at(i), 1}}, out));
      QGPU_CHECK(fw.add(u, {kind(kIsExch), b}, out));
      QGPU_CHECK(fw.add(u, {kind(kIsOr), b}, out));
      const int byte = i / 8, half = i / 16;
      auto atByteK = [&](int k) {
        return std::vector<Literal>{k & 1 ? bit(l, 0) : no(bit(l, 0)),
                                    k & 2 ? bit(l, 1) : no(bit(l, 1))};
      };
      QGPU_CHECK(fw.add(u, std::vector<Literal>{kind(kIsB8), Literal{src1.at(i % 8), 1}} +
                               atByteK(byte),
                        out));
      const Literal atHalf = half ? bit(l, 1) : no(bit(l, 1));
      QGPU_CHECK(fw.add(u, {kind(kIsB16), atHalf, Literal{src1.at(i % 16), 1}}, out));
      for (const Source& so : src) {
        const Literal o = so.bitOf(i);
        QGPU_CHECK(fw.add(u, std::vector<Literal>{kind(kIsAnd), b, o} + so.pick, out));
        QGPU_CHECK(fw.add(u, std::vector<Literal>{kind(kIsOr), no(b), o} + so.pick, out));
        QGPU_CHECK(fw.add(u, std::vector<Literal>{kind(kIsXor), b, no(o)} + so.pick, out));
        QGPU_CHECK(fw.add(u, std::vector<Literal>{kind(kIsXor), no(b), o} + so.pick, out));
        for (int k = 0; k < 4; ++k)
          if (k != byte)
            QGPU_CHECK(fw.add(u, std::vector<Literal>{kind(kIsB8), o} + atByteK(k) + so.pick, out));
        QGPU_CHECK(fw.add(u, std::vector<Literal>{kind(kIsB16), no(atHalf), o} + so.pick, out));
        if (old != nullptr)
          QGPU_CHECK(fw.add(u, std::vector<Literal>{o} + so.pick, {{old->at(i), two}}));
      }
    }
    return Ok{};
  };

  // One writer per layer from L+4 on (several parts share these MLPs).
  std::vector<UnitWriter> late;
  late.reserve(static_cast<size_t>(layers - 4));
  for (int j = 4; j < layers; ++j)
    late.emplace_back(w, L + j, s.firstUnit[static_cast<size_t>(j)] + (j == 4 ? dm.unitsUsed[4] : 0));

  // ---- L+4: faults, the loaded word, lane 0's memrec value, the same-word literals, words,
  // mask, tag. ----
  {
    UnitWriter& u = late[0];
    std::vector<Field> outs(r.laneFault.begin(), r.laneFault.end());
    outs.push_back(r.fault);
    outs.insert(outs.end(), r.load.begin(), r.load.end());
    outs.push_back(r.memrec.value[0]);
    outs.insert(outs.end(), r.same.begin(), r.same.end());
    outs.push_back(r.memrec.wordMask);
    outs.push_back(r.memrec.tag);
    QGPU_CHECK(fw.start(u, outs));
    auto high = [&](int sp, int l) {
      return Literal{r.readAddr[static_cast<size_t>(sp)][static_cast<size_t>(l)].at(kWordBits), 1};
    };
    // A read bit: the memory head's out dim before the flip (−u = 1).
    auto read = [&](int sp, int l, int i) {
      return Literal{r.dm.out[static_cast<size_t>(sp)][static_cast<size_t>(l)].at(i), -1};
    };
    for (int sp = 0; sp < 2; ++sp)
      for (int l = 0; l < kLanes; ++l) {
        QGPU_CHECK(fw.add(u, {kind(kIsMem), e(l), spaceIs(sp), high(sp, l)},
                       {{r.laneFault[static_cast<size_t>(l)].at(0), two}}));
        // Lane l is the lowest faulting lane: every k < l is ¬e_k or (e_k ∧ ¬high_k).
        for (unsigned pat = 0; pat < (1u << l); ++pat) {
          std::vector<Literal> lits = {kind(kIsMem), spaceIs(sp), e(l), high(sp, l)};
          for (int k = 0; k < l; ++k) {
            if (pat >> k & 1u) {
              lits.push_back(e(k));
              lits.push_back(no(high(sp, k)));
            } else {
              lits.push_back(no(e(k)));
            }
          }
          QGPU_CHECK(fw.add(u, lits, {{r.fault.at(0), two}}));
        }
      }
    for (int l = 0; l < kLanes; ++l)
      for (int i = 0; i < kMemoryWord; ++i)
        for (int sp = 0; sp < 2; ++sp)
          QGPU_CHECK(fw.add(u, {spaceIs(sp), read(sp, l, i)},
                         {{r.load[static_cast<size_t>(l)].at(i), two}}));
    // The load onto a host's field (no cancel: it holds 0 at a load position).
    for (int l = 0; l < kLanes; ++l) {
      const Field& onto = s.loadOnto[static_cast<size_t>(l)];
      if (onto.dims == 0) continue;
      for (int i = 0; i < kMemoryWord; ++i)
        for (int sp = 0; sp < 2; ++sp)
          QGPU_CHECK(fw.add(u, {kind(kIsLoad), spaceIs(sp), read(sp, l, i)}, {{onto.at(i), two}}));
    }
    // Lane 0: old'_0 = M_0, the read of its space (no earlier lane).
    {
      std::vector<Source> src;
      for (int sp = 0; sp < 2; ++sp)
        src.push_back({{spaceIs(sp)}, [&, sp](int i) { return read(sp, 0, i); }});
      QGPU_CHECK(chainLane(u, 0, src, nullptr));
    }
    for (int l = 1; l < kLanes; ++l)
      for (int k = 0; k < l; ++k)
        // Never a spill op's lanes: their slot words differ (eq compares the unused address).
        QGPU_CHECK(fw.add(u,
                          {kind(kWrites), no(kind(kIsSpill)), e(k), e(l),
                           Literal{r.eq[static_cast<size_t>(pairIndex(k, l))].at(0), 1}},
                          {{r.same[static_cast<size_t>(pairIndex(k, l))].at(0), two}}));
    for (int l = 0; l < kLanes; ++l) {
      // The word: the shared read address's (the address's word, or a spill op's slot word).
      for (int i = 0; i < kWordBits; ++i)
        QGPU_CHECK(fw.add(u, {{r.readAddr[1][static_cast<size_t>(l)].at(i), 1}},
                          {{r.memrec.wordMask.at(l * kWordBits + i), two}}));
      QGPU_CHECK(fw.add(u, {kind(kWrites), e(l)},
                     {{r.memrec.wordMask.at(kLanes * kWordBits + l), two}}));
    }
    const Field& tag = r.memrec.tag;
    auto indexOuts = [&](trace::Token tok) {
      std::vector<std::pair<int, double>> o = {
          {tag.at(static_cast<int>(trace::familyOf(tok))), two}};
      for (int b = 0; b < tokenIndexBits(); ++b)
        if (indexBit(tok, b) > 0) o.push_back({tag.at(trace::kNumFamilies + b), two});
      return o;
    };
    for (unsigned m = 1; m < (1u << kLanes); ++m)
      for (int sp = 0; sp < 2; ++sp)
        QGPU_CHECK(fw.add(u, std::vector<Literal>{kind(kWrites), spaceIs(sp)} + spells(s.exec, m),
                       indexOuts(sp == 0 ? trace::mg(static_cast<int>(m))
                                         : trace::ms(static_cast<int>(m)))));
    QGPU_CHECK(fw.add(u, std::vector<Literal>{kind(kWrites)} + spells(s.exec, 0),
                   indexOuts(trace::single(trace::Family::Nop))));
  }

  // ---- L+5 .. L+7: lanes 1..3 of the chain, one lane per layer (lane l needs new_k, k < l). ----
  for (int l = 1; l < kLanes; ++l) {
    UnitWriter& u = late[static_cast<size_t>(l)];
    const Field& old = r.atomOld[static_cast<size_t>(l)];
    QGPU_CHECK(fw.start(u, {r.memrec.value[static_cast<size_t>(l)], old}));
    QGPU_CHECK(chainLane(u, l, sourcesOf(l, r.memrec.value), &old));
  }

  if (s.prefixAtomics) {
    // ---- atom.add as a prefix sum (no serial dependence): new_l = M_l + b_l + Σ_{k<l} m_kl,
    // m_kl = b_k where s_kl (lanes on one word share M). L+4: the masked operands (ANDs with the
    // compare's eq, as s_kl is written in the same layer). L+5: per column i the count T_i of the
    // n = l + 2 operand bits (step pairs [T ≥ j], j = 1..n) as binary rows: row r, bit i + r =
    // bit r of T_i (c0 = Σ_j (−1)^{j+1}[T ≥ j], c1 = [T ≥ 2] − [T ≥ 4], c2 = [T ≥ 4]). L+6 (3 rows):
    // one 3:2 step (sum = [T ≥ 1] − [T ≥ 2] + [T ≥ 3], carry [T ≥ 2] to bit i + 1). Then logic.h's
    // two-level adder: lane 0 in L+5/L+6, lane 1 in L+6/L+7, lanes 2, 3 in L+7/L+8. L+9: memrec
    // value and old'_l selected by isAdd (old'_l = the nearest earlier same-word lane's sum, or M).
    {
      UnitWriter& u = late[0];
      const GuardScope guard({&u}, guardOf(kIsAddMinMaxDec));  // the kinds that read them
      std::vector<Field> masks(r.addMask.begin(), r.addMask.end());
      QGPU_CHECK(fw.start(u, masks));
      for (int l = 1; l < kLanes; ++l)
        for (int k = 0; k < l; ++k) {
          const int p = pairIndex(k, l);
          const Literal eqKl{r.eq[static_cast<size_t>(p)].at(0), 1};
          for (int i = 0; i < kMemoryWord; ++i) {
            const std::vector<std::pair<int, double>> out = {{r.addMask[static_cast<size_t>(p)].at(i), two}};
            QGPU_CHECK(fw.add(u, {kind(kWrites), e(k), e(l), eqKl,
                                  Literal{s.lanes[static_cast<size_t>(k)].src1.at(i), 1}},
                              out));
            // ¬(e_k ∧ e_l ∧ eq_kl) as 3 exclusive patterns: the kind's identity bit.
            for (int kd : kMinMaxKinds)
              if (identityBit(kd, i)) {
                QGPU_CHECK(fw.add(u, {kind(kd), no(e(k))}, out));
                QGPU_CHECK(fw.add(u, {kind(kd), e(k), no(e(l))}, out));
                QGPU_CHECK(fw.add(u, {kind(kd), e(k), e(l), no(eqKl)}, out));
              }
          }
        }
    }
    // [Σ bits ≥ j] for sign dims (bit = (x̂ + 1)/2) onto outputs: one step pair.
    auto countStep = [&](UnitWriter& u, const std::vector<int>& dims, int j,
                         const std::vector<Output>& out) -> Status {
      LinearForm n;
      for (int d : dims) n.terms.push_back({d, 0.5});
      n.constant = 0.5 * static_cast<double>(dims.size()) - j + 1;
      QGPU_TRY(rep, addStep(u, ctx, n, {{t.ballast.at(0), 1.0f}}, out));
      (void)rep;
      return Ok{};
    };
    for (int l = 0; l < kLanes; ++l) {
      const GuardScope guard({&late[1], &late[2], &late[3], &late[4]}, guardOf(kIsAdd));
      const Field& b = s.lanes[static_cast<size_t>(l)].src1;
      Field x = r.load[static_cast<size_t>(l)], y = b;
      int adderLayer = 1;  // late[] index of the adder's level 1
      if (l > 0) {
        UnitWriter& u = late[1];
        const Field& rows = r.addRows[static_cast<size_t>(l)];
        const int nRows = rows.dims / kMemoryWord;
        QGPU_CHECK(fw.start(u, {rows}));
        for (int i = 0; i < kMemoryWord; ++i) {
          std::vector<int> ops = {r.load[static_cast<size_t>(l)].at(i), b.at(i)};
          for (int k = 0; k < l; ++k) ops.push_back(r.addMask[static_cast<size_t>(pairIndex(k, l))].at(i));
          const int n = static_cast<int>(ops.size());
          for (int j = 1; j <= n; ++j) {
            std::vector<Output> out = {{rows.at(i), j % 2 ? 2.0 : -2.0}};
            if (nRows > 1 && i + 1 < kMemoryWord && (j == 2 || j == 4))
              out.push_back({rows.at(kMemoryWord + i + 1), j == 2 ? 2.0 : -2.0});
            if (nRows > 2 && i + 2 < kMemoryWord && j == 4)
              out.push_back({rows.at(2 * kMemoryWord + i + 2), 2.0});
            QGPU_CHECK(countStep(u, ops, j, out));
          }
        }
        x = rows.slice(0, kMemoryWord);
        y = rows.slice(kMemoryWord, kMemoryWord);
        adderLayer = 2;
        if (nRows == 3) {
          UnitWriter& u2r = late[2];
          const Field& pair = r.addPair[static_cast<size_t>(l)];
          QGPU_CHECK(fw.start(u2r, {pair}));
          for (int i = 0; i < kMemoryWord; ++i) {
            const std::vector<int> ops = {rows.at(i), rows.at(kMemoryWord + i),
                                          rows.at(2 * kMemoryWord + i)};
            for (int j = 1; j <= 3; ++j) {
              std::vector<Output> out = {{pair.at(i), j % 2 ? 2.0 : -2.0}};
              if (j == 2 && i + 1 < kMemoryWord) out.push_back({pair.at(kMemoryWord + i + 1), 2.0});
              QGPU_CHECK(countStep(u2r, ops, j, out));
            }
          }
          x = pair.slice(0, kMemoryWord);
          y = pair.slice(kMemoryWord, kMemoryWord);
          adderLayer = 3;
        }
      }
      AdderSpec a;
      a.a = x;
      a.b = y;
      a.bus = r.addBus[static_cast<size_t>(l)];
      a.out = r.addNew[static_cast<size_t>(l)];
      a.busPrior = a.outPrior = Prior::Replace;
      QGPU_TRY(rep, buildAdder(late[static_cast<size_t>(adderLayer)], ctx,
                               late[static_cast<size_t>(adderLayer + 1)], ctx, a));
      (void)rep;
    }
    // ---- atom.min / max, all-pairs form: operands X = (M_l, m_0l..m_{l−1}l, b_l) (an absent
    // lane's m is the kind's identity), c_pq = [X_p < X_q] for p < q: lt.u by logic.h's compare
    // (L+5 / L+6), lt.s = lt.u ⊕ (X_p's sign bit ≠ X_q's) — words of different signs compare the
    // other way round as two's complement — in L+7 (4 ANDs a pair); L+8: min = X_j with ∀p<j ¬c_pj
    // ∧ ∀q>j c_jq (the last index at the minimum), max = X_j with ∀p<j c_pj ∧ ∀q>j ¬c_jq (the first
    // at the maximum): exactly one j, ANDs of the lt bits. ----
    for (int l = 0; l < kLanes; ++l) {
      const GuardScope busGuard({&late[1]}, guardOf(kIsMinMaxDec));  // atom.dec reads the bus too
      const GuardScope guard({&late[2], &late[3], &late[4]}, guardOf(kIsMinMax));
      std::vector<Field> x = {r.load[static_cast<size_t>(l)]};
      for (int k = 0; k < l; ++k) x.push_back(r.addMask[static_cast<size_t>(pairIndex(k, l))]);
      x.push_back(s.lanes[static_cast<size_t>(l)].src1);
      const int n = static_cast<int>(x.size());
      auto& cmp = r.mmCompare[static_cast<size_t>(l)];
      // Pair (p, q) is index pairAt[p][q]: the running pair number, in cmp and in lt.s's dims.
      std::vector<std::vector<int>> pairAt(static_cast<size_t>(n), std::vector<int>(static_cast<size_t>(n), -1));
      const Field& ltS = r.mmLtS[static_cast<size_t>(l)];
      QGPU_CHECK(fw.start(late[3], {ltS}));
      int pi = 0;
      for (int p = 0; p < n; ++p)
        for (int q = p + 1; q < n; ++q) {
          pairAt[static_cast<size_t>(p)][static_cast<size_t>(q)] = pi;
          CompareSpec cs;
          cs.op = CompareOp::LtU;
          cs.a = x[static_cast<size_t>(p)];
          cs.b = x[static_cast<size_t>(q)];
          cs.bus = cmp[static_cast<size_t>(pi)].first;
          cs.out = cmp[static_cast<size_t>(pi)].second;
          cs.busPrior = cs.outPrior = Prior::Replace;
          QGPU_TRY(rep, buildCompare(late[1], ctx, late[2], ctx, cs));
          (void)rep;
          const Literal lt{cs.out.at(0), 1};
          const Literal sp{cs.a.at(kMemoryWord - 1), 1}, sq{cs.b.at(kMemoryWord - 1), 1};
          const std::vector<std::pair<int, double>> out = {{ltS.at(pi), two}};
          QGPU_CHECK(fw.add(late[3], {lt, sp, sq}, out));
          QGPU_CHECK(fw.add(late[3], {lt, no(sp), no(sq)}, out));
          QGPU_CHECK(fw.add(late[3], {no(lt), sp, no(sq)}, out));
          QGPU_CHECK(fw.add(late[3], {no(lt), no(sp), sq}, out));
          ++pi;
        }
      UnitWriter& u = late[4];
      const Field& out = r.mmNew[static_cast<size_t>(l)];
      QGPU_CHECK(fw.start(u, {out}));
      for (int kd : kMinMaxKinds) {
        const bool isMax = kd == kIsMaxU || kd == kIsMaxS;
        const bool isSigned =
            (kd == kIsMinS || kd == kIsMaxS) && s.twin != MemoryStageTwin::SignedMinMaxByLtU;
        auto c = [&](int p, int q) {  // the literal [X_p < X_q], p < q
          const int at = pairAt[static_cast<size_t>(p)][static_cast<size_t>(q)];
          return Literal{isSigned ? ltS.at(at) : cmp[static_cast<size_t>(at)].second.at(0), 1};
        };
        for (int j = 0; j < n; ++j) {
          std::vector<Literal> cond = {kind(kd)};
          for (int p = 0; p < j; ++p) cond.push_back(isMax ? c(p, j) : no(c(p, j)));
          for (int q = j + 1; q < n; ++q) cond.push_back(isMax ? no(c(j, q)) : c(j, q));
          for (int i = 0; i < kMemoryWord; ++i)
            QGPU_CHECK(fw.add(u, cond + std::vector<Literal>{Literal{x[static_cast<size_t>(j)].at(i), 1}},
                              {{out.at(i), two}}));
        }
      }
    }

    // ---- atom.inc without the serial chain (old ≥ b ? 0 : old + 1). Until a lane on a word wraps,
    // the word is M + (lanes so far); after a wrap it is small (0 .. lanes since). L+5: the small
    // words' wraps Z_l(t) = [b_l ≤ t]; L+6: M_l + q, q = 1..l + 1 (addSmallConstant); L+7 / L+8:
    // [M_l + q < b_l] (logic.h's lt.u; W_l(q) = its negation: the lane wraps the unwrapped word
    // after q lanes). L+9 selects by the paths below. ----
    std::optional<GuardScope> guard;  // a kind's own units (guardOf), one kind at a time
    guard.emplace(std::vector<UnitWriter*>{&late[1], &late[2], &late[3], &late[4]},
                  guardOf(kIsInc));
    for (int l = 1; l < kLanes; ++l) {
      const Field& z = r.incSmall[static_cast<size_t>(l)];
      QGPU_CHECK(fw.start(late[1], {z}));
      for (int tv = 0; tv < l; ++tv)
        QGPU_CHECK(
            addAtMostSmall(late[1], ctx, s.lanes[static_cast<size_t>(l)].src1, tv, z.at(tv)));
    }
    for (int l = 0; l < kLanes; ++l) {
      const Field& m = r.load[static_cast<size_t>(l)];
      const auto& plus = r.incPlus[static_cast<size_t>(l)];
      QGPU_CHECK(fw.start(late[2], plus));
      for (int q = 1; q <= l + 1; ++q)
        QGPU_CHECK(addSmallConstant(late[2], ctx, m, q, plus[static_cast<size_t>(q - 1)]));
      for (int q = 0; q <= l; ++q) {
        CompareSpec cs;
        cs.op = CompareOp::LtU;
        cs.a = q == 0 ? m : plus[static_cast<size_t>(q - 1)];
        cs.b = s.lanes[static_cast<size_t>(l)].src1;
        cs.bus = r.incCompare[static_cast<size_t>(l)][static_cast<size_t>(q)].first;
        cs.out = r.incCompare[static_cast<size_t>(l)][static_cast<size_t>(q)].second;
        cs.busPrior = cs.outPrior = Prior::Replace;
        QGPU_TRY(rep, buildCompare(late[3], ctx, late[4], ctx, cs));
        (void)rep;
      }
    }

    // ---- atom.cas (old = b ? c : old), by states: along the lanes before l on its word the word
    // is M until a lane k swaps c_k in, then c_k until a later lane swaps its own in. L+5 / L+6:
    // [M_j = b_j] per lane and [c_k = b_j] per pair k < j (logic.h's Eq). L+7: per lane and
    // pattern of the s_kl, the paths (one exclusive AND each, 2^p for p lanes on the word) write
    // the one-hot state (M, or c_k of the last lane that swapped) and, with lane l's own test,
    // whether lane l swaps. L+9 selects old'_l by the state and new_l = c_l on a swap, else old'_l.
    guard.emplace(std::vector<UnitWriter*>{&late[1], &late[2]}, guardOf(kIsCas));
    for (int l = 0; l < kLanes; ++l) {
      auto eqCompare = [&](const Field& a, const std::pair<Field, Field>& f) -> Status {
        CompareSpec cs;
        cs.op = CompareOp::Eq;
        cs.a = a;
        cs.b = s.lanes[static_cast<size_t>(l)].src1;
        cs.bus = f.first;
        cs.out = f.second;
        cs.busPrior = cs.outPrior = Prior::Replace;
        QGPU_TRY(rep, buildCompare(late[1], ctx, late[2], ctx, cs));
        (void)rep;
        return Ok{};
      };
      QGPU_CHECK(eqCompare(r.load[static_cast<size_t>(l)], r.casSelf[static_cast<size_t>(l)]));
      for (int k = 0; k < l; ++k)
        QGPU_CHECK(eqCompare(s.lanes[static_cast<size_t>(k)].src2,
                             r.casPair[static_cast<size_t>(pairIndex(k, l))]));
    }
    guard.reset();  // the states are every token's (their paths hold isCas)
    {
      UnitWriter& u = late[3];
      QGPU_CHECK(fw.start(u, std::vector<Field>(r.casState.begin(), r.casState.end())));
      // Lane j swaps the word in state `from` (0: M, k + 1: c_k): [M_j = b_j] or [c_k = b_j].
      auto swaps = [&](int j, int from) {
        if (from > 0 && s.twin != MemoryStageTwin::CasComparesTheOldWord)
          return Literal{r.casPair[static_cast<size_t>(pairIndex(from - 1, j))].second.at(0), 1};
        return Literal{r.casSelf[static_cast<size_t>(j)].second.at(0), 1};
      };
      struct Swapped {
        Literal test;
        int taken, kept;
      };
      for (int l = 0; l < kLanes; ++l) {
        const Field& state = r.casState[static_cast<size_t>(l)];
        const auto paths = lanePaths(l, kind(kIsCas), 0, [&](int k, int from) {
          return Swapped{swaps(k, from), k + 1, from};
        });
        for (const auto& p : paths) {
          QGPU_CHECK(fw.add(u, p.lits, {{state.at(p.state), two}}));
          QGPU_CHECK(fw.add(u, p.lits + std::vector<Literal>{swaps(l, p.state)},
                            {{state.at(l + 1), two}}));
        }
      }
    }
    // atom.cas's select for lane l (L+9): old'_l = the state's word; new_l = c_l where lane l
    // swaps, else old'_l.
    auto casLane = [&](UnitWriter& u, int l) -> Status {
      const Field& value = r.memrec.value[static_cast<size_t>(l)];
      const Field& old = r.atomOld[static_cast<size_t>(l)];
      const Field& state = r.casState[static_cast<size_t>(l)];
      const Literal swap{state.at(l + 1), 1};
      for (int i = 0; i < kMemoryWord; ++i) {
        QGPU_CHECK(fw.add(u, {swap, Literal{s.lanes[static_cast<size_t>(l)].src2.at(i), 1}},
                          {{value.at(i), two}}));
        for (int from = 0; from <= l; ++from) {
          const Literal at{state.at(from), 1};
          const Literal bit{from == 0 ? r.load[static_cast<size_t>(l)].at(i)
                                      : s.lanes[static_cast<size_t>(from - 1)].src2.at(i),
                            1};
          QGPU_CHECK(fw.add(u, {at, no(swap), bit}, {{value.at(i), two}}));
          if (l > 0) QGPU_CHECK(fw.add(u, {at, bit}, {{old.at(i), two}}));
        }
      }
      return Ok{};
    };

    // ---- atom.dec (old = 0 ∨ old > b ? b : old − 1), by states: along the lanes before l on its
    // word the word is M − n after n lanes until a lane k wraps it to b_k, then b_k − r after r
    // more lanes until a later lane wraps it again. Lane j wraps the word M − n iff [M_j = n] ∨
    // [b_j + n < M_j] (reachable: M ≥ n), and the word b_k − r iff [b_k = r] ∨ [b_j + r < b_k]
    // (reachable: b_k ≥ r) — b_j + n saturated at 2^32 − 1 (M − n > b_j exactly). Each test is
    // one compare with its zero test added at level 2 (exclusive: at a zero word it is false).
    // Nothing before L+3, where the ALU's fields die: L+3 / L+4 the saturated sums (lanes 2, 3 /
    // lane 1); L+4 [b_k = r] (r ≥ 1) and two tests' level 1; L+5 [m_kl = 0], [M_l = n], the
    // other tests' level 1; L+6 their level 2 and the n = 0 / r = 0 tests (le.u on min / max's
    // bus); L+6 / L+7 M_l − q; L+7 b_k − r and the states, as atom.cas's; L+8 the word each lane
    // sees; L+9 the new words.
    // A word of atom.dec's: b_k − r and M_l − q (r, q ≥ 0).
    auto bMinus = [&](int k, int q) {
      return q == 0 ? s.lanes[static_cast<size_t>(k)].src1
                    : r.decBMinus[static_cast<size_t>(k)].slice((q - 1) * kMemoryWord, kMemoryWord);
    };
    auto mMinus = [&](int l, int q) {
      return q == 0 ? r.load[static_cast<size_t>(l)]
                    : r.decMinus[static_cast<size_t>(l)].slice((q - 1) * kMemoryWord, kMemoryWord);
    };
    auto bPlus = [&](int l, int n) {  // min(b_l + n, 2^32 − 1), n ≥ 0
      return n == 0 ? s.lanes[static_cast<size_t>(l)].src1
                    : r.decSat[static_cast<size_t>(l)].slice((n - 1) * kMemoryWord, kMemoryWord);
    };
    // [a < c] ∨ zero: logic.h's lt.u in (level1, level2), the zero test's +2u onto its output.
    auto wrapTest = [&](UnitWriter& level1, UnitWriter& level2, const Field& a, const Field& c,
                        const std::pair<Field, Field>& f, Literal zero) -> Status {
      CompareSpec cs;
      cs.op = CompareOp::LtU;
      cs.a = a;
      cs.b = c;
      cs.bus = f.first;
      cs.out = f.second;
      cs.busPrior = cs.outPrior = Prior::Replace;
      QGPU_TRY(rep, buildCompare(level1, ctx, level2, ctx, cs));
      (void)rep;
      return fw.add(level2, {zero}, {{f.second.at(0), two}});
    };
    guard.emplace(std::vector<UnitWriter*>{&u3, &late[0], &late[1], &late[2], &late[3]},
                  guardOf(kIsDec));
    for (int l = 1; l < kLanes; ++l) {
      UnitWriter& u = l == 1 ? late[0] : u3;
      const Field& sat = r.decSat[static_cast<size_t>(l)];
      QGPU_CHECK(fw.start(u, {sat}));
      for (int n = 1; n <= l; ++n)
        QGPU_CHECK(
            addSaturatingSmall(u, ctx, s.lanes[static_cast<size_t>(l)].src1, n, bPlus(l, n)));
    }
    for (int k = 0; k + 2 < kLanes; ++k) {
      const Field& zero = r.decZeroB[static_cast<size_t>(k)];
      QGPU_CHECK(fw.start(late[0], {zero}));
      for (int q = 1; q + k + 2 <= kLanes; ++q)
        QGPU_CHECK(
            addEqualsSmall(late[0], ctx, s.lanes[static_cast<size_t>(k)].src1, q, zero.at(q - 1)));
    }
    // [m_kl = 0] (L+5): the r = 0 test's zero, on the operand its compare reads (b_k where lanes
    // k, l share a word; else the kind's identity, which [b_k = 0] would not exclude).
    for (int p = 0; p < kSameWordPairs; ++p) {
      QGPU_CHECK(fw.start(late[1], {r.decZeroMask[static_cast<size_t>(p)]}));
      QGPU_CHECK(addEqualsSmall(late[1], ctx, r.addMask[static_cast<size_t>(p)], 0,
                                r.decZeroMask[static_cast<size_t>(p)].at(0)));
    }
    // ¬([a ≤ c] ∧ ¬zero) onto f's output at L+6: le.u on the bus min / max's lt.u of (a, c) wrote
    // at L+5 (operands p < q of lane l's), the zero test's −2u (at zero the compare is true).
    auto wrapTestOnMinMaxBus = [&](int l, int p, int q, const Field& out, Literal zero) -> Status {
      int pair = 0;
      for (int p2 = 0; p2 < p; ++p2) pair += l + 1 - p2;
      pair += q - p - 1;
      CompareSpec cs;
      cs.op = CompareOp::LeU;
      cs.a = p == 0 ? r.load[static_cast<size_t>(l)]
                    : r.addMask[static_cast<size_t>(pairIndex(p - 1, l))];
      cs.b = s.lanes[static_cast<size_t>(l)].src1;
      cs.bus = r.mmCompare[static_cast<size_t>(l)][static_cast<size_t>(pair)].first;
      cs.out = out;
      cs.outPrior = Prior::Replace;
      cs.busWritten = true;
      QGPU_TRY(rep, buildCompare(late[1], ctx, late[2], ctx, cs));
      (void)rep;
      return fw.add(late[2], {zero}, {{out.at(0), -two}});
    };
    // After a wrap: r = 0 on min / max's bus (its operand m_kl is b_k where lanes k, l share a
    // word); r ≥ 1 with compares of their own, the first two at L+4 / L+5, the others L+5 / L+6.
    for (int l = 1, early = 2; l < kLanes; ++l)
      for (int k = 0; k < l; ++k)
        for (int q = 0; q < l - k; ++q) {
          const auto& f = r.decWrapB[static_cast<size_t>(pairIndex(k, l))][static_cast<size_t>(q)];
          if (q == 0) {
            QGPU_CHECK(wrapTestOnMinMaxBus(
                l, 1 + k, l + 1, f.second,
                Literal{r.decZeroMask[static_cast<size_t>(pairIndex(k, l))].at(0), 1}));
            continue;
          }
          const Literal zero{r.decZeroB[static_cast<size_t>(k)].at(q - 1), 1};
          const int at = early-- > 0 ? 0 : 1;
          QGPU_CHECK(wrapTest(late[static_cast<size_t>(at)], late[static_cast<size_t>(at + 1)],
                              bPlus(l, q), s.lanes[static_cast<size_t>(k)].src1, f, zero));
        }
    for (int k = 0; k + 2 < kLanes; ++k) {
      const Field& minus = r.decBMinus[static_cast<size_t>(k)];
      QGPU_CHECK(fw.start(late[3], {minus}));
      for (int q = 1; q + k + 2 <= kLanes; ++q)
        QGPU_CHECK(addSmallConstant(late[3], ctx, s.lanes[static_cast<size_t>(k)].src1, q,
                                    bMinus(k, q), SmallOp::Subtract));
    }
    for (int l = 0; l < kLanes; ++l) {
      const Field& m = r.load[static_cast<size_t>(l)];
      const Field& zeroM = r.decZeroM[static_cast<size_t>(l)];
      QGPU_CHECK(fw.start(late[1], {zeroM}));
      for (int n = 0; n <= l; ++n) QGPU_CHECK(addEqualsSmall(late[1], ctx, m, n, zeroM.at(n)));
      for (int n = 1; n <= l; ++n)
        QGPU_CHECK(wrapTest(late[1], late[2], bPlus(l, n), m,
                            r.decWrapM[static_cast<size_t>(l)][static_cast<size_t>(n)],
                            Literal{zeroM.at(n), 1}));
      // After no earlier lane: [M_l = 0] ∨ [b_l < M_l] on min / max's bus of (M_l, b_l).
      QGPU_CHECK(wrapTestOnMinMaxBus(l, 0, l + 1, r.decWrapM[static_cast<size_t>(l)][0].second,
                                     Literal{zeroM.at(0), 1}));
      if (l == 0) continue;
      const Field& minus = r.decMinus[static_cast<size_t>(l)];
      QGPU_CHECK(fw.start(late[2], {minus}));
      for (int q = 1; q <= l; ++q)
        QGPU_CHECK(addSmallConstant(late[q == 1 && l < 3 ? 2 : 3], ctx, m, q, mMinus(l, q),
                                    SmallOp::Subtract));
    }
    // Lane j's wrap test in the state w of the word it sees.
    auto decWraps = [&](int j, DecWord w) {
      if (w.wrapped && s.twin == MemoryStageTwin::DecIgnoresLanesSinceTheWrap) w.n = 0;
      const auto& tests = w.wrapped ? r.decWrapB[static_cast<size_t>(pairIndex(w.k, j))]
                                    : r.decWrapM[static_cast<size_t>(j)];
      // The n = 0 / r = 0 tests' output is the le.u: the test is its negation.
      return Literal{tests[static_cast<size_t>(w.n)].second.at(0), w.n == 0 ? -1 : 1};
    };
    // The words lane l can see, in decStateIndex's order.
    auto decWords = [](int l) {
      std::vector<DecWord> words;
      for (int n = 0; n <= l; ++n) words.push_back({false, 0, n});
      for (int k = 0; k < l; ++k)
        for (int n = 0; n < l - k; ++n) words.push_back({true, k, n});
      return words;
    };
    guard.reset();  // the states are every token's (their paths hold isDec)
    {
      UnitWriter& u = late[3];
      QGPU_CHECK(fw.start(u, std::vector<Field>(r.decState.begin(), r.decState.end())));
      struct Wrapped {
        Literal test;
        DecWord taken, kept;
      };
      for (int l = 0; l < kLanes; ++l) {
        const Field& state = r.decState[static_cast<size_t>(l)];
        const auto paths = lanePaths(l, kind(kIsDec), DecWord{}, [&](int k, DecWord w) {
          return Wrapped{decWraps(k, w), DecWord{true, k, 0}, DecWord{w.wrapped, w.k, w.n + 1}};
        });
        for (const auto& p : paths) {
          QGPU_CHECK(fw.add(u, p.lits, {{state.at(decStateIndex(l, p.state)), two}}));
          QGPU_CHECK(fw.add(u, p.lits + std::vector<Literal>{decWraps(l, p.state)},
                            {{state.at(decStates(l)), two}}));
        }
      }
      // L+8: the word lane l ≥ 1 sees, by its state.
      guard.emplace(std::vector<UnitWriter*>{&late[4]}, guardOf(kIsDec));
      std::vector<Field> olds(r.decOld.begin() + 1, r.decOld.end());
      QGPU_CHECK(fw.start(late[4], olds));
      for (int l = 1; l < kLanes; ++l) {
        const Field& state = r.decState[static_cast<size_t>(l)];
        for (const DecWord& w : decWords(l)) {
          const Field word = w.wrapped ? bMinus(w.k, w.n) : mMinus(l, w.n);
          for (int i = 0; i < kMemoryWord; ++i)
            QGPU_CHECK(fw.add(late[4],
                              {Literal{state.at(decStateIndex(l, w)), 1}, Literal{word.at(i), 1}},
                              {{r.decOld[static_cast<size_t>(l)].at(i), two}}));
        }
      }
      guard.reset();
    }
    // atom.dec's lane l at L+9: new_l = b_l where lane l wraps, else old'_l − 1 (addMinusOneUnless,
    // off where it wraps or the op is no dec: exclusive, wrap ⟹ isDec); atomOld_l = old'_l.
    auto decLane = [&](UnitWriter& u, int l) -> Status {
      const Field& value = r.memrec.value[static_cast<size_t>(l)];
      const Literal wrap{r.decState[static_cast<size_t>(l)].at(decStates(l)), 1};
      const Field& old = l == 0 ? r.load[0] : r.decOld[static_cast<size_t>(l)];
      QGPU_CHECK(addMinusOneUnless(u, ctx, old, {wrap, no(kind(kIsDec))}, value));
      for (int i = 0; i < kMemoryWord; ++i) {
        QGPU_CHECK(fw.add(u, {wrap, Literal{s.lanes[static_cast<size_t>(l)].src1.at(i), 1}},
                          {{value.at(i), two}}));
        if (l > 0)
          QGPU_CHECK(fw.add(u, {kind(kIsDec), Literal{old.at(i), 1}},
                            {{r.atomOld[static_cast<size_t>(l)].at(i), two}}));
      }
      return Ok{};
    };

    // atom.inc's paths for lane l (L+9): along the lanes before l on its word the word is
    // unwrapped (M + i after i lanes) until a lane k wraps it (W_k(i): M + i ≥ b_k), then small
    // (t: 0 after a wrap, t + 1 or 0 by Z_k(t) = [b_k ≤ t]). Each path ends in old'_l = M_l + p or
    // t, and lane l's own step gives new_l (0 on a wrap, else old'_l + 1).
    auto incLane = [&](UnitWriter& u, int l) -> Status {
      const Field& value = r.memrec.value[static_cast<size_t>(l)];
      const Field& old = r.atomOld[static_cast<size_t>(l)];
      auto plusBit = [&](int q, int i) {  // bit i of M_l + q
        return Literal{q == 0 ? r.load[static_cast<size_t>(l)].at(i)
                              : r.incPlus[static_cast<size_t>(l)][static_cast<size_t>(q - 1)].at(i),
                       1};
      };
      auto wraps = [&](int k, int q) {  // W_k(q) = ¬[M_k + q < b_k]
        if (s.twin == MemoryStageTwin::IncWrapsAtTheOldWord) q = 0;
        return Literal{r.incCompare[static_cast<size_t>(k)][static_cast<size_t>(q)].second.at(0),
                       -1};
      };
      auto smallWraps = [&](int k, int tv) {  // Z_k(t)
        return Literal{r.incSmall[static_cast<size_t>(k)].at(tv), 1};
      };
      struct Word {
        bool wrapped = false;
        int n = 0;  // lanes so far (unwrapped) or the small word t (wrapped)
      };
      struct Wrapped {
        Literal test;
        Word taken, kept;
      };
      const auto paths = lanePaths(l, kind(kIsInc), Word{}, [&](int k, Word w) {
        return Wrapped{w.wrapped ? smallWraps(k, w.n) : wraps(k, w.n), Word{true, 0},
                       Word{w.wrapped, w.n + 1}};
      });
      for (const auto& p : paths) {
        const Word& w = p.state;
        if (!w.wrapped) {
          for (int i = 0; i < kMemoryWord; ++i) {
            if (l > 0)
              QGPU_CHECK(
                  fw.add(u, p.lits + std::vector<Literal>{plusBit(w.n, i)}, {{old.at(i), two}}));
            QGPU_CHECK(fw.add(u,
                              p.lits + std::vector<Literal>{no(wraps(l, w.n)), plusBit(w.n + 1, i)},
                              {{value.at(i), two}}));
          }
          continue;
        }
        std::vector<std::pair<int, double>> oldOut, newOut;
        for (int i = 0; i < kMemoryWord; ++i) {
          if ((static_cast<uint32_t>(w.n) >> i) & 1u) oldOut.push_back({old.at(i), two});
          if ((static_cast<uint32_t>(w.n + 1) >> i) & 1u) newOut.push_back({value.at(i), two});
        }
        if (!oldOut.empty()) QGPU_CHECK(fw.add(u, p.lits, oldOut));
        QGPU_CHECK(fw.add(u, p.lits + std::vector<Literal>{no(smallWraps(l, w.n))}, newOut));
      }
      return Ok{};
    };
    {
      // Each selected kind replaces the words where it executes — its own cancels and −u, guarded
      // by its kind dim (UnitGuard) — so that elsewhere the chain's words stay without a unit, and
      // no two kinds' writers act at one token (circuit/pack.h may place them in different layers).
      UnitWriter& u = late[5];
      std::vector<Field> outs(r.memrec.value.begin(), r.memrec.value.end());
      outs.insert(outs.end(), r.atomOld.begin() + 1, r.atomOld.end());
      auto select = [&](int k, const std::function<Status(int)>& writeLane) -> Status {
        const GuardScope guard({&u}, guardOf(k));
        QGPU_CHECK(fw.start(u, outs));
        for (int l = 0; l < kLanes; ++l) QGPU_CHECK(writeLane(l));
        return Ok{};
      };
      // atom.add and min / max: the new word from the sum or the selected operand, the old one
      // from the nearest earlier lane's on the word (atomOld[0] is load[0]).
      auto bySources = [&](int k, const std::array<Field, kLanes>& words) {
        return [&, k](int l) -> Status {
          const Field& value = r.memrec.value[static_cast<size_t>(l)];
          const Field& old = r.atomOld[static_cast<size_t>(l)];
          const std::vector<Source> src = sourcesOf(l, words);
          for (int i = 0; i < kMemoryWord; ++i) {
            QGPU_CHECK(fw.add(u, {kind(k), Literal{words[static_cast<size_t>(l)].at(i), 1}},
                              {{value.at(i), two}}));
            if (l == 0) continue;
            for (const Source& so : src)
              QGPU_CHECK(fw.add(u, std::vector<Literal>{kind(k), so.bitOf(i)} + so.pick,
                                {{old.at(i), two}}));
          }
          return Ok{};
        };
      };
      QGPU_CHECK(select(kIsAdd, bySources(kIsAdd, r.addNew)));
      QGPU_CHECK(select(kIsMinMax, bySources(kIsMinMax, r.mmNew)));
      QGPU_CHECK(select(kIsInc, [&](int l) { return incLane(u, l); }));
      QGPU_CHECK(select(kIsCas, [&](int l) { return casLane(u, l); }));
      QGPU_CHECK(select(kIsDec, [&](int l) { return decLane(u, l); }));
    }
  }
  r.units[2] = u2.used();
  r.units[3] = u3.used();
  for (int j = 4; j < layers; ++j)
    r.units[static_cast<size_t>(j)] = late[static_cast<size_t>(j - 4)].used();
  return r;
}

}  // namespace qgpu::circuit
