// qgpu/host/lower/translate.cpp — pass 2: PTX instructions to machine operations on vregs.
//
// Input: a FlatFunction (no calls, no call-sequence params). Output: a VFunc whose blocks are
// the PTX basic blocks (a block starts at a label, after `bra`, `ret`, `exit` and block
// barriers; `bar.red` adds two more barrier boundaries), block 0 being the entry.
//
// Value representation (docs/lowering.md §3):
//   * a .b32 register is one vreg;
//   * a .b16 register is one vreg holding the value zero-extended to 32 bits (every 16-bit op
//     re-normalises; signed 16-bit reads sign-extend with bfe.s);
//   * a .b64 register is one vreg for its low half, plus a second vreg for its high half only if
//     the demanded-bits analysis below finds an instruction that reads the high half. Every
//     definition of such a register must then compute its high half exactly, or the instruction
//     is refused ("64-bit value whose upper half is used");
//   * a .pred register is one predicate vreg.
#include <algorithm>
#include <set>

#include "host/lower/vir.h"

namespace qgpu::lower {
namespace {

using machine::Op;
using machine::Special;
using machine::Space;
using machine::TermKind;
using ptx::Opcode;
using ptx::OperandKind;
using ptx::Type;

int typeBits(Type t) {
  switch (t) {
    case Type::Pred: return 1;
    case Type::B8: case Type::U8: case Type::S8: return 8;
    case Type::B16: case Type::U16: case Type::S16: return 16;
    case Type::B32: case Type::U32: case Type::S32: return 32;
    case Type::B64: case Type::U64: case Type::S64: return 64;
    case Type::None: return 0;
  }
  return 0;
}
// A 64-bit address whose high word is not zero is replaced by this one: word-aligned and above
// every memory of the machine (global and shared have 126 words), so the access faults.
constexpr uint32_t kFaultAddress = 0xfffffffcu;

bool typeSigned(Type t) { return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64; }

using BarKind = ptx::BarrierKind;
BarKind barKind(const ptx::Instruction& in) { return in.mods.barrier; }
bool isBlockBarrier(const ptx::Instruction& in) {
  return (in.op == Opcode::Bar || in.op == Opcode::Barrier) && barKind(in) == BarKind::Sync;
}

// ---- Value bounds: which 64-bit values provably have a zero high half ----
// bound[r] = k means: every value register r ever holds (PTX semantics, as an unsigned number of
// the register's width) is < 2^k. Flow-insensitive over every definition of r (guarded ones
// included; a register read before any definition holds 0 on this machine), iterated to a fixed
// point; bounds only grow and are capped at the register's width, so the iteration ends. The
// rules are in docs/lowering.md ("Sound narrowing"). A 64-bit register with bound <= 32 has a
// zero high half: it needs no high-half vreg, whoever reads it.
int bitsOf(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

std::vector<int> valueBounds(const FlatFunction& f) {
  std::vector<int> bound(f.regs.size(), 0);
  auto regWidth = [&](uint32_t r) { return r < f.regs.size() ? typeBits(f.regs[r].type) : 64; };
  // The bound of a source operand read at width w.
  auto opBound = [&](const ptx::Operand& o, int w) -> int {
    switch (o.kind) {
      case OperandKind::Reg:
        return o.reg < f.regs.size() ? std::min(bound[o.reg], std::max(w, 1)) : w;
      case OperandKind::Imm: {
        uint64_t v = static_cast<uint64_t>(o.imm);
        if (w < 64) v &= (uint64_t{1} << w) - 1;
        return bitsOf(v);
      }
      case OperandKind::Special: {
        static const std::map<std::string, int> kBits = {
            {"%tid.x", bitsOf(machine::kMaxThreadsPerBlock - 1)}, {"%ntid.x", bitsOf(machine::kMaxThreadsPerBlock)},
            {"%ctaid.x", bitsOf(machine::kMaxGridBlocks - 1)},    {"%nctaid.x", bitsOf(machine::kMaxGridBlocks)},
            {"%laneid", bitsOf(machine::kLanes - 1)},              {"%warpid", bitsOf(machine::kMaxWarps - 1)},
            {"%ntid.y", 1}, {"%ntid.z", 1}, {"%nctaid.y", 1}, {"%nctaid.z", 1},
            {"%tid.y", 0}, {"%tid.z", 0}, {"%ctaid.y", 0}, {"%ctaid.z", 0}};
        auto it = kBits.find(o.name);
        return it == kBits.end() ? w : std::min(it->second, w);
      }
      case OperandKind::Symbol:  // a .shared variable's byte offset, or WARP_SZ
        return std::min(bitsOf(4 * machine::kSharedWords), w);
      default:
        return w;
    }
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (const auto& in : f.body) {
      if (in.dsts.empty() || in.dsts[0].kind != OperandKind::Reg || in.dsts[0].reg >= f.regs.size()) continue;
      uint32_t dreg = in.dsts[0].reg;
      int rw = regWidth(dreg);
      if (rw <= 1) continue;
      int w = in.types.empty() ? rw : std::max(typeBits(in.types[0]), 1);
      bool sgn = !in.types.empty() && typeSigned(in.types[0]);
      auto src = [&](size_t k, int width) { return k < in.srcs.size() ? opBound(in.srcs[k], width) : width; };
      const auto& m = in.mods;
      int b = rw;  // by default: anything
      switch (in.op) {
        case Opcode::Mov: case Opcode::Cvta: b = src(0, w); break;
        case Opcode::Ld:
          if (m.space == ptx::StateSpace::Param) {
            auto it = in.srcs.empty() ? f.params.end() : f.params.find(in.srcs[0].name);
            b = it == f.params.end() ? rw : bitsOf(it->second);
          } else {
            b = sgn ? rw : w;  // a zero-extending load of w bits
          }
          break;
        case Opcode::Cvt: {
          if (in.types.size() != 2) break;
          int dw = typeBits(in.types[0]), sw = typeBits(in.types[1]);
          int sb = src(0, sw);
          b = typeSigned(in.types[1]) && sb >= sw ? rw : std::min(sb, dw);  // non-negative: sext = zext
          break;
        }
        case Opcode::Add: b = std::max(src(0, w), src(1, w)) + 1; break;
        case Opcode::Mul: case Opcode::Mad: {
          int a = src(0, w), c = src(1, w);
          int prod = a + c;
          if (m.hi) break;
          if (m.wide && sgn && (a >= w || c >= w)) break;  // a negative factor: sign-extended product
          b = prod;
          if (in.op == Opcode::Mad) b = std::max(prod, src(2, m.wide ? 2 * w : w)) + 1;
          break;
        }
        case Opcode::Shl:
          if (in.srcs.size() == 2 && in.srcs[1].kind == OperandKind::Imm)
            b = src(0, w) + static_cast<int>(std::min<int64_t>(in.srcs[1].imm, 64));
          break;
        case Opcode::Shr: {
          int a = src(0, w);
          if (sgn && a >= w) break;  // a possibly negative value shifts in ones
          b = a;
          if (in.srcs.size() == 2 && in.srcs[1].kind == OperandKind::Imm)
            b = std::max(0, a - static_cast<int>(std::min<int64_t>(in.srcs[1].imm, 64)));
          break;
        }
        case Opcode::And: b = std::min(src(0, w), src(1, w)); break;
        case Opcode::Or: case Opcode::Xor: b = std::max(src(0, w), src(1, w)); break;
        case Opcode::Selp: b = std::max(src(0, w), src(1, w)); break;
        case Opcode::Min: case Opcode::Max: {
          int a = src(0, w), c = src(1, w);
          if (!sgn || (a < w && c < w)) b = std::max(a, c);
          break;
        }
        case Opcode::Rem: if (!sgn) b = src(0, w); break;
        case Opcode::Popc: case Opcode::Clz: b = bitsOf(static_cast<uint64_t>(w)); break;
        case Opcode::Bfe:
          if (!sgn && in.srcs.size() == 3 && in.srcs[2].kind == OperandKind::Imm)
            b = static_cast<int>(in.srcs[2].imm & 0xff);
          break;
        default: break;
      }
      b = std::min(std::max(b, 0), rw);
      if (b > bound[dreg]) {
        bound[dreg] = b;
        changed = true;
      }
    }
  }
  return bound;
}

// ---- Demanded bits of 64-bit registers ----
// hiReader[r] = index of an instruction that reads the high half of 64-bit register r, or -1.
// Flow-insensitive and conservative: a register's high half is demanded if any instruction
// reads it, directly or through an instruction whose high result half is demanded.
// Registers whose bound (valueBounds) is <= 32 have a known zero high half: nothing propagates
// through them. Addresses read the high half: a 64-bit address with a possibly non-zero high half
// must fault (docs/lowering.md, "Sound narrowing").
std::vector<int> demandedHigh(const FlatFunction& f, const std::vector<int>& bound) {
  std::vector<int> reader(f.regs.size(), -1);
  auto is64 = [&](const ptx::Operand& o) {
    bool reg = o.kind == OperandKind::Reg || (o.kind == OperandKind::Address && o.addrIsReg);
    return reg && o.reg < f.regs.size() && typeBits(f.regs[o.reg].type) == 64;
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < f.body.size(); ++i) {
      const auto& in = f.body[i];
      auto mark = [&](const ptx::Operand& o) {
        if (is64(o) && bound[o.reg] > 32 && reader[o.reg] < 0) {
          reader[o.reg] = static_cast<int>(i);
          changed = true;
        }
      };
      auto markAll = [&] { for (const auto& s : in.srcs) mark(s); };
      bool d = false;
      for (const auto& o : in.dsts) d = d || (is64(o) && reader[o.reg] >= 0 && bound[o.reg] > 32);
      int tb = in.types.empty() ? 0 : typeBits(in.types[0]);
      switch (in.op) {
        case Opcode::Mov: case Opcode::Cvta: case Opcode::And: case Opcode::Or: case Opcode::Xor:
        case Opcode::Not: case Opcode::Add: case Opcode::Sub: case Opcode::Selp: case Opcode::Mad:
          if (d) markAll();
          break;
        case Opcode::Mul:
          if (d || (tb == 64 && !in.mods.lo)) markAll();
          break;
        case Opcode::Shl:
          if (tb == 64 && d) {
            if (in.srcs.size() < 2 || in.srcs[1].kind != OperandKind::Imm || in.srcs[1].imm < 32) mark(in.srcs[0]);
          }
          break;
        case Opcode::Shr:
          if (tb == 64) {
            bool constant = in.srcs.size() >= 2 && in.srcs[1].kind == OperandKind::Imm;
            if (!constant || in.srcs[1].imm != 0 || d) mark(in.srcs[0]);
          }
          break;
        case Opcode::Cvt:
          if (in.types.size() == 2 && typeBits(in.types[1]) == 64 && typeBits(in.types[0]) == 64 && d) markAll();
          break;
        case Opcode::Ld: case Opcode::St: case Opcode::Atom:
          // 32-bit values only read low halves (wider types are refused); a 64-bit address
          // register reads its high half, which must be zero for the access not to fault.
          if (!in.srcs.empty() && in.srcs[0].kind == OperandKind::Address && in.srcs[0].addrIsReg)
            mark(in.srcs[0]);
          break;
        default:
          if (tb == 64) markAll();  // anything else on 64-bit data reads every bit
          break;
      }
    }
  }
  return reader;
}

struct Translator {
  const FlatFunction& f;
  VFunc out;
  std::vector<int> lo, hi, pr;
  std::vector<int> hiReader;
  std::vector<int> bound;  // valueBounds(): register r always holds a value < 2^bound[r]
  std::map<std::string, uint32_t> sharedOffset;  // .shared symbol -> byte offset
  int hiddenCounter = -1;                        // byte offset of the bar.red counter word
  int cur = 0;
  std::vector<bool> open;  // per block: no terminator yet
  const ptx::Instruction* in = nullptr;
  int guard = kNone;
  bool guardNeg = false;
  bool hiWritten = false;
  std::set<uint32_t> usedPreds;  // predicate registers read anywhere (sources, guards)

