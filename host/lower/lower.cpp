// qgpu/host/lower/lower.cpp — the lowering driver: runs the passes of vir.h in order and checks
// the result with machine::verify() (a violation there is a lowering bug: ErrorKind::Internal).
#include "host/lower/lower.h"

#include "host/lower/vir.h"

namespace qgpu::lower {

Expected<machine::Program> lower(const ptx::Module& module, const LowerOptions& options, LowerStats* stats) {
  QGPU_TRY(flat, flatten(module, options));
  TranslateInfo tinfo;
  QGPU_TRY(vf, translate(flat, &tinfo));
  cleanup(vf);
  simplifyCfg(vf);
  VFunc beforeLayout = vf;
  QGPU_CHECK(layout(vf));
  FinalizeInfo finfo;
  auto result = finalize(vf, &finfo);
  if (!result.ok() && finfo.tooManyBlocks) {
    // Too many blocks: fold small branch arms into guarded ops and try once more.
    vf = std::move(beforeLayout);
    for (int k = 0; k < 256 && ifConvert(vf); ++k) simplifyCfg(vf);
    QGPU_CHECK(layout(vf));
    finfo = FinalizeInfo{};
    result = finalize(vf, &finfo);
  }
  if (!result.ok()) return result.error();
  machine::Program program = std::move(result).value();
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
    stats->maxLive = finfo.maxLive;
    stats->spillSlots = finfo.spillSlots;
  }
  return program;
}

}  // namespace qgpu::lower
