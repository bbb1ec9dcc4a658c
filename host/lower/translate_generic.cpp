// qgpu/host/lower/translate_generic.cpp — where a generic address can point: the provenance
// analysis behind the static/dynamic choice for generic ld/st/atom (docs/lowering.md, "Generic
// addresses").
//
// A generic address of shared byte s is s + kSharedWindow (ptxeval's window, ptxeval/eval.h); every
// other generic address is a global one. For each register the analysis says what its value may
// be, flow-insensitively: the union over all its definitions (PTX registers are not SSA), of
//   kGenShared   a shared-window pointer: cvta.shared (not .to) of anything, an immediate or a
//                parameter value inside the window;
//   kGenOther    another pointer: cvta.global, cvta.to.*, a .shared symbol's own (non-generic)
//                address;
//   kGenInteger  an integer with no pointer in it: immediates and parameters outside the window,
//                specials, loads of 32 bits or less, arithmetic on integers. Used as a generic
//                address it is a global one (so a raw parameter is a global pointer).
// A register no instruction defines is an integer. Value by value: adding an integer to a value
// (add, sub, and, or, xor, min, max, mad's addend) keeps the value's kind, so `cvta.shared` + an
// offset stays a shared-window pointer; mov, cvt and selp keep their sources' kinds (selp merges
// two); combining two pointers, a non-additive op (mul, shl, ...) on a pointer, and a 64-bit ld
// or atom result (a pointer kept in memory) may be any pointer (kGenShared | kGenOther).
//
// A generic access through a register that may be a shared-window pointer and nothing else is
// shared; one that cannot be one is global; anything else is decided per lane by value
// (docs/lowering.md, "Generic addresses"). The static choice is pointer provenance (C/PTX
// semantics: pointer arithmetic stays inside its object), not a value range: a shared-window
// pointer moved by >= 2^31 bytes, or a global one moved into the window, is an out-of-object
// access that ptxeval (which decides by value) may route to the other memory. Such programs
// already access outside both 504-byte memories here.
#include <algorithm>
#include <deque>

#include "host/lower/translate.h"

