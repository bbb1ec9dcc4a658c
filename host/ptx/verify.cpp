// qgpu/host/ptx/verify.cpp — the semantic checks of a PTX module (ir.h, verify()).
//
// Checked for every instruction: operand counts and kinds for its opcode (addresses only where
// memory is accessed, lists only in calls, destinations are registers), the number of type
// suffixes, the modifiers an opcode cannot do without (setp compare, atom/shfl/vote operation),
// register ids in range, predicate registers exactly where predicates are expected, branch
// targets that are labels of the function, callees that are functions of the module with the
// right number of arguments and results, address symbols that are declared variables. parse()
// runs this before returning, so these are also the PtxInvalid cases of the parser. Register
// width against instruction type is not checked: nvcc writes `ld.global.u32 %rd7, [..]`.
#include <map>
#include <set>
#include <string>

#include "host/ptx/ir.h"

namespace qgpu::ptx {
namespace {

struct Shape {
  size_t minDst, maxDst, minSrc, maxSrc, types;
};

Shape shapeOf(const Instruction& in) {
  const Modifiers& m = in.mods;
  switch (in.op) {
    case Opcode::Add: case Opcode::Sub: case Opcode::Mul: case Opcode::Div: case Opcode::Rem:
    case Opcode::And: case Opcode::Or: case Opcode::Xor: case Opcode::Shl: case Opcode::Shr:
    case Opcode::Min: case Opcode::Max:
      return {1, 1, 2, 2, 1};
    case Opcode::Mad: case Opcode::Selp: case Opcode::Bfe: case Opcode::Prmt: case Opcode::Shf:
      return {1, 1, 3, 3, 1};
    case Opcode::Abs: case Opcode::Neg: case Opcode::Not: case Opcode::Popc: case Opcode::Clz:
    case Opcode::Brev: case Opcode::Bfind: case Opcode::Mov: case Opcode::Cvta: case Opcode::Ld:
      return {1, 1, 1, 1, 1};
    case Opcode::Cvt: return {1, 1, 1, 1, 2};
    case Opcode::Setp: return {1, 2, 2, 2, 1};
    case Opcode::St: return {0, 0, 2, 2, 1};
    case Opcode::Atom: return m.sub == "cas" ? Shape{1, 1, 3, 3, 1} : Shape{1, 1, 2, 2, 1};
    case Opcode::Bra: return {0, 0, 1, 1, 0};
    case Opcode::Ret: case Opcode::Exit: return {0, 0, 0, 0, 0};
    case Opcode::Call: return {0, 1, 2, 2, 0};
    case Opcode::Bar: case Opcode::Barrier:
      if (m.sub.rfind("red.", 0) == 0) return {1, 1, 2, 3, 1};
      if (m.sub == "warp") return {0, 0, 1, 1, 0};
      return {0, 0, 1, 2, 0};
    case Opcode::Shfl: return m.sync ? Shape{1, 2, 4, 4, 1} : Shape{1, 2, 3, 3, 1};
    case Opcode::Vote: return m.sync ? Shape{1, 1, 2, 2, 1} : Shape{1, 1, 1, 1, 1};
    case Opcode::Activemask: return {1, 1, 0, 0, 1};
  }
  return {0, 0, 0, 0, 0};
}

// Whether a register operand in this slot must be a predicate (true), must not be one (false).
bool wantsPred(const Instruction& in, bool isDst, size_t index) {
  Type t = in.types.empty() ? Type::None : in.types[0];
  switch (in.op) {
    case Opcode::Setp: return isDst;
    case Opcode::Selp: return isDst ? false : index == 2;
    case Opcode::Vote: return isDst ? in.mods.sub != "ballot" : index == 0;
    case Opcode::Shfl: return isDst && index == 1;
    case Opcode::Bar: case Opcode::Barrier:
      if (isDst) return t == Type::Pred;
      return in.mods.sub.rfind("red.", 0) == 0 && index + 1 == in.srcs.size();
    case Opcode::Ld: case Opcode::St: case Opcode::Atom: case Opcode::Cvta: case Opcode::Cvt:
    case Opcode::Bra: case Opcode::Call: case Opcode::Activemask:
      return false;
    default: return t == Type::Pred;
  }
}

class Verifier {
 public:
  Verifier(const Module& m) : m_(m) {}