  explicit Translator(const FlatFunction& flat) : f(flat) {}

  Diag unsupported(const std::string& why) const {
    return makeDiag(ErrorKind::PtxUnsupported, "unsupported PTX `" + in->text + "`: " + why, in->loc);
  }
  Diag invalid(const std::string& why) const {
    return makeDiag(ErrorKind::PtxInvalid, "invalid PTX `" + in->text + "`: " + why, in->loc);
  }

  int newBlock() {
    out.blocks.emplace_back();
    open.push_back(true);
    return static_cast<int>(out.blocks.size() - 1);
  }
  void terminate(VTerm t) {
    out.blocks[cur].term = t;
    open[cur] = false;
  }

  void emit(VInstr v) {
    v.guard = guard;
    v.guardNeg = guardNeg;
    v.loc = in->loc;
    out.blocks[cur].ops.push_back(v);
  }
  void alu(Op op, int dst, VOperand a, VOperand b = {}, VOperand c = {}) {
    VInstr v;
    v.op = op;
    v.dst = dst;
    v.src = {a, b, c};
    emit(v);
  }
  void cmp(Op op, int dstPred, VOperand a, VOperand b) {
    VInstr v;
    v.op = op;
    v.dstPred = dstPred;
    v.src = {a, b, {}};
    emit(v);
  }
  void selp(int dst, VOperand a, VOperand b, int p) {
    VInstr v;
    v.op = Op::Selp;
    v.dst = dst;
    v.src = {a, b, {}};
    v.psrc = {p, kNone};
    emit(v);
  }
  void pop(Op op, int dstPred, int a, int b = kNone) {
    VInstr v;
    v.op = op;
    v.dstPred = dstPred;
    v.psrc = {a, b};
    emit(v);
  }
  int tmp() { return out.newReg(); }
  // op into a temporary, then mask to 16 bits into dst.
  void alu16(Op op, int dst, VOperand a, VOperand b = {}, VOperand c = {}) {
    int t = tmp();
    alu(op, t, a, b, c);
    alu(Op::And, dst, VOperand::r(t), VOperand::i(0xffff));
  }
  VOperand sext16(VOperand a) {
    if (a.isImm()) return VOperand::i(static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(a.imm))));
    int t = tmp();
    alu(Op::BfeS, t, a, VOperand::i(0), VOperand::i(16));
    return VOperand::r(t);
  }

  int regBits(const ptx::Operand& o) const { return typeBits(f.regs[o.reg].type); }

  Expected<VOperand> special(const std::string& name) {
    static const std::map<std::string, Special> kSpecials = {
        {"%tid.x", Special::TidX},     {"%ntid.x", Special::NtidX}, {"%ctaid.x", Special::CtaidX},
        {"%nctaid.x", Special::NctaidX}, {"%laneid", Special::LaneId}, {"%warpid", Special::WarpId}};
    static const std::map<std::string, uint32_t> kConstants = {
        {"%tid.y", 0}, {"%tid.z", 0}, {"%ctaid.y", 0}, {"%ctaid.z", 0}, {"%ntid.y", 1},
        {"%ntid.z", 1}, {"%nctaid.y", 1}, {"%nctaid.z", 1}, {"WARP_SZ", machine::kLanes}};
    if (auto it = kSpecials.find(name); it != kSpecials.end()) return VOperand::s(it->second);
    if (auto it = kConstants.find(name); it != kConstants.end()) return VOperand::i(it->second);
    return unsupported("special register `" + name + "`");
  }

