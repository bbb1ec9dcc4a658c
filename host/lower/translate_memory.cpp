// qgpu/host/lower/translate_memory.cpp — ld (ld.param included), st and atom. A 64-bit address
// that is not provably below 2^31 is checked: its exact 64-bit value is formed and, if the high
// word is not zero, the access goes to kFaultAddress, which the machine's bounds check rejects
// (docs/lowering.md, "Sound narrowing"). A generic access goes to one space when the address's
// provenance (genericSpaces) says which, and otherwise to both, each copy guarded by the window
// test (docs/lowering.md, "Generic addresses"). A .local access (ld/st.local, or generic through
// a local-window pointer) reads and writes the thread's frame words, which are its first spill
// slots (ldl/stl; docs/lowering.md, "Local memory").
#include <algorithm>

#include "host/lower/translate.h"

namespace qgpu::lower::tr {
namespace {

using machine::Op;
using machine::Space;
using ptx::Opcode;
using ptx::OperandKind;
using ptx::Type;

// An unguarded predicate op (pand, pnot, ...) into a new predicate: the pure tests that are later
// and'ed with the instruction's guard. Returns the predicate.
int predOp(Emitter& em, Op op, int x, int y) {
  VInstr p;
  p.op = op;
  p.dstPred = em.newPred();
  p.psrc = {x, y};
  em.emitGuarded(p, kNone, false);
  return p.dstPred;
}

// The address of a memory access as (base, byte offset) for the machine's `[base+offset]`.
Expected<std::pair<VOperand, int32_t>> address(Ctx& c, const ptx::Operand& a) {
  if (a.kind != OperandKind::Address) return c.invalid("expected an address operand");
  auto off = static_cast<int32_t>(a.imm);
  if (a.imm != off) return c.unsupported("address offset out of 32-bit range");
  if (!a.addrIsReg) {
    if (a.name.empty()) return std::make_pair(VOperand::i(0), off);
    auto it = c.shared.offset.find(a.name);
    if (it != c.shared.offset.end()) return std::make_pair(VOperand::i(it->second), off);
    auto lit = c.shared.localOffset.find(a.name);  // ld/st.local [depot+off]: the frame offset
    if (lit != c.shared.localOffset.end()) return std::make_pair(VOperand::i(lit->second), off);
    return c.unsupported("address of `" + a.name + "`");
  }
  if (c.regBits(a) < 32) return c.invalid("address register narrower than 32 bits");
  // A known local address (frameConstants) in a local access: decided at lowering time.
  const auto space = c.in->mods.space;
  const bool local = space == ptx::StateSpace::Local ||
                     ((space == ptx::StateSpace::None || space == ptx::StateSpace::Generic) &&
                      c.vals.generic(a.reg) == kGenLocal);
  if (local && a.reg < c.frame.size() && c.frame[a.reg])
    return std::make_pair(VOperand::i(static_cast<uint32_t>(*c.frame[a.reg])), off);
  VOperand l = VOperand::r(c.vals.srcLo(a.reg));
  int b = c.regBits(a) == 64 ? c.vals.bound(a.reg) : 0;
  // Below 2^31, the 32-bit sum with a 32-bit offset wraps exactly when the 64-bit one is negative.
  if (b <= 31 || (b <= 32 && off == 0)) return std::make_pair(l, off);
  // A shared-window pointer below 2^31 + 2^30: the low word decides the access (windowExactAddresses).
  if (c.vals.windowExact(static_cast<size_t>(c.in - c.f.body.data()))) return std::make_pair(l, off);
  Emitter& em = c.em;
  QGPU_TRY(h, c.valHi(a));
  if (off != 0) {  // (h:l) + sext(off): carry out of the low word into the high word
    auto offLo = static_cast<uint32_t>(off);
    uint32_t offHi = off < 0 ? 0xffffffffu : 0u;
    int sum = em.tmp(), cv = em.tmp(), sumHi = em.tmp();
    int carry = em.newPred();
    em.alu(Op::Add, sum, l, VOperand::i(offLo));
    em.cmp(Op::SetLtU, carry, VOperand::r(sum), VOperand::i(offLo));
    em.selp(cv, VOperand::i(offHi + 1), VOperand::i(offHi), carry);
    em.alu(Op::Add, sumHi, h, VOperand::r(cv));
    l = VOperand::r(sum);
    h = VOperand::r(sumHi);
  }
  int outside = em.newPred();
  int checked = em.tmp();
  em.cmp(Op::SetNe, outside, h, VOperand::i(0));
  em.selp(checked, VOperand::i(kFaultAddress), l, outside);
  return std::make_pair(VOperand::r(checked), 0);
}

// The first element access of a split ld/st.v2/.v4 (mods.vecBytes = V, the vector's size): a GPU
// requires the vector's address to be a multiple of V and faults on the whole access otherwise
// ("misaligned address"), before any element is read or written. Here the first element's address
// becomes kFaultAddress in every lane whose vector address is misaligned, so that op faults
// (op-level: no lane acts) and no element access runs; aligned lanes keep their address. A
// constant address is decided here. Element accesses after the first need no check: their
// addresses are the first's plus k·size, aligned whenever the vector is.
Expected<std::pair<VOperand, int32_t>> alignVector(Ctx& c, std::pair<VOperand, int32_t> a, uint32_t vecBytes) {
  if (vecBytes <= 1) return a;
  const auto mask = vecBytes - 1;  // V is 2, 4, 8 or 16
  if (a.first.isImm()) {
    const uint32_t addr = a.first.imm + static_cast<uint32_t>(a.second);
    if ((addr & mask) == 0) return a;
    return std::make_pair(VOperand::i(kFaultAddress), 0);
  }
  Emitter& em = c.em;
  VOperand addr = a.first;
  if (a.second != 0) {
    int sum = em.tmp();
    em.alu(Op::Add, sum, a.first, VOperand::i(static_cast<uint32_t>(a.second)));
    addr = VOperand::r(sum);
  }
  int low = em.tmp(), checked = em.tmp();
  int misaligned = em.newPred();
  em.alu(Op::And, low, addr, VOperand::i(mask));
  em.cmp(Op::SetNe, misaligned, VOperand::r(low), VOperand::i(0));
  em.selp(checked, VOperand::i(kFaultAddress), addr, misaligned);
  return std::make_pair(VOperand::r(checked), 0);
}

// Where the memory ops of one access go. Static: one op in `space`, its offset plus `adjust`
// (kSharedWindow for a shared access through a generic address: the machine adds offsets mod
// 2^32, so [g + off + 2^31] is shared byte g + off - 2^31). Dynamic: a shared copy of every op
// (offset + kSharedWindow) under sharedGuard and a global copy under globalGuard; the guards are
// the window test, and'ed with the instruction's own guard, so each executing lane runs exactly
// one copy and the other copy neither acts nor faults in it (docs/machine.md §4).
struct Where {
  Space space = Space::Global;
  uint32_t adjust = 0;
  bool dynamic = false;
  // A .local access (ld/st.local, or generic through a local-window pointer): every op's address
  // minus localAdjust (kLocalWindow for a generic one) is a frame byte offset, whose word is
  // the thread's spill slot (localAccess).
  bool local = false;
  uint32_t localAdjust = 0;
  int sharedGuard = kNone, globalGuard = kNone;
  bool sharedNeg = false, globalNeg = false;
};

// The space test of a dynamic access to [base + off]: t = base + off + 2^31 (mod 2^32) is the
// shared byte address and the lane's address is in the window iff t < kSharedWindowSpan (its high
// word is zero: address() sent a non-zero one to kFaultAddress, outside the window, which then
// faults in global memory as ptxeval's does). Computed unguarded: pure ops, combined with the
// guard below, so no predicate is read where it was not written.
Where dynamicWhere(Ctx& c, std::pair<VOperand, int32_t> a) {
  Emitter& em = c.em;
  Where w;
  w.dynamic = true;
  int t = em.tmp();
  int inside = em.newPred();
  VInstr sum;
  sum.op = Op::Add;
  sum.dst = t;
  sum.src = {a.first, VOperand::i(static_cast<uint32_t>(a.second) + kSharedWindow), {}};
  em.emitGuarded(sum, kNone, false);
  VInstr test;
  test.op = Op::SetLtU;
  test.dstPred = inside;
  test.src = {VOperand::r(t), VOperand::i(kSharedWindowSpan), {}};
  em.emitGuarded(test, kNone, false);
  if (em.guard() == kNone) {
    w.sharedGuard = w.globalGuard = inside;
    w.globalNeg = true;
    return w;
  }
  auto pop = [&](Op op, int x, int y) { return predOp(em, op, x, y); };
  int g = em.guardNeg() ? pop(Op::PNot, em.guard(), kNone) : em.guard();
  w.sharedGuard = pop(Op::PAnd, g, inside);
  w.globalGuard = pop(Op::PAnd, g, pop(Op::PNot, inside, kNone));
  return w;
}

// Where the access of c.in to address a goes: its state space, or for a generic access the
// provenance of its address register (genericSpaces): shared-window pointers only -> shared,
// no shared-window pointer -> global (integers included), either -> dynamic. [sym] of a .shared
// variable is a shared address in every space; [imm] is decided by its value.
Expected<Where> where(Ctx& c, std::pair<VOperand, int32_t> a) {
  const auto& in = *c.in;
  const ptx::Operand& o = in.srcs[0];
  Where w;
  if (in.mods.space == ptx::StateSpace::Shared) w.space = Space::Shared;
  if (in.mods.space == ptx::StateSpace::Local) {
    w.space = Space::Shared;
    w.local = true;
    return w;
  }
  if (in.mods.space != ptx::StateSpace::Generic && in.mods.space != ptx::StateSpace::None) return w;
  uint8_t kind = 0;
  if (!o.addrIsReg) {
    if (!o.name.empty()) {  // address() accepts only .shared symbols here (ptx::verify: generic [sym])
      w.space = Space::Shared;
      return w;
    }
    const uint64_t g = static_cast<uint64_t>(o.imm);
    kind = g >= kSharedWindow && g - kSharedWindow < kSharedWindowSpan ? kGenShared
           : g >= kLocalWindow && g - kLocalWindow < kLocalWindowSpan  ? kGenLocal
                                                                       : kGenInteger;
  } else {
    kind = c.vals.generic(o.reg);
  }
  if (kind == kGenLocal) {
    w.space = Space::Shared;
    w.local = true;
    w.localAdjust = kLocalWindow;
    return w;
  }
  if (kind & kGenLocal)
    return c.unsupported("generic address `" + (o.addrIsReg ? c.f.regs[o.reg].name : std::to_string(o.imm)) +
                         "` may be a .local pointer or another one (a local generic access must be local "
                         "on every path)");
  if ((kind & kGenShared) == 0) return w;
  if (kind == kGenShared) {
    w.space = Space::Shared;
    w.adjust = kSharedWindow;
    return w;
  }
  return dynamicWhere(c, a);
}

// A local access (docs/lowering.md, "Local memory"): frame byte a = v's base + offset -
// localAdjust; frame word a / 4 of the executing thread is its spill slot a / 4, which only the
// machine's ldl/stl reach (shared-memory ops are bounded by sharedWords). A frame offset that is
// not word-aligned or lies at or past the frame's end (negative ones included, mod 2^32) faults:
// a load from kFaultAddress runs first, under the instruction's guard and the test, so nothing
// moves, as ptxeval's out-of-range or misaligned access ends its run. A constant offset is
// decided here: one ldl/stl (or the fault). A register offset selects among the F slots: a load
// reads every slot and keeps the matching one (3F ops), a store writes the matching slot under
// (a == 4w) (2F ops; 3F guarded), exact per thread since slots are per lane.
void localAccess(Ctx& c, const Where& w, const VInstr& v) {
  Emitter& em = c.em;
  const uint32_t slots = c.shared.localWords;
  const uint32_t k = static_cast<uint32_t>(v.offset) - w.localAdjust;
  const bool isLoad = v.op == Op::Ld;
  auto fault = [&](int guard, bool neg) {
    VInstr f;
    f.op = Op::Ld;
    f.dst = em.tmp();
    f.src = {VOperand::i(kFaultAddress), {}, {}};
    f.space = Space::Shared;
    em.emitGuarded(f, guard, neg);
  };
  auto slotOp = [&](uint32_t slot, int guard, bool neg, int dst) {
    VInstr l;
    l.op = isLoad ? Op::LdLocal : Op::StLocal;
    l.dst = isLoad ? dst : kNone;
    if (!isLoad) l.src = {v.src[1], {}, {}};
    l.offset = static_cast<int32_t>(slot);
    em.emitGuarded(l, guard, neg);
  };
  if (v.src[0].isImm()) {
    const uint32_t a = v.src[0].imm + k;
    if (a % 4 != 0 || a >= 4 * slots) fault(em.guard(), em.guardNeg());
    else slotOp(a / 4, em.guard(), em.guardNeg(), v.dst);
    return;
  }
  VOperand a = v.src[0];
  if (k != 0) {
    int sum = em.tmp();
    em.alu(Op::Add, sum, a, VOperand::i(k));
    a = VOperand::r(sum);
  }
  // Unguarded pure tests, and'ed with the instruction's guard (as dynamicWhere does).
  auto pop = [&](Op op, int x, int y) { return predOp(em, op, x, y); };
  auto cmp = [&](Op op, VOperand x, VOperand y) {
    VInstr t;
    t.op = op;
    t.dstPred = em.newPred();
    t.src = {x, y, {}};
    em.emitGuarded(t, kNone, false);
    return t.dstPred;
  };
  auto withGuard = [&](int p) {
    if (em.guard() == kNone) return p;
    return pop(Op::PAnd, em.guardNeg() ? pop(Op::PNot, em.guard(), kNone) : em.guard(), p);
  };
  int low = em.tmp();
  VInstr andLow;
  andLow.op = Op::And;
  andLow.dst = low;
  andLow.src = {a, VOperand::i(3), {}};
  em.emitGuarded(andLow, kNone, false);
  int bad = pop(Op::POr, cmp(Op::SetNe, VOperand::r(low), VOperand::i(0)),
                cmp(Op::SetGeU, a, VOperand::i(4 * slots)));
  fault(withGuard(bad), false);
  if (isLoad) {
    int value = em.tmp();
    slotOp(0, em.guard(), em.guardNeg(), value);
    for (uint32_t s = 1; s < slots; ++s) {
      int t = em.tmp(), next = em.tmp();
      slotOp(s, em.guard(), em.guardNeg(), t);
      int hit = cmp(Op::SetEq, a, VOperand::i(4 * s));
      em.selp(next, VOperand::r(t), VOperand::r(value), hit);
      value = next;
    }
    em.alu(Op::Mov, v.dst, VOperand::r(value));
    return;
  }
  for (uint32_t s = 0; s < slots; ++s) slotOp(s, withGuard(cmp(Op::SetEq, a, VOperand::i(4 * s))), false, kNone);
}

// Emits memory op v where w says. sharedOnly: only its shared copy (a probe of shared memory).
void access(Ctx& c, const Where& w, VInstr v, bool sharedOnly = false) {
  if (w.local) {  // word ld/st only: load() and store() refuse sub-word local accesses
    localAccess(c, w, v);
    return;
  }
  if (!w.dynamic) {
    if (sharedOnly && w.space != Space::Shared) return;
    v.space = w.space;
    v.offset = static_cast<int32_t>(static_cast<uint32_t>(v.offset) + w.adjust);
    c.em.emit(v);
    return;
  }
  VInstr s = v;
  s.space = Space::Shared;
  s.offset = static_cast<int32_t>(static_cast<uint32_t>(v.offset) + kSharedWindow);
  c.em.emitGuarded(s, w.sharedGuard, w.sharedNeg);
  if (sharedOnly) return;
  v.space = Space::Global;
  c.em.emitGuarded(v, w.globalGuard, w.globalNeg);
}

// The high half of a value loaded as type t: its sign, or zero.
void loadedHi(Ctx& c, Dest& d, Type t) {
  if (!d.wantsHi()) return;
  if (typeSigned(t)) c.em.alu(Op::ShrS, d.hi(), VOperand::r(d.lo), VOperand::i(31));
  else c.writeHi(d, VOperand::i(0));
}

// ---- 64-bit accesses: two word accesses, the low word at the lower address (little-endian) ----
// The alignment the first access of an ld/st checks: a split vector's size (mods.vecBytes), and
// 8 for a 64-bit element, which a GPU requires of every 8-byte access ("misaligned address").
uint32_t alignment(const ptx::Instruction& in, Type t) {
  uint32_t v = in.mods.vecBytes;
  return typeBits(t) == 64 ? std::max<uint32_t>(v, 8) : v;
}

// The high word's address: the low word's plus 4 (mod 2^32, as the machine adds offsets).
std::pair<VOperand, int32_t> highWord(std::pair<VOperand, int32_t> a) {
  return {a.first, static_cast<int32_t>(static_cast<uint32_t>(a.second) + 4u)};
}

VInstr memOp(Op op, int dst, std::pair<VOperand, int32_t> a, VOperand b = {}) {
  VInstr v;
  v.op = op;
  v.dst = dst;
  v.src = {a.first, b, {}};
  v.offset = a.second;
  return v;
}

// Before a 64-bit store or atomic writes its low word: a GPU's 8-byte access faults as a whole,
// so the high word must not be able to fault after the low one moved. The address is 8-aligned
// (alignVector) or kFaultAddress (whose low access faults first). In global memory (504 bytes =
// 63 × 8) an aligned low word in range has its high word in range; in shared memory of an odd
// number of words the last word's partner lies outside, so the high word is first probed by a
// load (no effect; it faults before anything moved).
void probeHigh(Ctx& c, const Where& w, std::pair<VOperand, int32_t> a) {
  // A local frame of an odd number of words: its last word's partner lies past the frame.
  if ((w.local ? c.shared.localWords : c.shared.words) % 2 == 0) return;
  access(c, w, memOp(Op::Ld, c.em.tmp(), highWord(a)), /*sharedOnly=*/true);
}

// ld.{u,s,b}64: the low word into a temporary first (the address may be the destination's own
// low vreg), the high word into the destination's high vreg; both are always loaded, so the
// access faults whenever either word is outside memory.
Status load64(Ctx& c, Dest& d, std::pair<VOperand, int32_t> a, const Where& w) {
  if (c.regBits(c.in->dsts[0]) != 64) return c.invalid("64-bit load into a register narrower than 64 bits");
  Emitter& em = c.em;
  int lo = em.tmp();
  access(c, w, memOp(Op::Ld, lo, a));
  access(c, w, memOp(Op::Ld, d.wantsHi() ? d.hi() : em.tmp(), highWord(a)));
  em.alu(Op::Mov, d.lo, VOperand::r(lo));
  return Ok{};
}

Status ldParam(Ctx& c) {
  // An entry parameter: its value is known at lowering time. An 8/16-bit parameter (`char`,
  // `short`, `bool` by value) is read by ld.param.u8/s8/u16/s16 of its own width: the low bits,
  // extended as the load's type says, then normalised to the destination's width (a 16-bit
  // register holds its value zero-extended).
  const auto& in = *c.in;
  if (in.srcs.size() != 1 || in.types.size() != 1) return c.invalid("ld.param needs one address and one type");
  const auto& a = in.srcs[0];
  auto width = c.f.paramBits.find(a.name);
  if (!c.f.params.count(a.name) || width == c.f.paramBits.end() || in.dsts.size() != 1)
    return c.invalid("ld.param of an unknown parameter");
  // The value, extended per the load's type (ld.param.s8 of a .u8 char, ld.param.s16 into a
  // 32-bit register); a load wider than the parameter reads past it.
  std::optional<uint64_t> v = paramValue(c.f, in);
  if (!v)
    return c.unsupported("ld.param of " + std::to_string(typeBits(in.types[0])) + " bits" +
                         (a.imm != 0 ? " at byte offset " + std::to_string(a.imm) : std::string()) + " from a " +
                         std::to_string(width->second) + "-bit parameter");
  QGPU_TRY(d, c.dest(in.dsts[0]));
  uint32_t lo = static_cast<uint32_t>(*v);
  if (c.regBits(in.dsts[0]) == 16) lo &= 0xffff;  // 16-bit registers hold their value zero-extended
  c.em.alu(Op::Mov, d.lo, VOperand::i(lo));
  c.writeHi(d, VOperand::i(static_cast<uint32_t>(*v >> 32)));
  return Ok{};
}

Status load(Ctx& c, Type t) {
  const auto& in = *c.in;
  Emitter& em = c.em;
  if (in.dsts.size() != 1 || in.srcs.size() != 1) return c.invalid("ld needs one destination and one address");
  QGPU_TRY(a0, address(c, in.srcs[0]));
  QGPU_TRY(a, alignVector(c, a0, alignment(in, t)));
  QGPU_TRY(w, where(c, a));
  QGPU_TRY(d, c.dest(in.dsts[0]));
  if (typeBits(t) == 64) return load64(c, d, a, w);
  if (typeBits(t) == 8 || typeBits(t) == 16) {
    // A sub-word load from word memory: load the aligned word and extract the field
    // (little-endian: byte k of the word is bits 8k..8k+7). PTX requires natural alignment and a
    // GPU faults on an odd halfword address: clearing only bit 1 keeps bit 0, so an odd halfword
    // address loads from an odd word address, which the machine's bounds check rejects (FAULT).
    const bool half = typeBits(t) == 16;
    int addr = em.tmp(), aligned = em.tmp(), pos = em.tmp(), word = em.tmp();
    em.alu(Op::Add, addr, a.first, VOperand::i(static_cast<uint32_t>(a.second)));
    em.alu(Op::And, aligned, VOperand::r(addr), VOperand::i(half ? ~2u : ~3u));
    int low = em.tmp();
    em.alu(Op::And, low, VOperand::r(addr), VOperand::i(3));
    em.alu(Op::Shl, pos, VOperand::r(low), VOperand::i(3));
    VInstr v;
    v.op = Op::Ld;
    v.dst = word;
    v.src = {VOperand::r(aligned), {}, {}};
    access(c, w, v);
    auto len = VOperand::i(static_cast<uint32_t>(typeBits(t)));
    if (typeSigned(t) && c.regBits(in.dsts[0]) == 16) {
      int x = em.tmp();
      em.alu(Op::BfeS, x, VOperand::r(word), VOperand::r(pos), len);
      em.alu(Op::And, d.lo, VOperand::r(x), VOperand::i(0xffff));
    } else {
      em.alu(typeSigned(t) ? Op::BfeS : Op::BfeU, d.lo, VOperand::r(word), VOperand::r(pos), len);
    }
    loadedHi(c, d, t);
    return Ok{};
  }
  if (typeBits(t) != 32) return c.unsupported(std::string("ld of type .") + ptx::typeName(t) + " (only 8-, 16-, 32- and 64-bit loads)");
  if (c.regBits(in.dsts[0]) == 16) return c.unsupported("32-bit load into a 16-bit register");
  VInstr v;
  v.op = Op::Ld;
  v.dst = d.lo;
  v.src = {a.first, {}, {}};
  v.offset = a.second;
  access(c, w, v);
  loadedHi(c, d, t);
  return Ok{};
}

// An 8/16-bit local store: the thread's own slot is read, the field replaced, the slot written
// (exact: no other lane shares a slot, unlike shared words, which need the lane-serial st.b8).
// An odd halfword address keeps bit 0 in the word address, so the slot load faults (misaligned),
// as a sub-word shared store does.
Status localSubWordStore(Ctx& c, const Where& w, std::pair<VOperand, int32_t> a, VOperand value, int bits) {
  Emitter& em = c.em;
  const uint32_t mask = bits == 8 ? 0xffu : 0xffffu;
  int addr = em.tmp(), aligned = em.tmp(), low = em.tmp(), pos = em.tmp(), word = em.tmp();
  int field = em.tmp(), shifted = em.tmp(), hole = em.tmp(), inverse = em.tmp(), kept = em.tmp(), merged = em.tmp();
  em.alu(Op::Add, addr, a.first, VOperand::i(static_cast<uint32_t>(a.second)));
  em.alu(Op::And, aligned, VOperand::r(addr), VOperand::i(bits == 16 ? ~2u : ~3u));
  em.alu(Op::And, low, VOperand::r(addr), VOperand::i(3));
  em.alu(Op::Shl, pos, VOperand::r(low), VOperand::i(3));
  access(c, w, memOp(Op::Ld, word, {VOperand::r(aligned), 0}));
  em.alu(Op::And, field, value, VOperand::i(mask));
  em.alu(Op::Shl, shifted, VOperand::r(field), VOperand::r(pos));
  em.alu(Op::Shl, hole, VOperand::i(mask), VOperand::r(pos));
  em.alu(Op::Not, inverse, VOperand::r(hole));
  em.alu(Op::And, kept, VOperand::r(word), VOperand::r(inverse));
  em.alu(Op::Or, merged, VOperand::r(kept), VOperand::r(shifted));
  access(c, w, memOp(Op::St, kNone, {VOperand::r(aligned), 0}, VOperand::r(merged)));
  return Ok{};
}

Status store(Ctx& c, Type t) {
  const auto& in = *c.in;
  const int bits = typeBits(t);
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    return c.unsupported(std::string("st of type .") + ptx::typeName(t) + " (only 8-, 16-, 32- and 64-bit stores)");
  if (in.srcs.size() != 2) return c.invalid("st needs an address and a value");
  QGPU_TRY(a0, address(c, in.srcs[0]));
  QGPU_TRY(a, alignVector(c, a0, alignment(in, t)));
  QGPU_TRY(w, where(c, a));
  QGPU_TRY(value, c.val(in.srcs[1], 32));
  if (w.local && bits < 32) return localSubWordStore(c, w, a, value, bits);
  if (bits == 64) {  // the low word at the lower address, then the high word
    if (in.srcs[1].kind == OperandKind::Reg && c.regBits(in.srcs[1]) != 64)
      return c.invalid("64-bit store of a register narrower than 64 bits");
    QGPU_TRY(high, c.valHi(in.srcs[1]));
    probeHigh(c, w, a);
    access(c, w, memOp(Op::St, kNone, a, value));
    access(c, w, memOp(Op::St, kNone, highWord(a), high));
    return Ok{};
  }
  VInstr v;
  // A sub-word store is the machine's lane-serial st.b8/st.b16 (docs/machine.md §4), never a word
  // load / insert / word store, which would lose the other lanes' bytes of the same word.
  v.op = bits == 8 ? Op::StB8 : bits == 16 ? Op::StB16 : Op::St;
  v.src = {a.first, value, {}};
  v.offset = a.second;
  access(c, w, v);
  return Ok{};
}

// atom.{add,exch,and,or,xor}.{u64,b64,s64}: one 32-bit atomic per word, the low word's first, in
// one block (docs/lowering.md, "64-bit atomics": one warp runs a whole block per step and the
// lanes act in lane order in both ops, so the old values each lane gets and the final memory are
// those of lane-serial 64-bit atomics). add: the high word adds b's high word plus the carry out
// of the lane's own low add, old_lo + b_lo >= 2^32, i.e. (old_lo + b_lo) mod 2^32 < b_lo.
Status atom64(Ctx& c) {
  const auto& in = *c.in;
  const std::string name = std::string("atom.") + ptx::atomOpName(in.mods.atom) + "." + ptx::typeName(in.types[0]);
  Op op;
  switch (in.mods.atom) {
    case ptx::AtomOp::Add: op = Op::AtomAdd; break;
    case ptx::AtomOp::And: op = Op::AtomAnd; break;
    case ptx::AtomOp::Or: op = Op::AtomOr; break;
    case ptx::AtomOp::Xor: op = Op::AtomXor; break;
    case ptx::AtomOp::Exch: op = Op::AtomExch; break;
    default:
      return c.unsupported(name + " (64-bit atomics: add, exch, and, or, xor only; a 64-bit " +
                           ptx::atomOpName(in.mods.atom) + " does not split into one atomic per word)");
  }
  if (in.dsts.size() != 1 || in.srcs.size() != 2) return c.invalid("wrong operand count for atom");
  if (c.regBits(in.dsts[0]) != 64) return c.invalid("64-bit atom into a register narrower than 64 bits");
  QGPU_TRY(a0, address(c, in.srcs[0]));
  QGPU_TRY(a, alignVector(c, a0, 8));
  QGPU_TRY(w, where(c, a));
  if (w.local) return c.unsupported("atomic on a .local address (PTX has atomics on .global and .shared only)");
  QGPU_TRY(d, c.dest(in.dsts[0]));
  QGPU_TRY(bl, c.val(in.srcs[1], 32));
  QGPU_TRY(bh, c.valHi(in.srcs[1]));
  Emitter& em = c.em;
  probeHigh(c, w, a);
  int oldLo = em.tmp();  // d.lo may be an address or operand vreg: written last
  access(c, w, memOp(op, oldLo, a, bl));
  VOperand high = bh;
  if (op == Op::AtomAdd) {
    int sum = em.tmp(), cv = em.tmp(), hb = em.tmp();
    int carry = em.newPred();
    em.alu(Op::Add, sum, VOperand::r(oldLo), bl);
    em.cmp(Op::SetLtU, carry, VOperand::r(sum), bl);
    em.selp(cv, VOperand::i(1), VOperand::i(0), carry);
    em.alu(Op::Add, hb, bh, VOperand::r(cv));
    high = VOperand::r(hb);
  }
  access(c, w, memOp(op, d.wantsHi() ? d.hi() : em.tmp(), highWord(a), high));
  em.alu(Op::Mov, d.lo, VOperand::r(oldLo));
  return Ok{};
}

Status atom(Ctx& c, Type t) {
  const auto& in = *c.in;
  if (typeBits(t) == 64) return atom64(c);
  if (typeBits(t) != 32) return c.unsupported(std::string("atom of type .") + ptx::typeName(t) + " (only 32-bit integers)");
  bool sgn = typeSigned(t);
  Op op;
  int nsrc = 2;
  switch (in.mods.atom) {
    case ptx::AtomOp::Add: op = Op::AtomAdd; break;
    case ptx::AtomOp::Min: op = sgn ? Op::AtomMinS : Op::AtomMinU; break;
    case ptx::AtomOp::Max: op = sgn ? Op::AtomMaxS : Op::AtomMaxU; break;
    case ptx::AtomOp::And: op = Op::AtomAnd; break;
    case ptx::AtomOp::Or: op = Op::AtomOr; break;
    case ptx::AtomOp::Xor: op = Op::AtomXor; break;
    case ptx::AtomOp::Exch: op = Op::AtomExch; break;
    case ptx::AtomOp::Inc: op = Op::AtomInc; break;
    case ptx::AtomOp::Dec: op = Op::AtomDec; break;
    case ptx::AtomOp::Cas: op = Op::AtomCas; nsrc = 3; break;
    default: return c.unsupported(std::string("atom.") + ptx::atomOpName(in.mods.atom));
  }
  if (in.dsts.size() != 1 || static_cast<int>(in.srcs.size()) != nsrc) return c.invalid("wrong operand count for atom");
  QGPU_TRY(a, address(c, in.srcs[0]));
  QGPU_TRY(w, where(c, a));
  if (w.local) return c.unsupported("atomic on a .local address (PTX has atomics on .global and .shared only)");
  QGPU_TRY(d, c.dest(in.dsts[0]));
  VInstr v;
  v.op = op;
  v.dst = d.lo;
  v.offset = a.second;
  v.src[0] = a.first;
  for (int k = 1; k < nsrc; ++k) {
    QGPU_TRY(x, c.val(in.srcs[static_cast<size_t>(k)], 32));
    v.src[static_cast<size_t>(k)] = x;
  }
  access(c, w, v);
  c.writeHi(d, VOperand::i(0));
  return Ok{};
}

}  // namespace

Status translateMemory(Ctx& c) {
  const auto& in = *c.in;
  const auto& m = in.mods;
  if (in.op == Opcode::Ld && m.space == ptx::StateSpace::Param) return ldParam(c);
  if (in.types.size() != 1) return c.unsupported("memory access with vector or missing type");
  Type t = in.types[0];
  switch (m.space) {
    case ptx::StateSpace::Global: case ptx::StateSpace::Generic: case ptx::StateSpace::None:
    case ptx::StateSpace::Shared: case ptx::StateSpace::Local:
      break;  // where() picks the machine space
    default:
      return c.unsupported(std::string("state space .") + (m.space == ptx::StateSpace::Const ? "const" : "param"));
  }
  if (in.op == Opcode::Ld) return load(c, t);
  if (in.op == Opcode::St) return store(c, t);
  return atom(c, t);
}

}  // namespace qgpu::lower::tr
