// qgpu/host/lower/lower.cpp — the lowering driver: runs the passes of vir.h in order and checks
// the result with machine::verify() (a violation there is a lowering bug: ErrorKind::Internal).
#include "host/lower/lower.h"

#include "host/lower/verify_vfunc.h"
#include "host/lower/vir.h"

#include <vector>

namespace qgpu::lower {

namespace {

// The last pass: a block with no ops and an Exit terminator only makes lanes exit.
// Branches to it take kExitTarget instead (the lanes exit on the spot, which also spares the trace
// an EXEC of that block), jumps to it become Exit, and the block goes once nothing reaches it.
// Removing blocks keeps the others in their order, so the layout's min-PC property holds.
void foldExitBlocks(machine::Program& program, std::vector<std::vector<SourceLoc>>& locs) {
  using machine::Block;
  using machine::kExitTarget;
  using machine::TermKind;
  std::vector<Block>& blocks = program.blocks;
  auto exitOnly = [&](uint8_t b) {
    return b != kExitTarget && blocks[b].ops.empty() &&
           blocks[b].term.kind == TermKind::Exit;
  };
  for (Block& block : blocks) {
    machine::Terminator& t = block.term;
    if (t.kind == TermKind::Jump && exitOnly(t.next)) {
      t = machine::Terminator{};
    } else if (t.kind == TermKind::Branch) {
      if (exitOnly(t.taken)) t.taken = kExitTarget;
      if (exitOnly(t.next)) t.next = kExitTarget;
      if (t.taken == kExitTarget && t.next == kExitTarget) t = machine::Terminator{};
    }
  }
  std::vector<bool> reached(blocks.size(), false);
  reached[0] = true;
  for (const Block& block : blocks) {
    const machine::Terminator& t = block.term;
    if (t.kind == TermKind::Exit) continue;
    if (t.next != kExitTarget) reached[t.next] = true;
    if (t.kind == TermKind::Branch && t.taken != kExitTarget) reached[t.taken] = true;
  }
  std::vector<uint8_t> renumber(blocks.size(), kExitTarget);
  std::vector<Block> kept;
  std::vector<std::vector<SourceLoc>> keptLocs;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (!reached[b]) continue;
    renumber[b] = static_cast<uint8_t>(kept.size());
    kept.push_back(std::move(blocks[b]));
    if (b < locs.size()) keptLocs.push_back(std::move(locs[b]));
  }
  locs = std::move(keptLocs);
  for (Block& block : kept) {
    machine::Terminator& t = block.term;
    if (t.kind == TermKind::Exit) continue;
    if (t.next != kExitTarget) t.next = renumber[t.next];
    if (t.kind == TermKind::Branch && t.taken != kExitTarget) t.taken = renumber[t.taken];
  }
  blocks = std::move(kept);
}

// The ops of the program after cleanup. From here on no pass drops an op before finalize checks
// the block count: simplification merges blocks, if-conversion moves ops into the branching
// block, finalize adds predicate saves and reloads and splits blocks to at most 16 ops, and only
// then counts blocks (the allocator's dead-code removal comes later). So more ops than the ROM
// holds (kMaxBlocks x kMaxOpsPerBlock) always ends in that OverLimit; saying so here spares the
// passes whose cost grows with the program.
size_t opCount(const VFunc& f) {
  size_t n = 0;
  for (const VBlock& b : f.blocks) n += b.ops.size();
  return n;
}

}  // namespace

Expected<machine::Program> lower(const ptx::Module& module, const LowerOptions& options, LowerStats* stats) {
  QGPU_TRY(flat, flatten(module, options));
  TranslateInfo tinfo;
  QGPU_TRY(vf, translate(flat, &tinfo));
  const bool check = verifyPassesEnabled(options);  // verify_vfunc.h: name the pass that broke VIR
  auto after = [&](const char* pass) { return check ? verify(vf, pass) : Status(Ok{}); };
  QGPU_CHECK(after("translate"));
  cleanup(vf);
  QGPU_CHECK(after("cleanup"));
  simplifyCfg(vf);
  QGPU_CHECK(after("simplify"));
  // Refuse what cannot fit before the passes whose cost grows with the program (if-conversion,
  // splitting, colouring, each retried): see opCount().
  constexpr size_t kRomOps = size_t{machine::kMaxBlocks} * machine::kMaxOpsPerBlock;
  if (size_t need = opCount(vf); need > kRomOps)
    return makeDiag(ErrorKind::OverLimit,
                    "kernel `" + flat.name + "` has " + std::to_string(need) +
                        " operations after cleanup; the program ROM holds " + std::to_string(kRomOps) + " (" +
                        std::to_string(machine::kMaxBlocks) + " blocks of " +
                        std::to_string(machine::kMaxOpsPerBlock) + " ops)");
  VFunc beforeLayout = vf;
  QGPU_CHECK(layout(vf));
  QGPU_CHECK(after("layout"));
  FinalizeResult fin = finalize(vf);
  if (!fin.result.ok() && fin.tooManyBlocks) {
    // Too many blocks: fold small branch arms into guarded ops and try once more.
    vf = std::move(beforeLayout);
    for (int k = 0; k < 256 && ifConvert(vf); ++k) {
      QGPU_CHECK(after("ifConvert"));
      simplifyCfg(vf);
      QGPU_CHECK(after("simplify (after ifConvert)"));
    }
    QGPU_CHECK(layout(vf));
    QGPU_CHECK(after("layout (after ifConvert)"));
    fin = finalize(vf);
  }
  if (!fin.result.ok()) return fin.result.error();
  Finalized finalized = std::move(fin.result).value();
  machine::Program program = std::move(finalized.program);
  foldExitBlocks(program, finalized.opLocs);
  auto status = machine::verify(program);
  if (!status.ok())
    return makeDiag(ErrorKind::Internal,
                    "lowering produced an invalid program for `" + flat.name + "`: " + status.error().message,
                    status.error().loc);
  if (stats) {
    stats->ptxInstructions = static_cast<int>(flat.body.size());
    stats->basicBlocks = tinfo.basicBlocks;
    stats->machineBlocks = static_cast<int>(program.blocks.size());
    stats->machineOps = 0;
    for (const auto& b : program.blocks) stats->machineOps += static_cast<int>(b.ops.size());
    stats->maxLive = finalized.maxLive;
    stats->spillSlots = finalized.spillSlots;
    stats->localWords = static_cast<int>(finalized.program.spillSlots) - finalized.spillSlots;
    stats->assumes32Lanes = warp32Assumptions(flat);
    stats->opLocs = std::move(finalized.opLocs);
  }
  return program;
}

}  // namespace qgpu::lower
