// qgpu/harness/cli/cmd_circuit.cpp — `qgpu circuit plan --shape NAME`: the per-layer budget of the
// circuit built so far (circuit/plan.h: heads, MLP units, residual dims per layer), checked
// against a target shape (circuit/plan.h's table: 2b; compact = the smallest that holds the plan).
//
//   qgpu circuit plan [--of pipeline|memory-pipeline|leg|stages] [--shape 2b|compact] [--hidden N]
//                     [--heads N] [--units N] [--live] [--fields LAYER]
//   qgpu circuit build --out DIR [--shape compact|2b] [--heads N --units N [--layers N]]
//                      [--key-head-dim 64|128] [--step-limit N]
//   qgpu circuit margins K [--compiler clang|nvcc] [--dtype fp32|bf16] [--checkpoint DIR]
//
// margins (LibTorch builds): the model leg runs kernel K's circuit target program, then every
// decision of the run — the inputs of the MLP gates' SiLU, the conv's SiLU, the z gate's SiLU and
// b's sigmoid, on every unit whose weight row is nonzero (circuit/margins.h) — is measured from
// the real activations, on the chunked path (the prompt and the run) and on the one-token path;
// per layer the units, how many values fell in the band (−88.8, 17) where rounding could move an
// output (must be 0), and the smallest |x|. Exit 0 when none did, 1 when one did.
//
// build: the model leg's checkpoint (circuit/leg.h writeLegCheckpoint: config.json,
// model.safetensors, circuit.json), which `qgpu run K --backend model --checkpoint DIR` loads and
// model/ and transformers load like any Qwen3.5 checkpoint. compact: every layer as wide as the
// widest, key head dim 64 (or --key-head-dim 128); with --heads and --units packed into layers of
// that width (circuit/pack.h, at most --layers of them). 2b: packed into Qwen3.5-2B's widths
// (circuit/leg.h legShapeByName; ~13 GB fp32: hidden 2048, its 248,320-row vocabulary with the
// trace at rows 248077..). A shape the leg does not fit is refused before anything is written
// (OverLimit naming the budget).
//
// --of pipeline (the default): the execute pipeline as the model runs it (circuit/pipeline.h, 17
// layers, every stage of a layer together, dims = the one layout's residual); --of memory-pipeline
// with memory ops (18 layers); --of leg the leg's (circuit/leg.h legSpec: memory ops, atomics
// with their regrec, mul and mad, warp ops; 28 layers: the checkpoint `circuit build` writes, and
// the plan a shape other than compact is checked against: packed into the shape, circuit/pack.h,
// its heads and units checked by the packing, which is printed layer by layer); --of stages: the
// front end and the ALU stage each planned alone (each stage's dims its own fields, the ALU's by
// liveness). --hidden /
// --heads / --units override the shape's limit (to try a shape that is not in the table). Prints
// the shape, then one row per layer (layer, stage, its layer in the stage, heads, units, dims, and
// "over: heads" etc. where a budget is exceeded), then the ALU bus's liveness figures; with --live
// (a pipeline's plan), per layer the live dims by field group (a field's name up to its first '.':
// "alu", "mem", "rf", …), largest first — where the residual goes; with --fields LAYER, that
// layer's live fields, widest first: name, dims, live range [writer, last reader) and kinds (bits
// of weights.h FieldKind; fields of exclusive kinds may share dims). Exit codes (common/outcome.h):
// 0 the plan fits the shape; 4 (OverLimit, inconclusive: the circuit does not fit this shape) with
// the message naming the budget (heads, MLP units or residual dims), the layer and the stage; 2 for
// an unknown shape, plan or a bad override. --json: {"of": ..., "shape": {...}, "layers": [...]
// (each with "liveByGroup" for a pipeline), "aluBus": {...}, "fits": bool, "fields"?: {"layer",
// "live": [{"name", "dims", "write", "lastRead", "kinds"}]}, "error"?: {...}}.
#include <climits>
#include <iostream>
#include <optional>
#include <tuple>

