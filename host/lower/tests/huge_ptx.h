// qgpu/host/lower/tests/huge_ptx.h — generators of large PTX kernels (up to the front end's 4 MiB
// input cap) for the lowering's time and memory bounds: huge_test.cpp checks the answer for
// each, bench/pipeline_bench.cpp times them. Deterministic; every shape is a valid kernel that
// ptxas accepts, `big(.param .u64 out)`, whose one thread-dependent value is %tid.x.
#pragma once

#include <cstddef>
#include <string>

namespace qgpu::lower::testing {

enum class HugeShape {
  Straight,     // one block: a chain of dependent adds, a store every 8 (all live): too big
  Stores,       // one block of stores of one register: too big
  Branches,     // 'if (tid == 0) x += 3' over and over: triangles, each a block: too big
  Diamonds,     // 'x += tid == 0 ? 3 : 5' over and over: diamonds: too big
  Unreachable,  // `ret` first, then a Straight body nobody reaches: fits (an empty kernel)
  EmptyJumps,   // a chain of `bra.uni L_i; L_i:`: empty blocks that threading removes: fits
  DeadConsts,   // movs of constants to registers nobody reads: cleanup removes them: fits
};

// The kernel of `shape`, about `bytes` long (never longer).
inline std::string hugePtx(HugeShape shape, size_t bytes) {
  std::string out =
      ".version 9.0\n.target sm_75\n.address_size 64\n\n"
      ".visible .entry big(.param .u64 big_param_0)\n{\n"
      "\t.reg .pred %p<4>;\n\t.reg .b32 %r<60000>;\n\t.reg .b64 %rd<4>;\n"
      "\tld.param.u64 %rd1, [big_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
      "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.s32 %p1, %r1, 0;\n";
  const std::string tail = "\tst.global.u32 [%rd2], %r1;\n\tret;\n}\n";
  auto r = [](size_t k) { return "%r" + std::to_string(2 + k % 59990); };
  if (shape == HugeShape::Unreachable) out += "\tret;\n";
  for (size_t i = 0;; ++i) {
    std::string s;
    auto n = std::to_string(i);
    switch (shape) {
      case HugeShape::Straight:
      case HugeShape::Unreachable:
        s = "\tadd.s32 " + r(i + 1) + ", " + (i == 0 ? std::string("%r1") : r(i)) + ", " + n + ";\n";
        if (i % 8 == 7) s += "\tst.global.u32 [%rd2], " + r(i + 1) + ";\n";
        break;
      case HugeShape::Stores: s = "\tst.global.u32 [%rd2+" + std::to_string(4 * (i % 100)) + "], %r1;\n"; break;
      case HugeShape::Branches: s = "\t@%p1 bra L" + n + ";\n\tadd.s32 %r1, %r1, 3;\nL" + n + ":\n"; break;
      case HugeShape::Diamonds:
        s = "\t@%p1 bra A" + n + ";\n\tadd.s32 %r1, %r1, 3;\n\tbra.uni B" + n + ";\nA" + n +
            ":\n\tadd.s32 %r1, %r1, 5;\nB" + n + ":\n";
        break;
      case HugeShape::EmptyJumps: s = "\tbra.uni L" + n + ";\nL" + n + ":\n"; break;
      case HugeShape::DeadConsts: s = "\tmov.u32 " + r(i) + ", " + n + ";\n"; break;
    }
    if (out.size() + s.size() + tail.size() > bytes) break;
    out += s;
  }
  return out + tail;
}

}  // namespace qgpu::lower::testing
