// qgpu/host/lower/flatten.cpp — pass 1: pick the entry, inline calls, resolve parameters.
//
// Output contract (FlatFunction): one register space and one label space; the body contains no
// `call`, no `st.param`, and `ld.param` only of entry parameters (whose values are in `params`).
// A call sequence
//     st.param.b32 [param0+0], %r2;  call.uni (retval0), f, (param0);  ld.param.b32 %r3, [retval0];
// becomes `mov %P, %r2; <copy of f's body>; CONT: mov %r3, %R`, where %P/%R are fresh registers,
// the copy's registers and labels are renamed, its `ld.param [f_param_0]` reads %P, its
// `st.param [func_retval0]` writes %R and its `ret` jumps to CONT. Recursion is refused. The
// copy's .local variables are renamed like its labels and placed in the thread's frame after its
// caller's (FlatFunction::locals, docs/lowering.md "Local memory").
#include <algorithm>
#include <functional>
#include <set>

#include "host/lower/vir.h"

namespace qgpu::lower {
namespace {

Diag unsupported(const ptx::Instruction& in, const std::string& why) {
  return makeDiag(ErrorKind::PtxUnsupported, "unsupported PTX `" + in.text + "`: " + why, in.loc);
}

ptx::Instruction makeMov(ptx::Type type, uint32_t dst, uint32_t src, const ptx::Instruction& at) {
  ptx::Instruction mov;
  mov.op = ptx::Opcode::Mov;
  mov.types = {type};
  ptx::Operand d;
  d.kind = ptx::OperandKind::Reg;
  d.reg = dst;
  d.loc = at.loc;
  ptx::Operand s = d;
  s.reg = src;
  mov.dsts = {d};
  mov.srcs = {s};
  mov.loc = at.loc;
  mov.text = at.text;
  return mov;
}

// The integer type of `bits` bits with the signedness of t (.bN counts as unsigned).
ptx::Type intType(int bits, bool isSigned) {
  using ptx::Type;
  switch (bits) {
    case 8: return isSigned ? Type::S8 : Type::U8;
    case 16: return isSigned ? Type::S16 : Type::U16;
    case 32: return isSigned ? Type::S32 : Type::U32;
    default: return isSigned ? Type::S64 : Type::U64;
  }
}

struct Flattener {
  const ptx::Module& module;
  FlatFunction out;
  std::vector<std::string> stack;  // functions being inlined (recursion check)
  int copies = 0;

  const ptx::Function* find(const std::string& name) const {
    for (const auto& fn : module.functions)
      if (fn.name == name) return &fn;
    return nullptr;
  }

  // Symbols of the current function copy that stand for registers: call-sequence params and
  // return slots (caller side), own params and return params (callee side).
  struct Frame {
    const ptx::Function* fn = nullptr;
    uint32_t regBase = 0;
    std::string labelPrefix;
    std::map<std::string, uint32_t> symbolRegs;  // param symbol -> flat register
    std::string contLabel;                       // callee: where `ret` jumps; "" for the entry
    uint64_t frameEnd = 0;                       // where this activation's .local frame ends
  };

  // Lays `fr.fn`'s .local variables out after its caller's frame (docs/lowering.md "Local
  // memory"): the base is `callerEnd` rounded up to the frame's largest max(.align, 4), then
  // declaration order, each at a multiple of its max(.align, 4); renamed with the copy's prefix.
  // Sets fr.frameEnd. 64-bit sums: declared sizes near 2^32 must not wrap (translate refuses
  // the frame as over the machine's words).
  void layOutLocals(Frame& fr, uint64_t callerEnd) {
    uint64_t largest = 4;
    for (const ptx::Variable& v : fr.fn->locals) largest = std::max<uint64_t>(largest, v.align);
    uint64_t at = (callerEnd + largest - 1) / largest * largest;
    for (const ptx::Variable& v : fr.fn->locals) {
      const uint64_t a = std::max<uint32_t>(v.align, 4);
      at = (at + a - 1) / a * a;
      FrameVariable fv{v, at};
      fv.decl.name = fr.labelPrefix + v.name;
      out.locals.push_back(std::move(fv));
      at += v.bytes;
    }
    fr.frameEnd = fr.fn->locals.empty() ? callerEnd : at;
  }

  static bool isLocal(const ptx::Function& fn, const std::string& name) {
    return std::any_of(fn.locals.begin(), fn.locals.end(),
                       [&](const ptx::Variable& v) { return v.name == name; });
  }

  uint32_t freshReg(ptx::Type type, const std::string& name) {
    out.regs.push_back(ptx::RegInfo{name, type, 0, 0});
    return static_cast<uint32_t>(out.regs.size() - 1);
  }

