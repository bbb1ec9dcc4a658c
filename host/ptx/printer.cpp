// qgpu/host/ptx/printer.cpp — canonical PTX text of a module (ir.h, print()).
//
// Canonical form: one statement per line, a tab before operands, `, ` between them, modifiers in
// PTX order, immediates in decimal, register runs `%r0..%rN-1` of one type and scope folded back
// into `%r<N>`. Each scope prints its own `.reg`, `.shared` and `.param` declarations first, then
// its instructions with nested scopes where their instruction ranges start; that is the shape the
// parser requires, so parse(print(m)) reproduces ids, scopes and labels exactly (compare.h).
#include <map>
#include <string>

#include "host/ptx/ir.h"
#include "host/ptx/names.h"

namespace qgpu::ptx {
namespace {

std::string variable(const char* space, const Variable& v) {
  std::string out = space;
  if (v.align) out += " .align " + std::to_string(v.align);
  out += std::string(" .") + typeName(v.type) + " " + v.name;
  uint32_t elem = static_cast<uint32_t>(bits(v.type) / 8);
  if (v.external) out += "[]";
  else if (elem != 0 && v.bytes != elem) out += "[" + std::to_string(v.bytes / elem) + "]";
  return out;
}

// Splits "%r12" into ("%r", 12); false if the name does not end in a plain decimal number.
bool splitNumbered(const std::string& name, std::string& base, uint64_t& n) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (i == name.size() || i == 0 || name.size() - i > 9) return false;
  if (name[i] == '0' && i + 1 != name.size()) return false;  // "%r01" is not part of a range
  base = name.substr(0, i);
  n = std::stoull(name.substr(i));
  return true;
}

class Printer {
 public:
  explicit Printer(const Module& m) : m_(m) {}

  std::string run() {
    out_ += ".version " + m_.version + "\n";
    out_ += ".target " + m_.target + "\n";
    out_ += ".address_size " + std::to_string(m_.addressSize) + "\n";
    for (const Variable& v : m_.shared)
      out_ += (v.linkage.empty() ? "" : v.linkage + " ") + variable(".shared", v) + ";\n";
    for (const Variable& v : m_.globals) {  // linkage: ".global", ".visible .const", ...
      const size_t space = v.linkage.rfind('.');
      out_ += v.linkage.substr(0, space) + variable(v.linkage.substr(space).c_str(), v) + ";\n";
    }
    if (!m_.shared.empty() || !m_.globals.empty()) out_ += "\n";
    for (const Function& f : m_.functions) function(f);
    return std::move(out_);
  }

 private:
  const Module& m_;
  std::string out_;
  const Function* f_ = nullptr;
  std::multimap<uint32_t, std::string> labelsAt_;

