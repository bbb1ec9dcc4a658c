// qgpu/host/ptx/compare.cpp — structural equality of PTX modules (compare.h).
#include "host/ptx/compare.h"

namespace qgpu::ptx {
namespace {

using Diff = std::optional<std::string>;

#define QGPU_FIELD(a, b, field, what)                      \
  if (!((a).field == (b).field)) return std::string(what) + ": " #field " differs"

Diff operand(const Operand& a, const Operand& b, const std::string& what) {
  QGPU_FIELD(a, b, kind, what);
  QGPU_FIELD(a, b, reg, what);
  QGPU_FIELD(a, b, addrIsReg, what);
  QGPU_FIELD(a, b, imm, what);
  QGPU_FIELD(a, b, name, what);
  QGPU_FIELD(a, b, items.size(), what);
  for (size_t i = 0; i < a.items.size(); ++i)
    if (auto d = operand(a.items[i], b.items[i], what + " item " + std::to_string(i))) return d;
  return std::nullopt;
}

Diff operands(const std::vector<Operand>& a, const std::vector<Operand>& b, const std::string& what) {
  if (a.size() != b.size()) return what + ": count differs";
  for (size_t i = 0; i < a.size(); ++i)
    if (auto d = operand(a[i], b[i], what + "[" + std::to_string(i) + "]")) return d;
  return std::nullopt;
}

Diff modifiers(const Modifiers& a, const Modifiers& b, const std::string& w) {
  QGPU_FIELD(a, b, cmp, w);
  QGPU_FIELD(a, b, space, w);
  QGPU_FIELD(a, b, toSpace, w);
  QGPU_FIELD(a, b, nc, w);
  QGPU_FIELD(a, b, isVolatile, w);
  QGPU_FIELD(a, b, uni, w);
  QGPU_FIELD(a, b, lo, w);
  QGPU_FIELD(a, b, hi, w);
  QGPU_FIELD(a, b, wide, w);
  QGPU_FIELD(a, b, sync, w);
  QGPU_FIELD(a, b, aligned, w);
  QGPU_FIELD(a, b, wrap, w);
  QGPU_FIELD(a, b, clamp, w);
  QGPU_FIELD(a, b, left, w);
  QGPU_FIELD(a, b, right, w);
  QGPU_FIELD(a, b, shiftamt, w);
  QGPU_FIELD(a, b, sub, w);
  QGPU_FIELD(a, b, atom, w);
  QGPU_FIELD(a, b, shfl, w);
  QGPU_FIELD(a, b, vote, w);
  QGPU_FIELD(a, b, barrier, w);
  return std::nullopt;
}

Diff variables(const std::vector<Variable>& a, const std::vector<Variable>& b, const std::string& w) {
  if (a.size() != b.size()) return w + ": count differs";
  for (size_t i = 0; i < a.size(); ++i) {
    std::string at = w + "[" + std::to_string(i) + "]";
    QGPU_FIELD(a[i], b[i], name, at);
    QGPU_FIELD(a[i], b[i], type, at);
    QGPU_FIELD(a[i], b[i], align, at);
    QGPU_FIELD(a[i], b[i], bytes, at);
    QGPU_FIELD(a[i], b[i], scope, at);
    QGPU_FIELD(a[i], b[i], external, at);
    QGPU_FIELD(a[i], b[i], linkage, at);
  }
  return std::nullopt;
}

Diff function(const Function& a, const Function& b) {
  std::string w = "function '" + a.name + "'";
  QGPU_FIELD(a, b, name, w);
  QGPU_FIELD(a, b, isEntry, w);
  QGPU_FIELD(a, b, visible, w);
  QGPU_FIELD(a, b, labels, w);
  if (auto d = variables(a.params, b.params, w + ": params")) return d;
  if (auto d = variables(a.returns, b.returns, w + ": returns")) return d;
  if (auto d = variables(a.shared, b.shared, w + ": shared")) return d;
  if (auto d = variables(a.locals, b.locals, w + ": local")) return d;
  if (auto d = variables(a.callParams, b.callParams, w + ": callParams")) return d;
  QGPU_FIELD(a, b, regs.size(), w);
  for (size_t i = 0; i < a.regs.size(); ++i) {
    std::string at = w + ": regs[" + std::to_string(i) + "]";
    QGPU_FIELD(a.regs[i], b.regs[i], name, at);
    QGPU_FIELD(a.regs[i], b.regs[i], type, at);
    QGPU_FIELD(a.regs[i], b.regs[i], scopeDepth, at);
    QGPU_FIELD(a.regs[i], b.regs[i], scope, at);
  }
  QGPU_FIELD(a, b, scopes.size(), w);
  for (size_t i = 0; i < a.scopes.size(); ++i) {
    std::string at = w + ": scopes[" + std::to_string(i) + "]";
    QGPU_FIELD(a.scopes[i], b.scopes[i], parent, at);
    QGPU_FIELD(a.scopes[i], b.scopes[i], depth, at);
    QGPU_FIELD(a.scopes[i], b.scopes[i], begin, at);
    QGPU_FIELD(a.scopes[i], b.scopes[i], end, at);
  }
  QGPU_FIELD(a, b, body.size(), w);
  for (size_t i = 0; i < a.body.size(); ++i) {
    const Instruction& x = a.body[i];
    const Instruction& y = b.body[i];
    std::string at = w + ": body[" + std::to_string(i) + "] '" + x.text + "'";
    QGPU_FIELD(x, y, op, at);
    QGPU_FIELD(x, y, types, at);
    QGPU_FIELD(x, y, guarded, at);
    QGPU_FIELD(x, y, guardNegated, at);
    QGPU_FIELD(x, y, guardReg, at);
    if (auto d = modifiers(x.mods, y.mods, at)) return d;
    if (auto d = operands(x.dsts, y.dsts, at + " dsts")) return d;
    if (auto d = operands(x.srcs, y.srcs, at + " srcs")) return d;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> firstDifference(const Module& a, const Module& b) {
  QGPU_FIELD(a, b, version, "module");
  QGPU_FIELD(a, b, target, "module");
  QGPU_FIELD(a, b, addressSize, "module");
  if (auto d = variables(a.shared, b.shared, "module: shared")) return d;
  if (auto d = variables(a.globals, b.globals, "module: globals")) return d;
  QGPU_FIELD(a, b, functions.size(), "module");
  for (size_t i = 0; i < a.functions.size(); ++i)
    if (auto d = function(a.functions[i], b.functions[i])) return d;
  return std::nullopt;
}

}  // namespace qgpu::ptx