  // Remaps registers and label names of an instruction of `fr` into the flat spaces.
  void remap(ptx::Operand& op, const Frame& fr) {
    if (op.kind == ptx::OperandKind::Reg || (op.kind == ptx::OperandKind::Address && op.addrIsReg))
      op.reg += fr.regBase;
    if (op.kind == ptx::OperandKind::Symbol && fr.fn->labels.count(op.name))
      op.name = fr.labelPrefix + op.name;
    const bool symbolic = op.kind == ptx::OperandKind::Symbol ||
                          (op.kind == ptx::OperandKind::Address && !op.addrIsReg);
    if (symbolic && !fr.labelPrefix.empty() && isLocal(*fr.fn, op.name))
      op.name = fr.labelPrefix + op.name;
    for (auto& item : op.items) remap(item, fr);
  }

  Status emitFunction(Frame& fr) {
    const ptx::Function& fn = *fr.fn;
    std::vector<std::vector<std::string>> labelsAt(fn.body.size() + 1);
    for (const auto& [name, index] : fn.labels) labelsAt[std::min<size_t>(index, fn.body.size())].push_back(name);
    for (size_t i = 0; i <= fn.body.size(); ++i) {
      for (const auto& name : labelsAt[i]) out.labels[fr.labelPrefix + name] = static_cast<uint32_t>(out.body.size());
      if (i == fn.body.size()) break;
      ptx::Instruction in = fn.body[i];
      for (auto& d : in.dsts) remap(d, fr);
      for (auto& s : in.srcs) remap(s, fr);
      if (in.guarded) in.guardReg += fr.regBase;
      QGPU_CHECK(emitInstruction(in, fr));
    }
    return Ok{};
  }

  // `ld.param.T d, [p]` of a parameter or return slot held in register `held`: a mov when T,
  // d and the held register have one width, else `cvt.D.T d, held` with D of d's width and T's
  // signedness -- the held value's low |T| bits extended per T into d, as ld.param fills a
  // register wider than its type (`ld.param.s8 %rs1`, `ld.param.u32 %rd1` of a .b32 slot).
  Expected<ptx::Instruction> readParam(const ptx::Instruction& in, uint32_t held) const {
    ptx::Type t = in.types.at(0);
    uint32_t dst = in.dsts.at(0).reg;
    int tb = ptx::bits(t), db = ptx::bits(out.regs.at(dst).type), hb = ptx::bits(out.regs.at(held).type);
    if (tb == db && tb == hb) return makeMov(t, dst, held, in);
    if (tb > hb) return unsupported(in, "ld.param of " + std::to_string(tb) + " bits from a " + std::to_string(hb) + "-bit argument");
    if (db < 16 || tb > db) return unsupported(in, "ld.param into a " + std::to_string(db) + "-bit register");
    ptx::Instruction cvt = makeMov(t, dst, held, in);
    cvt.op = ptx::Opcode::Cvt;
    cvt.types = {intType(db, ptx::isSigned(t)), intType(tb, ptx::isSigned(t))};
    return cvt;
  }

  // `[sym+0]` of a param symbol: the symbol, or "" if the operand is not of that form.
  static std::string paramSymbol(const ptx::Operand& op) {
    if (op.kind == ptx::OperandKind::Address && !op.addrIsReg) return op.name;
    if (op.kind == ptx::OperandKind::Symbol) return op.name;
    return "";
  }

