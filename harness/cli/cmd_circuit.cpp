// qgpu/harness/cli/cmd_circuit.cpp — `qgpu circuit plan --shape NAME`: the per-layer budget of the
// circuit built so far (circuit/plan.h: heads, MLP units, residual dims per layer), checked
// against a target shape (circuit/plan.h's table: 2b; compact = the smallest that holds the plan).
//
//   qgpu circuit plan [--of pipeline|stages] [--shape 2b|compact] [--hidden N] [--heads N] [--units N]
//   qgpu circuit build --out DIR [--shape compact] [--step-limit N]
//
// build: the model leg's checkpoint (circuit/leg.h writeLegCheckpoint: config.json,
// model.safetensors, circuit.json), which `qgpu run K --backend model --checkpoint DIR` loads and
// model/ and transformers load like any Qwen3.5 checkpoint. A shape other than compact is refused
// (OverLimit naming the budget: the circuit does not fit 2b yet).
//
// --of pipeline (the default): the execute pipeline as the model runs it (circuit/pipeline.h, 17
// layers, every stage of a layer together, dims = the one layout's residual); --of stages: the
// front end and the ALU stage each planned alone (each stage's dims its own fields, the ALU's by
// liveness). --hidden / --heads / --units override the shape's limit (to try a shape that is not
// in the table). Prints the shape, then one row per layer (layer, stage, its layer in the stage,
// heads, units, dims, and "over: heads" etc. where a budget is exceeded), then the ALU bus's
// liveness figures. Exit codes (common/outcome.h): 0 the plan fits the shape; 4 (OverLimit,
// inconclusive: the circuit does not fit this shape) with the message naming the budget (heads,
// MLP units or residual dims), the layer and the stage; 2 for an unknown shape, plan or a bad
// override. --json: {"of": ..., "shape": {...}, "layers": [...], "aluBus": {...}, "fits": bool,
// "error"?: {...}}.
#include <iostream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "circuit/leg.h"
#include "circuit/plan.h"
#include "harness/cli/command.h"
#include "harness/cli/util.h"