  // The low 32 bits (or the normalised 16-bit value, for width 16) of a source operand.
  Expected<VOperand> val(const ptx::Operand& o, int width) {
    switch (o.kind) {
      case OperandKind::Reg: {
        int rb = regBits(o);
        if (rb == 1) return invalid("a predicate used as a value");
        if (rb < 16) return unsupported("8-bit registers");
        if (width == 16 && rb > 16) {
          int t = tmp();
          alu(Op::And, t, VOperand::r(lo[o.reg]), VOperand::i(0xffff));
          return VOperand::r(t);
        }
        return VOperand::r(lo[o.reg]);
      }
      case OperandKind::Imm: {
        uint64_t bitsv = static_cast<uint64_t>(o.imm);
        if (width == 16) bitsv &= 0xffff;
        return VOperand::i(static_cast<uint32_t>(bitsv));
      }
      case OperandKind::Special:
        return special(o.name);
      case OperandKind::Symbol: {
        if (o.name == "WARP_SZ") return special(o.name);
        auto it = sharedOffset.find(o.name);
        if (it != sharedOffset.end()) return VOperand::i(it->second);
        return unsupported("the address of `" + o.name + "` (only .shared variables have one)");
      }
      default:
        return invalid("unexpected operand");
    }
  }
  // The high 32 bits of a 64-bit source operand (whose high half was found demanded).
  Expected<VOperand> valHi(const ptx::Operand& o) {
    switch (o.kind) {
      case OperandKind::Address:
        if (!o.addrIsReg) return VOperand::i(0);
        [[fallthrough]];
      case OperandKind::Reg:
        if (regBits(o) != 64 || bound[o.reg] <= 32) return VOperand::i(0);  // provably zero
        if (hi[o.reg] == kNone)
          return makeDiag(ErrorKind::Internal, "lowering: high half of " + f.regs[o.reg].name + " not kept", in->loc);
        return VOperand::r(hi[o.reg]);
      case OperandKind::Imm:
        return VOperand::i(static_cast<uint32_t>(static_cast<uint64_t>(o.imm) >> 32));
      case OperandKind::Special:
      case OperandKind::Symbol:
        return VOperand::i(0);
      default:
        return invalid("unexpected operand");
    }
  }
  Expected<int> predOf(const ptx::Operand& o) {
    if (o.kind != OperandKind::Reg || regBits(o) != 1) return invalid("expected a predicate register");
    return pr[o.reg];
  }
  Expected<int> dstLo(const ptx::Operand& o) {
    if (o.kind != OperandKind::Reg) return invalid("destination is not a register");
    int rb = regBits(o);
    if (rb == 1) return invalid("a predicate register used as a value destination");
    if (rb < 16) return unsupported("8-bit registers");
    return lo[o.reg];
  }
  // The high-half vreg of a 64-bit destination, or kNone when nobody reads the high half.
  int dstHi(const ptx::Operand& o) {
    if (o.kind != OperandKind::Reg || regBits(o) != 64) return kNone;
    return hi[o.reg];
  }
  void setHi(const ptx::Operand& d, VOperand value) {
    int h = dstHi(d);
    if (h == kNone) return;
    alu(Op::Mov, h, value);
    hiWritten = true;
  }

  // The address of a memory access as (base, byte offset) for the machine's `[base+offset]`.
  // A 64-bit register base whose value is not provably < 2^31 is checked: the exact 64-bit sum
  // base + offset is computed, and an address whose high word is not zero becomes kFaultAddress,
  // which the machine's bounds check rejects (docs/lowering.md, "Sound narrowing").
  Expected<std::pair<VOperand, int32_t>> address(const ptx::Operand& a) {
    if (a.kind != OperandKind::Address) return invalid("expected an address operand");
    auto off = static_cast<int32_t>(a.imm);
    if (a.imm != off) return unsupported("address offset out of 32-bit range");
    if (a.addrIsReg) {
      if (regBits(a) < 32) return invalid("address register narrower than 32 bits");
      int b = regBits(a) == 64 ? bound[a.reg] : 0;
      bool exact = b <= 31 || (b <= 32 && off == 0);
      if (exact) return std::make_pair(VOperand::r(lo[a.reg]), off);
      QGPU_TRY(h, valHi(a));
      VOperand l = VOperand::r(lo[a.reg]);
      if (off != 0) {  // (h:l) + sext(off): carry out of the low word into the high word
        auto offLo = static_cast<uint32_t>(off);
        uint32_t offHi = off < 0 ? 0xffffffffu : 0u;
        int sum = tmp(), cv = tmp(), sumHi = tmp();
        int carry = out.newPred();
        alu(Op::Add, sum, l, VOperand::i(offLo));
        cmp(Op::SetLtU, carry, VOperand::r(sum), VOperand::i(offLo));
        selp(cv, VOperand::i(offHi + 1), VOperand::i(offHi), carry);
        alu(Op::Add, sumHi, h, VOperand::r(cv));
        l = VOperand::r(sum);
        h = VOperand::r(sumHi);
      }
      int outside = out.newPred();
      int checked = tmp();
      cmp(Op::SetNe, outside, h, VOperand::i(0));
      selp(checked, VOperand::i(kFaultAddress), l, outside);
      return std::make_pair(VOperand::r(checked), 0);
    }
    if (a.name.empty()) return std::make_pair(VOperand::i(0), off);
    auto it = sharedOffset.find(a.name);
    if (it != sharedOffset.end()) return std::make_pair(VOperand::i(it->second), off);
    return unsupported("address of `" + a.name + "`");
  }

  Status one();
  Status arith();
  Status memory();
  Status barRed(BarKind kind);
  Status run(TranslateInfo* info);
};

Status Translator::barRed(BarKind kind) {
  // v = p ? 1 : 0; atom.shared.add H, v; Barrier; r = ld.shared H; Barrier; atom.shared.add H, -v.
  // The first barrier makes every thread's add visible before any read; the second keeps every
  // read before any subtraction, so H is back to 0 for the next use (shared memory starts zeroed).
  if (in->guarded) return unsupported("guarded bar.red");
  if (in->srcs.size() != 2 || in->srcs[0].kind != OperandKind::Imm || in->srcs[0].imm != 0)
    return unsupported("bar.red other than `bar.red.op d, 0, p` (barrier 0, all threads)");
  if (in->dsts.size() != 1) return invalid("bar.red needs one destination");
  QGPU_TRY(p, predOf(in->srcs[1]));
  auto h = VOperand::i(static_cast<uint32_t>(hiddenCounter));
  int v = tmp();
  selp(v, VOperand::i(1), VOperand::i(0), p);
  VInstr add;
  add.op = Op::AtomAdd;
  add.space = Space::Shared;
  add.src = {h, VOperand::r(v), {}};
  emit(add);
  int b1 = newBlock();
  terminate(VTerm{TermKind::Barrier, kNone, false, kNone, b1});
  cur = b1;
  int r = tmp();
  VInstr ld;
  ld.op = Op::Ld;
  ld.space = Space::Shared;
  ld.dst = r;
  ld.src = {h, {}, {}};
  emit(ld);
  int b2 = newBlock();
  terminate(VTerm{TermKind::Barrier, kNone, false, kNone, b2});
  cur = b2;
  int nv = tmp();
  alu(Op::Neg, nv, VOperand::r(v));
  add.src = {h, VOperand::r(nv), {}};
  emit(add);
  const auto& d = in->dsts[0];
  if (kind == BarKind::RedPopc) {
    QGPU_TRY(dl, dstLo(d));
    alu(Op::Mov, dl, VOperand::r(r));
    setHi(d, VOperand::i(0));
    return Ok{};
  }
  QGPU_TRY(dp, predOf(d));
  if (kind == BarKind::RedAnd) cmp(Op::SetEq, dp, VOperand::r(r), VOperand::s(Special::NtidX));
  else cmp(Op::SetNe, dp, VOperand::r(r), VOperand::i(0));
  return Ok{};
}

