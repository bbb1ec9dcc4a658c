// qgpu/circuit/plan.cpp — see plan.h.
#include "circuit/plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "circuit/alu_stage.h"
#include "circuit/frontend.h"
#include "circuit/layout.h"
#include "circuit/pipeline.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"

namespace qgpu::circuit {
namespace {

// The scratch config every stage is built into (count-only: no arrays, any size is free).
constexpr int kScratchHidden = 4096;
constexpr int kScratchUnits = 16384;
constexpr int kScratchHeads = 64;
constexpr int kFrontEndLayers = 5;

model::Qwen35Config scratchConfig(int layers, int keyHeadDim) {
  model::Qwen35Config c;
  c.vocabSize = 512;
  c.hiddenSize = kScratchHidden;
  c.intermediateSize = kScratchUnits;
  c.layerTypes.assign(static_cast<size_t>(layers), model::LayerType::Linear);
  c.numAttentionHeads = c.numKeyValueHeads = 1;
  c.headDim = 8;
  c.linearNumKeyHeads = c.linearNumValueHeads = kScratchHeads;
  c.linearKeyHeadDim = keyHeadDim;
  c.linearValueHeadDim = 128;  // the taps' value gains assume dv = 128
  c.linearConvKernelDim = 4;
  c.maxPositionEmbeddings = 1 << 20;
  c.dtype = "float32";
  return c;
}

// The fields live at a point (its key: layout.h Point::key), widest first.
std::vector<LayerBudget::LiveField> liveFields(const LivenessPlan& plan, int key) {
  std::vector<LayerBudget::LiveField> v;
  for (size_t i = 0; i < plan.fields.size(); ++i)
    if (livesAt(plan.ranges[i], key))
      v.push_back({plan.fields[i].name, plan.fields[i].dims, plan.ranges[i], plan.fields[i].kinds});
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& x, const auto& y) { return x.dims > y.dims; });
  return v;
}

// The dims live at a point by field group: the name up to its first '.' (dims that fields of
// exclusive kinds share once).
std::vector<std::pair<std::string, int>> liveByGroup(const LivenessPlan& plan, int key) {
  std::map<std::string, std::set<int>> at;
  for (size_t i = 0; i < plan.fields.size(); ++i) {
    if (!livesAt(plan.ranges[i], key)) continue;
    const Field& f = plan.fields[i];
    for (int d = 0; d < f.dims; ++d) at[f.name.substr(0, f.name.find('.'))].insert(f.at(d));
  }
  std::vector<std::pair<std::string, int>> v;
  for (const auto& [group, dims] : at) v.emplace_back(group, static_cast<int>(dims.size()));
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  return v;
}

Status checkKeyHeadDim(int keyHeadDim) {
  if (keyHeadDim != 64 && keyHeadDim != 128)
    return makeDiag(ErrorKind::Usage, "plan: key head dim " + std::to_string(keyHeadDim) +
                                          " (the stages are built for 64 or 128)");
  return Ok{};
}

// The ALU bus by liveness (four lanes; ByGroup as a pipeline with memory guards it), its
// figures recorded in the plan.
Expected<LayoutPlan> planAluBus(CircuitPlan& plan, AluBusLayout layout = AluBusLayout::Liveness) {
  QGPU_TRY(bus, aluStageBusPlan(machine::kLanes, layout));
  const LayoutReport report = bus.report();
  plan.aluBusPeak = report.peak;
  plan.aluBusSpan = report.span;
  plan.aluBusOneFieldPerValue = report.oneFieldPerValue;
  return bus;
}

Status planFrontEnd(CircuitPlan& plan, CircuitWeights& w) {
  FieldAllocator alloc(kScratchHidden);
  FrontEndSpec s;
  QGPU_TRY(tokens, planTokenLayout(alloc, kScratchHidden));
  s.tokens = tokens;
  s.layer0 = static_cast<int>(plan.layers.size());
  QGPU_TRY(fe, buildFrontEnd(w, alloc, s));
  for (int l = 0; l < kFrontEndLayers; ++l)
    plan.layers.push_back({"front end", l, fe.heads[l], fe.units[l], alloc.used()});
  return Ok{};
}