namespace qgpu::lower::tr {

using ptx::Opcode;
using ptx::OperandKind;

namespace {

bool inWindow(uint64_t v) { return v >= kSharedWindow && v - kSharedWindow < kSharedWindowSpan; }
bool inLocalWindow(uint64_t v) { return v >= kLocalWindow && v - kLocalWindow < kLocalWindowSpan; }

// A flow-insensitive fixed point over the register definitions: visit(in, dreg) runs for every
// instruction whose first destination is a register, once each, then again whenever a register
// it reads changed; it returns whether dreg's fact grew (facts only grow, so this ends).
template <typename Visit>
void registerFixpoint(const FlatFunction& f, Visit visit) {
  std::vector<std::vector<uint32_t>> users(f.regs.size());
  for (size_t i = 0; i < f.body.size(); ++i)
    for (const auto& o : f.body[i].srcs)
      if (o.kind == OperandKind::Reg && o.reg < f.regs.size()) users[o.reg].push_back(static_cast<uint32_t>(i));
  std::deque<uint32_t> work;
  std::vector<bool> queued(f.body.size(), true);
  for (size_t i = 0; i < f.body.size(); ++i) work.push_back(static_cast<uint32_t>(i));
  while (!work.empty()) {
    const uint32_t index = work.front();
    work.pop_front();
    queued[index] = false;
    const auto& in = f.body[index];
    if (in.dsts.empty() || in.dsts[0].kind != OperandKind::Reg || in.dsts[0].reg >= f.regs.size()) continue;
    const uint32_t dreg = in.dsts[0].reg;
    if (!visit(in, dreg)) continue;
    for (uint32_t u : users[dreg])
      if (!queued[u]) {
        queued[u] = true;
        work.push_back(u);
      }
  }
}

}  // namespace

std::vector<uint8_t> genericSpaces(const FlatFunction& f) {
  // A pointer of unknown origin (combined pointers, a 64-bit load) may be a local-window one only
  // where the function makes one: without cvta.local no value is a local-window pointer.
  const bool makesLocal = std::any_of(f.body.begin(), f.body.end(), [](const ptx::Instruction& in) {
    return in.op == Opcode::Cvta && in.mods.space == ptx::StateSpace::Local && !in.mods.toSpace;
  });
  const uint8_t kAnyPointer = kGenShared | kGenOther | (makesLocal ? kGenLocal : 0);
  std::vector<uint8_t> kind(f.regs.size(), 0);  // 0: no definition seen yet
  auto isShared = [&](const std::string& name) {
    for (const auto& v : f.shared)
      if (v.name == name) return true;
    for (const FrameVariable& v : f.locals)  // a .local symbol's own (non-generic) frame offset
      if (v.decl.name == name) return true;
    return false;
  };
  auto opKind = [&](const ptx::Operand& o) -> uint8_t {
    switch (o.kind) {
      case OperandKind::Reg:
        return o.reg < f.regs.size() && kind[o.reg] != 0 ? kind[o.reg] : kGenInteger;
      case OperandKind::Imm:
        return inWindow(static_cast<uint64_t>(o.imm)) ? kGenShared
               : inLocalWindow(static_cast<uint64_t>(o.imm)) ? kGenLocal : kGenInteger;
      case OperandKind::Symbol: return isShared(o.name) ? kGenOther : kGenInteger;
      default: return kGenInteger;
    }
  };
  // x + y value by value: an integer keeps the other's kind; two pointers may be anything.
  auto offset = [&](uint8_t x, uint8_t y) -> uint8_t {
    uint8_t r = 0;
    if (x & kGenInteger) r |= y;
    if (y & kGenInteger) r |= x;
    if ((x & kAnyPointer) && (y & kAnyPointer)) r |= kAnyPointer;
    return r;
  };
  // Each register's kind only grows (three bits), so every instruction is revisited at most three
  // times per register it reads.
  registerFixpoint(f, [&](const ptx::Instruction& in, uint32_t dreg) {
    if (ptx::bits(f.regs[dreg].type) <= 1) return false;
    const int tb = in.types.empty() ? 0 : ptx::bits(in.types[0]);
    auto src = [&](size_t k) { return k < in.srcs.size() ? opKind(in.srcs[k]) : kGenInteger; };
    uint8_t all = 0;
    for (size_t k = 0; k < in.srcs.size(); ++k) all |= src(k);
    uint8_t k = 0;
    switch (in.op) {
      case Opcode::Cvta:
        k = in.mods.toSpace ? kGenOther
            : in.mods.space == ptx::StateSpace::Shared ? kGenShared
            : in.mods.space == ptx::StateSpace::Local ? kGenLocal : kGenOther;
        break;
      case Opcode::Mov: case Opcode::Cvt:
        k = src(0);
        break;
      case Opcode::Selp:
        k = src(0) | src(1);
        break;
      case Opcode::Add: case Opcode::Sub: case Opcode::And: case Opcode::Or: case Opcode::Xor:
      case Opcode::Min: case Opcode::Max:
        k = offset(src(0), src(1));
        break;
      case Opcode::Mad:  // a * b + c: the product of integers is an integer
        k = offset((src(0) | src(1)) == kGenInteger ? kGenInteger : kAnyPointer, src(2));
        break;
      case Opcode::Ld:
        if (in.mods.space == ptx::StateSpace::Param) {
          auto v = paramValue(f, in);
          k = v && inWindow(*v) ? kGenShared : v && inLocalWindow(*v) ? kGenLocal : kGenInteger;
        } else {
          k = tb == 64 ? kAnyPointer : kGenInteger;
        }
        break;
      case Opcode::Atom:
        k = tb == 64 ? kAnyPointer : kGenInteger;
        break;
      default:
        k = all == kGenInteger || all == 0 ? kGenInteger : kAnyPointer;
        break;
    }
    if ((kind[dreg] | k) == kind[dreg]) return false;
    kind[dreg] |= k;
    return true;
  });
  for (auto& k : kind)
    if (k == 0) k = kGenInteger;
  return kind;
}

// Window bounds: a flow-insensitive fixed point like valueBounds (and its widening: a register
// whose bound grew kWiden times goes to 64, so a pointer stepped in a loop ends unknown). Rules,
// for registers that are only shared-window pointers: cvta.shared of x: bound(x) (the value is
// 2^31 + x); mov: the source's; selp: the larger; add of such a pointer and an integer y:
// max(its bound, bound(y)) + 1; an immediate inside the window: the bit length of its offset in
// it; anything else (sub, cvt, and, ...): 64.
std::vector<int> windowBounds(const FlatFunction& f, const std::vector<int>& bound, const std::vector<uint8_t>& kind) {
  std::vector<int> rel(f.regs.size(), -1);  // -1: no definition seen yet
  auto bits = [](uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); };
  auto valueBound = [&](const ptx::Operand& o) -> int {
    if (o.kind == OperandKind::Reg && o.reg < f.regs.size()) return bound[o.reg];
    if (o.kind == OperandKind::Imm) return bits(static_cast<uint64_t>(o.imm));
    return 64;
  };
  auto isPointer = [&](const ptx::Operand& o) {
    if (o.kind == OperandKind::Reg) return o.reg < f.regs.size() && kind[o.reg] == kGenShared;
    return o.kind == OperandKind::Imm && inWindow(static_cast<uint64_t>(o.imm));
  };
  auto isInteger = [&](const ptx::Operand& o) {
    if (o.kind == OperandKind::Reg) return o.reg < f.regs.size() && kind[o.reg] == kGenInteger;
    return o.kind == OperandKind::Imm && !inWindow(static_cast<uint64_t>(o.imm));
  };
  auto relOf = [&](const ptx::Operand& o) -> int {  // of a pointer operand
    if (o.kind == OperandKind::Reg) return rel[o.reg];
    return bits(static_cast<uint64_t>(o.imm) - kSharedWindow);
  };
  constexpr int kWiden = 3;
  std::vector<int> grown(f.regs.size(), 0);
  registerFixpoint(f, [&](const ptx::Instruction& in, uint32_t dreg) {
    if (kind[dreg] != kGenShared) return false;
    const auto& s = in.srcs;
    int b = 64;
    if (in.op == Opcode::Cvta && s.size() == 1) {
      b = valueBound(s[0]);
    } else if (in.op == Opcode::Mov && s.size() == 1 && isPointer(s[0])) {
      b = relOf(s[0]);
    } else if (in.op == Opcode::Selp && s.size() == 3 && isPointer(s[0]) && isPointer(s[1])) {
      b = std::max(relOf(s[0]), relOf(s[1]));
    } else if (in.op == Opcode::Add && s.size() == 2) {
      if (isPointer(s[0]) && isInteger(s[1])) b = std::max(relOf(s[0]), valueBound(s[1])) + 1;
      else if (isInteger(s[0]) && isPointer(s[1])) b = std::max(relOf(s[1]), valueBound(s[0])) + 1;
    }
    b = std::min(b, 64);
    if (b <= rel[dreg]) return false;
    rel[dreg] = ++grown[dreg] >= kWiden ? 64 : b;
    return true;
  });
  for (auto& r : rel)
    if (r < 0) r = 64;
  return rel;
}

