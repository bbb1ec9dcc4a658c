// qgpu/host/lower/warp_lanes.cpp — finds the places where a kernel assumes 32-lane warps.
//
// On the interpreter and model legs such a kernel runs as 4-lane code (its shuffles wrap at 4
// lanes, its masks' upper bits name no lane); on a real GPU it runs with 32. Both are well
// defined, but they are different programs, so a GPU comparison of such a kernel cannot agree
// and is inconclusive, with these reasons (docs/lowering.md, "32-lane assumptions").
// Detected from constants — immediates, or registers defined once by a `mov` of one (nvcc writes
// `mov.u32 %r4, -1;` and passes %r4) — as both compilers emit them at -O2/-O3:
//   * a shfl whose `c` operand gives a segment width over 4 (width = 32 - (c >> 8));
//   * a shfl, vote or bar.warp member mask with a bit above lane 3.
// warpSize / WARP_SZ itself is not a finding: it reads 4 here and 32 on a GPU, and whether that
// changes a result depends on what the kernel does with it (threadIdx.x % warpSize in a 4-thread
// block is the lane on both).
#include <cstdio>
#include <map>
#include <optional>

#include "host/lower/vir.h"

namespace qgpu::lower {
namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::vector<std::string> warp32Assumptions(const FlatFunction& f) {
  std::vector<std::string> found;
  // Registers with exactly one definition, a mov of an immediate: their value.
  std::map<uint32_t, int> defs;
  std::map<uint32_t, int64_t> movImm;
  for (const ptx::Instruction& in : f.body)
    for (const ptx::Operand& d : in.dsts)
      if (d.kind == ptx::OperandKind::Reg) {
        ++defs[d.reg];
        if (in.op == ptx::Opcode::Mov && !in.guarded && in.srcs.size() == 1 &&
            in.srcs[0].kind == ptx::OperandKind::Imm)
          movImm[d.reg] = in.srcs[0].imm;
      }
  auto constant = [&](const ptx::Operand& o) -> std::optional<int64_t> {
    if (o.kind == ptx::OperandKind::Imm) return o.imm;
    if (o.kind == ptx::OperandKind::Reg && defs[o.reg] == 1 && movImm.count(o.reg)) return movImm[o.reg];
    return std::nullopt;
  };
  auto note = [&](const ptx::Instruction& in, const std::string& what) {
    found.push_back("line " + std::to_string(in.loc.line) + ": `" + in.text + "`: " + what);
  };
  auto checkMask = [&](const ptx::Instruction& in, const ptx::Operand& mask) {
    auto m = constant(mask);
    if (m && (static_cast<uint64_t>(*m) & 0xfffffff0u) != 0)
      note(in, "member mask " + hex(static_cast<uint64_t>(*m) & 0xffffffffu) + " names lanes above 3");
  };
  for (const ptx::Instruction& in : f.body) {
    if (in.op == ptx::Opcode::Shfl && in.srcs.size() >= 3) {
      if (auto c = constant(in.srcs[2])) {
        int width = 32 - static_cast<int>((static_cast<uint64_t>(*c) >> 8) & 0x1f);
        if (width > 4) note(in, "shuffle segment width " + std::to_string(width));
      }
      if (in.mods.sync && in.srcs.size() == 4) checkMask(in, in.srcs[3]);
    } else if (in.op == ptx::Opcode::Vote && in.mods.sync && in.srcs.size() == 2) {
      checkMask(in, in.srcs[1]);
    } else if (in.op == ptx::Opcode::Bar && in.mods.barrier == ptx::BarrierKind::Warp &&
               in.srcs.size() == 1) {
      checkMask(in, in.srcs[0]);
    }
  }
  return found;
}

}  // namespace qgpu::lower