  Status run() {
    for (const Function& f : m_.functions)
      if (!functions_.emplace(f.name, &f).second)
        return makeDiag(ErrorKind::PtxInvalid, "function '" + f.name + "' is defined twice", f.loc);
    for (const Function& f : m_.functions) {
      variables_.clear();
      for (const auto* list : {&f.params, &f.returns, &f.shared, &f.callParams})
        for (const Variable& v : *list) variables_.insert(v.name);
      QGPU_CHECK(function(f));
    }
    return Ok{};
  }

 private:
  const Module& m_;

  std::map<std::string, const Function*> functions_;
  std::set<std::string> variables_;  // of the function being checked

  const Function* findFunction(const std::string& name) const {
    auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : it->second;
  }

  bool hasVariable(const Function&, const std::string& name) const { return variables_.count(name) != 0; }

  static Diag bad(const Instruction& in, const SourceLoc& at, const std::string& what) {
    return makeDiag(ErrorKind::PtxInvalid,
                    "'" + in.text + "' (" + spelling(in.op) + "): " + what, at.line ? at : in.loc);
  }

  Status function(const Function& f) {
    if (f.scopes.empty())
      return makeDiag(ErrorKind::PtxInvalid, "function '" + f.name + "' has no body scope", f.loc);
    for (size_t i = 0; i < f.scopes.size(); ++i) {
      const Scope& s = f.scopes[i];
      if (s.parent >= f.scopes.size() || (i > 0 && s.parent >= i) || s.begin > s.end ||
          s.end > f.body.size())
        return makeDiag(ErrorKind::PtxInvalid,
                        "function '" + f.name + "': scope " + std::to_string(i) + " is malformed", f.loc);
    }
    for (const RegInfo& r : f.regs)
      if (r.scope >= f.scopes.size() || r.type == Type::None)
        return makeDiag(ErrorKind::PtxInvalid,
                        "function '" + f.name + "': register '" + r.name + "' is malformed", f.loc);
    for (const auto& [label, index] : f.labels)
      if (index > f.body.size())
        return makeDiag(ErrorKind::PtxInvalid,
                        "function '" + f.name + "': label '" + label + "' points past the body", f.loc);
    for (const Instruction& in : f.body) QGPU_CHECK(instruction(f, in));
    return Ok{};
  }

  Status regOperand(const Function& f, const Instruction& in, const Operand& o, bool mustBePred,
                    bool checkPred) {
    if (o.reg >= f.regs.size())
      return bad(in, o.loc, "register id " + std::to_string(o.reg) + " is not declared");
    const RegInfo& r = f.regs[o.reg];
    if (checkPred && mustBePred && r.type != Type::Pred)
      return bad(in, o.loc, "'" + r.name + "' is ." + typeName(r.type) + " where a predicate is expected");
    if (checkPred && !mustBePred && r.type == Type::Pred)
      return bad(in, o.loc, "predicate '" + r.name + "' where a value is expected");
    return Ok{};
  }