  Status emitInstruction(ptx::Instruction& in, Frame& fr) {
    using ptx::Opcode;
    bool paramSpace = in.mods.space == ptx::StateSpace::Param;
    if (in.op == Opcode::St && paramSpace) {
      if (in.guarded) return unsupported(in, "guarded st.param");
      std::string sym = paramSymbol(in.srcs.at(0));
      if (sym.empty() || in.srcs.at(0).imm != 0)
        return unsupported(in, "st.param to anything but [symbol+0]");
      if (in.srcs.size() < 2 || (in.srcs[1].kind != ptx::OperandKind::Reg && in.srcs[1].kind != ptx::OperandKind::Imm))
        return unsupported(in, "st.param of a value that is neither a register nor an immediate");
      // An 8-bit parameter travels in a 16-bit register (lowering has no 8-bit registers); the
      // reader's ld.param takes its low byte.
      ptx::Type t = ptx::bits(in.types.at(0)) == 8 ? ptx::Type::B16 : in.types.at(0);
      auto it = fr.symbolRegs.find(sym);
      if (it == fr.symbolRegs.end())
        it = fr.symbolRegs.emplace(sym, freshReg(t, sym)).first;
      ptx::Instruction mov = makeMov(t, it->second, 0, in);
      mov.srcs[0] = in.srcs[1];
      out.body.push_back(mov);
      return Ok{};
    }
    if (in.op == Opcode::Ld && paramSpace) {
      std::string sym = paramSymbol(in.srcs.at(0));
      auto it = fr.symbolRegs.find(sym);
      if (it != fr.symbolRegs.end()) {
        if (in.guarded) return unsupported(in, "guarded ld.param");
        uint32_t held = it->second;
        if (int64_t off = in.srcs[0].imm; off != 0) {
          // A byte of the argument (nvcc reads `(k >> 8) & 0xff` as ld.param.u8 [p+1]): the
          // held value shifted right by 8 * off, then read as at offset 0.
          int hb = ptx::bits(out.regs.at(held).type);
          if (off < 0 || 8 * off + ptx::bits(in.types.at(0)) > hb)
            return unsupported(in, "ld.param at byte offset " + std::to_string(off) + " of a " + std::to_string(hb) + "-bit argument");
          ptx::Instruction shr = makeMov(out.regs.at(held).type, 0, held, in);
          shr.op = Opcode::Shr;
          shr.types = {intType(hb, false)};
          shr.dsts[0].reg = freshReg(out.regs.at(held).type, sym);
          ptx::Operand amount = shr.srcs[0];
          amount.kind = ptx::OperandKind::Imm;
          amount.imm = 8 * off;
          shr.srcs.push_back(amount);
          held = shr.dsts[0].reg;
          out.body.push_back(std::move(shr));
        }
        QGPU_TRY(read, readParam(in, held));
        out.body.push_back(std::move(read));
        return Ok{};
      }
      if (fr.contLabel.empty() && out.params.count(sym)) {
        out.body.push_back(in);  // translate() reads the value (at its byte offset) from `params`
        return Ok{};
      }
      return makeDiag(ErrorKind::PtxInvalid, "`" + in.text + "` reads an unknown parameter `" + sym + "`", in.loc);
    }
    if (in.op == Opcode::Call) return inlineCall(in, fr);
    if ((in.op == Opcode::Ret) && !fr.contLabel.empty()) {
      ptx::Instruction bra;
      bra.op = Opcode::Bra;
      bra.mods.uni = true;
      bra.guarded = in.guarded;
      bra.guardNegated = in.guardNegated;
      bra.guardReg = in.guardReg;
      ptx::Operand target;
      target.kind = ptx::OperandKind::Symbol;
      target.name = fr.contLabel;
      target.loc = in.loc;
      bra.srcs = {target};
      bra.loc = in.loc;
      bra.text = in.text;
      out.body.push_back(bra);
      return Ok{};
    }
    out.body.push_back(in);
    return Ok{};
  }