  void params(const std::vector<Variable>& list, bool multiline) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (multiline) out_ += "\t";
      out_ += variable(".param", list[i]);
      if (i + 1 < list.size()) out_ += multiline ? ",\n" : ", ";
      else if (multiline) out_ += "\n";
    }
  }

  void function(const Function& f) {
    f_ = &f;
    labelsAt_.clear();
    for (const auto& [name, index] : f.labels) labelsAt_.emplace(index, name);
    out_ += "\n";
    if (f.visible) out_ += ".visible ";
    out_ += f.isEntry ? ".entry " : ".func ";
    if (!f.isEntry && !f.returns.empty()) {
      out_ += "(";
      params(f.returns, false);
      out_ += ") ";
    }
    out_ += f.name + "(";
    if (!f.params.empty()) {
      out_ += "\n";
      params(f.params, true);
    }
    out_ += ")\n";
    index(f);
    if (f.scopes.empty()) {
      out_ += "{\n}\n";
      return;
    }
    scope(0);
    labelsAt(static_cast<uint32_t>(f.body.size()));
    out_ += "}\n";
  }

  // Per scope: its child scopes, registers, shared and call variables, each in order.
  struct ScopeItems {
    std::vector<uint32_t> children, regs;
    std::vector<const Variable*> shared, locals, params;
  };
  std::vector<ScopeItems> items_;

  void index(const Function& f) {
    items_.assign(f.scopes.size(), {});
    auto valid = [&](uint32_t s) { return s < items_.size(); };
    for (uint32_t c = 1; c < f.scopes.size(); ++c)
      if (f.scopes[c].parent < c) items_[f.scopes[c].parent].children.push_back(c);
    for (uint32_t i = 0; i < f.regs.size(); ++i)
      if (valid(f.regs[i].scope)) items_[f.regs[i].scope].regs.push_back(i);
    for (const Variable& v : f.shared)
      if (valid(v.scope)) items_[v.scope].shared.push_back(&v);
    for (const Variable& v : f.locals)
      if (valid(v.scope)) items_[v.scope].locals.push_back(&v);
    for (const Variable& v : f.callParams)
      if (valid(v.scope)) items_[v.scope].params.push_back(&v);
  }

  void declarations(uint32_t id, const std::string& indent) {
    const Function& f = *f_;
    const std::vector<uint32_t>& ids = items_[id].regs;
    for (size_t k = 0; k < ids.size();) {
      const RegInfo& r = f.regs[ids[k]];
      // Fold %x0, %x1, ... %x(N-1) of one type and scope into `%x<N>`.
      std::string base;
      uint64_t n = 0;
      size_t run = 1;
      if (splitNumbered(r.name, base, n) && n == 0) {
        while (k + run < ids.size() && ids[k + run] == ids[k] + run) {
          const RegInfo& s = f.regs[ids[k + run]];
          if (s.type != r.type || s.name != base + std::to_string(run)) break;
          ++run;
        }
      }
      out_ += indent + ".reg ." + typeName(r.type) + " ";
      out_ += run > 1 ? base + "<" + std::to_string(run) + ">" : r.name;
      out_ += ";\n";
      k += run;
    }
    for (const Variable* v : items_[id].shared) out_ += indent + variable(".shared", *v) + ";\n";
    for (const Variable* v : items_[id].locals) out_ += indent + variable(".local", *v) + ";\n";
    for (const Variable* v : items_[id].params) out_ += indent + variable(".param", *v) + ";\n";
  }

  void labelsAt(uint32_t index) {
    auto [lo, hi] = labelsAt_.equal_range(index);
    for (auto it = lo; it != hi; ++it) out_ += it->second + ":\n";
  }

  void scope(uint32_t id) {
    const Function& f = *f_;
    const Scope& s = f.scopes[id];
    std::string indent(s.depth + 1, '\t');
    out_ += std::string(s.depth, '\t') + "{\n";
    declarations(id, indent);
    uint32_t pos = s.begin;
    for (uint32_t c : items_[id].children) {
      instructions(pos, f.scopes[c].begin, indent);
      scope(c);
      pos = f.scopes[c].end;
    }
    instructions(pos, s.end, indent);
    if (id != 0) out_ += std::string(s.depth, '\t') + "}\n";
  }

  void instructions(uint32_t from, uint32_t to, const std::string& indent) {
    for (uint32_t i = from; i < to && i < f_->body.size(); ++i) {
      labelsAt(i);
      out_ += indent + instruction(f_->body[i]) + "\n";
    }
  }

  std::string reg(uint32_t id) const {
    return id < f_->regs.size() ? f_->regs[id].name : "%<bad" + std::to_string(id) + ">";
  }

  std::string operand(const Operand& o) const {
    switch (o.kind) {
      case OperandKind::Reg: return reg(o.reg);
      case OperandKind::Imm: return std::to_string(o.imm);
      case OperandKind::Special:
      case OperandKind::Symbol: return o.name;
      case OperandKind::Address: {
        std::string s = "[" + (o.addrIsReg ? reg(o.reg) : o.name);
        if (o.imm != 0) s += "+" + std::to_string(o.imm);
        return s + "]";
      }
      case OperandKind::List: {
        std::string s = "(";
        for (size_t i = 0; i < o.items.size(); ++i) s += (i ? ", " : "") + operand(o.items[i]);
        return s + ")";
      }
    }
    return "?";
  }

  static std::string opcode(const Instruction& in) {
    const Modifiers& m = in.mods;
    std::string s = spelling(in.op);
    auto add = [&](const std::string& piece) { s += "." + piece; };
    switch (in.op) {
      case Opcode::Ld: case Opcode::St: case Opcode::Atom: case Opcode::Cvta:
        if (m.isVolatile) add("volatile");
        if (m.toSpace) add("to");
        if (m.space != StateSpace::None) add(spaceName(m.space));
        if (m.nc) add("nc");
        if (m.atom != AtomOp::None) add(atomOpName(m.atom));
        break;
      case Opcode::Membar: case Opcode::Fence:
        if (!m.sub.empty()) add(m.sub);
        break;
      case Opcode::Mul: case Opcode::Mad: case Opcode::Mul24:
        if (m.lo) add("lo");
        if (m.hi) add("hi");
        if (m.wide) add("wide");
        break;
      case Opcode::Setp:
        if (m.cmp != CmpOp::None) add(cmpName(m.cmp));
        break;
      case Opcode::Bra: case Opcode::Call: case Opcode::Ret:
        if (m.uni) add("uni");
        break;
      case Opcode::Shfl: case Opcode::Vote:
        if (m.sync) add("sync");
        if (m.shfl != ShflMode::None) add(shflModeName(m.shfl));
        if (m.vote != VoteMode::None) add(voteModeName(m.vote));
        break;
      case Opcode::Bar: case Opcode::Barrier:
        if (m.barrier == BarrierKind::Warp) add("warp");
        if (m.sync) add("sync");
        if (m.aligned) add("aligned");
        if (m.barrier == BarrierKind::RedPopc) add("red.popc");
        if (m.barrier == BarrierKind::RedAnd) add("red.and");
        if (m.barrier == BarrierKind::RedOr) add("red.or");
        if (m.sub == "red") add("red");  // `.red` without its operation: verify() refuses it
        break;
      case Opcode::Shf:
        if (m.left) add("l");
        if (m.right) add("r");
        if (m.wrap) add("wrap");
        if (m.clamp) add("clamp");
        break;
      case Opcode::Bfind:
        if (m.shiftamt) add("shiftamt");
        break;
      default: break;
    }
    for (Type t : in.types) add(typeName(t));
    return s;
  }

  std::string instruction(const Instruction& in) const {
    std::string s;
    if (in.guarded) s += std::string("@") + (in.guardNegated ? "!" : "") + reg(in.guardReg) + " ";
    s += opcode(in);
    std::vector<std::string> ops;
    if (!in.dsts.empty()) {
      std::string d = operand(in.dsts[0]);
      for (size_t i = 1; i < in.dsts.size(); ++i) d += "|" + operand(in.dsts[i]);
      ops.push_back(d);
    }
    for (size_t i = 0; i < in.srcs.size(); ++i) {
      const Operand& o = in.srcs[i];
      // An empty call argument list is implied (the parser adds it back).
      if (in.op == Opcode::Call && i == 1 && o.kind == OperandKind::List && o.items.empty()) continue;
      ops.push_back(operand(o));
    }
    for (size_t i = 0; i < ops.size(); ++i) s += (i ? ", " : "\t") + ops[i];
    return s + ";";
  }
};

}  // namespace

std::string print(const Module& module) { return Printer(module).run(); }

}  // namespace qgpu::ptx