#include <nlohmann/json.hpp>

#include "circuit/leg.h"
#include "circuit/plan.h"
#include "harness/cli/command.h"
#include "harness/cli/util.h"
#ifdef QGPU_HAVE_MODEL
#include "harness/model_leg.h"
#include "harness/pipeline.h"
#endif

namespace qgpu::cli {
namespace {

struct CircuitPlanOptions {
  std::string of = "pipeline";
  std::string shape = "2b";
  int hidden = 0, heads = 0, units = 0;  // 0: the shape's own
  bool live = false;                     // print the live dims by field group per layer
  int fields = -1;                       // print this layer's live fields (−1: none)
};

// The pipeline `--of` names (not stages).
circuit::ExecuteSpec planSpec(const std::string& of) {
  if (of == "leg") return circuit::legSpec();
  circuit::ExecuteSpec spec;
  spec.memory = of == "memory-pipeline";
  return spec;
}

int runPlan(const CircuitPlanOptions& o) {
  auto plan =
      o.of == "stages" ? circuit::planCircuit() : circuit::planExecutePipeline(128, planSpec(o.of));
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
  // The leg for a shape of its own limits is packed into it (circuit/pack.h): the packing decides
  // the heads and units, the plan the residual dims.
  const bool packs = o.of == "leg" && o.shape != "compact";
  std::optional<circuit::LayerPacking> packing;
  Status fits = Ok{};
  if (packs) {
    auto p = circuit::packLeg(circuit::LegShape{s.name, s.keyHeadDim, s.heads, s.mlpUnits,
                                                s.layers > 0 ? s.layers : INT_MAX});
    if (p.ok())
      packing = std::move(*p);
    else
      fits = p.error();
  }
  if (fits.ok()) fits = circuit::checkFits(*plan, s, packs);
  if (o.fields >= 0 && (o.of == "stages" || o.fields >= static_cast<int>(plan->layers.size())))
    return reportError(makeDiag(
        ErrorKind::Usage, "--fields " + std::to_string(o.fields) + ": " +
                              (o.of == "stages" ? std::string("a stages plan has no layout")
                                                : "the plan has layers 0.." +
                                                      std::to_string(plan->layers.size() - 1))));

  auto overs = [&](const circuit::LayerBudget& l) {
    std::vector<std::string> v;
    if (l.heads > s.heads) v.push_back(packs ? "heads (packed)" : "heads");
    if (l.units > s.mlpUnits) v.push_back(packs ? "units (packed)" : "units");
    if (l.dims > s.hidden) v.push_back("dims");
    return v;
  };
  if (jsonOutput()) {
    nlohmann::json layers = nlohmann::json::array();
    for (size_t i = 0; i < plan->layers.size(); ++i) {
      const circuit::LayerBudget& l = plan->layers[i];
      nlohmann::json groups = nlohmann::json::object();
      for (const auto& [group, dims] : l.liveByGroup) groups[group] = dims;
      layers.push_back({{"layer", i},
                        {"stage", l.stage},
                        {"stageLayer", l.stageLayer},
                        {"heads", l.heads},
                        {"units", l.units},
                        {"padUnits", l.padUnits},
                        {"dims", l.dims},
                        {"live", l.live},
                        {"liveByGroup", groups},
                        {"over", overs(l)}});
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
    if (packing) {
      nlohmann::json physical = nlohmann::json::array();
      for (int p = 0; p < packing->layers; ++p)
        physical.push_back({{"heads", packing->headsIn[static_cast<size_t>(p)]},
                            {"units", packing->unitsIn[static_cast<size_t>(p)]},
                            {"from", packing->from[static_cast<size_t>(p)]}});
      out["packing"] = {{"layers", packing->layers}, {"physical", physical}};
    }
    if (o.fields >= 0) {
      nlohmann::json fields = nlohmann::json::array();
      for (const auto& f : plan->layers[static_cast<size_t>(o.fields)].liveFields)
        fields.push_back({{"name", f.name},
                          {"dims", f.dims},
                          {"write", circuit::pointName(f.range.write)},
                          {"lastRead", circuit::pointName(f.range.lastRead)},
                          {"kinds", f.kinds}});
      out["fields"] = {{"layer", o.fields}, {"live", fields}};
    }
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
  if (packing) {
    std::printf(
        "packed into %d layers of %d heads and %d MLP units (circuit/pack.h; the shape "
        "allows %s):\n%-6s %6s %7s  %s\n",
        packing->layers, s.heads, s.mlpUnits,
        s.layers > 0 ? std::to_string(s.layers).c_str() : "any number", "layer", "heads", "units",
        "from layers");
    for (int p = 0; p < packing->layers; ++p) {
      std::string from;
      for (int v : packing->from[static_cast<size_t>(p)])
        from += (from.empty() ? "" : ",") + std::to_string(v);
      std::printf("%-6d %6d %7d  %s\n", p, packing->headsIn[static_cast<size_t>(p)],
                  packing->unitsIn[static_cast<size_t>(p)], from.c_str());
    }
  }
  if (o.live && o.of != "stages") {
    std::printf("live by field group (dims):\n");
    for (size_t i = 0; i < plan->layers.size(); ++i) {
      std::printf("%-6zu", i);
      for (const auto& [group, dims] : plan->layers[i].liveByGroup)
        std::printf(" %s %d", group.c_str(), dims);
      std::printf("\n");
    }
  }
  if (o.fields >= 0) {
    const circuit::LayerBudget& l = plan->layers[static_cast<size_t>(o.fields)];
    std::printf("layer %d: %d dims live in %zu fields (name, dims, [writer, last reader), kinds)\n",
                o.fields, l.live, l.liveFields.size());
    for (const circuit::LayerBudget::LiveField& f : l.liveFields)
      std::printf("  %-32s %5d  [%s, %s)  %#x\n", f.name.c_str(), f.dims,
                  circuit::pointName(f.range.write).c_str(),
                  circuit::pointName(f.range.lastRead).c_str(), f.kinds);
  }
  if (!fits.ok()) return reportError(fits.error());
  std::printf("fits %s\n", s.name.c_str());
  return kExitOk;
}

struct CircuitBuildOptions {
  std::string out;
  std::string shape = "compact";
  int stepLimit = circuit::kLegStepLimit;
  int heads = 0, units = 0, layers = 45;  // heads > 0: compact packed (circuit/pack.h)
  int keyHeadDim = 0;                     // 0: the shape's
};

// `circuit build`: the model leg's checkpoint (circuit/leg.h) for a named shape; compact can be
// packed to other widths (--heads, --units, --layers) and built at key head dim 128.
int runBuild(const CircuitBuildOptions& o) {
  auto named = circuit::legShapeByName(o.shape);
  if (!named.ok()) return reportError(named.error());
  circuit::LegShape shape = *named;
  if ((o.heads > 0) != (o.units > 0))
    return reportError(makeDiag(ErrorKind::Usage, "build: --heads and --units go together"));
  if ((o.heads > 0 || o.keyHeadDim > 0) && o.shape != "compact")
    return reportError(makeDiag(ErrorKind::Usage,
                                "build: --heads, --units and --key-head-dim "
                                "reshape compact; " +
                                    o.shape + " has its own widths"));
  if (o.keyHeadDim > 0) shape.keyHeadDim = o.keyHeadDim;
  if (o.heads > 0) {
    shape.name = "compact packed to " + std::to_string(o.heads) + " heads, " +
                 std::to_string(o.units) + " units";
    shape.heads = o.heads;
    shape.units = o.units;
    shape.layers = o.layers;
  }
  auto written = circuit::writeLegCheckpoint(o.out, o.stepLimit, shape);
  if (!written.ok()) return reportError(written.error());
  std::printf(
      "wrote %s (the leg's pipeline: memory ops, spill slots, atomics with their regrec, warp ops, "
      "mul and mad; step limit %d; %s: %d layers, hidden %d, MLP %d, key head dim %d, trace at "
      "rows %lld..)\n",
      o.out.c_str(), o.stepLimit, shape.name.c_str(), written->layers, written->hidden,
      written->mlpUnits, shape.keyHeadDim, static_cast<long long>(written->firstTraceRow));
  return kExitOk;
}

#ifdef QGPU_HAVE_MODEL
struct CircuitMarginsOptions {
  std::string kernel;
  std::string compiler = "clang";
  std::string dtype = "fp32";
  std::string checkpoint;
  size_t tokenBudget = 20000;
};

// `circuit margins K`: the leg runs the kernel's circuit target program, then every decision of
// the run is measured from the real activations on both paths (harness/model_leg.h LegMargins).
int runMargins(const CircuitMarginsOptions& o, const CommonOptions& common) {
  auto spec = harness::resolveKernel(o.kernel, catalogDir(common));
  if (!spec.ok()) return reportError(spec.error());
  auto compilers = parseCompilers(o.compiler);
  if (!compilers.ok()) return reportError(compilers.error());
  if (compilers->size() != 1) return reportError(makeDiag(ErrorKind::Usage, "margins: one --compiler"));
  const harness::BuildOptions build = harness::circuitBuildOptions();
  auto kernel = harness::buildKernel(*spec, compilers->front(), build);
  if (!kernel.ok()) return reportError(kernel.error());
  if (Status executes = circuit::pipelineExecutes(kernel->program); !executes.ok())
    return reportError(executes.error());
  harness::ModelLegOptions mo;
  mo.dtype = o.dtype == "bf16" ? model::ComputeDtype::BF16 : model::ComputeDtype::F32;
  mo.checkpoint = o.checkpoint;
  mo.tokenBudget = o.tokenBudget;
  auto session = harness::ModelSession::open(mo);
  if (!session.ok()) return reportError(session.error());
  std::cerr << "model: " << (*session)->description() << "\n";
  auto m = (*session)->margins(*kernel);
  if (!m.ok()) return reportError(m.error());
  const bool ok = m->prefill.ok() && m->decode.ok();
  if (common.json) {
    auto side = [](const circuit::MarginReport& r) {
      nlohmann::json layers = nlohmann::json::array();
      for (const circuit::LayerMargins& l : r.layers) {
        nlohmann::json kinds = nlohmann::json::object();
        for (size_t k = 0; k < l.decisions.size(); ++k) {
          const circuit::DecisionMargin& d = l.decisions[k];
          kinds[circuit::kDecisionKindTable[k].label] = {{"units", d.units},   {"values", d.values},
                                                          {"inBand", d.inBand}, {"minAbs", d.minAbs},
                                                          {"maxOff", d.maxOff}, {"minOn", d.minOn}};
        }
        layers.push_back({{"layer", l.layer}, {"decisions", kinds}});
      }
      return nlohmann::json{{"ok", r.ok()}, {"smallestAbs", r.smallestAbs()}, {"layers", layers}};
    };
    std::cout << dumpJson({{"kernel", spec->name}, {"compiler", o.compiler}, {"dtype", o.dtype},
                           {"promptTokens", m->promptTokens}, {"runTokens", m->runTokens},
                           {"stop", harness::legStopName(m->stop)}, {"prefill", side(m->prefill)},
                           {"decode", side(m->decode)}, {"ok", ok}})
              << "\n";
  } else {
    std::printf("%s [%s, %s]: %zu prompt tokens, %zu run tokens (%s)\n", spec->name.c_str(), o.compiler.c_str(),
                o.dtype.c_str(), m->promptTokens, m->runTokens, harness::legStopName(m->stop));
    for (const auto& [path, r] : {std::pair{"prefill (chunked)", &m->prefill}, {"decode (one token)", &m->decode}}) {
      std::printf("\n%s: smallest |x| of a decision %g; %s\n%s", path, r->smallestAbs(),
                  r->ok() ? "no pre-activation in the band (-88.8, 17)" : "PRE-ACTIVATIONS IN THE BAND",
                  r->table().c_str());
    }
  }
  return ok ? kExitOk : kExitMismatch;
}
#endif

}  // namespace

Command addCircuitCommand(CLI::App& root, const CommonOptions& common) {
  static CircuitPlanOptions o;
  CLI::App* app = root.add_subcommand("circuit", "The circuit compiler (docs/circuit.md)");
  app->require_subcommand(1);
  CLI::App* plan =
      app->add_subcommand("plan", "Per-layer budget of the built circuit against a shape");
  plan->add_option("--of", o.of,
                   "pipeline (the execute pipeline), memory-pipeline (with memory ops), leg (with "
                   "memory ops, atomics with their regrec and warp ops: what circuit build writes) "
                   "or stages (each stage alone)")
      ->check(CLI::IsMember({"pipeline", "memory-pipeline", "leg", "stages"}))
      ->capture_default_str();
  plan->add_option("--shape", o.shape, "2b or compact")->capture_default_str();
  plan->add_option("--hidden", o.hidden, "Override the shape's residual dims");
  plan->add_option("--heads", o.heads, "Override the shape's heads per layer");
  plan->add_option("--units", o.units, "Override the shape's MLP units per layer");
  plan->add_flag("--live", o.live, "Per layer, the live dims by field group (a pipeline's plan)");
  plan->add_option("--fields", o.fields,
                   "One layer's live fields with their ranges and kinds (a pipeline's plan)")
      ->check(CLI::NonNegativeNumber);
  static CircuitBuildOptions b;
  CLI::App* build = app->add_subcommand(
      "build",
      "Write the model leg's checkpoint (memory ops, atomics, warp ops) for `run --backend model`");
  build->add_option("--out", b.out, "Checkpoint directory to write")->required();
  build->add_option("--shape", b.shape, "compact or 2b")->capture_default_str();
  build->add_option("--key-head-dim", b.keyHeadDim, "Build compact at this key head dim")
      ->check(CLI::IsMember({64, 128}));
  build
      ->add_option("--heads", b.heads,
                   "Pack the layers into this many heads per layer (with --units; circuit/pack.h)")
      ->check(CLI::PositiveNumber);
  build->add_option("--units", b.units, "Pack the layers into this many MLP units per layer")
      ->check(CLI::PositiveNumber);
  build->add_option("--layers", b.layers, "The most layers a packing may use")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  build->add_option("--step-limit", b.stepLimit, "Steps before the model writes LIMIT")
      ->check(CLI::Range(1, circuit::kLegStepLimit))
      ->capture_default_str();
#ifdef QGPU_HAVE_MODEL
  static CircuitMarginsOptions mg;
  CLI::App* margins = app->add_subcommand(
      "margins", "Run a kernel through the model leg and measure every decision's margin from the real activations");
  margins->add_option("kernel", mg.kernel, "Catalog kernel name or .cu file")->required();
  margins->add_option("--compiler", mg.compiler, "clang or nvcc")->capture_default_str();
  margins->add_option("--dtype", mg.dtype, "fp32 or bf16")->check(CLI::IsMember({"fp32", "bf16"}))->capture_default_str();
  margins->add_option("--checkpoint", mg.checkpoint, "A checkpoint `qgpu circuit build` wrote (default: build one)");
  margins->add_option("--token-budget", mg.tokenBudget, "Most tokens to generate")->capture_default_str();
  return {app, [plan, margins, &common] {
            if (plan->parsed()) return runPlan(o);
            if (margins->parsed()) return runMargins(mg, common);
            return runBuild(b);
          }};
#else
  (void)common;
  return {app, [plan] { return plan->parsed() ? runPlan(o) : runBuild(b); }};
#endif
}

}  // namespace qgpu::cli