  Status instruction(const Function& f, const Instruction& in) {
    Shape s = shapeOf(in);
    if (in.dsts.size() < s.minDst || in.dsts.size() > s.maxDst)
      return bad(in, in.loc, "expects " + range(s.minDst, s.maxDst) + " destination(s), has " +
                                 std::to_string(in.dsts.size()));
    if (in.srcs.size() < s.minSrc || in.srcs.size() > s.maxSrc)
      return bad(in, in.loc, "expects " + range(s.minSrc, s.maxSrc) + " source operand(s), has " +
                                 std::to_string(in.srcs.size()));
    if (in.types.size() != s.types)
      return bad(in, in.loc, "expects " + std::to_string(s.types) + " type suffix(es), has " +
                                 std::to_string(in.types.size()));
    if (in.op == Opcode::Setp && in.mods.cmp == CmpOp::None) return bad(in, in.loc, "needs a comparison");
    if ((in.op == Opcode::Atom || in.op == Opcode::Shfl || in.op == Opcode::Vote) && in.mods.sub.empty())
      return bad(in, in.loc, "needs an operation modifier");
    if ((in.op == Opcode::Bar || in.op == Opcode::Barrier) && in.mods.sub.rfind("red", 0) != 0 &&
        !in.mods.sync)
      return bad(in, in.loc, "needs '.sync' or '.red'");
    if (in.mods.sub == "red") return bad(in, in.loc, "'.red' needs '.popc', '.and' or '.or'");
    if (in.guarded) {
      Operand g;
      g.reg = in.guardReg;
      g.loc = in.loc;
      QGPU_CHECK(regOperand(f, in, g, true, true));
    }
    for (size_t i = 0; i < in.dsts.size(); ++i) {
      const Operand& o = in.dsts[i];
      if (in.op == Opcode::Call) {
        if (o.kind != OperandKind::List) return bad(in, o.loc, "call results must be a '( )' list");
        continue;
      }
      if (o.kind != OperandKind::Reg) return bad(in, o.loc, "destination " + std::to_string(i + 1) + " is not a register");
      QGPU_CHECK(regOperand(f, in, o, wantsPred(in, true, i), true));
    }
    bool memory = in.op == Opcode::Ld || in.op == Opcode::St || in.op == Opcode::Atom;
    for (size_t i = 0; i < in.srcs.size(); ++i) {
      const Operand& o = in.srcs[i];
      bool addressSlot = memory && i == 0;
      if (addressSlot != (o.kind == OperandKind::Address))
        return bad(in, o.loc, addressSlot ? "operand 1 must be an address '[..]'"
                                          : "address operand where a value is expected");
      switch (o.kind) {
        case OperandKind::Reg:
          QGPU_CHECK(regOperand(f, in, o, wantsPred(in, false, i), true));
          break;
        case OperandKind::Address:
          if (o.addrIsReg) {
            QGPU_CHECK(regOperand(f, in, o, false, true));
          } else if (!hasVariable(f, o.name)) {
            return bad(in, o.loc, "address of undeclared variable '" + o.name + "'");
          }
          break;
        case OperandKind::List:
          if (in.op != Opcode::Call || i != 1) return bad(in, o.loc, "unexpected '( )' list");
          for (const Operand& item : o.items)
            if (item.kind == OperandKind::Reg) {
              QGPU_CHECK(regOperand(f, in, item, false, false));
            } else if (item.kind != OperandKind::Symbol && item.kind != OperandKind::Imm) {
              return bad(in, item.loc, "call arguments must be parameters, registers or immediates");
            }
          break;
        case OperandKind::Symbol:
          QGPU_CHECK(symbol(f, in, o, i));
          break;
        case OperandKind::Imm:
        case OperandKind::Special:
          if (in.op == Opcode::Bra || in.op == Opcode::Call)
            return bad(in, o.loc, "expects a name");
          break;
      }
    }
    if (in.op == Opcode::Call) QGPU_CHECK(call(f, in));
    return Ok{};
  }

  Status symbol(const Function& f, const Instruction& in, const Operand& o, size_t index) {
    if (in.op == Opcode::Bra) {
      if (!f.labels.count(o.name)) return bad(in, o.loc, "undefined label '" + o.name + "'");
      return Ok{};
    }
    if (in.op == Opcode::Call && index == 0) {
      if (!findFunction(o.name)) return bad(in, o.loc, "call of unknown function '" + o.name + "'");
      return Ok{};
    }
    if ((in.op == Opcode::Mov || in.op == Opcode::Cvta) && (hasVariable(f, o.name) || findFunction(o.name)))
      return Ok{};
    return bad(in, o.loc, "unknown name '" + o.name + "'");
  }

  Status call(const Function& f, const Instruction& in) {
    const Function* callee = findFunction(in.srcs[0].name);
    if (!callee) return Ok{};  // reported by symbol()
    size_t results = in.dsts.empty() ? 0 : in.dsts[0].items.size();
    if (results != callee->returns.size())
      return bad(in, in.loc, "'" + callee->name + "' returns " + std::to_string(callee->returns.size()) +
                                 " value(s), the call takes " + std::to_string(results));
    if (in.srcs[1].items.size() != callee->params.size())
      return bad(in, in.loc, "'" + callee->name + "' takes " + std::to_string(callee->params.size()) +
                                 " argument(s), the call passes " + std::to_string(in.srcs[1].items.size()));
    if (callee->isEntry) return bad(in, in.loc, "'" + callee->name + "' is a kernel (.entry), not a .func");
    for (const Operand& r : in.dsts.empty() ? std::vector<Operand>{} : in.dsts[0].items)
      if (r.kind != OperandKind::Symbol || !hasVariable(f, r.name))
        return bad(in, r.loc, "call results must be declared '.param' variables");
    for (const Operand& a : in.srcs[1].items)
      if (a.kind == OperandKind::Symbol && !hasVariable(f, a.name))
        return bad(in, a.loc, "call argument '" + a.name + "' is not a declared '.param'");
    return Ok{};
  }

  static std::string range(size_t lo, size_t hi) {
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
  }
};

}  // namespace

Status verify(const Module& module) { return Verifier(module).run(); }

}  // namespace qgpu::ptx
