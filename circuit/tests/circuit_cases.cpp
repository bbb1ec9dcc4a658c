// qgpu/circuit/tests/circuit_cases.cpp — the named circuit checkpoints (circuit_cases.h).
#include "circuit/tests/circuit_cases.h"

#include <algorithm>

#include "circuit/tests/result_stage_inputs.h"
#include "circuit/tests/result_stage_stack.h"

namespace qgpu::circuit::cases {
namespace {

// result_stage: the result stage + record emitter stack of result_stage_stack.h on the result
// stage test's per-commit run (30 hand-made steps, seed 11). Each prompt is the run up to a record
// position p; greedy decoding must write the record and the token after it (k + 1 tokens: after
// that the next record position would need its carrier row, which generation does not write).
// Every 3rd record whose prompt and record end within 150 tokens: a transformers forward without
// a cache costs the whole sequence per generated token (the 8-layer stack on a loaded 2-core
// machine: minutes per dtype for these prompts).
Expected<CircuitCase> resultStage() {
  CircuitCase c("result_stage", result_test::stackConfig(result_test::kVocab));
  c.what = "result stage (layers 0-3) + record emitter (4-7), hidden 1152, 30 hand-made steps (seed 11)";
  QGPU_TRY(stack, result_test::buildStack(c.weights));
  QGPU_TRY(seq, result_test::makeRun(30, 11));
  QGPU_CHECK(result_test::writeCarriers(c.weights, stack, seq));
  for (size_t j = 0; j < seq.records.size(); j += 3) {
    const result_test::Record& r = seq.records[j];
    if (r.p + r.k + 1 > 150 || r.p + r.k + 1 >= seq.trace.size()) continue;
    GreedyPrompt g;
    g.prompt.assign(seq.ids.begin(), seq.ids.begin() + static_cast<std::ptrdiff_t>(r.p + 1));
    for (size_t q = r.p + 1; q <= r.p + r.k + 1; ++q) g.expected.push_back(seq.trace[q]);
    c.prompts.push_back(std::move(g));
  }
  c.statedLogitMargin = stack.emitter.logitMargin;
  // Every dim but the value counter's quiet dims (0 by design) and its heavy dim (+2u), as the
  // result stage test's layout check probes them.
  c.unit = stack.spec.tokens.unit;
  const Field& quiet = stack.emitter.quiet;
  const int heavy = stack.emitter.heavy.at(0), hidden = c.weights.config().hiddenSize;
  for (int d = 0; d < hidden;) {
    if (d == heavy || (d >= quiet.offset && d < quiet.offset + quiet.dims)) {
      ++d;
      continue;
    }
    int end = d;
    while (end < hidden && end != heavy && !(end >= quiet.offset && end < quiet.offset + quiet.dims)) ++end;
    c.signFields.push_back(Field{"dims", d, end - d});
    d = end;
  }
  return c;
}

struct Entry {
  const char* name;
  Expected<CircuitCase> (*build)();
};
constexpr Entry kCases[] = {
    {"result_stage", resultStage},
};

}  // namespace

const std::vector<std::string>& caseNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Entry& e : kCases) n.emplace_back(e.name);
    return n;
  }();
  return names;
}

Expected<CircuitCase> buildCase(const std::string& name) {
  for (const Entry& e : kCases)
    if (name == e.name) {
      QGPU_TRY(c, e.build());
      QGPU_CHECK(c.weights.checkBf16Exact());
      return c;
    }
  std::string known;
  for (const std::string& n : caseNames()) known += (known.empty() ? "" : ", ") + n;
  return makeDiag(ErrorKind::Usage, "unknown circuit case '" + name + "' (known: " + known + ")");
}

}  // namespace qgpu::circuit::cases
