// qgpu/gen/properties.h — the properties every generated machine program must have, as checks.
//
// Each check returns Ok or a Diag of kind Internal (a failing property is a bug in qgpu) whose
// message starts with the property's name, names the first disagreement (event, token, word) and
// ends with the case's header, so the case replays. The checks take the artefact they judge
// (tokens, a result) as an argument rather than producing it themselves, so that each one can be
// shown to fail on a tampered artefact (gen/tests/properties_test.cpp: the failing twins).
//
// What the checks compare against is computed independently of what they judge:
// checkTraceMatchesSteps re-runs the program through Execution::next() and compares its effects
// with the *decoded* tokens (so appendTrace and decodeRun are both on trial); checkTraceComplete
// replays the decoded memory runs over the initial memory.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "common/diag.h"
#include "gen/program_gen.h"
#include "oracle/interpreter.h"
#include "oracle/trace.h"

namespace qgpu::gen {

// The options every property runs a case with: the trace on, maxSteps = c.stepBound.
oracle::RunOptions runOptions(const Case& c);

// "verifies": machine::verify(program, launch) passes.
Status checkVerifies(const Case& c);
// "deterministic": two runs agree on status, fault, trace, final memory and counts.
Status checkSameRun(const Case& c, const oracle::RunResult& a, const oracle::RunResult& b);
// "terminates": a run with maxSteps = stepBound did not stop at the step limit.
Status checkTerminates(const Case& c, const oracle::RunResult& r);
// "prompt-round-trip": decodePrompt(prompt) gives back the case's program and launch.
Status checkPromptDecodes(const Case& c, std::span<const trace::Token> prompt);
// "trace-matches-steps": decodeRun(run) decodes, and its events are Execution::next()'s, event by
// event: CTA starts; EX/WM = block, warp, mask; per op of the step its records = its OpEffects
// (memory write per executing lane, register values per active lane, predicate bits, or NOP);
// a fault's earlier ops and FAULT; the final event.
Status checkTraceMatchesSteps(const Case& c, std::span<const trace::Token> run);
// "trace-complete": the initial global memory with the decoded trace's global writes applied in
// order equals `finalGlobal`. Also for a run that ends in FAULT: a faulting op changes nothing
// (docs/machine.md §4) and the ops before it are in the trace.
Status checkTraceComplete(const Case& c, std::span<const trace::Token> run,
                          const std::array<uint32_t, machine::kGlobalWords>& finalGlobal);

// "Finished", "Fault" or "StepLimit": how a run ended, as the properties and `qgpu fuzz` name it.
const char* statusName(oracle::RunStatus s);

// Every property above on one case (two runs, the prompt, the trace); returns the first run.
Expected<oracle::RunResult> checkCase(const Case& c);

}  // namespace qgpu::gen