namespace qgpu::cli {
namespace {

struct CircuitPlanOptions {
  std::string of = "pipeline";
  std::string shape = "2b";
  int hidden = 0, heads = 0, units = 0;  // 0: the shape's own
};

int runPlan(const CircuitPlanOptions& o) {
  auto plan = o.of == "stages" ? circuit::planCircuit()
                               : circuit::planExecutePipeline(128, o.of == "memory-pipeline");
  if (!plan.ok()) return reportError(plan.error());
  auto shape = circuit::shapeByName(o.shape, *plan);
  if (!shape.ok()) return reportError(shape.error());
  circuit::ShapeLimits s = *shape;
  for (auto [value, limit, flag] : {std::tuple{o.hidden, &s.hidden, "--hidden"},
                                    {o.heads, &s.heads, "--heads"}, {o.units, &s.mlpUnits, "--units"}}) {
    if (value < 0)
      return reportError(makeDiag(ErrorKind::Usage, std::string(flag) + " must be positive"));
    if (value > 0) {
      *limit = value;
      s.name = o.shape + " (overridden)";
    }
  }
  const Status fits = circuit::checkFits(*plan, s);

  auto overs = [&](const circuit::LayerBudget& l) {
    std::vector<std::string> v;
    if (l.heads > s.heads) v.push_back("heads");
    if (l.units > s.mlpUnits) v.push_back("units");
    if (l.dims > s.hidden) v.push_back("dims");
    return v;
  };
  if (jsonOutput()) {
    nlohmann::json layers = nlohmann::json::array();
    for (size_t i = 0; i < plan->layers.size(); ++i) {
      const circuit::LayerBudget& l = plan->layers[i];
      layers.push_back({{"layer", i}, {"stage", l.stage}, {"stageLayer", l.stageLayer},
                        {"heads", l.heads}, {"units", l.units}, {"dims", l.dims},
                        {"live", l.live}, {"over", overs(l)}});
    }
    nlohmann::json out = {
        {"of", o.of},
        {"shape",
         {{"name", s.name}, {"hidden", s.hidden}, {"heads", s.heads},
          {"keyHeadDim", s.keyHeadDim}, {"valueHeadDim", s.valueHeadDim},
          {"mlpUnits", s.mlpUnits}, {"source", s.source}}},
        {"layers", layers},
        {"aluBus",
         {{"peak", plan->aluBusPeak}, {"span", plan->aluBusSpan},
          {"oneFieldPerValue", plan->aluBusOneFieldPerValue}}},
        {"fits", fits.ok()}};
    if (o.of != "stages")
      out["layout"] = {{"span", plan->pipelineLayout.span}, {"peak", plan->pipelineLayout.peak},
                       {"oneFieldPerValue", plan->pipelineLayout.oneFieldPerValue}};
    if (!fits.ok()) out["error"] = errorJson(fits.error());
    std::cout << dumpJson(out) << "\n";
    return fits.ok() ? kExitOk : exitCode(fits.error());
  }
  std::printf("shape %s: hidden %d, %d heads of %d/%d, MLP %d (%s)\n", s.name.c_str(), s.hidden,
              s.heads, s.keyHeadDim, s.valueHeadDim, s.mlpUnits, s.source.c_str());
  // live: the pipeline's (its layout by liveness); a stage plan has none.
  const bool live = o.of != "stages";
  std::printf("%-6s %-24s %-6s %6s %7s %6s%s  %s\n", "layer", "stage", "sl", "heads", "units",
              "dims", live ? "   live" : "", "over");
  for (size_t i = 0; i < plan->layers.size(); ++i) {
    const circuit::LayerBudget& l = plan->layers[i];
    std::string over;
    for (const std::string& b : overs(l)) over += (over.empty() ? "" : ", ") + b;
    char liveCell[16] = "";
    if (live) std::snprintf(liveCell, sizeof liveCell, " %6d", l.live);
    std::printf("%-6zu %-24s %-6d %6d %7d %6d%s  %s\n", i, l.stage.c_str(), l.stageLayer, l.heads,
                l.units, l.dims, liveCell, over.c_str());
  }
  std::printf("alu bus by liveness: peak %d, span %d dims (one field per value: %d)\n",
              plan->aluBusPeak, plan->aluBusSpan, plan->aluBusOneFieldPerValue);
  if (o.of == "stages")
    std::printf("each stage's dims are its own fields (the stages' layouts are not joined yet)\n");
  else
    std::printf("dims: the pipeline's layout by liveness, span %d (peak live %d; one field per "
                "value %d); live: the dims live at that layer\n",
                plan->pipelineLayout.span, plan->pipelineLayout.peak,
                plan->pipelineLayout.oneFieldPerValue);
  if (!fits.ok()) return reportError(fits.error());
  std::printf("fits %s\n", s.name.c_str());
  return kExitOk;
}

struct CircuitBuildOptions {
  std::string out;
  std::string shape = "compact";
  int stepLimit = circuit::kLegMaxStepLimit;
};

// `circuit build`: the model leg's checkpoint (circuit/leg.h). Only `compact` holds it today; any
// other shape is refused by the plan's own check, naming the budget that does not fit.
int runBuild(const CircuitBuildOptions& o) {
  if (o.shape != "compact") {
    auto plan = circuit::planExecutePipeline(128, /*memory=*/true);
    if (!plan.ok()) return reportError(plan.error());
    auto shape = circuit::shapeByName(o.shape, *plan);
    if (!shape.ok()) return reportError(shape.error());
    if (Status fits = circuit::checkFits(*plan, *shape); !fits.ok()) return reportError(fits.error());
    return reportError(makeDiag(ErrorKind::OverLimit,
                                "shape " + o.shape + ": only compact checkpoints are built so far"));
  }
  if (Status s = circuit::writeLegCheckpoint(o.out, o.stepLimit); !s.ok()) return reportError(s.error());
  std::printf("wrote %s (the memory pipeline, step limit %d)\n", o.out.c_str(), o.stepLimit);
  return kExitOk;
}

}  // namespace

Command addCircuitCommand(CLI::App& root, const CommonOptions&) {
  static CircuitPlanOptions o;
  CLI::App* app = root.add_subcommand("circuit", "The circuit compiler (docs/circuit.md)");
  app->require_subcommand(1);
  CLI::App* plan =
      app->add_subcommand("plan", "Per-layer budget of the built circuit against a shape");
  plan->add_option("--of", o.of,
                   "pipeline (the execute pipeline), memory-pipeline (with memory ops) or stages "
                   "(each stage alone)")
      ->check(CLI::IsMember({"pipeline", "memory-pipeline", "stages"}))
      ->capture_default_str();
  plan->add_option("--shape", o.shape, "2b or compact")->capture_default_str();
  plan->add_option("--hidden", o.hidden, "Override the shape's residual dims");
  plan->add_option("--heads", o.heads, "Override the shape's heads per layer");
  plan->add_option("--units", o.units, "Override the shape's MLP units per layer");
  static CircuitBuildOptions b;
  CLI::App* build = app->add_subcommand(
      "build", "Write the model leg's checkpoint (the memory pipeline) for `run --backend model`");
  build->add_option("--out", b.out, "Checkpoint directory to write")->required();
  build->add_option("--shape", b.shape, "compact (2b does not hold the circuit yet)")
      ->capture_default_str();
  build->add_option("--step-limit", b.stepLimit, "Steps before the model writes LIMIT")
      ->check(CLI::Range(1, circuit::kLegMaxStepLimit))
      ->capture_default_str();
  return {app, [plan] { return plan->parsed() ? runPlan(o) : runBuild(b); }};
}

}  // namespace qgpu::cli