Status planAlu(CircuitPlan& plan, CircuitWeights& w) {
  const int first = static_cast<int>(plan.layers.size());
  const int lanes = machine::kLanes;
  // Fields to build with (any offsets: the count does not depend on them) ...
  FieldAllocator alloc(kScratchHidden);
  QGPU_TRY(ballast, alloc.take("ballast", 4));
  QGPU_TRY(opcode, alloc.take("opcode", kOpcodeBits));
  AluStageSpec spec;
  spec.opcode = opcode;
  spec.busLayout = AluBusLayout::Liveness;
  // ... and the residual they need, by liveness: inputs from the layer before S0 to S3, the bus
  // as the stage places it, the result word from S1 (kAluResultFirstLayer) and the predicate
  // result from S3 to the next layer.
  LayoutPlan dims;
  const LiveRange input{mlpAt(first - 1), mlpAt(first + 3)};
  const LiveRange word{mlpAt(first + kAluResultFirstLayer), mlpAt(first + 4)};
  const LiveRange result{mlpAt(first + 3), mlpAt(first + 4)};
  dims.add("ballast", 4, input);
  dims.add("opcode", kOpcodeBits, input);
  for (int l = 0; l < lanes; ++l) {
    const std::string p = "lane" + std::to_string(l) + ".";
    AluLane lane;
    for (auto [f, name, n] : {std::tuple{&lane.a, "a", 32}, {&lane.b, "b", 32}, {&lane.c, "c", 32},
                              {&lane.p, "p", 1}, {&lane.q, "q", 1}}) {
      QGPU_TRY(field, alloc.take(p + name, n));
      *f = field;
      dims.add(p + name, n, input);
    }
    QGPU_TRY(r, alloc.take(p + "r", 32));
    QGPU_TRY(s, alloc.take(p + "s", 1));
    lane.r = r;
    lane.s = s;
    dims.add(p + "r", 32, word);
    dims.add(p + "s", 1, result);
    spec.lanes.push_back(lane);
  }
  QGPU_TRY(bus, planAluBus(plan));
  QGPU_TRY(busField, alloc.take("bus", bus.report().span));
  spec.bus = busField;
  for (const Placement& p : bus.placements())
    dims.add("bus." + p.field.name, p.field.dims,
             {mlpAt(first + p.range.write.layer), mlpAt(first + p.range.lastRead.layer)});
  QGPU_CHECK(dims.solve(1 << 16));
  const LayoutReport rep = dims.report();

  std::vector<UnitWriter> writers;
  for (int l = 0; l < kAluStageLayers; ++l) writers.emplace_back(w, first + l);
  const MlpContext ctx{ballast, 1.0, 128, 16, false};
  std::vector<AluLayer> layers;
  for (UnitWriter& u : writers) layers.push_back({&u, ctx});
  QGPU_TRY(built, buildAluStage(layers, spec));
  for (int l = 0; l < kAluStageLayers; ++l) {
    const size_t i = static_cast<size_t>(first + l - rep.firstLayer);
    const int live = std::max(rep.liveAfterAttention[i], rep.liveAfterMlp[i]);
    plan.layers.push_back({"alu", l, 0, built.unitsPerLayer[static_cast<size_t>(l)], live});
  }
  return Ok{};
}

}  // namespace

const std::vector<ShapeLimits>& shapeTable() {
  static const std::vector<ShapeLimits> table = {
      {"2b", 2048, 16, 128, 128, 6144,
       "Qwen3.5-2B (docs/circuit.md §4.2, ../shared/reference/qwen35-spec.md); at most 45 "
       "layers (the qwenGPU target)",
       45},
  };
  return table;
}

ShapeLimits compactShape(const CircuitPlan& plan) {
  ShapeLimits s{"compact", 0, 0, plan.keyHeadDim, plan.valueHeadDim, 0,
                "the smallest shape holding this plan (max over layers)"};
  for (const LayerBudget& l : plan.layers) {
    s.hidden = std::max(s.hidden, l.dims);
    s.heads = std::max(s.heads, l.heads);
    s.mlpUnits = std::max(s.mlpUnits, l.units);
  }
  s.heads = std::max(s.heads, 1);  // a layer has at least one head, even a silent one
  return s;
}

Expected<ShapeLimits> shapeByName(const std::string& name, const CircuitPlan& plan) {
  if (name == "compact") return compactShape(plan);
  std::string known = "compact";
  for (const ShapeLimits& s : shapeTable()) {
    if (s.name == name) return s;
    known += ", " + s.name;
  }
  return makeDiag(ErrorKind::Usage, "unknown shape '" + name + "' (known: " + known + ")");
}

Expected<CircuitPlan> planCircuit(int keyHeadDim) {
  QGPU_CHECK(checkKeyHeadDim(keyHeadDim));
  CircuitPlan plan;
  plan.keyHeadDim = keyHeadDim;
  plan.valueHeadDim = 128;
  CircuitWeights w(scratchConfig(kFrontEndLayers + kAluStageLayers, keyHeadDim),
                   WeightStorage::CountOnly);
  QGPU_CHECK(planFrontEnd(plan, w));
  QGPU_CHECK(planAlu(plan, w));
  return plan;
}

