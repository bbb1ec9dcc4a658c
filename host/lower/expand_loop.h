// qgpu/host/lower/expand_loop.h — what the expansion passes share (expand_division.h,
// expand_multiply.h): an op the circuit lacks replaced, in place, by a loop of existing ops (or by
// straight code too long for its block: Splicer::splitStraight, mulhi's halves).
//
// The shape every expansion takes: the op's block b is split at the op into
//   head (block b)          the ops before it, predicate saves, the loop's setup;
//   loop (block b + 1)      the loop body, branching back to itself or on to b + 2;
//   continuation (b + 2)    predicate reloads, the result, the ops after the op, b's terminator.
// Blocks after b move up by two; a branch to b still lands on the head. Predicates are
// block-local (docs/machine.md §4), so each predicate the continuation reads that the head wrote,
// and the op's own guard, is saved to a dead register (selp) and reloaded (set.ne). Under the
// machine's min-PC rule the lanes that leave the loop early wait at b + 2 for the others, so a
// loop whose trip count differs per lane reconverges there.
//
// Registers for the loop's values come from those dead after the op (per-lane liveness on the
// CFG: a guarded write reads its destination) that are not its operands; nothing is spilled.
// Plain C++: reads only oracle/ (the op table and the machine IR).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/diag.h"
#include "host/lower/expansion.h"
#include "oracle/machine.h"

namespace qgpu::lower::expand {

using RegSet = uint32_t;   // bit r: register r (r0 never set)
using PredSet = uint32_t;  // bit p: predicate p

bool isReg(const machine::Operand& o);
RegSet regBit(const machine::Operand& o);

// ---- Op builders (canonical form: unused fields at their defaults, as verify() wants) ----
machine::Instr alu(machine::Op op, uint8_t dst, machine::Operand a, machine::Operand b = {}, machine::Operand c = {});
machine::Instr cmp(machine::Op op, uint8_t p, machine::Operand a, machine::Operand b);
machine::Instr pred2(machine::Op op, uint8_t d, uint8_t a, uint8_t b);
machine::Instr pnot(uint8_t d, uint8_t a);
machine::Instr selp(uint8_t dst, machine::Operand a, machine::Operand b, uint8_t p);
machine::Instr guarded(machine::Instr in, uint8_t p, bool negate = false);
inline machine::Operand R(uint8_t r) { return machine::Operand::r(r); }
inline machine::Operand I(uint32_t v) { return machine::Operand::i(v); }

int countOps(const machine::Program& p);

// A program being expanded, with the PTX location of every op, kept parallel to its blocks.
class Splicer {
 public:
  // opLocs[b][i] for program.blocks[b].ops[i]; nullptr or a shape that does not match: unknown.
  // `replaced`: the ops the pass replaces, every one (the program it returns has none), so one
  // still in a block counts one record in the limits, not the two a multiply writes (trace v6).
  Splicer(machine::Program p, const std::vector<std::vector<SourceLoc>>* opLocs,
          bool (*replaced)(machine::Op) = nullptr);

  const machine::Program& program() const { return p_; }
  machine::Program take() { return std::move(p_); }
  // The locations, parallel to the program's blocks and ops as they now are.
  const std::vector<std::vector<SourceLoc>>& locs() const { return locs_; }
  const SourceLoc& loc(size_t b, size_t i) const { return locs_[b][i]; }

  // "kernel `k`: expanding `mul r1, r2, r3` (block 0 op 2, PTX line 9) into a <loop>: why".
  Diag overLimit(size_t b, size_t i, const std::string& loop, const std::string& why) const;

  void erase(size_t b, size_t i);
  // Grows the program's spill slots to at least `slots`.
  void useSpillSlots(int slots);

  // OverLimit when a split at (b, i) would take the program past kMaxBlocks blocks.
  Status roomForLoop(size_t b, size_t i, const std::string& loopName) const;

  // Replaces ops[i] of block b by `ops` in the same block (no loop), each located at the op.
  void replace(size_t b, size_t i, std::vector<machine::Instr> ops);

