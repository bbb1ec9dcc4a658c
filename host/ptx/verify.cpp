// qgpu/host/ptx/verify.cpp — the semantic checks of a PTX module (ir.h, verify()).
//
// Checked for every instruction: operand counts and kinds for its opcode (addresses only where
// memory is accessed, lists only in calls, destinations are registers), the number of type
// suffixes, the modifiers an opcode cannot do without (setp compare, atom/shfl/vote operation),
// register ids in range, predicate registers exactly where predicates are expected, branch
// targets that are labels of the function, callees that are functions of the module with the
// right number of arguments and results, address symbols that are declared variables, and the
// operand typing ptxas enforces (kTypeRules below: instruction type per opcode, register width
// and kind per operand slot, address widths and spaces). parse() runs this before returning, so
// these are also the PtxInvalid cases of the parser.
#include <array>
#include <map>
#include <string>

#include "host/ptx/ir.h"
#include "host/ptx/names.h"

namespace qgpu::ptx {
namespace {

struct Shape {
  size_t minDst, maxDst, minSrc, maxSrc, types;
};

bool isReduction(BarrierKind k) {
  return k == BarrierKind::RedPopc || k == BarrierKind::RedAnd || k == BarrierKind::RedOr;
}

Shape shapeOf(const Instruction& in) {
  const Modifiers& m = in.mods;
  switch (in.op) {
    case Opcode::Add: case Opcode::Sub: case Opcode::Mul: case Opcode::Div: case Opcode::Rem:
    case Opcode::And: case Opcode::Or: case Opcode::Xor: case Opcode::Shl: case Opcode::Shr:
    case Opcode::Min: case Opcode::Max: case Opcode::Mul24:
      return {1, 1, 2, 2, 1};
    case Opcode::Membar: case Opcode::Fence: return {0, 0, 0, 0, 0};
    case Opcode::Sad:
    case Opcode::Mad: case Opcode::Selp: case Opcode::Bfe: case Opcode::Prmt: case Opcode::Shf:
      return {1, 1, 3, 3, 1};
    case Opcode::Abs: case Opcode::Neg: case Opcode::Not: case Opcode::Popc: case Opcode::Clz:
    case Opcode::Brev: case Opcode::Bfind: case Opcode::Mov: case Opcode::Cvta: case Opcode::Ld:
      return {1, 1, 1, 1, 1};
    case Opcode::Bfi: return {1, 1, 4, 4, 1};
    case Opcode::Cvt: return {1, 1, 1, 1, 2};
    case Opcode::Setp: return {1, 2, 2, 2, 1};
    case Opcode::St: return {0, 0, 2, 2, 1};
    case Opcode::Atom: return m.atom == AtomOp::Cas ? Shape{1, 1, 3, 3, 1} : Shape{1, 1, 2, 2, 1};
    case Opcode::Bra: return {0, 0, 1, 1, 0};
    case Opcode::Ret: case Opcode::Exit: return {0, 0, 0, 0, 0};
    case Opcode::Call: return {0, 1, 2, 2, 0};
    case Opcode::Bar: case Opcode::Barrier:
      if (isReduction(m.barrier)) return {1, 1, 2, 3, 1};
      if (m.barrier == BarrierKind::Warp) return {0, 0, 1, 1, 0};
      return {0, 0, 1, 2, 0};
    case Opcode::Shfl: return m.sync ? Shape{1, 2, 4, 4, 1} : Shape{1, 2, 3, 3, 1};
    case Opcode::Vote: return m.sync ? Shape{1, 1, 2, 2, 1} : Shape{1, 1, 1, 1, 1};
    case Opcode::Activemask: return {1, 1, 0, 0, 1};
  }
  return {0, 0, 0, 0, 0};
}

// ---- Operand typing: THE table of what ptxas accepts (PTX ISA §6.4 "type checking rules") ----
//
// Every row was checked against `ptxas -arch=sm_75` (the differential test in
// tests/typecheck_ptxas_test.cpp keeps it so). The rules, as ptxas applies them:
// - the instruction type must be one the opcode (and form) defines: `add.b32`, `and.u32`,
//   `shl.u32`, `setp.lt.b32`, `atom.add.b32` are all errors;
// - a register operand must have the size of the instruction type; `.b`, `.u` and `.s` of one
//   size are interchangeable for registers (`mul.lo.u32 %s, %s, %r` with .s32/.b32 registers);
// - the relaxed rule: ld, st and cvt data registers may be WIDER than the type
//   (`ld.global.u32 %rd7, [..]` zero-extends, `st.global.u32 [..], %rd10` stores the low half),
//   never narrower; mov is not relaxed;
// - fixed-width slots: shift amounts, bfe position/length, shfl lane/clamp/mask, vote mask and
//   barrier ids are 32-bit whatever the type; mul.wide/mad.wide results (and mad's addend) are
//   twice the type; popc/clz/bfind results are 32-bit;
// - predicates exactly where predicates are expected, and nowhere else;
// - addresses: in a 64-bit module a global or generic address register is 64-bit (ptxas:
//   "32-Bit compilation is no longer supported"); shared/param/local ones may be 32-bit;
//   a variable is addressed through its own state space (or generically, for .shared);
// - special registers only as the source of mov/cvt; `mov.u64 %rd, %tid.x` is an error.
using TypeMask = uint32_t;
constexpr TypeMask tm(Type t) { return 1u << static_cast<unsigned>(t); }
constexpr TypeMask kP = tm(Type::Pred);
constexpr TypeMask kB = tm(Type::B16) | tm(Type::B32) | tm(Type::B64);
constexpr TypeMask kU = tm(Type::U16) | tm(Type::U32) | tm(Type::U64);
constexpr TypeMask kS = tm(Type::S16) | tm(Type::S32) | tm(Type::S64);
constexpr TypeMask k8 = tm(Type::B8) | tm(Type::U8) | tm(Type::S8);
constexpr TypeMask kInt = kU | kS;
constexpr TypeMask k3264 = tm(Type::B32) | tm(Type::B64);
constexpr TypeMask kNone = tm(Type::None);

enum class Slot : uint8_t {
  None,     // no operand here (end of the list)
  Same,     // a value of the instruction type's size (types[0]); .pred instructions: a predicate
  AtLeast,  // ld/st/cvt data: a value register at least as wide as types[0]
  AtLeast1, // cvt source: at least as wide as types[1]
  Wide,     // twice types[0] (mul.wide/mad.wide result, mad.wide addend)
  B32,      // a 32-bit value, whatever the type
  Pred,     // a predicate register
  Addr,     // a memory address (addressRule)
  Free,     // not typed here: labels, callees, call lists
};

// Forms of an opcode whose typing differs with a modifier (chosen by formOf()).
enum class Form : uint8_t {
  Plain,       // the opcode's one typing
  MulWide,     // mul.wide / mad.wide
  CmpEqNe,     // setp.eq / setp.ne (bit types allowed)
  CmpOrdered,  // setp.lt/le/gt/ge
  CmpUnsigned, // setp.lo/ls/hi/hs
  AtomAdd, AtomBit, AtomExch, AtomCas, AtomIncDec, AtomMinMax,
  Sync,        // shfl.sync / vote.sync (one more operand: the member mask)
  Ballot,      // vote.ballot
  BallotSync,  // vote.sync.ballot
  BarSync,     // bar.sync / barrier.sync: id [, thread count]
  BarWarp,     // bar.warp.sync mask
  BarRedPopc,  // bar.red.popc.u32 d, id, [count,] p
  BarRedPred,  // bar.red.and/or.pred d, id, [count,] p
};

struct TypeRule {
  Opcode op;
  Form form;
  TypeMask type0;               // allowed types[0] (kNone: the opcode takes no type)
  TypeMask type1;               // allowed types[1] (cvt's source type), else kNone
  std::array<Slot, 2> dsts;
  std::array<Slot, 4> srcs;     // bar.red: the last listed slot (Pred) takes the last operand
};

using S = Slot;
using F = Form;
using O = Opcode;
constexpr TypeRule kTypeRules[] = {
    {O::Add, F::Plain, kInt, kNone, {S::Same}, {S::Same, S::Same}},
    {O::Sub, F::Plain, kInt, kNone, {S::Same}, {S::Same, S::Same}},
    {O::Mul, F::Plain, kInt, kNone, {S::Same}, {S::Same, S::Same}},
    {O::Mul, F::MulWide, tm(Type::U16) | tm(Type::U32) | tm(Type::S16) | tm(Type::S32), kNone,
     {S::Wide}, {S::Same, S::Same}},
    {O::Mad, F::Plain, kInt, kNone, {S::Same}, {S::Same, S::Same, S::Same}},
    {O::Mad, F::MulWide, tm(Type::U16) | tm(Type::U32) | tm(Type::S16) | tm(Type::S32), kNone,
     {S::Wide}, {S::Same, S::Same, S::Wide}},
    {O::Div, F::Plain, kInt, kNone, {S::Same}, {S::Same, S::Same}},
    {O::Rem, F::Plain, kInt, kNone, {S::Same}, {S::Same, S::Same}},
    {O::Min, F::Plain, kInt, kNone, {S::Same}, {S::Same, S::Same}},
    {O::Max, F::Plain, kInt, kNone, {S::Same}, {S::Same, S::Same}},
    {O::Abs, F::Plain, kS, kNone, {S::Same}, {S::Same}},
    {O::Neg, F::Plain, kS, kNone, {S::Same}, {S::Same}},
    {O::And, F::Plain, kP | kB, kNone, {S::Same}, {S::Same, S::Same}},
    {O::Or, F::Plain, kP | kB, kNone, {S::Same}, {S::Same, S::Same}},
    {O::Xor, F::Plain, kP | kB, kNone, {S::Same}, {S::Same, S::Same}},
    {O::Not, F::Plain, kP | kB, kNone, {S::Same}, {S::Same}},
    {O::Shl, F::Plain, kB, kNone, {S::Same}, {S::Same, S::B32}},
    {O::Shr, F::Plain, kB | kInt, kNone, {S::Same}, {S::Same, S::B32}},
    {O::Popc, F::Plain, k3264, kNone, {S::B32}, {S::Same}},
    {O::Clz, F::Plain, k3264, kNone, {S::B32}, {S::Same}},
    {O::Brev, F::Plain, k3264, kNone, {S::Same}, {S::Same}},
    {O::Bfind, F::Plain, tm(Type::U32) | tm(Type::U64) | tm(Type::S32) | tm(Type::S64), kNone,
     {S::B32}, {S::Same}},
    {O::Bfe, F::Plain, tm(Type::U32) | tm(Type::U64) | tm(Type::S32) | tm(Type::S64), kNone,
     {S::Same}, {S::Same, S::B32, S::B32}},
    {O::Bfi, F::Plain, k3264, kNone, {S::Same}, {S::Same, S::Same, S::B32, S::B32}},
    {O::Prmt, F::Plain, tm(Type::B32), kNone, {S::Same}, {S::Same, S::Same, S::Same}},
    {O::Shf, F::Plain, tm(Type::B32), kNone, {S::Same}, {S::Same, S::Same, S::Same}},
    {O::Selp, F::Plain, kB | kInt, kNone, {S::Same}, {S::Same, S::Same, S::Pred}},
    {O::Setp, F::CmpEqNe, kB | kInt, kNone, {S::Pred, S::Pred}, {S::Same, S::Same}},
    {O::Setp, F::CmpOrdered, kInt, kNone, {S::Pred, S::Pred}, {S::Same, S::Same}},
    {O::Setp, F::CmpUnsigned, kU, kNone, {S::Pred, S::Pred}, {S::Same, S::Same}},
    {O::Mov, F::Plain, kP | kB | kInt, kNone, {S::Same}, {S::Same}},
    {O::Cvt, F::Plain, (k8 & ~tm(Type::B8)) | kInt,
     (k8 & ~tm(Type::B8)) | kInt, {S::AtLeast}, {S::AtLeast1}},
    {O::Cvta, F::Plain, tm(Type::U32) | tm(Type::U64), kNone, {S::Same}, {S::Same}},
    {O::Ld, F::Plain, k8 | kB | kInt, kNone, {S::AtLeast}, {S::Addr}},
    {O::St, F::Plain, k8 | kB | kInt, kNone, {}, {S::Addr, S::AtLeast}},
    {O::Atom, F::AtomAdd, tm(Type::U32) | tm(Type::U64) | tm(Type::S32), kNone, {S::Same}, {S::Addr, S::Same}},
    {O::Atom, F::AtomBit, k3264, kNone, {S::Same}, {S::Addr, S::Same}},
    {O::Atom, F::AtomExch, k3264, kNone, {S::Same}, {S::Addr, S::Same}},
    {O::Atom, F::AtomCas, k3264, kNone, {S::Same}, {S::Addr, S::Same, S::Same}},
    {O::Atom, F::AtomIncDec, tm(Type::U32), kNone, {S::Same}, {S::Addr, S::Same}},
    {O::Atom, F::AtomMinMax, tm(Type::U32) | tm(Type::U64) | tm(Type::S32) | tm(Type::S64), kNone,
     {S::Same}, {S::Addr, S::Same}},
    {O::Shfl, F::Plain, tm(Type::B32), kNone, {S::Same, S::Pred}, {S::Same, S::B32, S::B32}},
    {O::Shfl, F::Sync, tm(Type::B32), kNone, {S::Same, S::Pred}, {S::Same, S::B32, S::B32, S::B32}},
    {O::Vote, F::Plain, kP, kNone, {S::Pred}, {S::Pred}},
    {O::Vote, F::Sync, kP, kNone, {S::Pred}, {S::Pred, S::B32}},
    {O::Vote, F::Ballot, tm(Type::B32), kNone, {S::Same}, {S::Pred}},
    {O::Vote, F::BallotSync, tm(Type::B32), kNone, {S::Same}, {S::Pred, S::B32}},
    {O::Bar, F::BarSync, kNone, kNone, {}, {S::B32, S::B32}},
    {O::Bar, F::BarWarp, kNone, kNone, {}, {S::B32}},
    {O::Bar, F::BarRedPopc, tm(Type::U32), kNone, {S::Same}, {S::B32, S::B32, S::Pred}},
    {O::Bar, F::BarRedPred, kP, kNone, {S::Pred}, {S::B32, S::B32, S::Pred}},
    {O::Barrier, F::BarSync, kNone, kNone, {}, {S::B32, S::B32}},
    {O::Barrier, F::BarRedPopc, tm(Type::U32), kNone, {S::Same}, {S::B32, S::B32, S::Pred}},
    {O::Barrier, F::BarRedPred, kP, kNone, {S::Pred}, {S::B32, S::B32, S::Pred}},
    {O::Activemask, F::Plain, tm(Type::B32), kNone, {S::Same}, {}},
    {O::Mul24, F::Plain, tm(Type::U32) | tm(Type::S32), kNone, {S::Same}, {S::Same, S::Same}},
    {O::Sad, F::Plain, kInt, kNone, {S::Same}, {S::Same, S::Same, S::Same}},
    {O::Membar, F::Plain, kNone, kNone, {}, {}},
    {O::Fence, F::Plain, kNone, kNone, {}, {}},
    {O::Bra, F::Plain, kNone, kNone, {}, {S::Free}},
    {O::Call, F::Plain, kNone, kNone, {S::Free}, {S::Free, S::Free}},
    {O::Ret, F::Plain, kNone, kNone, {}, {}},
    {O::Exit, F::Plain, kNone, kNone, {}, {}},
};

// The modifier that selects an opcode's typing row. (Reads the modifier strings of ir.h; when
// they become enums this is the one place to change.)
Form formOf(const Instruction& in) {
  switch (in.op) {
    case Opcode::Mul: case Opcode::Mad: return in.mods.wide ? Form::MulWide : Form::Plain;
    case Opcode::Setp:
      switch (in.mods.cmp) {
        case CmpOp::Eq: case CmpOp::Ne: return Form::CmpEqNe;
        case CmpOp::Lo: case CmpOp::Ls: case CmpOp::Hi: case CmpOp::Hs: return Form::CmpUnsigned;
        default: return Form::CmpOrdered;
      }
    case Opcode::Atom:
      switch (in.mods.atom) {
        case AtomOp::Add: return Form::AtomAdd;
        case AtomOp::And: case AtomOp::Or: case AtomOp::Xor: return Form::AtomBit;
        case AtomOp::Exch: return Form::AtomExch;
        case AtomOp::Cas: return Form::AtomCas;
        case AtomOp::Inc: case AtomOp::Dec: return Form::AtomIncDec;
        default: return Form::AtomMinMax;
      }
    case Opcode::Shfl: return in.mods.sync ? Form::Sync : Form::Plain;
    case Opcode::Vote:
      if (in.mods.vote == VoteMode::Ballot) return in.mods.sync ? Form::BallotSync : Form::Ballot;
      return in.mods.sync ? Form::Sync : Form::Plain;
    case Opcode::Bar: case Opcode::Barrier:
      switch (in.mods.barrier) {
        case BarrierKind::RedPopc: return Form::BarRedPopc;
        case BarrierKind::RedAnd: case BarrierKind::RedOr: return Form::BarRedPred;
        case BarrierKind::Warp: return Form::BarWarp;
        case BarrierKind::Sync: return Form::BarSync;
      }
      return Form::BarSync;
    default: return Form::Plain;
  }
}

const TypeRule* ruleOf(const Instruction& in) {
  Form form = formOf(in);
  for (const TypeRule& r : kTypeRules)
    if (r.op == in.op && r.form == form) return &r;
  return nullptr;
}

// The slot that operand `index` of `count` sources takes (bar.red's predicate is always last).
Slot srcSlot(const TypeRule& r, size_t index, size_t count) {
  if ((r.form == Form::BarRedPopc || r.form == Form::BarRedPred) && index + 1 == count)
    return Slot::Pred;
  return index < r.srcs.size() ? r.srcs[index] : Slot::None;
}

// Widths of the special registers (bits); the rest of the parser's list is 32-bit.
int specialBits(const std::string& name) {
  return name == "%clock64" || name == "%globaltimer" || name == "%gridid" ? 64 : 32;
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
      for (const auto* list : {&f.params, &f.returns, &f.callParams})
        for (const Variable& v : *list) variables_.emplace(v.name, StateSpace::Param);
      for (const Variable& v : f.shared) variables_.emplace(v.name, StateSpace::Shared);
      for (const Variable& v : f.locals) variables_.emplace(v.name, StateSpace::Local);
      for (const Variable& v : m_.shared) variables_.emplace(v.name, StateSpace::Shared);
      QGPU_CHECK(function(f));
    }
    return Ok{};
  }

