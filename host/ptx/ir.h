// qgpu/host/ptx/ir.h — the PTX module as parsed: the contract between the PTX parser and lowering.
//
// The parser (host/ptx/parser.h) produces a `Module`; `verify(const Module&)` checks it; lowering
// (host/lower/) consumes it. Registers are resolved to numeric ids at parse time, with nested
// `{ }` scopes giving shadowing declarations their own ids, so lowering never looks at names.
// Every Instruction carries the source location of its first token.
// Plain C++: no CUDA, no LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/diag.h"

namespace qgpu::ptx {

// ---- The opcodes the front end accepts: one table, host/ptx/ops.def ----
enum class Opcode : uint8_t {
#define QGPU_PTX_OP(name, spelling) name,
#include "host/ptx/ops.def"
#undef QGPU_PTX_OP
};
const char* spelling(Opcode op);

// Scalar types (from `.s32`, `.u64`, `.b16`, `.pred`, ...). None where an instruction has no type.
enum class Type : uint8_t { None, Pred, B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64 };
int bits(Type t);          // 1 for Pred, 0 for None
bool isSigned(Type t);
const char* typeName(Type t);  // "s32", ...

enum class StateSpace : uint8_t { None, Global, Shared, Param, Generic, Local, Const };

enum class CmpOp : uint8_t { None, Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs };  // setp comparisons

// The operation selectors, decoded once by the parser (lowering switches on these, never on text).
enum class AtomOp : uint8_t { None, Add, Min, Max, And, Or, Xor, Exch, Cas, Inc, Dec };  // atom.<op>
enum class ShflMode : uint8_t { None, Up, Down, Bfly, Idx };                             // shfl.<mode>
enum class VoteMode : uint8_t { None, Ballot, Any, All, Uni };                           // vote.<mode>
enum class BarrierKind : uint8_t {
  Sync,     // bar.sync / barrier.sync (also the value for every non-barrier opcode)
  Warp,     // bar.warp.sync
  RedPopc,  // bar.red.popc (__syncthreads_count)
  RedAnd,   // bar.red.and (__syncthreads_and)
  RedOr,    // bar.red.or (__syncthreads_or)
};
const char* atomOpName(AtomOp op);        // "add", ...; "" for None
const char* shflModeName(ShflMode mode);  // "up", ...
const char* voteModeName(VoteMode mode);  // "ballot", ...

// Per-opcode modifiers, already decoded. Only the fields meaningful for the opcode are set; the
// parser refuses modifiers it does not know with PtxUnsupported, naming the modifier.
struct Modifiers {
  CmpOp cmp = CmpOp::None;       // setp.<cmp>
  StateSpace space = StateSpace::None;  // ld/st/atom/cvta (.global .shared .param; None = generic)
  bool toSpace = false;          // cvta.to.<space>
  bool nc = false;               // ld.global.nc
  bool isVolatile = false;       // ld/st.volatile: a plain access here (docs/lowering.md)
  uint8_t vec = 0;               // ld/st.v2/.v4 as written; the parser splits such an access into
                                 // that many scalar ones (docs/lowering.md), so 0 after parse()
  uint8_t vecBytes = 0;          // on the first element access of a split ld/st.v2/.v4: the
                                 // vector's size in bytes, the alignment a GPU requires of its
                                 // address (lowering faults otherwise); 0 on every other access.
                                 // Not printed: a printed split access is a plain scalar one
  bool uni = false;              // bra.uni, call.uni
  bool lo = false, hi = false, wide = false;  // mul / mad
  bool sync = false;             // shfl.sync, vote.sync, barrier.sync
  bool aligned = false;          // `.aligned` as written on barrier (bar.* is aligned by PTX)
  bool wrap = false, clamp = false;  // shf
  bool left = false, right = false;  // shf.l / shf.r
  bool shiftamt = false;         // bfind.shiftamt
  std::string sub;               // the operation selector as written: atom add/min/..., shfl
                                 // up/down/bfly/idx, vote ballot/any/all/uni, bar.red popc/and/or,
                                 // bar "warp"; decoded into the four fields below
  AtomOp atom = AtomOp::None;    // atom.<op>
  ShflMode shfl = ShflMode::None;  // shfl.<mode>
  VoteMode vote = VoteMode::None;  // vote.<mode>
  BarrierKind barrier = BarrierKind::Sync;  // bar/barrier flavour
};

enum class OperandKind : uint8_t {
  Reg,      // a virtual register, `reg` = id into Function::regs
  Imm,      // an integer immediate, `imm` (decimal or hex in the source)
  Special,  // a special register: `name` is e.g. "%tid.x"
  Symbol,   // a name: label, parameter, shared variable, function; `name`
  Address,  // `[base + offset]`: base is a register (`reg`) or a symbol (`name`); `imm` = offset
  List,     // a parenthesised list (call arguments): `items`
};

struct Operand {
  OperandKind kind = OperandKind::Imm;
  uint32_t reg = 0;
  bool addrIsReg = false;  // Address: base is `reg` (true) or symbol `name` (false)
  int64_t imm = 0;
  std::string name;
  std::vector<Operand> items;
  SourceLoc loc;
};

struct Instruction {
  Opcode op;
  Modifiers mods;
  std::vector<Type> types;   // type suffixes in order (cvt.u64.u32 -> {U64, U32}; add.s32 -> {S32})
  bool guarded = false;      // @%p or @!%p
  bool guardNegated = false;
  uint32_t guardReg = 0;
  std::vector<Operand> dsts; // destinations (two for `shfl ... d|p`; setp p|q)
  std::vector<Operand> srcs; // sources in source order (for `st`: address, value)
                             // call: dsts = {List of return params} if any, srcs = {Symbol
                             // callee, List of arguments (possibly empty)}; bra: srcs = {Symbol}
  SourceLoc loc;
  std::string text;          // the statement as written, for messages
};

struct RegInfo {
  std::string name;  // as written: "%r12", "%p1", "temp_param_reg"
  Type type;
  uint32_t scopeDepth = 0;  // 0 = function body, > 0 = nested `{ }` scope
  uint32_t scope = 0;       // index into Function::scopes of the declaring scope (0 = body)
};

// A `{ }` block of a function body. Scope 0 is the body itself. The parser requires a scope's
// `.reg` declarations to precede its instructions, labels and nested scopes, so a scope is fully
// described by its place in the tree, its instruction range and the variables that name it.
struct Scope {
  uint32_t parent = 0;  // enclosing scope (scope 0 is its own parent)
  uint32_t depth = 0;   // 0 for the body; equals RegInfo::scopeDepth of registers declared here
  uint32_t begin = 0;   // body[begin, end) are the instructions inside it (nested ones included)
  uint32_t end = 0;
};

struct Variable {    // a `.param`, `.shared` or function-body `.local` declaration
  std::string name;
  Type type = Type::None;
  uint32_t align = 0;
  uint32_t bytes = 0;   // size in bytes (arrays: element size * count)
  uint32_t scope = 0;   // declaring scope (Function::scopes); 0 for params, returns, body-level
  bool external = false;  // module `.extern .shared ... name[]`: the launch's dynamic shared
                          // memory (bytes = 0); every such variable starts at the same address
  std::string linkage;  // module-scope only: "" (internal), ".visible", ".weak" or ".extern"
  SourceLoc loc;
};

struct Function {
  std::string name;
  bool isEntry = false;            // .entry (kernel) or .func
  bool visible = false;
  std::vector<Variable> params;    // entry/func parameters in order
  std::vector<Variable> returns;   // .func return parameters
  std::vector<Variable> shared;    // .shared declarations in the body
  std::vector<Variable> locals;    // .local declarations in the body (per-thread memory: the
                                   // compilers' __local_depotN stack frames)
  std::vector<Variable> callParams;  // `.param` declared inside call-sequence scopes
  std::vector<RegInfo> regs;       // every register, id = index
  std::vector<Instruction> body;   // instructions in order
  std::map<std::string, uint32_t> labels;  // label -> index in body of the next instruction
  std::vector<Scope> scopes;       // scopes[0] = the body; children follow in source order
  SourceLoc loc;
};

struct Module {
  std::string version;   // "6.4", "9.0"
  std::string target;    // "sm_75"
  int addressSize = 64;
  std::vector<Variable> shared;  // module-scope .shared variables, in declaration order
  // Module-scope .global and .const variables (`__device__` / `__constant__` data, and the unused
  // objects libraries bring, e.g. libcu++'s customisation points under nvcc): kept by name so
  // that verify refuses a *use* (kernels get memory through parameters); an unused one is inert.
  // Each variable's linkage holds its words before the declaration, e.g. ".global" or
  // ".visible .const"; initializers are not kept.
  std::vector<Variable> globals;
  std::vector<Function> functions;
  std::string file;      // for messages
};

// The kernel `name` as compiled: the module's only .entry, else the entry named exactly `name`,
// else the one whose C++ mangled name is `_Z<len>name...` (a __global__ without extern "C").
// PtxInvalid naming the entries found when none fits.
Expected<const Function*> findEntry(const Module& module, const std::string& name);

// Semantic checks of a parsed module: every register used is declared with a type compatible
// with its use, every label and callee exists, operand counts match the opcode. Names the
// instruction and its location.
Status verify(const Module& module);

// Prints the module back as PTX (canonical spacing): parse(print(m)) == m.
std::string print(const Module& module);

}  // namespace qgpu::ptx