  Status inlineCall(const ptx::Instruction& in, Frame& fr) {
    if (in.guarded) return unsupported(in, "guarded call");
    const ptx::Operand* callee = nullptr;
    const ptx::Operand* args = nullptr;
    const ptx::Operand* rets = nullptr;
    for (const auto& s : in.srcs) {
      if (s.kind == ptx::OperandKind::Symbol && !callee) callee = &s;
      else if (s.kind == ptx::OperandKind::List) args = &s;
    }
    for (const auto& d : in.dsts)
      if (d.kind == ptx::OperandKind::List) rets = &d;
    if (!callee) return unsupported(in, "indirect call");
    const ptx::Function* fn = find(callee->name);
    if (!fn || fn->isEntry)
      return makeDiag(ErrorKind::PtxInvalid, "`" + in.text + "` calls `" + callee->name + "`, which is not a .func", in.loc);
    if (std::find(stack.begin(), stack.end(), fn->name) != stack.end())
      return unsupported(in, "recursive call of `" + fn->name + "`");
    if (fn->body.empty() && fn->labels.empty() && fn->regs.empty() && fn->params.empty() && fn->returns.empty())
      return unsupported(in, "call of a function without a body");
    size_t nargs = args ? args->items.size() : 0;
    size_t nrets = rets ? rets->items.size() : 0;
    if (nargs != fn->params.size() || nrets != fn->returns.size())
      return makeDiag(ErrorKind::PtxInvalid,
                      "`" + in.text + "` passes " + std::to_string(nargs) + " arguments and " +
                          std::to_string(nrets) + " return slots; `" + fn->name + "` declares " +
                          std::to_string(fn->params.size()) + " and " + std::to_string(fn->returns.size()),
                      in.loc);
    Frame callee_fr;
    callee_fr.fn = fn;
    callee_fr.regBase = static_cast<uint32_t>(out.regs.size());
    int copy = copies++;
    callee_fr.labelPrefix = fn->name + "#" + std::to_string(copy) + "#";
    callee_fr.contLabel = "#cont" + std::to_string(copy);
    for (const auto& r : fn->regs) out.regs.push_back(r);
    for (size_t k = 0; k < nargs; ++k) {
      const auto& a = args->items[k];
      auto it = fr.symbolRegs.find(a.name);
      if (a.kind != ptx::OperandKind::Symbol || it == fr.symbolRegs.end())
        return unsupported(in, "call argument `" + a.name + "` is not a .param set by st.param");
      callee_fr.symbolRegs[fn->params[k].name] = it->second;
    }
    for (size_t k = 0; k < nrets; ++k) {
      const auto& r = rets->items[k];
      if (r.kind != ptx::OperandKind::Symbol) return unsupported(in, "call return slot is not a .param");
      uint32_t reg = freshReg(fn->returns[k].type, r.name);
      fr.symbolRegs[r.name] = reg;
      callee_fr.symbolRegs[fn->returns[k].name] = reg;
    }
    layOutLocals(callee_fr, fr.frameEnd);
    for (const auto& v : fn->shared) {  // a callee inlined twice shares its .shared variables
      bool known = false;
      for (const auto& w : out.shared) known = known || w.name == v.name;
      if (!known) out.shared.push_back(v);
    }
    stack.push_back(fn->name);
    QGPU_CHECK(emitFunction(callee_fr));
    stack.pop_back();
    out.labels[callee_fr.contLabel] = static_cast<uint32_t>(out.body.size());
    return Ok{};
  }
};

}  // namespace

Expected<FlatFunction> flatten(const ptx::Module& module, const LowerOptions& options) {
  const ptx::Function* entry = nullptr;
  int entries = 0;
  for (const auto& fn : module.functions) {
    if (!fn.isEntry) continue;
    ++entries;
    if (options.entry.empty() ? entries == 1 : fn.name == options.entry) entry = &fn;
  }
  if (options.entry.empty() && entries != 1)
    return makeDiag(ErrorKind::PtxInvalid, "the module has " + std::to_string(entries) +
                                               " entries; name the kernel to lower",
                    SourceLoc{module.file, 0, 0});
  if (!entry)
    return makeDiag(ErrorKind::PtxInvalid, "the module has no entry `" + options.entry + "`",
                    SourceLoc{module.file, 0, 0});
  if (options.params.size() != entry->params.size())
    return makeDiag(ErrorKind::PtxInvalid,
                    "kernel `" + entry->name + "` has " + std::to_string(entry->params.size()) +
                        " parameters but " + std::to_string(options.params.size()) + " values were given",
                    entry->loc);
  Flattener fl{module, {}, {}, 0};
  fl.out.name = entry->name;
  fl.out.file = module.file;
  fl.out.regs = entry->regs;
  fl.out.shared = entry->shared;
  for (size_t k = 0; k < entry->params.size(); ++k) {
    const auto& p = entry->params[k];
    int bits = 0;
    switch (p.type) {
      // 8/16-bit parameters (`char`, `short`, `bool` by value) hold the value's low bits
      // (translate_memory.cpp reads them with ld.param of their own width).
      case ptx::Type::B8: case ptx::Type::U8: case ptx::Type::S8: bits = 8; break;
      case ptx::Type::B16: case ptx::Type::U16: case ptx::Type::S16: bits = 16; break;
      case ptx::Type::B32: case ptx::Type::U32: case ptx::Type::S32: bits = 32; break;
      case ptx::Type::B64: case ptx::Type::U64: case ptx::Type::S64: bits = 64; break;
      default:
        return makeDiag(ErrorKind::PtxUnsupported,
                        "unsupported PTX: entry parameter `" + p.name + "` is not an integer scalar", p.loc);
    }
    // A sub-word parameter holds the low bits of its value (a char argument of 0x1ff is 0xff).
    fl.out.params[p.name] = bits < 32 ? options.params[k] & ((1u << bits) - 1) : options.params[k];
    fl.out.paramBits[p.name] = bits;
  }
  Flattener::Frame fr;
  fr.fn = entry;
  fl.layOutLocals(fr, 0);
  fl.stack.push_back(entry->name);
  QGPU_CHECK(fl.emitFunction(fr));
  // Module-scope .shared variables the flat body names (directly or as an address base), in
  // declaration order, after the functions' own: other kernels' variables take no words here.
  std::set<std::string> named;
  std::function<void(const ptx::Operand&)> note = [&](const ptx::Operand& o) {
    if (o.kind == ptx::OperandKind::Symbol || (o.kind == ptx::OperandKind::Address && !o.addrIsReg))
      named.insert(o.name);
    for (const auto& item : o.items) note(item);
  };
  for (const auto& in : fl.out.body) {
    for (const auto& o : in.srcs) note(o);
    for (const auto& o : in.dsts) note(o);
  }
  for (const auto& v : module.shared)
    if (named.count(v.name)) fl.out.shared.push_back(v);
  fl.out.dynamicSharedWords = options.dynamicSharedWords;
  return std::move(fl.out);
}

}  // namespace qgpu::lower