Status Translator::memory() {
  const auto& m = in->mods;
  if (in->types.size() != 1) return unsupported("memory access with vector or missing type");
  Type t = in->types[0];
  Space space = Space::Global;
  switch (m.space) {
    case ptx::StateSpace::Global: case ptx::StateSpace::Generic: case ptx::StateSpace::None:
      space = Space::Global;  // generic addresses equal global addresses on this machine
      break;
    case ptx::StateSpace::Shared:
      space = Space::Shared;
      break;
    default:
      return unsupported(std::string("state space .") + (m.space == ptx::StateSpace::Local ? "local" : m.space == ptx::StateSpace::Const ? "const" : "param"));
  }
  if (in->op == Opcode::Ld) {
    if (m.space == ptx::StateSpace::Param) return unsupported("ld.param");
    if (in->dsts.size() != 1 || in->srcs.size() != 1) return invalid("ld needs one destination and one address");
    QGPU_TRY(a, address(in->srcs[0]));
    QGPU_TRY(d, dstLo(in->dsts[0]));
    if (typeBits(t) == 8 || typeBits(t) == 16) {
      // A sub-word load from word memory: load the aligned word and extract the field
      // (little-endian: byte k of the word is bits 8k..8k+7; PTX requires natural alignment).
      int addr = tmp(), aligned = tmp(), pos = tmp(), word = tmp();
      alu(Op::Add, addr, a.first, VOperand::i(static_cast<uint32_t>(a.second)));
      alu(Op::And, aligned, VOperand::r(addr), VOperand::i(~3u));
      int low = tmp();
      alu(Op::And, low, VOperand::r(addr), VOperand::i(3));
      alu(Op::Shl, pos, VOperand::r(low), VOperand::i(3));
      VInstr v;
      v.op = Op::Ld;
      v.space = space;
      v.dst = word;
      v.src = {VOperand::r(aligned), {}, {}};
      emit(v);
      auto len = VOperand::i(static_cast<uint32_t>(typeBits(t)));
      if (typeSigned(t) && regBits(in->dsts[0]) == 16) {
        int x = tmp();
        alu(Op::BfeS, x, VOperand::r(word), VOperand::r(pos), len);
        alu(Op::And, d, VOperand::r(x), VOperand::i(0xffff));
      } else {
        alu(typeSigned(t) ? Op::BfeS : Op::BfeU, d, VOperand::r(word), VOperand::r(pos), len);
      }
      if (dstHi(in->dsts[0]) != kNone) {
        if (typeSigned(t)) {
          alu(Op::ShrS, dstHi(in->dsts[0]), VOperand::r(d), VOperand::i(31));
          hiWritten = true;
        } else {
          setHi(in->dsts[0], VOperand::i(0));
        }
      }
      return Ok{};
    }
    if (typeBits(t) != 32) return unsupported(std::string("ld of type .") + ptx::typeName(t) + " (only 8-, 16- and 32-bit loads)");
    if (regBits(in->dsts[0]) == 16) return unsupported("32-bit load into a 16-bit register");
    VInstr v;
    v.op = Op::Ld;
    v.space = space;
    v.dst = d;
    v.src = {a.first, {}, {}};
    v.offset = a.second;
    emit(v);
    if (dstHi(in->dsts[0]) != kNone) {
      if (typeSigned(t)) {
        alu(Op::ShrS, dstHi(in->dsts[0]), VOperand::r(d), VOperand::i(31));
        hiWritten = true;
      } else {
        setHi(in->dsts[0], VOperand::i(0));
      }
    }
    return Ok{};
  }
  if (in->op == Opcode::St) {
    if (typeBits(t) != 32)
      return unsupported(std::string("st of type .") + ptx::typeName(t) +
                         " (only 32-bit stores: a sub-word store would be a read-modify-write that loses"
                         " the writes of other lanes to the same word)");
    if (in->srcs.size() != 2) return invalid("st needs an address and a value");
    QGPU_TRY(a, address(in->srcs[0]));
    QGPU_TRY(value, val(in->srcs[1], 32));
    VInstr v;
    v.op = Op::St;
    v.space = space;
    v.src = {a.first, value, {}};
    v.offset = a.second;
    emit(v);
    return Ok{};
  }
  // atom
  if (typeBits(t) != 32) return unsupported(std::string("atom of type .") + ptx::typeName(t) + " (only 32-bit integers)");
  bool sgn = typeSigned(t);
  Op op;
  int nsrc = 2;
  switch (m.atom) {
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
    default: return unsupported(std::string("atom.") + ptx::atomOpName(m.atom));
  }
  if (in->dsts.size() != 1 || static_cast<int>(in->srcs.size()) != nsrc) return invalid("wrong operand count for atom");
  QGPU_TRY(a, address(in->srcs[0]));
  QGPU_TRY(d, dstLo(in->dsts[0]));
  VInstr v;
  v.op = op;
  v.space = space;
  v.dst = d;
  v.offset = a.second;
  v.src[0] = a.first;
  for (int k = 1; k < nsrc; ++k) {
    QGPU_TRY(x, val(in->srcs[k], 32));
    v.src[k] = x;
  }
  emit(v);
  setHi(in->dsts[0], VOperand::i(0));
  return Ok{};
}

