// qgpu/oracle/machine.cpp — the op table, verify() and the program listing.
//
// verify() is the machine IR's spec checker: every producer (lowering, the random generator, the
// prompt decoder) runs it, and the interpreter refuses unverified programs. Its rules are listed
// in docs/machine.md §3; each rule has a test in oracle/tests/machine_test.cpp.
//
// Canonical form: fields an operation does not use must hold their default values (None
// operands, kNoPred, dst 0, space Global, offset 0). That makes a Program's meaning and its
// encodings (listing, prompt tokens, digests) one-to-one.
#include "oracle/machine.h"

#include <cstdio>
#include <string>
#include <vector>

namespace qgpu::machine {

const OpInfo& opInfo(Op op) {
  static constexpr OpInfo kTable[] = {
#define QGPU_OP(name, mnemonic, nsrc, npsrc, cls, dst, mem, lanes, result) \
  {mnemonic,                                                               \
   nsrc,                                                                   \
   npsrc,                                                                  \
   OpClass::cls,                                                           \
   DstKind::dst,                                                           \
   MemEffect::mem,                                                         \
   LaneScope::lanes,                                                       \
   ResultTiming::result},
#include "oracle/isa.def"
#undef QGPU_OP
  };
  return kTable[static_cast<int>(op)];
}

const char* specialName(Special sp) {
  switch (sp) {
    case Special::TidX:
      return "%tid.x";
    case Special::NtidX:
      return "%ntid.x";
    case Special::CtaidX:
      return "%ctaid.x";
    case Special::NctaidX:
      return "%nctaid.x";
    case Special::LaneId:
      return "%laneid";
    case Special::WarpId:
      return "%warpid";
  }
  return "%?";
}

namespace {

const char* termName(TermKind kind) {
  switch (kind) {
    case TermKind::Jump:
      return "jmp";
    case TermKind::Branch:
      return "br";
    case TermKind::Barrier:
      return "bar";
    case TermKind::Exit:
      return "exit";
  }
  return "?";
}

Diag invalid(std::string message) {
  return makeDiag(ErrorKind::ProgramInvalid, std::move(message));
}

// Checks one block; `where` prefixes messages with "block B".
Status verifyBlock(const Program& program, size_t b) {
  const Block& block = program.blocks[b];
  const std::string blockWhere = "block " + std::to_string(b);
  if (block.ops.size() > static_cast<size_t>(kMaxOpsPerBlock)) {
    return makeDiag(ErrorKind::OverLimit, blockWhere + " has " + std::to_string(block.ops.size()) +
                                              " ops; a block holds at most " +
                                              std::to_string(kMaxOpsPerBlock));
  }
  // The prompt keys an op's ROM row by its first trace record's index (docs/trace.md "Prompt"):
  // an atomic or a multiply with a register destination writes two records, and the index has 16
  // values.
  if (const int records = blockRecords(block); records > kMaxOpsPerBlock) {
    return makeDiag(ErrorKind::OverLimit,
                    blockWhere + " has " + std::to_string(block.ops.size()) + " ops that write " +
                        std::to_string(records) +
                        " trace records (an atomic or a multiply with a register destination "
                        "writes two); a block holds at most " +
                        std::to_string(kMaxOpsPerBlock) + " records");
  }
  uint8_t written = 0;  // predicates written so far in this block (bit p)

  // A predicate read: must name p0..p7 and have been written earlier in this block.
  auto checkPredRead = [&](const std::string& where, const char* what, uint8_t p) -> Status {
    if (p >= kPreds) {
      return invalid(where + ": " + what + " reads p" + std::to_string(p) +
                     ", which is not a predicate (p0..p7)");
    }
    if (!(written & (1u << p))) {
      return invalid(where + ": " + what + " reads p" + std::to_string(p) +
                     " before any op of this block writes it (predicates are block-local)");
    }
    return Ok{};
  };

  for (size_t i = 0; i < block.ops.size(); ++i) {
    const Instr& in = block.ops[i];
    if (static_cast<int>(in.op) >= kNumOps) {
      return invalid(blockWhere + " op " + std::to_string(i) + ": opcode " +
                     std::to_string(static_cast<int>(in.op)) + " is not in oracle/isa.def");
    }
    const OpInfo& info = opInfo(in.op);
    const std::string where = blockWhere + " op " + std::to_string(i) + " (" + info.mnemonic + ")";

    if (in.guard.pred != kNoPred)
      QGPU_CHECK(checkPredRead(where, "guard", in.guard.pred));
    else if (in.guard.negate)
      return invalid(where + ": unguarded op has guard.negate set");

    // General sources.
    const int nsrc = numGeneralSources(in.op);
    for (int s = 0; s < 3; ++s) {
      const Operand& o = in.src[s];
      const std::string slot = "src" + std::to_string(s);
      if (s >= nsrc) {
        if (!(o == Operand{})) {
          return invalid(where + ": " + slot + " is unused by this op and must be None");
        }
        continue;
      }
      if (in.op == Op::PConst) {
        if (o.kind != OperandKind::Imm || o.imm > 1) {
          return invalid(where + ": " + slot + " must be the immediate 0 or 1");
        }
        continue;
      }
      switch (o.kind) {
        case OperandKind::None:
          return invalid(where + ": " + slot + " is missing (the op takes " + std::to_string(nsrc) +
                         " sources)");
        case OperandKind::Reg:
          if (o.reg >= kRegs) {
            return invalid(where + ": " + slot + " reads r" + std::to_string(o.reg) +
                           ", which is not a register (r0..r15)");
          }
          if (o.imm != 0 || o.special != Special::TidX) {
            return invalid(where + ": " + slot + " is a register but carries other fields");
          }
          break;
        case OperandKind::Imm:
          if (o.reg != 0 || o.special != Special::TidX) {
            return invalid(where + ": " + slot + " is an immediate but carries other fields");
          }
          break;
        case OperandKind::Special:
          if (static_cast<int>(o.special) >= kNumSpecials) {
            return invalid(where + ": " + slot + " names special register " +
                           std::to_string(static_cast<int>(o.special)) + ", which does not exist");
          }
          if (o.reg != 0 || o.imm != 0) {
            return invalid(where + ": " + slot + " is a special register but carries other fields");
          }
          break;
        default:
          return invalid(where + ": " + slot + " has operand kind " +
                         std::to_string(static_cast<int>(o.kind)) + ", which does not exist");
      }
    }

    // Predicate sources.
    const int npsrc = numPredSources(in.op);
    for (int s = 0; s < 2; ++s) {
      const std::string slot = "psrc" + std::to_string(s);
      if (s >= npsrc) {
        if (in.psrc[s] != kNoPred)
          return invalid(where + ": " + slot + " is unused and must be kNoPred");
        continue;
      }
      if (in.psrc[s] == kNoPred) return invalid(where + ": " + slot + " is missing");
      QGPU_CHECK(checkPredRead(where, slot.c_str(), in.psrc[s]));
    }

    // Destinations.
    if (writesReg(in.op)) {
      if (in.dst >= kRegs) {
        return invalid(where + ": dst writes r" + std::to_string(in.dst) +
                       ", which is not a register (r0..r15)");
      }
    } else if (in.dst != 0) {
      return invalid(where + ": the op writes no register; dst must be 0");
    }
    if (writesPred(in.op)) {
      if (in.dstPred >= kPreds) {
        return invalid(where + ": dstPred writes p" + std::to_string(in.dstPred) +
                       ", which is not a predicate (p0..p7)");
      }
    } else if (in.dstPred != kNoPred) {
      return invalid(where + ": the op writes no predicate; dstPred must be kNoPred");
    }

    // Memory space and offset.
    if (info.cls == OpClass::Mem) {
      if (in.space != Space::Global && in.space != Space::Shared) {
        return invalid(where + ": memory space " + std::to_string(static_cast<int>(in.space)) +
                       " does not exist (global or shared)");
      }
    } else if (in.space != Space::Global) {
      return invalid(where + ": the op accesses no memory; space must be Global (the default)");
    }
    if (info.cls == OpClass::Local) {
      if (in.offset < 0 || in.offset >= program.spillSlots) {
        return invalid(where + ": spill slot " + std::to_string(in.offset) +
                       " is out of range (the program has " + std::to_string(program.spillSlots) +
                       " slots)");
      }
    } else if (info.cls != OpClass::Mem && in.offset != 0) {
      return invalid(where + ": the op takes no offset; offset must be 0");
    }

    if (writesPred(in.op)) written |= static_cast<uint8_t>(1u << in.dstPred);
  }

  // Terminator.
  const Terminator& t = block.term;
  const std::string where = blockWhere + " terminator (" + termName(t.kind) + ")";
  const size_t n = program.blocks.size();
  auto checkTarget = [&](const char* what, uint8_t target) -> Status {
    if (target == kExitTarget && t.kind == TermKind::Branch) return Ok{};
    if (target >= n) {
      return invalid(where + ": " + what + " target B" + std::to_string(target) +
                     " does not exist (the program has " + std::to_string(n) + " blocks)");
    }
    return Ok{};
  };
  switch (t.kind) {
    case TermKind::Branch:
      if (t.pred == kNoPred) return invalid(where + ": a branch needs a predicate");
      QGPU_CHECK(checkPredRead(where, "branch", t.pred));
      QGPU_CHECK(checkTarget("taken", t.taken));
      QGPU_CHECK(checkTarget("next", t.next));
      break;
    case TermKind::Jump:
    case TermKind::Barrier:
      if (t.pred != kNoPred || t.negate || t.taken != 0) {
        return invalid(where + ": only a branch has a predicate or a taken target");
      }
      QGPU_CHECK(checkTarget("next", t.next));
      break;
    case TermKind::Exit:
      if (t.pred != kNoPred || t.negate || t.taken != 0 || t.next != 0) {
        return invalid(where + ": exit has no predicate and no targets");
      }
      break;
    default:
      return invalid(where + ": terminator kind " + std::to_string(static_cast<int>(t.kind)) +
                     " does not exist");
  }
  return Ok{};
}

}  // namespace

Status verify(const Program& program) {
  const std::string kernel = "program '" + program.name + "'";
  if (program.blocks.empty()) return invalid(kernel + " has no blocks");
  if (program.blocks.size() > static_cast<size_t>(kMaxBlocks)) {
    return makeDiag(ErrorKind::OverLimit, kernel + " has " + std::to_string(program.blocks.size()) +
                                              " blocks; the ROM holds at most " +
                                              std::to_string(kMaxBlocks));
  }
  if (program.sharedWords + program.spillSlots > kSharedWords) {
    return makeDiag(ErrorKind::OverLimit, kernel + " needs " + std::to_string(program.sharedWords) +
                                              " words of shared memory plus " +
                                              std::to_string(program.spillSlots) +
                                              " spill slots per thread; shared memory has " +
                                              std::to_string(kSharedWords) + " words");
  }
  for (size_t b = 0; b < program.blocks.size(); ++b) QGPU_CHECK(verifyBlock(program, b));
  return Ok{};
}

Status verify(const Program& program, const Launch& launch) {
  QGPU_CHECK(verify(program));
  if (launch.blockX < 1 || launch.blockX > static_cast<uint32_t>(kMaxThreadsPerBlock)) {
    return makeDiag(ErrorKind::OverLimit, "launch: blockX = " + std::to_string(launch.blockX) +
                                              "; a CTA has 1.." +
                                              std::to_string(kMaxThreadsPerBlock) + " threads");
  }
  if (launch.gridX < 1 || launch.gridX > static_cast<uint32_t>(kMaxGridBlocks)) {
    return makeDiag(ErrorKind::OverLimit, "launch: gridX = " + std::to_string(launch.gridX) +
                                              "; a grid has 1.." + std::to_string(kMaxGridBlocks) +
                                              " CTAs");
  }
  const uint32_t need = program.sharedWords + program.spillSlots * launch.blockX;
  if (need > static_cast<uint32_t>(kSharedWords)) {
    return makeDiag(ErrorKind::OverLimit,
                    "program '" + program.name +
                        "' with blockX = " + std::to_string(launch.blockX) + " needs " +
                        std::to_string(program.sharedWords) + " shared words + " +
                        std::to_string(program.spillSlots) + " spill slots x " +
                        std::to_string(launch.blockX) + " threads = " + std::to_string(need) +
                        " words; shared memory has " + std::to_string(kSharedWords));
  }
  return Ok{};
}

// ---- Listing ----

namespace {

std::string reg(uint8_t r) {
  return "r" + std::to_string(r);
}
std::string pred(uint8_t p) {
  return p == kNoPred ? std::string("p?") : "p" + std::to_string(p);
}

std::string operand(const Operand& o) {
  switch (o.kind) {
    case OperandKind::None:
      return "_";
    case OperandKind::Reg:
      return reg(o.reg);
    case OperandKind::Imm: {
      // Signed decimal reads best for offsets and small constants; masks and large constants in
      // hex.
      const int32_t v = static_cast<int32_t>(o.imm);
      if (v >= -4096 && v <= 4096) return std::to_string(v);
      char buf[16];
      snprintf(buf, sizeof buf, "0x%x", o.imm);
      return buf;
    }
    case OperandKind::Special:
      return specialName(o.special);
  }
  return "?";
}

std::string address(const Instr& in) {
  std::string out = "[" + operand(in.src[0]);
  if (in.offset > 0) out += "+" + std::to_string(in.offset);
  if (in.offset < 0) out += std::to_string(in.offset);
  return out + "]";
}

}  // namespace

std::string print(const Instr& in) {
  std::string out;
  if (in.guard.pred != kNoPred)
    out += std::string("@") + (in.guard.negate ? "!" : "") + pred(in.guard.pred) + " ";
  const OpInfo& info = opInfo(in.op);
  out += info.mnemonic;
  std::vector<std::string> args;
  switch (info.cls) {
    case OpClass::Alu:
      args.push_back(reg(in.dst));
      for (int s = 0; s < info.numSources; ++s) args.push_back(operand(in.src[s]));
      break;
    case OpClass::Cmp:
      args = {pred(in.dstPred), operand(in.src[0]), operand(in.src[1])};
      break;
    case OpClass::Sel:
      args = {reg(in.dst), operand(in.src[0]), operand(in.src[1]), pred(in.psrc[0])};
      break;
    case OpClass::Pred:
      args.push_back(pred(in.dstPred));
      if (in.op == Op::PConst) args.push_back(operand(in.src[0]));
      for (int s = 0; s < info.numPredSources; ++s) args.push_back(pred(in.psrc[s]));
      break;
    case OpClass::Mem:
      out += in.space == Space::Shared ? ".shared" : ".global";
      if (writesReg(in.op)) args.push_back(reg(in.dst));
      args.push_back(address(in));
      for (int s = 1; s < info.numSources; ++s) args.push_back(operand(in.src[s]));
      break;
    case OpClass::Local:
      if (in.op == Op::LdLocal)
        args = {reg(in.dst), "slot" + std::to_string(in.offset)};
      else
        args = {"slot" + std::to_string(in.offset), operand(in.src[0])};
      break;
    case OpClass::Warp:
      if (in.op == Op::Ballot) {
        args = {reg(in.dst), pred(in.psrc[0])};
      } else if (in.op == Op::VoteAny || in.op == Op::VoteAll) {
        args = {pred(in.dstPred), pred(in.psrc[0])};
      } else {
        args = {reg(in.dst), operand(in.src[0]), operand(in.src[1]), operand(in.src[2])};
      }
      break;
  }
  for (size_t i = 0; i < args.size(); ++i) out += (i == 0 ? " " : ", ") + args[i];
  return out;
}

std::string print(const Program& program) {
  std::string out = ".kernel " + (program.name.empty() ? std::string("_") : program.name) +
                    " shared " + std::to_string(program.sharedWords) + " spill " +
                    std::to_string(program.spillSlots) + "\n";
  for (size_t b = 0; b < program.blocks.size(); ++b) {
    const Block& block = program.blocks[b];
    out += "B" + std::to_string(b) + ":\n";
    for (const Instr& in : block.ops) out += "  " + print(in) + "\n";
    const Terminator& t = block.term;
    switch (t.kind) {
      case TermKind::Jump:
        out += "  jmp B" + std::to_string(t.next) + "\n";
        break;
      case TermKind::Branch: {
        auto target = [](uint8_t b) {
          return b == kExitTarget ? std::string("exit") : "B" + std::to_string(b);
        };
        out += std::string("  br ") + (t.negate ? "!" : "") + pred(t.pred) + " ? " +
               target(t.taken) + " : " + target(t.next) + "\n";
        break;
      }
      case TermKind::Barrier:
        out += "  bar -> B" + std::to_string(t.next) + "\n";
        break;
      case TermKind::Exit:
        out += "  exit\n";
        break;
    }
  }
  return out;
}

}  // namespace qgpu::machine
