// qgpu/host/lower/translate_values.cpp — what lowering knows about PTX register values: their
// bounds (valueBounds), which 64-bit high halves are read (demandedHigh), the ValueMap from PTX
// registers to vregs with its Dest handle, and the reading of source operands (Ctx).
#include <algorithm>
#include <deque>

#include "host/lower/translate.h"

namespace qgpu::lower::tr {

using machine::Op;
using machine::Special;
using ptx::Opcode;
using ptx::OperandKind;
using ptx::Type;

int typeBits(Type t) { return ptx::bits(t); }
bool typeSigned(Type t) { return ptx::isSigned(t); }

namespace {
// ---- Value bounds: which 64-bit values provably have a zero high half ----
// bound[r] = k means: every value register r ever holds (PTX semantics, as an unsigned number of
// the register's width) is < 2^k. Flow-insensitive over every definition of r (guarded ones
// included; a register read before any definition holds 0 on this machine), iterated to a fixed
// point; bounds only grow and are capped at the register's width, so the iteration ends. The
// rules are in docs/lowering.md ("Sound narrowing"). A 64-bit register with bound <= 32 has a
// zero high half: it needs no high-half vreg, whoever reads it.
int bitsOf(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

}  // namespace

std::optional<uint64_t> paramValue(const FlatFunction& f, const ptx::Instruction& in) {
  if (in.srcs.size() != 1 || in.types.size() != 1) return std::nullopt;
  auto it = f.params.find(in.srcs[0].name);
  auto width = f.paramBits.find(in.srcs[0].name);
  if (it == f.params.end() || width == f.paramBits.end()) return std::nullopt;
  const int tb = typeBits(in.types[0]);
  const int64_t off = in.srcs[0].imm;  // bytes: nvcc reads byte 1 of a .u32 as [p+1]
  if (tb < 8 || off < 0 || 8 * off + tb > width->second) return std::nullopt;
  uint64_t v = it->second >> (8 * off);  // off <= 7: the bytes lie inside a 64-bit parameter
  if (tb < 64) {
    v &= (uint64_t{1} << tb) - 1;
    if (typeSigned(in.types[0]) && (v >> (tb - 1)) != 0) v |= ~uint64_t{0} << tb;
  }
  return v;
}

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
      case OperandKind::Symbol:  // a .shared or .local variable's byte offset, or WARP_SZ
        return std::min(bitsOf(4 * machine::kSharedWords), w);
      default:
        return w;
    }
  };
  // A worklist over instructions: when a register's bound grows, the instructions reading it are
  // evaluated again. A register whose bound has grown kWiden times goes to its full width (a loop
  // counter would otherwise climb one bit per round), so every register changes at most
  // kWiden + 1 times and the work is linear in the number of register reads.
  constexpr int kWiden = 3;
  std::vector<std::vector<uint32_t>> users(f.regs.size());
  for (size_t i = 0; i < f.body.size(); ++i)
    for (const auto& o : f.body[i].srcs)
      if (o.kind == OperandKind::Reg && o.reg < f.regs.size()) users[o.reg].push_back(static_cast<uint32_t>(i));
  std::vector<int> grown(f.regs.size(), 0);
  std::deque<uint32_t> work;
  std::vector<bool> queued(f.body.size(), true);
  for (size_t i = 0; i < f.body.size(); ++i) work.push_back(static_cast<uint32_t>(i));
  while (!work.empty()) {
    uint32_t index = work.front();
    work.pop_front();
    queued[index] = false;
    {
      const auto& in = f.body[index];
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
        case Opcode::Mov: b = src(0, w); break;
        case Opcode::Cvta:  // global: the identity; shared: +2^31, or -2^31 (which may wrap)
          if (m.space == ptx::StateSpace::Global) b = src(0, w);
          else if (m.space == ptx::StateSpace::Shared && !m.toSpace) b = std::max(src(0, w), 31) + 1;
          // local: + 0xc0000000, below 2^32 for a source below 2^30; cvta.to.local may wrap
          else if (m.space == ptx::StateSpace::Local && !m.toSpace && src(0, w) <= 30) b = 32;
          break;
        case Opcode::Ld:
          if (m.space == ptx::StateSpace::Param) {
            auto v = paramValue(f, in);
            b = v ? bitsOf(rw < 64 ? *v & ((uint64_t{1} << rw) - 1) : *v) : rw;
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
        bound[dreg] = ++grown[dreg] >= kWiden ? rw : b;
        for (uint32_t u : users[dreg])
          if (!queued[u]) {
            queued[u] = true;
            work.push_back(u);
          }
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
std::vector<int> demandedHigh(const FlatFunction& f, const std::vector<int>& bound,
                              const std::vector<bool>& exactAddress) {
  std::vector<int> reader(f.regs.size(), -1);
  auto is64 = [&](const ptx::Operand& o) {
    bool reg = o.kind == OperandKind::Reg || (o.kind == OperandKind::Address && o.addrIsReg);
    return reg && o.reg < f.regs.size() && typeBits(f.regs[o.reg].type) == 64;
  };
  // A worklist: when a register's high half becomes demanded, its definitions are looked at again
  // (each register changes once, so the work is linear in the number of definitions).
  std::vector<std::vector<uint32_t>> defs(f.regs.size());
  for (size_t i = 0; i < f.body.size(); ++i)
    for (const auto& o : f.body[i].dsts)
      if (o.kind == OperandKind::Reg && o.reg < f.regs.size()) defs[o.reg].push_back(static_cast<uint32_t>(i));
  std::deque<uint32_t> work;
  std::vector<bool> queued(f.body.size(), true);
  for (size_t i = f.body.size(); i-- > 0;) work.push_back(static_cast<uint32_t>(i));  // readers first
  while (!work.empty()) {
    uint32_t i = work.front();
    work.pop_front();
    queued[i] = false;
    {
      const auto& in = f.body[i];
      auto mark = [&](const ptx::Operand& o) {
        if (is64(o) && bound[o.reg] > 32 && reader[o.reg] < 0) {
          reader[o.reg] = static_cast<int>(i);
          for (uint32_t def : defs[o.reg])
            if (!queued[def]) {
              queued[def] = true;
              work.push_back(def);
            }
        }
      };
      auto markAll = [&] { for (const auto& s : in.srcs) mark(s); };
      bool d = false;
      for (const auto& o : in.dsts) d = d || (is64(o) && reader[o.reg] >= 0 && bound[o.reg] > 32);
      int tb = in.types.empty() ? 0 : typeBits(in.types[0]);
      switch (in.op) {
        case Opcode::Mov: case Opcode::Cvta: case Opcode::And: case Opcode::Or: case Opcode::Xor:
        case Opcode::Not: case Opcode::Neg: case Opcode::Add: case Opcode::Sub: case Opcode::Selp:
          if (d) markAll();
          break;
        case Opcode::Mad:  // mad.hi.{u,s}64 reads every bit of a and b; c's high half only for d's
          if (d) markAll();
          else if (tb == 64 && in.mods.hi && in.srcs.size() == 3) {
            mark(in.srcs[0]);
            mark(in.srcs[1]);
          }
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
          // A 64-bit address register reads its high half, which must be zero for the access not
          // to fault. A 64-bit st or atom also stores (or combines) its value's high word; 8- to
          // 32-bit ones read low halves only.
          if (!in.srcs.empty() && in.srcs[0].kind == OperandKind::Address && in.srcs[0].addrIsReg &&
              !(i < exactAddress.size() && exactAddress[i]))
            mark(in.srcs[0]);
          if (in.op != Opcode::Ld && tb == 64)
            for (size_t k = 1; k < in.srcs.size(); ++k) mark(in.srcs[k]);
          break;
        default:
          if (tb == 64) markAll();  // anything else on 64-bit data reads every bit
          break;
      }
    }
  }
  return reader;
}


// ---- ValueMap ----

void ValueMap::init(const FlatFunction& f, VFunc& out) {
  bound_ = valueBounds(f);
  generic_ = genericSpaces(f);
  windowExact_ = windowExactAddresses(f, windowBounds(f, bound_, generic_), generic_);
  hiReader_ = demandedHigh(f, bound_, windowExact_);
  lo_.assign(f.regs.size(), kNone);
  hi_.assign(f.regs.size(), kNone);
  pr_.assign(f.regs.size(), kNone);
  for (size_t r = 0; r < f.regs.size(); ++r) {
    int b = typeBits(f.regs[r].type);
    if (b == 1) {
      pr_[r] = out.newPred();
    } else {
      lo_[r] = out.newReg();
      if (b == 64 && hiReader_[r] >= 0 && bound_[r] > 32) hi_[r] = out.newReg();
    }
  }
  // Constants: single unguarded definitions by ld.param, mov of an immediate, cvta of a constant.
  std::vector<int> defCount(f.regs.size(), 0);
  for (const auto& in : f.body)
    for (const auto& o : in.dsts)
      if (o.kind == OperandKind::Reg && o.reg < f.regs.size()) ++defCount[o.reg];
  constant_.assign(f.regs.size(), std::nullopt);
  for (const auto& in : f.body) {  // in order: a cvta follows the ld.param it converts
    if (in.guarded || in.dsts.size() != 1 || in.dsts[0].kind != OperandKind::Reg || in.srcs.size() != 1) continue;
    uint32_t r = in.dsts[0].reg;
    if (r >= f.regs.size() || defCount[r] != 1 || in.types.empty() || typeBits(in.types[0]) != 64) continue;
    const auto& src = in.srcs[0];
    if (in.op == Opcode::Ld && in.mods.space == ptx::StateSpace::Param) {
      constant_[r] = paramValue(f, in);
    } else if (in.op == Opcode::Mov && src.kind == OperandKind::Imm) {
      constant_[r] = static_cast<uint64_t>(src.imm);
    } else if (in.op == Opcode::Cvta && src.kind == OperandKind::Reg && src.reg < f.regs.size()) {
      // global: the identity; shared: the window base added or subtracted (mod 2^64)
      std::optional<uint64_t> v = constant_[src.reg];
      if (v && in.mods.space == ptx::StateSpace::Shared) *v = in.mods.toSpace ? *v - kSharedWindow : *v + kSharedWindow;
      else if (in.mods.space != ptx::StateSpace::Global) v = std::nullopt;
      constant_[r] = v;
    }
  }
  regBits_.resize(f.regs.size());
  for (size_t r = 0; r < f.regs.size(); ++r) regBits_[r] = typeBits(f.regs[r].type);
}

int ValueMap::regBits(uint32_t reg) const { return reg < regBits_.size() ? regBits_[reg] : 0; }

Dest ValueMap::define(uint32_t reg) {
  Dest d;
  d.lo = lo_[reg];
  d.hi_ = hi_[reg];
  if (d.hi_ != kNone) {
    d.map_ = this;
    d.pending_ = pending_.size();
    pending_.push_back({reg, false});
  }
  return d;
}

int Dest::hi() {
  if (map_) map_->pending_[pending_].done = true;
  return hi_;
}

Status ValueMap::finish(const ptx::Instruction& in, const FlatFunction& f) {
  std::vector<Pending> pending;
  pending.swap(pending_);
  for (const auto& d : in.dsts) {
    if (d.kind != OperandKind::Reg || d.reg >= hi_.size() || hi_[d.reg] == kNone) continue;
    bool done = std::any_of(pending.begin(), pending.end(),
                            [&](const Pending& p) { return p.reg == d.reg && p.done; });
    if (done) continue;
    const auto& reader = f.body[static_cast<size_t>(hiReader_[d.reg])];
    return makeDiag(ErrorKind::PtxUnsupported,
                    "unsupported PTX `" + in.text + "`: 64-bit value whose upper half is used: " +
                        f.regs[d.reg].name + " is computed here only to 32 bits, but `" + reader.text +
                        "` (line " + std::to_string(reader.loc.line) + ") reads its upper half",
                    in.loc);
  }
  return Ok{};
}

// ---- Reading operands ----

Diag Ctx::unsupported(const std::string& why) const {
  return makeDiag(ErrorKind::PtxUnsupported, "unsupported PTX `" + in->text + "`: " + why, in->loc);
}
Diag Ctx::invalid(const std::string& why) const {
  return makeDiag(ErrorKind::PtxInvalid, "invalid PTX `" + in->text + "`: " + why, in->loc);
}

Expected<VOperand> Ctx::special(const std::string& name) const {
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

// %lanemask_eq/lt/le/gt/ge from the lane id l (0..3): eq = 1 << l, lt = eq - 1, le = (eq << 1) - 1,
// gt = ~le, ge = ~lt — the values a GPU gives lane l (gt/ge include the lanes above 3, as there).
Expected<VOperand> Ctx::laneMask(const std::string& name) {
  std::string kind = name.substr(10);
  if (kind != "eq" && kind != "lt" && kind != "le" && kind != "gt" && kind != "ge")
    return unsupported("special register `" + name + "`");
  int eq = em.tmp();
  em.alu(Op::Shl, eq, VOperand::i(kind == "le" || kind == "gt" ? 2 : 1), VOperand::s(Special::LaneId));
  if (kind == "eq") return VOperand::r(eq);
  int below = em.tmp();
  em.alu(Op::Sub, below, VOperand::r(eq), VOperand::i(1));
  if (kind == "lt" || kind == "le") return VOperand::r(below);
  int above = em.tmp();
  em.alu(Op::Not, above, VOperand::r(below));
  return VOperand::r(above);
}

Expected<VOperand> Ctx::val(const ptx::Operand& o, int width) {
  switch (o.kind) {
    case OperandKind::Reg: {
      int rb = regBits(o);
      if (rb == 1) return invalid("a predicate used as a value");
      if (rb < 16) return unsupported("8-bit registers");
      if (width == 16 && rb > 16) {
        int t = em.tmp();
        em.alu(Op::And, t, VOperand::r(vals.srcLo(o.reg)), VOperand::i(0xffff));
        return VOperand::r(t);
      }
      return VOperand::r(vals.srcLo(o.reg));
    }
    case OperandKind::Imm: {
      uint64_t bitsv = static_cast<uint64_t>(o.imm);
      if (width == 16) bitsv &= 0xffff;
      return VOperand::i(static_cast<uint32_t>(bitsv));
    }
    case OperandKind::Special:
      if (o.name.rfind("%lanemask_", 0) == 0) return laneMask(o.name);
      return special(o.name);
    case OperandKind::Symbol: {
      if (o.name == "WARP_SZ") return special(o.name);
      auto it = shared.offset.find(o.name);
      if (it != shared.offset.end()) return VOperand::i(it->second);
      auto lit = shared.localOffset.find(o.name);  // a .local variable: its frame offset
      if (lit != shared.localOffset.end()) return VOperand::i(lit->second);
      return unsupported("the address of `" + o.name + "` (only .shared and .local variables have one)");
    }
    default:
      return invalid("unexpected operand");
  }
}

Expected<VOperand> Ctx::valHi(const ptx::Operand& o) const {
  switch (o.kind) {
    case OperandKind::Address:
      if (!o.addrIsReg) return VOperand::i(0);
      [[fallthrough]];
    case OperandKind::Reg:
      if (regBits(o) != 64 || vals.bound(o.reg) <= 32) return VOperand::i(0);  // provably zero
      if (vals.srcHi(o.reg) == kNone)
        return makeDiag(ErrorKind::Internal, "lowering: high half of " + f.regs[o.reg].name + " not kept", in->loc);
      return VOperand::r(vals.srcHi(o.reg));
    case OperandKind::Imm:
      return VOperand::i(static_cast<uint32_t>(static_cast<uint64_t>(o.imm) >> 32));
    case OperandKind::Special:
    case OperandKind::Symbol:
      return VOperand::i(0);
    default:
      return invalid("unexpected operand");
  }
}

Expected<int> Ctx::predOf(const ptx::Operand& o) const {
  if (o.kind != OperandKind::Reg || regBits(o) != 1) return invalid("expected a predicate register");
  return vals.pred(o.reg);
}

Expected<Dest> Ctx::dest(const ptx::Operand& o) {
  if (o.kind != OperandKind::Reg) return invalid("destination is not a register");
  int rb = regBits(o);
  if (rb == 1) return invalid("a predicate register used as a value destination");
  if (rb < 16) return unsupported("8-bit registers");
  return vals.define(o.reg);
}

std::optional<uint64_t> Ctx::constant(const ptx::Operand& o) const {
  if (o.kind == OperandKind::Imm) return static_cast<uint64_t>(o.imm);
  if (o.kind == OperandKind::Reg && regBits(o) == 64) return vals.constant(o.reg);
  return std::nullopt;
}

void Ctx::writeHi(Dest& d, VOperand value) {
  if (d.wantsHi()) em.alu(Op::Mov, d.hi(), value);
}

}  // namespace qgpu::lower::tr