  // The trace records `ops` will write once the pass is done (machine::blockRecords, the
  // constructor's `replaced` ops one each): a block holds kMaxOpsPerBlock.
  int records(const std::vector<machine::Instr>& ops) const;

  // The registers (r1..) dead after op i of block b and not in `taken`, in ascending order.
  std::vector<uint8_t> deadAfter(size_t b, size_t i, RegSet taken) const;

  // The predicates the continuation of a split at (b, i) reads that the head defined, plus the
  // op's guard: the ones a split must save.
  PredSet mustSave(size_t b, size_t i) const;
  // The predicates the ops after (b, i) and the terminator read before writing them.
  PredSet readAfter(size_t b, size_t i) const;

  // The split (file comment): head = the ops before i + `setup`, then `loop` (its terminator is
  // set here: branch on `loopPred` back to itself, else on), then `finish` + the ops after i but
  // `skip` (a fused partner, or npos) + b's terminator. OverLimit when the head or the
  // continuation exceeds kMaxOpsPerBlock records (records()) or the program kMaxBlocks blocks.
  Status split(size_t b, size_t i, size_t skip, std::vector<machine::Instr> setup, machine::Block loop,
               uint8_t loopPred, std::vector<machine::Instr> finish, const std::string& loopName);

  // The straight split: op i of block b replaced by `setup`, `body` and `finish` in order, no loop.
  // The head is the ops before i + `setup` + as much of `body` as fits; then as many blocks as the
  // rest of `body` needs, each full but the last; the continuation the rest + `finish` + the ops
  // after i + b's terminator. Every new block jumps to the next, so each is one step more.
  // `body` may write no predicate (the head's predicates are gone after it: a continuation reads
  // them through `setup`'s saves and `finish`'s reloads). OverLimit as split().
  Status splitStraight(size_t b, size_t i, std::vector<machine::Instr> setup,
                       std::vector<machine::Instr> body, std::vector<machine::Instr> finish,
                       const std::string& name);

 private:
  // Inserts `extra` after block b, every branch target past b moved up by extra.size(); b's own
  // ops, locations and terminator are the caller's to set.
  void insertAfter(size_t b, std::vector<machine::Block> extra,
                   std::vector<std::vector<SourceLoc>> extraLocs);
  Diag tooManyRecords(size_t b, size_t i, const std::string& name, const std::string& what,
                      int records) const;
  // OverLimit when `extra` more blocks would take the program past kMaxBlocks.
  Status roomForBlocks(size_t b, size_t i, const std::string& name, size_t extra) const;

  machine::Program p_;
  std::vector<std::vector<SourceLoc>> locs_;  // parallel to p_.blocks[b].ops
  bool (*replaced_)(machine::Op) = nullptr;
};

// The saves (selp t, 1, 0, q) before a split and the reloads (set.ne q, t, 0) after it, for the
// (predicate, register) pairs given.
std::vector<machine::Instr> saveOps(const std::vector<std::pair<uint8_t, uint8_t>>& saved);
std::vector<machine::Instr> reloadOps(const std::vector<std::pair<uint8_t, uint8_t>>& saved);

// A pass's entry point: the input verified (its own Diag), `Expander(program, options).run(stats)`
// (Stats an ExpansionCounts with the pass's own counts), the result verified again (Internal
// naming `what` — "division", "multiplication" — when the pass broke it), the counts filled in.
template <class Expander, class Stats, class Options>
Expected<machine::Program> runExpansion(const machine::Program& program,
                                        const Options& options, Stats* stats,
                                        const char* what) {
  QGPU_CHECK(machine::verify(program));
  Stats local;
  local.blocksBefore = static_cast<int>(program.blocks.size());
  local.opsBefore = countOps(program);
  Expander expander(program, options);
  QGPU_TRY(out, expander.run(local));
  if (auto status = machine::verify(out); !status.ok())
    return makeDiag(ErrorKind::Internal, std::string("expanding ") + what +
                                             " produced an invalid program for `" + program.name +
                                             "`: " + status.error().message);
  local.blocksAfter = static_cast<int>(out.blocks.size());
  local.opsAfter = countOps(out);
  if (stats) *stats = local;
  return out;
}

}  // namespace qgpu::lower::expand