 private:
  const Module& m_;

  std::map<std::string, const Function*> functions_;
  std::map<std::string, StateSpace> variables_;  // of the function being checked: name -> space

  const Function* findFunction(const std::string& name) const {
    auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : it->second;
  }

  bool hasVariable(const Function&, const std::string& name) const { return variables_.count(name) != 0; }

  static Diag bad(const Instruction& in, const SourceLoc& at, const std::string& what,
                  ErrorKind kind = ErrorKind::PtxInvalid) {
    return makeDiag(kind, "'" + in.text + "' (" + spelling(in.op) + "): " + what, at.line ? at : in.loc);
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

  Expected<const RegInfo*> reg(const Function& f, const Instruction& in, const Operand& o) {
    if (o.reg >= f.regs.size())
      return bad(in, o.loc, "register id " + std::to_string(o.reg) + " is not declared");
    return &f.regs[o.reg];
  }

  static std::string dotted(Type t) { return std::string(".") + typeName(t); }

  // A register in a typed slot (kTypeRules' Slot).
  Status typedReg(const Function& f, const Instruction& in, const Operand& o, Slot slot, size_t n) {
    QGPU_TRY(r, reg(f, in, o));
    Type t0 = in.types.empty() ? Type::None : in.types[0];
    bool wantPred = slot == Slot::Pred || (slot == Slot::Same && t0 == Type::Pred);
    if (wantPred && r->type != Type::Pred)
      return bad(in, o.loc, "'" + r->name + "' is " + dotted(r->type) + " where a predicate is expected");
    if (!wantPred && r->type == Type::Pred)
      return bad(in, o.loc, "predicate '" + r->name + "' where a value is expected");
    if (wantPred || slot == Slot::Free || slot == Slot::None) return Ok{};
    int have = bits(r->type);
    int want = 0;
    bool atLeast = false;
    switch (slot) {
      case Slot::Same: want = bits(t0); break;
      case Slot::AtLeast: want = bits(t0), atLeast = true; break;
      case Slot::AtLeast1: want = bits(in.types.size() > 1 ? in.types[1] : Type::None), atLeast = true; break;
      case Slot::Wide: want = 2 * bits(t0); break;
      case Slot::B32: want = 32; break;
      default: return Ok{};
    }
    if (atLeast ? have >= want : have == want) return Ok{};
    return bad(in, o.loc, "operand " + std::to_string(n) + " '" + r->name + "' is " + dotted(r->type) +
                              "; this slot needs " +
                              (atLeast ? "a register of at least " + std::to_string(want) + " bits"
                                       : "a " + std::to_string(want) + "-bit register"));
  }

  // `[reg+off]` / `[var+off]` of ld/st/atom in state space `space` (None = generic).
  Status address(const Function& f, const Instruction& in, const Operand& o) {
    StateSpace space = in.mods.space;
    if (o.addrIsReg) {
      QGPU_TRY(r, reg(f, in, o));
      if (r->type == Type::Pred) return bad(in, o.loc, "predicate '" + r->name + "' used as an address");
      int have = bits(r->type);
      bool global = space == StateSpace::None || space == StateSpace::Global;
      if (global && m_.addressSize == 64 && have != 64)
        return bad(in, o.loc, "'" + r->name + "' is " + dotted(r->type) + ": a " +
                                  (space == StateSpace::None ? "generic" : "global") +
                                  " address in a 64-bit module needs a 64-bit register");
      if (have != 32 && have != 64)
        return bad(in, o.loc, "'" + r->name + "' is " + dotted(r->type) + ": " + std::to_string(have) +
                                  "-bit address registers are not supported", ErrorKind::PtxUnsupported);
      return Ok{};
    }
    QGPU_CHECK(notModuleGlobal(in, o));
    auto it = variables_.find(o.name);
    if (it == variables_.end()) return bad(in, o.loc, "address of undeclared variable '" + o.name + "'");
    bool ok = space == it->second || (space == StateSpace::None && it->second == StateSpace::Shared);
    if (!ok)
      return bad(in, o.loc, "'" + o.name + "' is a ." + std::string(spaceName(it->second)) +
                                " variable, addressed in another state space");
    return Ok{};
  }

  // The instruction type(s) against the opcode's row.
  Status instructionTypes(const Instruction& in, const TypeRule& rule) {
    for (size_t i = 0; i < in.types.size() && i < 2; ++i) {
      TypeMask allowed = i == 0 ? rule.type0 : rule.type1;
      if (allowed & tm(in.types[i])) continue;
      std::string list;
      for (unsigned t = 0; t <= static_cast<unsigned>(Type::S64); ++t)
        if (allowed & (1u << t) && t != static_cast<unsigned>(Type::None))
          list += (list.empty() ? "" : " ") + dotted(static_cast<Type>(t));
      return bad(in, in.loc, "type " + dotted(in.types[i]) + " is not allowed here" +
                                 (list.empty() ? std::string() : " (allowed: " + list + ")"));
    }
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
    if ((in.op == Opcode::Atom && in.mods.atom == AtomOp::None) ||
        (in.op == Opcode::Shfl && in.mods.shfl == ShflMode::None) ||
        (in.op == Opcode::Vote && in.mods.vote == VoteMode::None))
      return bad(in, in.loc, "needs an operation modifier");
    if ((in.op == Opcode::Bar || in.op == Opcode::Barrier) && in.mods.sub.rfind("red", 0) != 0 &&
        !in.mods.sync)
      return bad(in, in.loc, "needs '.sync' or '.red'");
    if (in.mods.sub == "red") return bad(in, in.loc, "'.red' needs '.popc', '.and' or '.or'");
    const TypeRule* rule = ruleOf(in);
    if (!rule) return bad(in, in.loc, "has no typing rule", ErrorKind::Internal);
    QGPU_CHECK(instructionTypes(in, *rule));
    if (in.guarded) {
      Operand g;
      g.reg = in.guardReg;
      g.loc = in.loc;
      QGPU_CHECK(typedReg(f, in, g, Slot::Pred, 0));
    }
    for (size_t i = 0; i < in.dsts.size(); ++i) {
      const Operand& o = in.dsts[i];
      if (in.op == Opcode::Call) {
        if (o.kind != OperandKind::List) return bad(in, o.loc, "call results must be a '( )' list");
        continue;
      }
      if (o.kind != OperandKind::Reg) return bad(in, o.loc, "destination " + std::to_string(i + 1) + " is not a register");
      QGPU_CHECK(typedReg(f, in, o, i < rule->dsts.size() ? rule->dsts[i] : Slot::None, i + 1));
    }
    bool memory = in.op == Opcode::Ld || in.op == Opcode::St || in.op == Opcode::Atom;
    for (size_t i = 0; i < in.srcs.size(); ++i) {
      const Operand& o = in.srcs[i];
      size_t n = in.dsts.size() + i + 1;  // operand number as written
      bool addressSlot = memory && i == 0;
      if (addressSlot != (o.kind == OperandKind::Address))
        return bad(in, o.loc, addressSlot ? "operand 1 must be an address '[..]'"
                                          : "address operand where a value is expected");
      Slot slot = srcSlot(*rule, i, in.srcs.size());
      switch (o.kind) {
        case OperandKind::Reg:
          QGPU_CHECK(typedReg(f, in, o, slot, n));
          break;
        case OperandKind::Address:
          QGPU_CHECK(address(f, in, o));
          break;
        case OperandKind::List:
          if (in.op != Opcode::Call || i != 1) return bad(in, o.loc, "unexpected '( )' list");
          for (const Operand& item : o.items)
            if (item.kind == OperandKind::Reg) {
              QGPU_CHECK(reg(f, in, item));
            } else if (item.kind != OperandKind::Symbol && item.kind != OperandKind::Imm) {
              return bad(in, item.loc, "call arguments must be parameters, registers or immediates");
            }
          break;
        case OperandKind::Symbol:
          QGPU_CHECK(symbol(f, in, o, i));
          break;
        case OperandKind::Special:
          if (in.op != Opcode::Mov && in.op != Opcode::Cvt)
            return bad(in, o.loc, "special register '" + o.name + "' outside mov/cvt");
          if (int want = in.op == Opcode::Mov ? bits(in.types[0]) : bits(in.types[1]);
              want > specialBits(o.name))
            return bad(in, o.loc, "special register '" + o.name + "' is " +
                                      std::to_string(specialBits(o.name)) + "-bit, the instruction type " +
                                      std::to_string(want) + "-bit");
          [[fallthrough]];
        case OperandKind::Imm:
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
    QGPU_CHECK(notModuleGlobal(in, o));
    if ((in.op == Opcode::Mov || in.op == Opcode::Cvta) && (hasVariable(f, o.name) || findFunction(o.name)))
      return Ok{};
    return bad(in, o.loc, "unknown name '" + o.name + "'");
  }

  // A use of a module .global / .const variable (parsed so that an unused one is inert).
  Status notModuleGlobal(const Instruction& in, const Operand& o) const {
    for (const Variable& v : m_.globals)
      if (v.name == o.name)
        return bad(in, o.loc,
                   "module-level '" + v.linkage.substr(v.linkage.rfind('.')) + "' variable '" + v.name +
                       "' (declared at line " + std::to_string(v.loc.line) +
                       ") is used: kernels get memory through parameters",
                   ErrorKind::PtxUnsupported);
    return Ok{};
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