Status Translator::arith() {
  const auto& m = in->mods;
  if (in->types.empty()) return invalid("missing type");
  Type t = in->types[0];
  int w = typeBits(t);
  bool sgn = typeSigned(t);
  if (w == 8) return unsupported("8-bit types");
  auto need = [&](size_t nd, size_t ns) -> Status {
    if (in->dsts.size() < nd || in->srcs.size() != ns) return invalid("wrong operand count");
    return Ok{};
  };
  const Opcode op = in->op;

  // Predicate logic.
  if (w == 1) {
    QGPU_CHECK(need(1, op == Opcode::Not || op == Opcode::Mov ? 1 : 2));
    QGPU_TRY(d, predOf(in->dsts[0]));
    if (op == Opcode::Mov && in->srcs[0].kind == OperandKind::Imm) {
      VInstr v;
      v.op = Op::PConst;
      v.dstPred = d;
      v.src[0] = VOperand::i(in->srcs[0].imm != 0 ? 1 : 0);
      emit(v);
      return Ok{};
    }
    QGPU_TRY(a, predOf(in->srcs[0]));
    switch (op) {
      case Opcode::Mov: pop(Op::PMov, d, a); return Ok{};
      case Opcode::Not: pop(Op::PNot, d, a); return Ok{};
      case Opcode::And: case Opcode::Or: case Opcode::Xor: {
        QGPU_TRY(b, predOf(in->srcs[1]));
        pop(op == Opcode::And ? Op::PAnd : op == Opcode::Or ? Op::POr : Op::PXor, d, a, b);
        return Ok{};
      }
      default:
        return unsupported(std::string(ptx::spelling(op)) + " on predicates");
    }
  }

  if (op == Opcode::Setp) {
    if (in->srcs.size() != 2 || in->dsts.empty() || in->dsts.size() > 2) return unsupported("setp with a boolean combination");
    QGPU_TRY(p, predOf(in->dsts[0]));
    auto c = m.cmp;
    Op mop;
    bool unsignedCmp = !sgn || c == ptx::CmpOp::Lo || c == ptx::CmpOp::Ls || c == ptx::CmpOp::Hi || c == ptx::CmpOp::Hs;
    switch (c) {
      case ptx::CmpOp::Eq: mop = Op::SetEq; break;
      case ptx::CmpOp::Ne: mop = Op::SetNe; break;
      case ptx::CmpOp::Lt: case ptx::CmpOp::Lo: mop = unsignedCmp ? Op::SetLtU : Op::SetLtS; break;
      case ptx::CmpOp::Le: case ptx::CmpOp::Ls: mop = unsignedCmp ? Op::SetLeU : Op::SetLeS; break;
      case ptx::CmpOp::Gt: case ptx::CmpOp::Hi: mop = unsignedCmp ? Op::SetGtU : Op::SetGtS; break;
      case ptx::CmpOp::Ge: case ptx::CmpOp::Hs: mop = unsignedCmp ? Op::SetGeU : Op::SetGeS; break;
      default: return unsupported("setp comparison");
    }
    if (w == 64) {
      if (mop != Op::SetEq && mop != Op::SetNe) return unsupported("64-bit ordered comparison");
      QGPU_TRY(al, val(in->srcs[0], 64));
      QGPU_TRY(bl, val(in->srcs[1], 64));
      QGPU_TRY(ah, valHi(in->srcs[0]));
      QGPU_TRY(bh, valHi(in->srcs[1]));
      int p1 = out.newPred();
      int p2 = out.newPred();
      cmp(mop, p1, al, bl);
      cmp(mop, p2, ah, bh);
      pop(mop == Op::SetEq ? Op::PAnd : Op::POr, p, p1, p2);
    } else {
      QGPU_TRY(a, val(in->srcs[0], w));
      QGPU_TRY(b, val(in->srcs[1], w));
      if (w == 16 && sgn && mop != Op::SetEq && mop != Op::SetNe && !unsignedCmp) {
        a = sext16(a);
        b = sext16(b);
      }
      cmp(mop, p, a, b);
    }
    if (in->dsts.size() == 2) {
      QGPU_TRY(q, predOf(in->dsts[1]));
      pop(Op::PNot, q, p);
    }
    return Ok{};
  }

  if (op == Opcode::Cvta) {
    QGPU_CHECK(need(1, 1));
    if (m.space != ptx::StateSpace::Global) return unsupported("cvta of a non-global space (shared/local windows have no generic address here)");
    QGPU_TRY(d, dstLo(in->dsts[0]));
    QGPU_TRY(a, val(in->srcs[0], 64));
    alu(Op::Mov, d, a);
    if (dstHi(in->dsts[0]) != kNone) {
      QGPU_TRY(ah, valHi(in->srcs[0]));
      setHi(in->dsts[0], ah);
    }
    return Ok{};
  }

  if (op == Opcode::Cvt) {
    if (in->types.size() != 2) return unsupported("cvt form");
    QGPU_CHECK(need(1, 1));
    int wd = typeBits(in->types[0]);
    int ws = typeBits(in->types[1]);
    if (wd < 16 || ws < 16) return unsupported("8-bit conversion");
    QGPU_TRY(d, dstLo(in->dsts[0]));
    QGPU_TRY(a, val(in->srcs[0], ws == 16 ? 16 : 32));
    bool ssrc = typeSigned(in->types[1]);
    VOperand v32 = a;  // the source, extended to 32 bits per its type
    if (ws == 16 && ssrc && wd > 16) v32 = sext16(a);
    if (wd == 16) {
      if (ws == 16 && a.isReg() && in->srcs[0].kind == OperandKind::Reg && regBits(in->srcs[0]) == 16) alu(Op::Mov, d, a);
      else alu(Op::And, d, a, VOperand::i(0xffff));
      return Ok{};
    }
    alu(Op::Mov, d, v32);
    if (wd == 64 && dstHi(in->dsts[0]) != kNone) {
      if (ws == 64) {
        QGPU_TRY(ah, valHi(in->srcs[0]));
        setHi(in->dsts[0], ah);
      } else if (ssrc) {
        alu(Op::ShrS, dstHi(in->dsts[0]), v32, VOperand::i(31));
        hiWritten = true;
      } else {
        setHi(in->dsts[0], VOperand::i(0));
      }
    }
    return Ok{};
  }

  if (op == Opcode::Selp) {
    QGPU_CHECK(need(1, 3));
    QGPU_TRY(d, dstLo(in->dsts[0]));
    QGPU_TRY(a, val(in->srcs[0], w));
    QGPU_TRY(b, val(in->srcs[1], w));
    QGPU_TRY(p, predOf(in->srcs[2]));
    if (w == 64 && dstHi(in->dsts[0]) != kNone) {
      QGPU_TRY(ah, valHi(in->srcs[0]));
      QGPU_TRY(bh, valHi(in->srcs[1]));
      selp(dstHi(in->dsts[0]), ah, bh, p);
      hiWritten = true;
    }
    selp(d, a, b, p);
    return Ok{};
  }

  if (op == Opcode::Mov) {
    QGPU_CHECK(need(1, 1));
    QGPU_TRY(d, dstLo(in->dsts[0]));
    QGPU_TRY(a, val(in->srcs[0], w));
    if (w == 64 && dstHi(in->dsts[0]) != kNone) {
      QGPU_TRY(ah, valHi(in->srcs[0]));
      setHi(in->dsts[0], ah);
    }
    alu(Op::Mov, d, a);
    return Ok{};
  }

  // Everything below computes a value from general sources.
  if (in->dsts.size() != 1) return invalid("wrong destination count");
  QGPU_TRY(d, dstLo(in->dsts[0]));
  int dh = dstHi(in->dsts[0]);
  std::vector<VOperand> s;
  for (const auto& o : in->srcs) {
    if (o.kind == OperandKind::Reg && regBits(o) == 1) return invalid("a predicate used as a value");
    // Shift amounts are .u32 whatever the instruction type.
    bool shiftAmount = (op == Opcode::Shl || op == Opcode::Shr) && &o == &in->srcs.back() && in->srcs.size() == 2;
    int sw = shiftAmount ? 32 : (op == Opcode::Mul && m.wide) || (op == Opcode::Mad && m.wide) ? w : w;
    if (op == Opcode::Mad && m.wide && &o == &in->srcs.back()) sw = 2 * w;
    if (op == Opcode::Bfe && &o != &in->srcs.front()) sw = 32;
    if (op == Opcode::Shf && &o == &in->srcs.back()) sw = 32;
    QGPU_TRY(x, val(o, sw));
    s.push_back(x);
  }
  auto nsrc = [&](size_t n) -> Status {
    if (s.size() != n) return invalid("wrong operand count");
    return Ok{};
  };

  // 64-bit: low half always; high half where demanded and computable.
  if (w == 64) {
    auto hiOf = [&](size_t k) { return valHi(in->srcs[k]); };
    switch (op) {
      case Opcode::Add: case Opcode::Sub: {
        QGPU_CHECK(nsrc(2));
        if (dh == kNone) {
          alu(op == Opcode::Add ? Op::Add : Op::Sub, d, s[0], s[1]);
          return Ok{};
        }
        QGPU_TRY(ah, hiOf(0));
        QGPU_TRY(bh, hiOf(1));
        int c = out.newPred();
        if (op == Opcode::Add) {  // carry iff b > ~a
          int na = tmp();
          alu(Op::Not, na, s[0]);
          cmp(Op::SetGtU, c, s[1], VOperand::r(na));
        } else {  // borrow iff a < b
          cmp(Op::SetLtU, c, s[0], s[1]);
        }
        alu(op == Opcode::Add ? Op::Add : Op::Sub, d, s[0], s[1]);
        int h1 = tmp();
        int cv = tmp();
        alu(op == Opcode::Add ? Op::Add : Op::Sub, h1, ah, bh);
        selp(cv, VOperand::i(1), VOperand::i(0), c);
        alu(op == Opcode::Add ? Op::Add : Op::Sub, dh, VOperand::r(h1), VOperand::r(cv));
        hiWritten = true;
        return Ok{};
      }
      case Opcode::Mul: {
        if (!m.lo) return unsupported("64-bit mul.hi/mul.wide");
        QGPU_CHECK(nsrc(2));
        if (dh != kNone) {  // hi = mulhi(al, bl) + al*bh + ah*bl, written before lo (aliasing)
          QGPU_TRY(ah, hiOf(0));
          QGPU_TRY(bh, hiOf(1));
          int t1 = tmp();
          int t2 = tmp();
          alu(Op::MulHiU, t1, s[0], s[1]);
          alu(Op::Mad, t2, s[0], bh, VOperand::r(t1));
          alu(Op::Mad, dh, ah, s[1], VOperand::r(t2));
          hiWritten = true;
        }
        alu(Op::Mul, d, s[0], s[1]);
        return Ok{};
      }
      case Opcode::Mad: {
        if (!m.lo) return unsupported("64-bit mad.hi/mad.wide");
        QGPU_CHECK(nsrc(3));
        if (dh != kNone) {  // the mul.lo.u64 product plus c with carry, into temporaries first
          QGPU_TRY(ah, hiOf(0));
          QGPU_TRY(bh, hiOf(1));
          QGPU_TRY(ch, hiOf(2));
          int t1 = tmp(), t2 = tmp(), t3 = tmp(), prod = tmp(), sum = tmp(), cv = tmp(), h1 = tmp();
          int carry = out.newPred();
          alu(Op::MulHiU, t1, s[0], s[1]);
          alu(Op::Mad, t2, s[0], bh, VOperand::r(t1));
          alu(Op::Mad, t3, ah, s[1], VOperand::r(t2));
          alu(Op::Mul, prod, s[0], s[1]);
          alu(Op::Add, sum, VOperand::r(prod), s[2]);
          cmp(Op::SetLtU, carry, VOperand::r(sum), VOperand::r(prod));
          selp(cv, VOperand::i(1), VOperand::i(0), carry);
          alu(Op::Add, h1, VOperand::r(t3), ch);
          alu(Op::Add, dh, VOperand::r(h1), VOperand::r(cv));
          hiWritten = true;
          alu(Op::Mov, d, VOperand::r(sum));
          return Ok{};
        }
        alu(Op::Mad, d, s[0], s[1], s[2]);
        return Ok{};
      }
      case Opcode::And: case Opcode::Or: case Opcode::Xor: {
        QGPU_CHECK(nsrc(2));
        Op mop = op == Opcode::And ? Op::And : op == Opcode::Or ? Op::Or : Op::Xor;
        if (dh != kNone) {
          QGPU_TRY(ah, hiOf(0));
          QGPU_TRY(bh, hiOf(1));
          alu(mop, dh, ah, bh);
          hiWritten = true;
        }
        alu(mop, d, s[0], s[1]);
        return Ok{};
      }
      case Opcode::Not: {
        QGPU_CHECK(nsrc(1));
        if (dh != kNone) {
          QGPU_TRY(ah, hiOf(0));
          alu(Op::Not, dh, ah);
          hiWritten = true;
        }
        alu(Op::Not, d, s[0]);
        return Ok{};
      }
      case Opcode::Shl: {
        QGPU_CHECK(nsrc(2));
        if (in->srcs[1].kind != OperandKind::Imm) {
          alu(Op::Shl, d, s[0], s[1]);  // exact for the low half: the machine's shl clamps at 32
          return Ok{};
        }
        uint64_t k = static_cast<uint64_t>(in->srcs[1].imm);
        if (k >= 32) {
          if (dh != kNone) {
            alu(Op::Shl, dh, s[0], VOperand::i(static_cast<uint32_t>(std::min<uint64_t>(k - 32, 32))));
            hiWritten = true;
          }
          alu(Op::Mov, d, VOperand::i(0));
          return Ok{};
        }
        if (dh != kNone) {
          QGPU_TRY(ah, hiOf(0));
          alu(Op::ShfLW, dh, s[0], ah, VOperand::i(static_cast<uint32_t>(k)));
          hiWritten = true;
        }
        alu(Op::Shl, d, s[0], VOperand::i(static_cast<uint32_t>(k)));
        return Ok{};
      }
      case Opcode::Shr: {
        QGPU_CHECK(nsrc(2));
        if (in->srcs[1].kind != OperandKind::Imm)
          return unsupported("64-bit shift right by a register amount (the upper half is used)");
        uint64_t k = static_cast<uint64_t>(in->srcs[1].imm);
        QGPU_TRY(ah, hiOf(0));
        Op sh = sgn ? Op::ShrS : Op::ShrU;
        if (k == 0) {
          alu(Op::Mov, d, s[0]);
          setHi(in->dsts[0], ah);
        } else if (k < 32) {
          alu(Op::ShfRW, d, s[0], ah, VOperand::i(static_cast<uint32_t>(k)));
          if (dh != kNone) {
            alu(sh, dh, ah, VOperand::i(static_cast<uint32_t>(k)));
            hiWritten = true;
          }
        } else {
          uint32_t k2 = static_cast<uint32_t>(std::min<uint64_t>(k - 32, 32));
          if (k2 == 0) alu(Op::Mov, d, ah);
          else alu(sh, d, ah, VOperand::i(k2));
          if (dh != kNone) {
            if (sgn) alu(Op::ShrS, dh, ah, VOperand::i(31));
            else alu(Op::Mov, dh, VOperand::i(0));
            hiWritten = true;
          }
        }
        return Ok{};
      }
      default:
        return unsupported(std::string("64-bit ") + ptx::spelling(op) + " (the upper half is used)");
    }
  }

  // 16- and 32-bit.
  bool is16 = w == 16;
  auto plain = [&](Op mop) {
    if (is16) alu16(mop, d, s[0], s.size() > 1 ? s[1] : VOperand{}, s.size() > 2 ? s[2] : VOperand{});
    else alu(mop, d, s[0], s.size() > 1 ? s[1] : VOperand{}, s.size() > 2 ? s[2] : VOperand{});
  };
  auto setHiZero = [&] {
    if (dh != kNone) setHi(in->dsts[0], VOperand::i(0));
  };
  switch (op) {
    case Opcode::Add: case Opcode::Sub:
      QGPU_CHECK(nsrc(2));
      plain(op == Opcode::Add ? Op::Add : Op::Sub);
      return Ok{};
    case Opcode::Mul: {
      QGPU_CHECK(nsrc(2));
      if (m.wide) {
        if (is16) {
          if (sgn) alu(Op::Mul, d, sext16(s[0]), sext16(s[1]));
          else alu(Op::Mul, d, s[0], s[1]);
          return Ok{};
        }
        if (dh != kNone) {  // the exact upper half, written first (the sources are 32-bit)
          alu(sgn ? Op::MulHiS : Op::MulHiU, dh, s[0], s[1]);
          hiWritten = true;
        }
        alu(Op::Mul, d, s[0], s[1]);
        return Ok{};
      }
      if (m.hi) {
        if (is16) {
          int t = tmp();
          if (sgn) {
            alu(Op::Mul, t, sext16(s[0]), sext16(s[1]));
            int t2 = tmp();
            alu(Op::ShrS, t2, VOperand::r(t), VOperand::i(16));
            alu(Op::And, d, VOperand::r(t2), VOperand::i(0xffff));
          } else {  // zero-extended inputs: the product fits 32 bits, its top half is < 2^16
            alu(Op::Mul, t, s[0], s[1]);
            alu(Op::ShrU, d, VOperand::r(t), VOperand::i(16));
          }
          return Ok{};
        }
        alu(sgn ? Op::MulHiS : Op::MulHiU, d, s[0], s[1]);
        return Ok{};
      }
      plain(Op::Mul);
      return Ok{};
    }
    case Opcode::Mad: {
      QGPU_CHECK(nsrc(3));
      if (is16) return unsupported("16-bit mad");
      if (m.wide) {
        if (dh != kNone) {  // (mulhi(a,b) : a*b) + (ch : cl), into temporaries first (d may be c)
          if (is16) return unsupported("mad.wide.16 whose upper half is used");
          QGPU_TRY(ch, valHi(in->srcs[2]));
          int prod = tmp(), prodHi = tmp(), sum = tmp(), cv = tmp(), h1 = tmp();
          int carry = out.newPred();
          alu(Op::Mul, prod, s[0], s[1]);
          alu(sgn ? Op::MulHiS : Op::MulHiU, prodHi, s[0], s[1]);
          alu(Op::Add, sum, VOperand::r(prod), s[2]);
          cmp(Op::SetLtU, carry, VOperand::r(sum), VOperand::r(prod));
          selp(cv, VOperand::i(1), VOperand::i(0), carry);
          alu(Op::Add, h1, VOperand::r(prodHi), ch);
          alu(Op::Add, dh, VOperand::r(h1), VOperand::r(cv));
          hiWritten = true;
          alu(Op::Mov, d, VOperand::r(sum));
          return Ok{};
        }
        alu(Op::Mad, d, s[0], s[1], s[2]);
        return Ok{};
      }
      if (m.hi) {
        int t = tmp();
        alu(sgn ? Op::MulHiS : Op::MulHiU, t, s[0], s[1]);
        alu(Op::Add, d, VOperand::r(t), s[2]);
        return Ok{};
      }
      alu(Op::Mad, d, s[0], s[1], s[2]);
      return Ok{};
    }
    case Opcode::Div: case Opcode::Rem:
      QGPU_CHECK(nsrc(2));
      if (is16) return unsupported("16-bit division");
      alu(op == Opcode::Div ? (sgn ? Op::DivS : Op::DivU) : (sgn ? Op::RemS : Op::RemU), d, s[0], s[1]);
      return Ok{};
    case Opcode::Min: case Opcode::Max: {
      QGPU_CHECK(nsrc(2));
      Op mop = op == Opcode::Min ? (sgn ? Op::MinS : Op::MinU) : (sgn ? Op::MaxS : Op::MaxU);
      if (is16 && sgn) alu16(mop, d, sext16(s[0]), sext16(s[1]));
      else alu(mop, d, s[0], s[1]);
      return Ok{};
    }
    case Opcode::Abs:
      QGPU_CHECK(nsrc(1));
      if (is16) alu16(Op::Abs, d, sext16(s[0]));
      else alu(Op::Abs, d, s[0]);
      return Ok{};
    case Opcode::Neg:
      QGPU_CHECK(nsrc(1));
      plain(Op::Neg);
      return Ok{};
    case Opcode::And: case Opcode::Or: case Opcode::Xor:
      QGPU_CHECK(nsrc(2));  // zero-extended inputs give a zero-extended result
      alu(op == Opcode::And ? Op::And : op == Opcode::Or ? Op::Or : Op::Xor, d, s[0], s[1]);
      setHiZero();
      return Ok{};
    case Opcode::Not:
      QGPU_CHECK(nsrc(1));
      plain(Op::Not);
      return Ok{};
    case Opcode::Shl:
      QGPU_CHECK(nsrc(2));
      plain(Op::Shl);
      return Ok{};
    case Opcode::Shr:
      QGPU_CHECK(nsrc(2));
      if (sgn) {
        if (is16) alu16(Op::ShrS, d, sext16(s[0]), s[1]);
        else alu(Op::ShrS, d, s[0], s[1]);
      } else {
        alu(Op::ShrU, d, s[0], s[1]);  // a zero-extended input stays zero-extended
      }
      return Ok{};
    case Opcode::Popc: case Opcode::Clz: case Opcode::Brev:
      QGPU_CHECK(nsrc(1));
      if (w != 32) return unsupported("non-32-bit bit operation");
      alu(op == Opcode::Popc ? Op::Popc : op == Opcode::Clz ? Op::Clz : Op::Brev, d, s[0]);
      return Ok{};
    case Opcode::Bfe:
      QGPU_CHECK(nsrc(3));
      if (w != 32) return unsupported("non-32-bit bfe");
      alu(sgn ? Op::BfeS : Op::BfeU, d, s[0], s[1], s[2]);
      return Ok{};
    case Opcode::Bfind: {
      QGPU_CHECK(nsrc(1));
      if (w != 32 || sgn) return unsupported("bfind other than .u32");
      if (!m.shiftamt) {
        alu(Op::Bfind, d, s[0]);
        return Ok{};
      }
      // shiftamt: 31 - msb = clz(a) for a != 0, and 0xffffffff (no bit found) for a == 0.
      int t = tmp();
      int p = out.newPred();
      alu(Op::Clz, t, s[0]);
      cmp(Op::SetEq, p, s[0], VOperand::i(0));
      selp(d, VOperand::i(0xffffffffu), VOperand::r(t), p);
      return Ok{};
    }
    case Opcode::Prmt:
      QGPU_CHECK(nsrc(3));
      alu(Op::Prmt, d, s[0], s[1], s[2]);
      return Ok{};
    case Opcode::Shf:
      QGPU_CHECK(nsrc(3));
      if (!m.wrap || m.clamp) return unsupported("shf.clamp");
      alu(m.left ? Op::ShfLW : Op::ShfRW, d, s[0], s[1], s[2]);
      return Ok{};
    default:
      return unsupported(std::string("opcode ") + ptx::spelling(op));
  }
}

