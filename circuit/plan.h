// qgpu/circuit/plan.h — the per-layer budget of the stages built so far, and the target shapes
// (docs/circuit.md §4.2, §7 pass 4 `gadgets_to_layers`; `qgpu circuit plan --shape NAME`).
//
// planCircuit() builds every stage that builds without a caller's data, one after another, into
// a count-only CircuitWeights (weights.h: shapes, no arrays) of a scratch config big enough for
// any of them, and records per layer the heads and MLP units each stage's build returns and the
// residual dims its fields need:
//   front end   circuit/frontend.h, 5 layers: its FrontEnd::heads / units; dims = its
//               FieldAllocator's (one field per value, every field live on every front-end layer)
//   ALU stage   circuit/alu_stage.h, 4 layers, four lanes: its unitsPerLayer, 0 heads; dims by
//               liveness (circuit/layout.h): the ballast, the opcode and the lanes' operands
//               live into S3, the bus by AluBusLayout::Liveness, the results from S3 on
// Each stage's dims are its own fields: joining the stages' fields into one layout (the front
// end's operand reads are the ALU's operands) is not done yet, so a layer's figure is what that
// stage needs, not yet the whole residual.
//
// Shapes: one table row per named target (`2b`: Qwen3.5-2B, docs/circuit.md §4.2 and
// ../shared/reference/qwen35-spec.md); `compact` is derived from a plan: the smallest shape that
// holds it (max over layers of each budget; head dims those the stages were built for).
//
// checkFits(): OverLimit naming the budget (heads, MLP units or residual dims), the layer, the
// stage, what it needs and what the shape has — the first layer over any budget, budgets in that
// order; Ok when every layer fits. A layer of the plan is a *virtual* layer: the leg's checkpoint
// for a shape of fewer heads or units per layer packs them (circuit/pack.h), and then only the
// residual dims are the plan's to check.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "circuit/layout.h"
#include "circuit/pipeline.h"
#include "common/diag.h"

namespace qgpu::circuit {

struct ShapeLimits {
  std::string name;
  int hidden = 0;           // residual dims
  int heads = 0;            // DeltaNet (linear attention) heads per layer
  int keyHeadDim = 0;       // dk
  int valueHeadDim = 0;     // dv
  int mlpUnits = 0;         // intermediate size
  std::string source;       // where the numbers come from
  int layers = 0;           // the most layers a checkpoint may have (0: no limit)
};

struct LayerBudget {
  std::string stage;  // "front end", "alu"; the pipeline's: the stages sharing the layer, by "+"
  int stageLayer = 0; // layer within the stage
  int heads = 0;
  int units = 0;
  int dims = 0;       // residual dims the stage's fields need at this layer
  int live = 0;       // the pipeline's: dims live after the layer's attention or MLP (0: not planned)
  int padUnits = 0;   // the pipeline's: of `units`, its layout's pad restores (layout.h)
  // The pipeline's: `live` by field group (a field's name up to its first '.': "alu", "mem",
  // "rf", …), largest first.
  std::vector<std::pair<std::string, int>> liveByGroup;
  // The pipeline's: the fields behind `live` (those live after the same block), widest first,
  // each with its live range and kinds (fields of exclusive kinds may share dims: their dims sum
  // to more than `live`).
  struct LiveField {
    std::string name;
    int dims = 0;
    LiveRange range;
    uint32_t kinds = 0;
  };
  std::vector<LiveField> liveFields;
};

struct CircuitPlan {
  int keyHeadDim = 128, valueHeadDim = 128;  // the head dims the stages were built for
  std::vector<LayerBudget> layers;           // layer i of the circuit
  int aluBusPeak = 0, aluBusSpan = 0;        // the ALU bus by liveness (layout.h report)
  int aluBusOneFieldPerValue = 0;            // the same fields without reuse
  LayoutReport pipelineLayout;               // the pipeline's layout by liveness (planExecutePipeline)
};

// The named shapes (the one table): "2b".
const std::vector<ShapeLimits>& shapeTable();
// A table row, or "compact" from the plan; Usage for an unknown name (listing the known ones).
Expected<ShapeLimits> shapeByName(const std::string& name, const CircuitPlan& plan);
ShapeLimits compactShape(const CircuitPlan& plan);

// Builds the stages count-only for key head dim dk = keyHeadDim (64 or 128), dv = 128.
Expected<CircuitPlan> planCircuit(int keyHeadDim = 128);

// The execute pipeline `spec` builds, as the model runs it (circuit/pipeline.h: front end,
// operand select, control, ALU, result stage, record emitter in 17 layers; with memory the
// memory stage and the outcome select too, 18; with atomics as well the memory stage's prefix
// atomics, 20; with their regrec the second result stage, 24: the model leg's, circuit/leg.h
// legSpec), built count-only on its layout by liveness (pipeline.h planExecuteLayout): per layer
// its heads and units as buildExecutePipeline returns them (every stage in that layer together),
// its stages by name ("front end+select+control", "control+alu", …), dims = the layout's span at
// every layer (the hidden size a config needs: dims are shared across layers, not per layer) and
// live = the dims live there. The ALU bus figures are the stage plan's. The spec's tokens,
// layer0 and twin are ignored.
Expected<CircuitPlan> planExecutePipeline(int keyHeadDim = 128, const ExecuteSpec& spec = {});

// With `packed` (the leg packed into the shape: circuit/pack.h, leg.h packLeg) the heads and units
// are the packing's business and only the residual dims are checked per layer.
Status checkFits(const CircuitPlan& plan, const ShapeLimits& shape, bool packed = false);

}  // namespace qgpu::circuit
