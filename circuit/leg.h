// qgpu/circuit/leg.h — what the model leg needs from the circuit compiler, torch-free: which
// programs the compiled pipeline executes, the model that executes them (weights and config),
// and the final memory a generated trace describes. The leg itself (prompt in, tokens out
// through model/) is harness/model_leg.h; nothing here runs a model or the interpreter.
//
//   legSpec           the leg's pipeline (circuit/pipeline.h ExecuteSpec): memory ops, the
//                     atomics with their regrec, mul and mad, and the warp ops, 32 layers.
//   pipelineExecutes  circuit/pipeline.h's pipelineExecutes for that pipeline: an op executes iff
//                     the ALU stage computes it (aluStageExclusion is null), it is a load or a
//                     store (ld, st, st.b8, st.b16, global or shared), an atom.add / and / or /
//                     xor / exch / min / max / inc / cas (any dst: the old value into a register
//                     too), an atom.dec, a spill op, a mul or mad, a shuffle or a vote; every
//                     block terminator. The first op outside that set is refused: OverLimit
//                     naming the block, the op's index and its mnemonic and why (mulhi: the
//                     multiplier gives the low half, the host expands mulhi; divisions).
//   buildLegModel     that pipeline on its layout by liveness (planExecuteLayout), with the
//                     config a checkpoint needs: hidden = the plan's span, the MLP = the widest
//                     layer's units, linear heads = the most any layer holds (key head dim 64;
//                     at 128, `2b`'s, every read is exact: 4-row cells for taps, latches, the
//                     counter and the predicate file, the norm rail for the ROM, the register
//                     file and the data memories, docs/circuit.md §9), a layer without
//                     heads a full-attention layer with zero weights (it adds exactly 0), the
//                     vocabulary = the trace's (no probes); or, for a LegShape, that shape's
//                     widths, vocabulary and trace rows (`2b`). The control stage writes the step
//                     ticks and LIMIT after `stepLimit` steps (1..kLegStepLimit = 10^6), as
//                     the interpreter's run with maxSteps = stepLimit does.
//   finalGlobal       the launch's global memory with every global MemWrite of the decoded run
//                     applied in order (a word's value after the access is what the record
//                     carries, trace.h WordValue); shared memory is per CTA and not returned.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "circuit/pipeline.h"
#include "circuit/weights.h"
#include "common/diag.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {

// The step limit the leg's model is built with: the compiled model's R1·R2·R3 = 10^6 steps
// (trace.md "Step ticks"), which the control stage counts with its step ticks; the interpreter a
// run is compared with must run at the same limit. Any limit 1..kLegStepLimit can be built.
inline constexpr int kLegStepLimit = static_cast<int>(trace::kModelStepLimit);

ExecuteSpec legSpec(int stepLimit = kLegStepLimit);
Status pipelineExecutes(const machine::Program& program);

struct LegModel {
  std::unique_ptr<CircuitWeights> weights;
  ExecutePipeline pipeline;
  int stepLimit = 0;
  LayerPacking packing;  // packed builds: where each head and unit went (circuit/pack.h)
};

// The shape a leg is built for: its key head dim and, with `heads` > 0, its per-layer limits —
// the leg packed (circuit/pack.h) into layers of exactly `heads` heads and `units` MLP units, at
// most `layers` of them; heads 0: every layer as wide as the widest (the compact checkpoint).
// `hidden` 0 is the plan's span; a larger one leaves the dims above the span as +u pads that no
// layer reads or writes (every dim still ±u: λ = 1, docs/circuit.md §3.2). The trace's
// kVocabSize rows sit at [firstTraceRow, firstTraceRow + kVocabSize) of `vocab` rows (0: the
// trace's own); the other rows are zero in the embedding and in lm_head, so a trace token's
// logit, always > 0 (emit.h), beats them.
struct LegShape {
  std::string name = "compact";  // named in refusals
  int keyHeadDim = 64;           // 64 or 128 (docs/circuit.md §8)
  int heads = 0, units = 0, layers = 0;
  int hidden = 0;
  int64_t vocab = 0;
  int64_t firstTraceRow = 0;
  bool packed() const { return heads > 0; }
  int64_t vocabRows() const { return vocab > 0 ? vocab : trace::kVocabSize; }
};

// "compact" (LegShape{}) or a shape of circuit/plan.h's table: `2b` is Qwen3.5-2B's widths
// (hidden 2048, 16 heads of 128/128, MLP 6144, at most 45 layers) with the trace at Qwen3.5's
// unused rows trace::kQwenFirstId.. of its 248,320-row vocabulary. Usage naming the known ones
// otherwise.
Expected<LegShape> legShapeByName(const std::string& name);

// Where the leg's heads and units go in `shape` (packed): a count-only build logs each member's
// reads and writes (CircuitWeights::recordMembers, the units' guards from the unit log), then
// packLayers. OverLimit when it does not fit.
Expected<LayerPacking> packLeg(const LegShape& shape, int stepLimit = kLegStepLimit);

// `storage` CountOnly gives the shapes without arrays (what `qgpu circuit build` would write).
// Packed, the build goes through packLeg's packing (CircuitWeights::packed); a packing that does
// not fit is OverLimit naming the limit.
Expected<LegModel> buildLegModel(int stepLimit = kLegStepLimit,
                                 WeightStorage storage = WeightStorage::Dense,
                                 const LegShape& shape = {});

// What circuit.json says of a leg checkpoint.
struct LegCheckpoint {
  int stepLimit = 0;
  int64_t firstTraceRow = 0;                 // trace token t is the model's token firstTraceRow + t
  int layers = 0, hidden = 0, mlpUnits = 0;  // as written (0 where circuit.json lacks them)
};

// Builds that model and writes it to `dir` (created if missing): config.json and
// model.safetensors (CircuitWeights::write), tokenizer.json (traceTokenizerJson), and circuit.json
// {"pipeline": "memory+spill+atomics+inc+dec+cas+regrec+warp+mul", "stepLimit": N,
// "firstTraceRow": R, …}, which readLegCheckpoint reads back (Checkpoint error when it is missing
// or malformed: a directory that is not a leg checkpoint; a missing firstTraceRow is 0, as every
// checkpoint before it had). Returns what it wrote to circuit.json.
Expected<LegCheckpoint> writeLegCheckpoint(const std::string& dir, int stepLimit = kLegStepLimit,
                                           const LegShape& shape = {});
// Checkpoint error for a circuit.json that is missing, malformed, of another pipeline, or whose
// numbers are out of range (stepLimit outside 1..kLegStepLimit, a negative firstTraceRow, layers /
// hidden / mlpUnits outside 0..INT_MAX).
Expected<LegCheckpoint> readLegCheckpoint(const std::string& dir);

// The checkpoint's tokenizer.json: a Hugging Face WordLevel tokenizer whose words are the trace
// tokens' names (trace::tokenName: "EX(0)", "WM(w0,0111)", "T(-3)") at ids firstTraceRow + t,
// split on whitespace, so that transformers' and `qgpu model generate`'s decode print a run as
// its trace.
nlohmann::json traceTokenizerJson(int64_t firstTraceRow = 0);

std::array<uint32_t, machine::kGlobalWords> finalGlobal(
    const std::array<uint32_t, machine::kGlobalWords>& initial,
    std::span<const trace::TraceEvent> run);

}  // namespace qgpu::circuit