Status Translator::one() {
  const auto& m = in->mods;
  switch (in->op) {
    case Opcode::Ld: {
      if (m.space == ptx::StateSpace::Param) {
        // An entry parameter: its value is known at lowering time.
        const auto& a = in->srcs.at(0);
        auto it = f.params.find(a.name);
        if (it == f.params.end() || in->dsts.size() != 1) return invalid("ld.param of an unknown parameter");
        int tb = typeBits(in->types.at(0));
        if (tb != f.paramBits.at(a.name)) return unsupported("ld.param with a type other than the parameter's");
        QGPU_TRY(d, dstLo(in->dsts[0]));
        alu(Op::Mov, d, VOperand::i(static_cast<uint32_t>(it->second)));
        setHi(in->dsts[0], VOperand::i(0));
        return Ok{};
      }
      return memory();
    }
    case Opcode::St: case Opcode::Atom:
      return memory();
    case Opcode::Shfl: {
      if (in->types.empty() || typeBits(in->types[0]) != 32) return unsupported("shfl of a non-32-bit type");
      Op op;
      switch (m.shfl) {
        case ptx::ShflMode::Up: op = Op::ShflUp; break;
        case ptx::ShflMode::Down: op = Op::ShflDown; break;
        case ptx::ShflMode::Bfly: op = Op::ShflBfly; break;
        case ptx::ShflMode::Idx: op = Op::ShflIdx; break;
        default: return unsupported("shfl without a mode");
      }
      size_t want = m.sync ? 4 : 3;
      if (in->srcs.size() != want || in->dsts.empty()) return invalid("wrong shfl operand count");
      if (in->dsts.size() > 1 && usedPreds.count(in->dsts[1].reg))
        return unsupported("the predicate result of shfl (`d|p`) is used");
      QGPU_TRY(d, dstLo(in->dsts[0]));
      VInstr v;
      v.op = op;
      v.dst = d;
      for (int k = 0; k < 3; ++k) {
        QGPU_TRY(x, val(in->srcs[k], 32));
        v.src[k] = x;
      }
      emit(v);
      return Ok{};
    }
    case Opcode::Vote: {
      if (in->srcs.empty() || in->dsts.size() != 1) return invalid("wrong vote operand count");
      QGPU_TRY(p, predOf(in->srcs[0]));
      VInstr v;
      v.psrc = {p, kNone};
      if (m.vote == ptx::VoteMode::Ballot) {
        v.op = Op::Ballot;
        QGPU_TRY(d, dstLo(in->dsts[0]));
        v.dst = d;
      } else if (m.vote == ptx::VoteMode::Any || m.vote == ptx::VoteMode::All) {
        v.op = m.vote == ptx::VoteMode::Any ? Op::VoteAny : Op::VoteAll;
        QGPU_TRY(d, predOf(in->dsts[0]));
        v.dstPred = d;
      } else {
        return unsupported(std::string("vote.") + ptx::voteModeName(m.vote));
      }
      emit(v);
      return Ok{};
    }
    case Opcode::Bar: case Opcode::Barrier: {
      BarKind k = barKind(*in);
      if (k == BarKind::Warp) return Ok{};  // a warp only ever runs its active lanes together
      if (k == BarKind::RedPopc || k == BarKind::RedAnd || k == BarKind::RedOr) return barRed(k);
      return unsupported("barrier form");  // block barriers are terminators (run())
    }
    case Opcode::Activemask: case Opcode::Call: case Opcode::Exit: case Opcode::Ret: case Opcode::Bra:
      return unsupported(std::string("opcode ") + ptx::spelling(in->op) + " here");
    default:
      return arith();
  }
}

