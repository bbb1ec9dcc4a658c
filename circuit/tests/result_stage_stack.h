// qgpu/circuit/tests/result_stage_stack.h — the result stage's tests' stack: the token layout,
// the stage's inputs as test fields (the ALU-level inputs a carrier row holds), the result stage
// (circuit/result_stage.h) in layers 0..3 and the record emitter (circuit/record_emit.h) in layers
// 4..7 reading the stage's outcome fields (`outcomeFrom`). Building only: the expected tokens are
// the tests' business.
#pragma once

#include <string>

#include "circuit/record_emit.h"
#include "circuit/result_stage.h"
#include "circuit/config.h"
#include "circuit/tokens.h"
#include "common/diag.h"
#include "oracle/trace.h"

namespace qgpu::circuit::result_test {

inline constexpr int kHidden = 1152;
inline constexpr int kHeads = 11;
inline constexpr int kUnits = 2560;
inline constexpr int kLayers = kResultStageLayers + kRecordLayers;

inline model::Qwen35Config stackConfig(int64_t vocab, int hidden = kHidden, int layers = kLayers) {
  model::Qwen35Config c = linearConfig(hidden, layers, kUnits, vocab);
  c.linearNumKeyHeads = kHeads;
  c.linearNumValueHeads = kHeads;
  c.linearKeyHeadDim = 64;
  c.linearValueHeadDim = 128;
  return c;
}

struct Stack {
  ResultStageSpec spec;  // its input fields are the test fields a carrier row sets
  ResultStage stage;
  RecordEmitter emitter;
};

inline Expected<Stack> buildStack(CircuitWeights& w,
                                  ResultStageTwin twin = ResultStageTwin::None) {
  const int hidden = w.config().hiddenSize;
  FieldAllocator alloc(hidden);
  Stack s;
  QGPU_TRY(tokens, planTokenLayout(alloc, hidden));
  s.spec.tokens = tokens;
  s.spec.twin = twin;
  auto take = [&](const std::string& name, int dims) { return alloc.take("in." + name, dims); };
  {
    QGPU_TRY(f, take("head", 32)); s.spec.head = f;
  }
  {
    QGPU_TRY(f, take("mask", kRecordLanes)); s.spec.mask = f;
  }
  for (int l = 0; l < kRecordLanes; ++l) {
    ResultLane& x = s.spec.lanes[static_cast<size_t>(l)];
    const std::string n = std::to_string(l);
    QGPU_TRY(r, take("r" + n, 32));
    QGPU_TRY(sp, take("s" + n, 1));
    QGPU_TRY(old, take("old" + n, 32));
    QGPU_TRY(g, take("guard" + n, 1));
    QGPU_TRY(op, take("oldPred" + n, 1));
    x = {r, sp, old, g, op};
  }
  QGPU_TRY(stage, buildResultStage(w, alloc, s.spec));
  s.stage = stage;
  RecordEmitSpec e;
  e.tokens = tokens;
  e.firstLayer = kResultStageLayers;
  e.outcomeFrom = stage.outcome;
  e.into = &alloc;
  QGPU_TRY(emitter, buildRecordEmitter(w, e));
  s.emitter = emitter;
  return s;
}

}  // namespace qgpu::circuit::result_test
