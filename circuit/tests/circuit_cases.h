// qgpu/circuit/tests/circuit_cases.h — named circuit checkpoints for the transformers cross-check
// (docs/circuit.md §9 "Transformers cross-check"): each case is a stack of built stages, its
// weights, and prompts with the greedy tokens the trace encoder says must follow each prompt.
//
// Contract:
//   - Deterministic: a case's weights, prompts and expected tokens depend on its name only, so
//     tools/make_circuit.cpp (which writes the checkpoint that ci/hf_circuit_reference.py runs in
//     transformers) and tests/hf_circuit_test.cpp (which rebuilds it and compares) agree byte for
//     byte; the fixture records the weights' digest to prove it.
//   - The expected tokens are the encoder's (oracle::appendTrace), never the circuit's.
//   - Torch-free: building is plain C++; running is the caller's business.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit::cases {

// One greedy-decoding check: the model's input ids, then the tokens greedy decoding must write.
struct GreedyPrompt {
  std::vector<int64_t> prompt;
  std::vector<int64_t> expected;
};

struct CircuitCase {
  CircuitCase(std::string n, model::Qwen35Config config) : name(std::move(n)), weights(std::move(config)) {}
  std::string name;
  std::string what;              // one line: the stack and its inputs
  CircuitWeights weights;
  std::vector<GreedyPrompt> prompts;
  double statedLogitMargin = 0;  // the readout's constructed top-vs-second logit gap
  // The residual dims that must be exactly ±unit at every layer input (circuit/margins.h).
  std::vector<Field> signFields;
  float unit = 0;
};

// The cases, in order.
const std::vector<std::string>& caseNames();

// Builds case `name`; an unknown name is a Usage diag listing the known ones.
Expected<CircuitCase> buildCase(const std::string& name);

}  // namespace qgpu::circuit::cases