std::vector<bool> windowExactAddresses(const FlatFunction& f, const std::vector<int>& window,
                                       const std::vector<uint8_t>& kind) {
  std::vector<bool> exact(f.body.size(), false);
  for (size_t i = 0; i < f.body.size(); ++i) {
    const auto& in = f.body[i];
    if (in.op != Opcode::Ld && in.op != Opcode::St && in.op != Opcode::Atom) continue;
    if (in.mods.space != ptx::StateSpace::None && in.mods.space != ptx::StateSpace::Generic) continue;
    if (in.srcs.empty() || in.srcs[0].kind != OperandKind::Address || !in.srcs[0].addrIsReg) continue;
    const uint32_t r = in.srcs[0].reg;
    exact[i] = r < f.regs.size() && ptx::bits(f.regs[r].type) == 64 && kind[r] == kGenShared && window[r] <= 30;
  }
  return exact;
}

std::vector<std::optional<uint64_t>> frameConstants(const FlatFunction& f,
                                                    const std::map<std::string, uint32_t>& localOffset) {
  std::vector<std::optional<uint64_t>> frame(f.regs.size());
  if (localOffset.empty()) return frame;
  std::vector<int> defs(f.regs.size(), 0);
  for (const auto& in : f.body)
    for (const auto& o : in.dsts)
      if (o.kind == OperandKind::Reg && o.reg < f.regs.size()) ++defs[o.reg];
  auto value = [&](const ptx::Operand& o) -> std::optional<uint64_t> {
    if (o.kind == OperandKind::Reg && o.reg < f.regs.size()) return frame[o.reg];
    if (o.kind == OperandKind::Symbol) {
      auto it = localOffset.find(o.name);
      if (it != localOffset.end()) return it->second;
    }
    return std::nullopt;
  };
  for (const auto& in : f.body) {  // in order: a definition follows the one it reads
    if (in.guarded || in.dsts.size() != 1 || in.dsts[0].kind != OperandKind::Reg) continue;
    const uint32_t r = in.dsts[0].reg;
    if (r >= f.regs.size() || defs[r] != 1 || ptx::bits(f.regs[r].type) < 32) continue;
    const auto& s = in.srcs;
    std::optional<uint64_t> v;
    if (in.op == Opcode::Mov && s.size() == 1) {
      v = value(s[0]);
    } else if ((in.op == Opcode::Add || in.op == Opcode::Sub) && s.size() == 2) {
      const bool immSecond = s[1].kind == OperandKind::Imm;
      std::optional<uint64_t> base = value(immSecond ? s[0] : s[1]);
      if (base && (immSecond || (in.op == Opcode::Add && s[0].kind == OperandKind::Imm))) {
        const uint64_t k = static_cast<uint64_t>(immSecond ? s[1].imm : s[0].imm);
        v = in.op == Opcode::Add ? *base + k : *base - k;
      }
    } else if (in.op == Opcode::Cvta && s.size() == 1 && in.mods.space == ptx::StateSpace::Local) {
      v = value(s[0]);
      if (v) *v = in.mods.toSpace ? *v - kLocalWindow : *v + kLocalWindow;
    }
    if (v && ptx::bits(f.regs[r].type) == 32) *v &= 0xffffffffu;
    if (v && *v >> 32 == 0) frame[r] = v;
  }
  return frame;
}

}  // namespace qgpu::lower::tr