Expected<CircuitPlan> planExecutePipeline(int keyHeadDim, const ExecuteSpec& spec) {
  QGPU_CHECK(checkKeyHeadDim(keyHeadDim));
  // A scratch config as wide as any stage needs (count-only: the size costs nothing).
  const int layers = executeLayers(spec);
  model::Qwen35Config c = scratchConfig(layers, keyHeadDim);
  ExecuteSpec s = spec;
  s.tokens = {};
  s.layer0 = 0;
  s.twin = ExecuteTwin::None;
  QGPU_TRY(layout, planExecuteLayout(c, s));  // its own scratch: one field per value
  c.hiddenSize = layout.hidden;
  CircuitWeights w(c, WeightStorage::CountOnly);
  FieldAllocator alloc = layout.allocator();
  QGPU_TRY(pipe, buildExecuteModel(w, alloc, s));
  CircuitPlan plan;
  plan.pipelineLayout = layout.report;
  plan.keyHeadDim = keyHeadDim;
  plan.valueHeadDim = 128;
  QGPU_CHECK(planAluBus(plan, pipe.alu.busLayout));
  // The stages of each layer, from the pipeline's own placement (pipeline.h).
  const int alu = pipe.aluLayer, result = pipe.resultLayer, emit = pipe.emitLayer;
  const std::string withMemory = s.memory ? "+memory" : "";
  const std::string withWarp = s.warpOps ? "+warp" : "";
  for (int l = 0; l < layers; ++l) {
    std::string stage;
    int stageLayer = l;
    if (l < alu) {
      stage = "front end+select+control";
    } else if (l < result) {
      stage = "control+alu" + withMemory + withWarp;
      stageLayer = l - alu;
    } else if (l < result + kResultStageLayers) {
      stage = "control+result" + withMemory;
      stageLayer = l - result;
    } else if (l < emit) {
      // With memory: the outcome select at E+13; with atomics the memory stage's last two layers
      // at E+13, E+14 and the select at E+15; with their regrec its result stage at E+15..E+18 and
      // the select at E+19; with the multiplies instead the multiplier at E+15..E+23 (two lanes
      // at a time), one result stage for both regrecs at E+23..E+26 and the select at E+27. The
      // control stage's emit layer is E+13.
      const std::string control = l == kControlLayers - 1 ? "control+" : "";
      const bool regrec = pipe.regrecLayer >= 0 && l >= pipe.regrecLayer && l < pipe.selectLayer;
      const bool multiply = pipe.mulRegrecLayer >= 0 && regrec;
      if (l == pipe.selectLayer) {
        stage = control + "select";
        stageLayer = 0;
      } else if (multiply) {
        stage = control + (l < pipe.mulRegrecLayer    ? "mul"
                           : l == pipe.mulRegrecLayer ? "mul+regrec"
                                                      : "regrec");
        stageLayer = l - pipe.regrecLayer;
      } else if (regrec) {
        stage = control + "regrec";
        stageLayer = l - pipe.regrecLayer;
      } else {
        stage = control + "memory";
        stageLayer = l - pipe.memoryLayer;
      }
    } else {
      stage = l == emit && !s.memory ? "control+emitter" : "emitter";
      stageLayer = l - emit;
    }
    // `live`: after the layer's attention or its MLP, whichever holds more (that point's fields).
    const LayoutReport& rep = layout.report;
    const size_t i = static_cast<size_t>(l - rep.firstLayer);
    int live = 0;
    Point at = attentionAt(l);
    if (i < rep.liveAfterMlp.size()) {
      live = std::max(rep.liveAfterAttention[i], rep.liveAfterMlp[i]);
      if (rep.liveAfterMlp[i] > rep.liveAfterAttention[i]) at = mlpAt(l);
    }
    int pads = 0;
    for (const PadRestore& pad : layout.pads) pads += pad.layer == l ? pad.field.dims : 0;
    plan.layers.push_back({stage, stageLayer, pipe.heads[static_cast<size_t>(l)],
                           pipe.units[static_cast<size_t>(l)], alloc.used(), live, pads,
                           liveByGroup(layout, at.key()), liveFields(layout, at.key())});
  }
  return plan;
}

Status checkFits(const CircuitPlan& plan, const ShapeLimits& shape, bool packed) {
  if (shape.keyHeadDim != plan.keyHeadDim || shape.valueHeadDim != plan.valueHeadDim)
    return makeDiag(ErrorKind::OverLimit,
                    "shape " + shape.name + ": head dims " + std::to_string(shape.keyHeadDim) +
                        "/" + std::to_string(shape.valueHeadDim) + ", the plan is built for " +
                        std::to_string(plan.keyHeadDim) + "/" + std::to_string(plan.valueHeadDim));
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerBudget& l = plan.layers[i];
    struct Check {
      const char* budget;
      int need, have;
    };
    for (const Check& c : {Check{"heads", l.heads, shape.heads},
                           Check{"MLP units", l.units, shape.mlpUnits},
                           Check{"residual dims", l.dims, shape.hidden}})
      if (c.need > c.have && (!packed || std::string(c.budget) == "residual dims"))
        return makeDiag(ErrorKind::OverLimit,
                        "shape " + shape.name + ": layer " + std::to_string(i) + " (" + l.stage +
                            " layer " + std::to_string(l.stageLayer) + ") needs " +
                            std::to_string(c.need) + " " + c.budget + ", the shape has " +
                            std::to_string(c.have));
  }
  return Ok{};
}

}  // namespace qgpu::circuit
