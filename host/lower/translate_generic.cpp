// qgpu/host/lower/translate_generic.cpp — where a generic address can point: the provenance
// analysis behind the static/dynamic choice for generic ld/st/atom (docs/lowering.md, "Generic
// addresses").
//
// A generic address of shared byte s is s + kSharedWindow (ptxeval's window, ptxeval/eval.h); every
// other generic address is a global one. For each register the analysis says which kinds of
// pointer its value may derive from, flow-insensitively over all its definitions (PTX registers
// are not SSA; a register read before any definition holds 0, a plain value):
//   kGenShared  a shared-window pointer: cvta.shared (not .to) of anything, an immediate or
//               parameter value inside the window;
//   kGenOther   any other pointer: cvta.global, cvta.to.*, a .shared symbol's own (non-generic)
//               address;
//   both        a 64-bit value loaded from memory or returned by an atomic (a stored pointer of
//               either kind), or a non-additive op (mul, shl, ...) on a pointer.
// Additive ops (mov, add, sub, mad's addend, selp, and/or/xor, min/max, cvt) carry the union of
// their sources' kinds: `add` of a shared-window pointer and an integer offset stays one. A value
// with neither bit is an integer (immediates outside the window, parameters, specials, 32-bit
// loads, arithmetic on integers): used as a generic address it is a global address, as it was
// before generic shared pointers existed here.
//
// This is pointer provenance (C/PTX semantics: pointer arithmetic stays inside its object), not a
// value range: a shared-window pointer moved by >= 2^31 bytes, or a global one moved into the
// window, is an out-of-object access that ptxeval (which decides by value) may route to the other
// memory. Such programs already access outside both 504-byte memories here.
#include <deque>

#include "host/lower/translate.h"

namespace qgpu::lower::tr {

using ptx::Opcode;
using ptx::OperandKind;

namespace {

bool inWindow(uint64_t v) { return v >= kSharedWindow && v - kSharedWindow < kSharedWindowSpan; }

}  // namespace

std::vector<uint8_t> genericSpaces(const FlatFunction& f) {
  std::vector<uint8_t> kind(f.regs.size(), 0);
  auto isShared = [&](const std::string& name) {
    for (const auto& v : f.shared)
      if (v.name == name) return true;
    return false;
  };
  auto opKind = [&](const ptx::Operand& o) -> uint8_t {
    switch (o.kind) {
      case OperandKind::Reg: return o.reg < f.regs.size() ? kind[o.reg] : 0;
      case OperandKind::Imm: return inWindow(static_cast<uint64_t>(o.imm)) ? kGenShared : 0;
      case OperandKind::Symbol: return isShared(o.name) ? kGenOther : 0;
      default: return 0;
    }
  };
  std::vector<std::vector<uint32_t>> users(f.regs.size());
  for (size_t i = 0; i < f.body.size(); ++i)
    for (const auto& o : f.body[i].srcs)
      if (o.kind == OperandKind::Reg && o.reg < f.regs.size()) users[o.reg].push_back(static_cast<uint32_t>(i));
  // Each register's kind only grows (two bits), so every instruction is revisited at most twice
  // per register it reads.
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
    if (ptx::bits(f.regs[dreg].type) <= 1) continue;
    const int tb = in.types.empty() ? 0 : ptx::bits(in.types[0]);
    uint8_t all = 0;
    for (const auto& s : in.srcs) all |= opKind(s);
    uint8_t k = 0;
    switch (in.op) {
      case Opcode::Cvta:
        k = in.mods.space == ptx::StateSpace::Shared && !in.mods.toSpace ? kGenShared : kGenOther;
        break;
      case Opcode::Mov: case Opcode::Add: case Opcode::Sub: case Opcode::Mad: case Opcode::Selp:
      case Opcode::And: case Opcode::Or: case Opcode::Xor: case Opcode::Min: case Opcode::Max:
      case Opcode::Cvt:
        k = all;
        break;
      case Opcode::Ld:
        if (in.mods.space == ptx::StateSpace::Param) {
          auto v = paramValue(f, in);
          k = v && inWindow(*v) ? kGenShared : 0;
        } else {
          k = tb == 64 ? kGenShared | kGenOther : 0;
        }
        break;
      case Opcode::Atom:
        k = tb == 64 ? kGenShared | kGenOther : 0;
        break;
      default:
        k = all != 0 ? kGenShared | kGenOther : 0;
        break;
    }
    if ((kind[dreg] | k) != kind[dreg]) {
      kind[dreg] |= k;
      for (uint32_t u : users[dreg])
        if (!queued[u]) {
          queued[u] = true;
          work.push_back(u);
        }
    }
  }
  return kind;
}

}  // namespace qgpu::lower::tr
