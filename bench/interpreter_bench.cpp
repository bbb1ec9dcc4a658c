// qgpu/bench/interpreter_bench.cpp — throughput of the reference interpreter.
//
// Kernel: 16 threads (4 warps) each run a loop whose body is one 10-op block (an LCG step, a
// shift, xor, add, mask, accumulate, counter and compare), with per-lane trip counts 1000 + tid
// so the last iterations diverge. About 4,000 steps and 160,000 lane-instructions per run.
// Counters: lane_instrs (lane-instructions per second), tokens (trace tokens per second), steps.
// Target (docs/machine.md, the task): >= 50 million lane-instructions/s on one core.
#include <benchmark/benchmark.h>

#include "oracle/interpreter.h"

namespace {

using namespace qgpu::machine;

Operand R(uint8_t r) {
  return Operand::r(r);
}
Operand I(uint32_t v) {
  return Operand::i(v);
}

Instr op(Op code, uint8_t dst, Operand a, Operand b = {}, Operand c = {}) {
  Instr in;
  in.op = code;
  in.dst = dst;
  in.src = {a, b, c};
  return in;
}

Program loopKernel() {
  Program p;
  p.name = "bench_loop";
  // B0: r1 = tid (seed), r2 = 1000 + tid (trip count).
  Block b0;
  b0.ops = {op(Op::Mov, 1, Operand::s(Special::TidX)),
            op(Op::Add, 2, Operand::s(Special::TidX), I(1000))};
  b0.term = Terminator{TermKind::Jump, kNoPred, false, 0, 1};
  // B1: the loop body, 10 ops.
  Block b1;
  Instr cmp;
  cmp.op = Op::SetNe;
  cmp.dstPred = 0;
  cmp.src = {R(2), I(0), Operand{}};
  b1.ops = {op(Op::Mad, 3, R(1), I(1103515245u), I(12345)),
            op(Op::ShrU, 4, R(3), I(16)),
            op(Op::Xor, 5, R(4), R(1)),
            op(Op::Add, 1, R(5), R(3)),
            op(Op::And, 6, R(1), I(0xff)),
            op(Op::Add, 7, R(7), R(6)),
            op(Op::MaxU, 8, R(8), R(6)),
            op(Op::Popc, 9, R(1)),
            op(Op::Sub, 2, R(2), I(1)),
            cmp};
  b1.term = Terminator{TermKind::Branch, 0, false, 1, 2};
  // B2: global[tid] = r7.
  Block b2;
  Instr st;
  st.op = Op::St;
  st.src = {R(10), R(7), Operand{}};
  b2.ops = {op(Op::Shl, 10, Operand::s(Special::TidX), I(2)), st};
  b2.term = Terminator{};
  p.blocks = {b0, b1, b2};
  return p;
}

void runBench(benchmark::State& state, bool recordTrace) {
  const Program program = loopKernel();
  Launch launch;
  launch.blockX = 16;
  qgpu::oracle::RunOptions options;
  options.recordTrace = recordTrace;
  uint64_t laneInstrs = 0, tokens = 0, steps = 0;
  for (auto _ : state) {
    auto result = qgpu::oracle::run(program, launch, options);
    if (!result.ok() || result->status != qgpu::oracle::RunStatus::Finished) {
      state.SkipWithError("the bench kernel did not finish");
      return;
    }
    laneInstrs += result->laneInstrs;
    tokens += result->trace.size();
    steps += result->blockExecs;
    benchmark::DoNotOptimize(result->global.data());
  }
  state.counters["lane_instrs"] =
      benchmark::Counter(static_cast<double>(laneInstrs), benchmark::Counter::kIsRate);
  state.counters["tokens"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["steps"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  state.counters["tokens_per_step"] =
      steps ? static_cast<double>(tokens) / static_cast<double>(steps) : 0;
}

void BM_InterpreterLoopWithTrace(benchmark::State& state) {
  runBench(state, true);
}
void BM_InterpreterLoopNoTrace(benchmark::State& state) {
  runBench(state, false);
}

BENCHMARK(BM_InterpreterLoopWithTrace)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_InterpreterLoopNoTrace)->Unit(benchmark::kMicrosecond);

}  // namespace
