// qgpu/host/lower/translate_shared.cpp — shared-memory layout: the user's .shared variables from
// word 0 in declaration order (the functions' own, then the module's), then the launch's dynamic
// shared memory (every `.extern .shared` array starts there), then the hidden bar.red counter word
// if any bar.red is used; and the kernel's per-thread .local frame (placed in the spill-slot area).
#include <algorithm>

#include "host/lower/translate.h"

namespace qgpu::lower::tr {

Expected<SharedLayout> layoutShared(const FlatFunction& f) {
  SharedLayout layout;
  uint32_t offset = 0;
  uint32_t dynamicAlign = 4;
  for (const auto& v : f.shared) {
    uint32_t align = std::max<uint32_t>(4, v.align);
    if (v.external) {  // placed after the static variables, below
      dynamicAlign = std::max(dynamicAlign, align);
      continue;
    }
    offset = (offset + align - 1) / align * align;
    layout.offset[v.name] = offset;
    offset += (v.bytes + 3) / 4 * 4;
  }
  // The launch's dynamic shared memory: every `.extern .shared` array starts at its first byte, as
  // on a GPU (they alias); it is reserved whether or not the kernel declares one, as a GPU does.
  bool hasDynamic = f.dynamicSharedWords > 0 ||
                    std::any_of(f.shared.begin(), f.shared.end(), [](const auto& v) { return v.external; });
  if (hasDynamic) {
    offset = (offset + dynamicAlign - 1) / dynamicAlign * dynamicAlign;
    for (const auto& v : f.shared)
      if (v.external) layout.offset[v.name] = offset;
    offset += 4 * f.dynamicSharedWords;
  }
  bool needsCounter = std::any_of(f.body.begin(), f.body.end(), [](const ptx::Instruction& i) {
    auto k = i.mods.barrier;
    return (i.op == ptx::Opcode::Bar || i.op == ptx::Opcode::Barrier) &&
           (k == ptx::BarrierKind::RedPopc || k == ptx::BarrierKind::RedAnd || k == ptx::BarrierKind::RedOr);
  });
  if (needsCounter) {
    layout.hiddenCounter = static_cast<int>(offset);
    offset += 4;
  }
  layout.words = offset / 4;
  // The .local frame as flatten laid it out (the entry's, then its callees' at their callers'
  // ends), which is how ptxeval lays it out (so both fault on the same indices): its words reach
  // the furthest end. 64-bit sums: a declared size near 2^32 must not wrap into a small frame.
  uint64_t frame = 0;
  for (const FrameVariable& v : f.locals) {
    layout.localOffset[v.decl.name] =
        static_cast<uint32_t>(std::min<uint64_t>(v.offset, UINT32_MAX));
    frame = std::max(frame, v.offset + v.decl.bytes);
  }
  layout.localWords = static_cast<uint32_t>(std::min<uint64_t>((frame + 3) / 4, UINT32_MAX));
  if (layout.localWords > 0 && layout.words <= static_cast<uint32_t>(machine::kSharedWords) &&
      layout.localWords > static_cast<uint32_t>(machine::kSharedWords) - layout.words) {
    return makeDiag(
        ErrorKind::OverLimit,
        "kernel `" + f.name + "` needs " + std::to_string(layout.localWords) +
            " words of local memory per thread (`" + f.locals.front().decl.name + "`" +
            (f.locals.size() > 1 ? " and " + std::to_string(f.locals.size() - 1) + " more"
                                 : std::string()) +
            ") after " + std::to_string(layout.words) +
            " words of shared memory; the machine has " + std::to_string(machine::kSharedWords) +
            " for one thread (" +
            std::to_string(uint64_t{layout.words} + layout.localWords - machine::kSharedWords) +
            " over)",
        f.locals.front().decl.loc);
  }
  if (layout.words > static_cast<uint32_t>(machine::kSharedWords)) {
    std::string parts;
    if (hasDynamic) parts += " (" + std::to_string(f.dynamicSharedWords) + " of them dynamic, `shared=`)";
    if (needsCounter) parts += " (including the bar.red counter)";
    return makeDiag(ErrorKind::OverLimit,
                    "kernel `" + f.name + "` needs " + std::to_string(layout.words) +
                        " words of shared memory" + parts + "; the machine has " +
                        std::to_string(machine::kSharedWords) + " (" +
                        std::to_string(layout.words - machine::kSharedWords) + " over)",
                    f.shared.empty() ? SourceLoc{f.file, 0, 0} : f.shared.back().loc);
  }
  return layout;
}

}  // namespace qgpu::lower::tr
