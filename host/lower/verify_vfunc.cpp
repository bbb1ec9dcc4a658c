// qgpu/host/lower/verify_vfunc.cpp — the VIR invariant checker (contract: verify_vfunc.h).
#include "host/lower/verify_vfunc.h"

#include <cstdlib>
#include <string>

namespace qgpu::lower {
namespace {

class Checker {
 public:
  Checker(const VFunc& f, const char* pass) : f_(f), pass_(pass) {}

  Status run() {
    if (f_.blocks.empty()) return fail(-1, -1, "the function has no blocks");
    if (f_.numRegs < 0 || f_.numPreds < 0) return fail(-1, -1, "negative register counts");
    if (f_.noSpill.size() != static_cast<size_t>(f_.numRegs))
      return fail(-1, -1, "noSpill has " + std::to_string(f_.noSpill.size()) + " entries for " +
                              std::to_string(f_.numRegs) + " vregs");
    for (int b = 0; b < static_cast<int>(f_.blocks.size()); ++b) {
      const VBlock& block = f_.blocks[static_cast<size_t>(b)];
      for (int i = 0; i < static_cast<int>(block.ops.size()); ++i) QGPU_CHECK(op(b, i, block.ops[static_cast<size_t>(i)]));
      QGPU_CHECK(term(b, block.term));
    }
    return Ok{};
  }

 private:
  const VFunc& f_;
  const char* pass_;

  Diag fail(int block, int op, const std::string& what, SourceLoc loc = {}) const {
    std::string where = "after " + std::string(pass_) + ": function `" + f_.name + "`";
    if (block >= 0) where += " block " + std::to_string(block);
    if (op >= 0) {
      const VInstr& in = f_.blocks[static_cast<size_t>(block)].ops[static_cast<size_t>(op)];
      where += std::string(" op ") + std::to_string(op) + " (" + machine::opInfo(in.op).mnemonic + ")";
    }
    return makeDiag(ErrorKind::Internal, "VIR invariant broken " + where + ": " + what, std::move(loc));
  }

  bool reg(int v) const { return v >= 0 && v < f_.numRegs; }
  bool pred(int p) const { return p >= 0 && p < f_.numPreds; }
  bool block(int b) const { return b >= 0 && b < static_cast<int>(f_.blocks.size()); }

  Status op(int b, int i, const VInstr& in) const {
    auto bad = [&](const std::string& what) { return fail(b, i, what, in.loc); };
    if (static_cast<int>(in.op) >= machine::kNumOps)
      return makeDiag(ErrorKind::Internal, "after " + std::string(pass_) + ": block " + std::to_string(b) + " op " +
                                               std::to_string(i) + ": opcode " + std::to_string(static_cast<int>(in.op)) +
                                               " is not in oracle/isa.def",
                      in.loc);
    if (in.dst != kNone && !machine::writesReg(in.op)) return bad("writes vreg " + std::to_string(in.dst) + " but the op writes no register");
    if (in.dst != kNone && !reg(in.dst))
      return bad("destination is vreg " + std::to_string(in.dst) + ", numRegs is " + std::to_string(f_.numRegs));
    if (in.dstPred != kNone && !machine::writesPred(in.op))
      return bad("writes pvreg " + std::to_string(in.dstPred) + " but the op writes no predicate");
    if (in.dstPred != kNone && !pred(in.dstPred))
      return bad("predicate destination is pvreg " + std::to_string(in.dstPred) + ", numPreds is " +
                 std::to_string(f_.numPreds));
    int ns = numSrc(in.op), np = numPsrc(in.op);
    for (int k = 0; k < ns && k < 3; ++k) {
      const VOperand& s = in.src[static_cast<size_t>(k)];
      if (s.kind == VKind::None) return bad("source " + std::to_string(k) + " is missing");
      if (s.kind == VKind::Reg && !reg(s.reg))
        return bad("source " + std::to_string(k) + " is vreg " + std::to_string(s.reg) + ", numRegs is " +
                   std::to_string(f_.numRegs));
    }
    for (int k = 0; k < np && k < 2; ++k)
      if (!pred(in.psrc[static_cast<size_t>(k)]))
        return bad("predicate source " + std::to_string(k) + " is pvreg " + std::to_string(in.psrc[static_cast<size_t>(k)]) +
                   ", numPreds is " + std::to_string(f_.numPreds));
    if (in.guard != kNone && !pred(in.guard))
      return bad("guard is pvreg " + std::to_string(in.guard) + ", numPreds is " + std::to_string(f_.numPreds));
    return Ok{};
  }

  Status term(int b, const VTerm& t) const {
    auto target = [&](const char* which, int to) -> Status {
      if (block(to)) return Ok{};
      return fail(b, -1, std::string("terminator's ") + which + " target is " + std::to_string(to) + ", there are " +
                             std::to_string(f_.blocks.size()) + " blocks");
    };
    switch (t.kind) {
      case machine::TermKind::Exit: return Ok{};
      case machine::TermKind::Jump:
      case machine::TermKind::Barrier: return target("next", t.next);
      case machine::TermKind::Branch:
        if (!pred(t.pred))
          return fail(b, -1, "branch predicate is pvreg " + std::to_string(t.pred) + ", numPreds is " +
                                 std::to_string(f_.numPreds));
        QGPU_CHECK(target("taken", t.taken));
        return target("next", t.next);
    }
    return fail(b, -1, "unknown terminator kind");
  }
};

}  // namespace

Status verify(const VFunc& f, const char* pass) { return Checker(f, pass).run(); }

bool verifyPassesEnabled(const LowerOptions& options) {
  if (options.verifyPasses) return true;
  const char* env = std::getenv("QGPU_VERIFY_VIR");
  return env && *env && std::string(env) != "0";
}

}  // namespace qgpu::lower