Status Translator::run(TranslateInfo* info) {
  // Shared memory: declaration order from word 0, each variable aligned (at least to a word).
  uint32_t offset = 0;
  for (const auto& v : f.shared) {
    uint32_t align = std::max<uint32_t>(4, v.align);
    offset = (offset + align - 1) / align * align;
    sharedOffset[v.name] = offset;
    offset += (v.bytes + 3) / 4 * 4;
  }
  bool needsCounter = false;
  for (const auto& i : f.body) {
    if (i.op == Opcode::Bar || i.op == Opcode::Barrier) {
      BarKind k = barKind(i);
      needsCounter = needsCounter || k == BarKind::RedPopc || k == BarKind::RedAnd || k == BarKind::RedOr;
    }
    for (const auto& s : i.srcs)
      if (s.kind == OperandKind::Reg) usedPreds.insert(s.reg);
    if (i.guarded) usedPreds.insert(i.guardReg);
  }
  if (needsCounter) {
    hiddenCounter = static_cast<int>(offset);
    offset += 4;
  }
  out.sharedWords = offset / 4;
  if (out.sharedWords > static_cast<uint32_t>(machine::kSharedWords))
    return makeDiag(ErrorKind::OverLimit,
                    "kernel `" + f.name + "` needs " + std::to_string(out.sharedWords) +
                        " words of shared memory" + (needsCounter ? " (including the bar.red counter)" : "") +
                        "; the machine has " + std::to_string(machine::kSharedWords) + " (" +
                        std::to_string(out.sharedWords - machine::kSharedWords) + " over)",
                    f.shared.empty() ? SourceLoc{f.file, 0, 0} : f.shared.back().loc);

  // Registers.
  bound = valueBounds(f);
  hiReader = demandedHigh(f, bound);
  lo.assign(f.regs.size(), kNone);
  hi.assign(f.regs.size(), kNone);
  pr.assign(f.regs.size(), kNone);
  for (size_t r = 0; r < f.regs.size(); ++r) {
    int b = typeBits(f.regs[r].type);
    if (b == 1) {
      pr[r] = out.newPred();
    } else {
      lo[r] = out.newReg();
      if (b == 64 && hiReader[r] >= 0 && bound[r] > 32) hi[r] = out.newReg();
    }
  }

  // Basic blocks.
  const size_t n = f.body.size();
  std::set<size_t> leaders{0};
  for (const auto& [name, idx] : f.labels) leaders.insert(std::min<size_t>(idx, n));
  for (size_t i = 0; i < n; ++i) {
    Opcode o = f.body[i].op;
    if (o == Opcode::Bra || o == Opcode::Ret || o == Opcode::Exit || isBlockBarrier(f.body[i])) leaders.insert(i + 1);
  }
  std::map<size_t, int> blockOf;
  for (size_t l : leaders) blockOf[l] = newBlock();
  if (info) info->basicBlocks = static_cast<int>(leaders.size() - (leaders.count(n) ? 1 : 0));
  int exitBlock = kNone;
  auto getExit = [&] {
    if (exitBlock == kNone) exitBlock = newBlock();
    out.blocks[exitBlock].term = VTerm{TermKind::Exit};
    open[exitBlock] = false;
    return exitBlock;
  };
  if (leaders.count(n)) {
    out.blocks[blockOf[n]].term = VTerm{TermKind::Exit};
    open[blockOf[n]] = false;
  }
  for (auto it = leaders.begin(); it != leaders.end(); ++it) {
    size_t start = *it;
    if (start == n) break;
    size_t end = std::next(it) == leaders.end() ? n : *std::next(it);
    cur = blockOf[start];
    for (size_t i = start; i < end; ++i) {
      in = &f.body[i];
      guard = kNone;
      guardNeg = false;
      Opcode o = in->op;
      int g = kNone;
      if (in->guarded) {
        if (in->guardReg >= f.regs.size() || pr[in->guardReg] == kNone) return invalid("guard is not a predicate");
        g = pr[in->guardReg];
      }
      if (o == Opcode::Bra) {
        if (in->srcs.size() != 1 || in->srcs[0].kind != OperandKind::Symbol) return unsupported("indirect branch");
        auto lab = f.labels.find(in->srcs[0].name);
        if (lab == f.labels.end()) return invalid("unknown label `" + in->srcs[0].name + "`");
        int target = blockOf.at(std::min<size_t>(lab->second, n));
        int next = blockOf.at(end);
        if (in->guarded) terminate(VTerm{TermKind::Branch, g, in->guardNegated, target, next});
        else terminate(VTerm{TermKind::Jump, kNone, false, kNone, target});
        continue;
      }
      if (o == Opcode::Ret || o == Opcode::Exit) {
        if (in->guarded) terminate(VTerm{TermKind::Branch, g, in->guardNegated, getExit(), blockOf.at(end)});
        else terminate(VTerm{TermKind::Exit});
        continue;
      }
      if (isBlockBarrier(*in)) {
        if (in->guarded) return unsupported("guarded barrier");
        if (in->srcs.size() != 1 || in->srcs[0].kind != OperandKind::Imm || in->srcs[0].imm != 0)
          return unsupported("barrier other than `bar.sync 0` (named barriers, thread counts)");
        terminate(VTerm{TermKind::Barrier, kNone, false, kNone, blockOf.at(end)});
        continue;
      }
      if (in->guarded) {
        if (o == Opcode::Bar || o == Opcode::Barrier || o == Opcode::Shfl || o == Opcode::Vote)
          return unsupported("guarded warp or barrier operation");
        guard = g;
        guardNeg = in->guardNegated;
      }
      hiWritten = false;
      QGPU_CHECK(one());
      for (const auto& d : in->dsts) {
        if (d.kind == OperandKind::Reg && d.reg < f.regs.size() && hi[d.reg] != kNone && !hiWritten) {
          const auto& reader = f.body[static_cast<size_t>(hiReader[d.reg])];
          return unsupported("64-bit value whose upper half is used: " + f.regs[d.reg].name +
                             " is computed here only to 32 bits, but `" + reader.text + "` (line " +
                             std::to_string(reader.loc.line) + ") reads its upper half");
        }
      }
    }
    if (open[cur]) terminate(VTerm{TermKind::Jump, kNone, false, kNone, blockOf.at(end)});
  }
  out.name = f.name;
  return Ok{};
}

}  // namespace

Expected<VFunc> translate(const FlatFunction& flat, TranslateInfo* info) {
  Translator t(flat);
  QGPU_CHECK(t.run(info));
  return std::move(t.out);
}

}  // namespace qgpu::lower
