// qgpu/host/lower/tests/both_oracles.h — the setup the memory tests share (subword_test.cpp,
// wide_memory_test.cpp): one kernel `k(.param .u64 buf)` around a PTX body, lowered and run in
// the reference interpreter AND run by the PTX evaluator (ptxeval), and the check that both
// finish with hand-worked words. Test-only; header-only.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"
#include "ptxeval/eval.h"

namespace qgpu::lower::both {

constexpr size_t kWords = machine::kGlobalWords;
using Memory = std::array<uint32_t, kWords>;

// `k(.param .u64 buf)`: %rd1 = buf (global), %r7 = tid.x, then `prologue` and `body`.
inline std::string bufKernel(const std::string& prologue, const std::string& body) {
  return ".version 7.0\n.target sm_75\n.address_size 64\n"
         ".visible .entry k(.param .u64 buf)\n{\n"
         ".reg .pred %p<4>;\n.reg .b16 %rs<8>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n"
         "ld.param.u64 %rd1, [buf];\ncvta.to.global.u64 %rd1, %rd1;\nmov.u32 %r7, %tid.x;\n" +
         prologue + body + "ret;\n}\n";
}

// buf[w + t] = %rK for each (w, K): PTX that stores each listed register at word w past the
// thread's own, %rd4 = 4 × tid.x (the body's to set), %rd14 a scratch register.
inline std::string outputs(const std::vector<std::pair<int, int>>& wordReg) {
  std::string s;
  for (auto [w, reg] : wordReg) {
    s += "add.s64 %rd14, %rd1, " + std::to_string(4 * w) + ";\n";
    s += "add.s64 %rd14, %rd14, %rd4;\n";
    s += "st.global.u32 [%rd14], %r" + std::to_string(reg) + ";\n";
  }
  return s;
}

struct Both {
  machine::Program program;
  oracle::RunResult machine;
  ptxeval::EvalResult ptx;
};

// Lowers and runs `ptx` (`threads` threads in `grid` CTAs, memory `initial`, the parameters'
// byte addresses `params`: by default the one buffer at byte 0) on the interpreter and on ptxeval.
inline Expected<Both> runBoth(const std::string& ptx, uint32_t threads, const Memory& initial, uint32_t grid,
                              const std::vector<uint32_t>& params = {0}) {
  QGPU_TRY(module, ptx::parse(ptx, "t.ptx"));
  LowerOptions options;
  options.params = params;
  Both out;
  QGPU_TRY(program, lower(module, options));
  out.program = program;
  machine::Launch launch;
  launch.blockX = threads;
  launch.gridX = grid;
  launch.global = initial;
  QGPU_TRY(m, oracle::run(program, launch, oracle::RunOptions{100000, false}));
  out.machine = m;
  ptxeval::Launch pl;
  pl.blockX = threads;
  pl.gridX = grid;
  pl.global = initial;
  pl.params.assign(params.begin(), params.end());
  QGPU_TRY(p, ptxeval::evaluate(module, pl));
  out.ptx = p;
  return out;
}

// Both oracles finish and leave words [0, want.size()) equal to `want`.
inline void expectBothWords(const Expected<Both>& r, const std::vector<uint32_t>& want) {
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_EQ(r->machine.status, oracle::RunStatus::Finished)
      << r->machine.fault.str() << "\n" << machine::print(r->program);
  ASSERT_EQ(r->ptx.status, ptxeval::EvalStatus::Finished) << r->ptx.fault.str();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r->machine.global[i], want[i]) << "interpreter, word " << i << "\n"
                                             << machine::print(r->program);
    EXPECT_EQ(r->ptx.global[i], want[i]) << "ptxeval, word " << i;
  }
}

}  // namespace qgpu::lower::both
