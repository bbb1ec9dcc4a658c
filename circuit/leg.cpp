// qgpu/circuit/leg.cpp — see leg.h.
#include "circuit/leg.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "circuit/alu_stage.h"
#include "circuit/config.h"
#include "circuit/pack.h"
#include "circuit/plan.h"

namespace qgpu::circuit {
namespace {

namespace fs = std::filesystem;
constexpr const char* kCircuitFile = "circuit.json";
// circuit.json's name of the pipeline the leg builds: a checkpoint of another (an older qgpu's
// "memory", "memory+atomics", "memory+atomics+regrec+warp", "memory+atomics+inc+cas+regrec+warp",
// "memory+atomics+inc+dec+cas+regrec+warp" or "memory+spill+atomics+inc+dec+cas+regrec+warp",
// without atom.inc, cas, dec, the spill slots or mul and mad) is refused, since pipelineExecutes
// answers for this one.
constexpr const char* kLegPipeline = "memory+spill+atomics+inc+dec+cas+regrec+warp+mul";

// The leg pipeline's config before the plan fixes the hidden size and the MLP width: every layer
// as many heads as the widest holds, a layer without heads a full-attention one (`allLinear`:
// linear too, as a packing needs), the vocabulary the shape's.
model::Qwen35Config legConfig(int hidden, int units, const LegShape& shape,
                              bool allLinear = false) {
  const ExecuteSpec s = legSpec(kLegStepLimit);
  model::Qwen35Config c = linearConfig(hidden, executeLayers(s), units, shape.vocabRows());
  const std::vector<int> heads = executePipelineHeads(shape.keyHeadDim, s);
  int most = 0;
  for (size_t l = 0; l < heads.size(); ++l) {
    most = std::max(most, heads[l]);
    if (heads[l] == 0 && !allLinear) c.layerTypes[l] = model::LayerType::Full;
  }
  c.linearNumKeyHeads = c.linearNumValueHeads = most;
  c.linearKeyHeadDim = shape.keyHeadDim;
  return c;
}

constexpr int kLegScratchUnits = 16384;

Status checkStepLimit(int stepLimit) {
  if (stepLimit < 1 || stepLimit > kLegStepLimit)
    return makeDiag(ErrorKind::Usage, "model leg: step limit " + std::to_string(stepLimit) +
                                          " outside 1.." + std::to_string(kLegStepLimit) + ")");
  return Ok{};
}

// The leg's spec for `shape`: its trace rows.
ExecuteSpec legSpecFor(const LegShape& shape, int stepLimit) {
  ExecuteSpec spec = legSpec(stepLimit);
  spec.tokens.rowOffset = shape.firstTraceRow;
  return spec;
}

Status checkShape(const LegShape& shape) {
  const int64_t vocab = shape.vocabRows();
  if (shape.firstTraceRow < 0 || shape.firstTraceRow + trace::kVocabSize > vocab)
    return makeDiag(ErrorKind::Usage, "shape '" + shape.name + "': the trace's " +
                                          std::to_string(trace::kVocabSize) + " rows from row " +
                                          std::to_string(shape.firstTraceRow) +
                                          " do not fit its vocabulary of " + std::to_string(vocab));
  if (shape.keyHeadDim != 64 && shape.keyHeadDim != 128)
    return makeDiag(ErrorKind::Usage, "shape '" + shape.name + "': key head dim " +
                                          std::to_string(shape.keyHeadDim) + " (64 or 128)");
  return Ok{};
}

// packLeg on a plan already made (buildLegModel's own).
Expected<LayerPacking> packOnPlan(const LivenessPlan& plan, const LegShape& shape,
                                  const ExecuteSpec& spec) {
  if (!shape.packed())
    return makeDiag(ErrorKind::Usage,
                    "packLeg: shape '" + shape.name + "' has no per-layer limits");
  CircuitWeights counted(legConfig(plan.hidden, kLegScratchUnits, shape, /*allLinear=*/true),
                         WeightStorage::CountOnly);
  QGPU_CHECK(counted.recordMembers());
  counted.logUnits();
  FieldAllocator alloc = plan.allocator();
  QGPU_CHECK(buildExecuteModel(counted, alloc, spec));
  std::vector<LayerMembers> members = counted.members();
  for (const CircuitWeights::UnitRecord& u : counted.unitLog())
    members[static_cast<size_t>(u.layer)].units[static_cast<size_t>(u.unit)].kinds = u.guardKinds;
  return packLayers(members, PackLimits{shape.heads, shape.units, shape.layers, shape.name});
}

}  // namespace

ExecuteSpec legSpec(int stepLimit) {
  ExecuteSpec spec;
  spec.memory = true;
  spec.atomics = true;
  spec.atomicRegrec = true;
  spec.multiply = true;
  spec.warpOps = true;
  spec.padsUnderWidest = false;
  spec.stepLimit = stepLimit;
  return spec;
}

Status pipelineExecutes(const machine::Program& program) {
  return pipelineExecutes(program, legSpec(kLegStepLimit));
}

Expected<LegShape> legShapeByName(const std::string& name) {
  if (name == "compact") return LegShape{};
  std::string known = "compact";
  for (const ShapeLimits& s : shapeTable()) {
    if (s.name != name) {
      known += ", " + s.name;
      continue;
    }
    LegShape shape{s.name, s.keyHeadDim, s.heads, s.mlpUnits, s.layers, s.hidden};
    shape.vocab = static_cast<int64_t>(trace::kQwenFirstId) + trace::kQwenRows;
    shape.firstTraceRow = trace::kQwenFirstId;
    return shape;
  }
  return makeDiag(ErrorKind::Usage, "unknown shape '" + name + "' (known: " + known + ")");
}

Expected<LayerPacking> packLeg(const LegShape& shape, int stepLimit) {
  QGPU_CHECK(checkStepLimit(stepLimit));
  QGPU_CHECK(checkShape(shape));
  const ExecuteSpec spec = legSpecFor(shape, stepLimit);
  QGPU_TRY(plan, planExecuteLayout(legConfig(0, kLegScratchUnits, shape), spec));
  return packOnPlan(plan, shape, spec);
}

Expected<LegModel> buildLegModel(int stepLimit, WeightStorage storage, const LegShape& shape) {
  QGPU_CHECK(checkStepLimit(stepLimit));
  QGPU_CHECK(checkShape(shape));
  const ExecuteSpec spec = legSpecFor(shape, stepLimit);
  QGPU_TRY(plan, planExecuteLayout(legConfig(0, kLegScratchUnits, shape), spec));
  if (shape.hidden > 0 && plan.hidden > shape.hidden)
    return makeDiag(ErrorKind::OverLimit, "shape '" + shape.name + "': the leg's layout spans " +
                                              std::to_string(plan.hidden) +
                                              " residual dims, the shape has " +
                                              std::to_string(shape.hidden));
  const int hidden = shape.hidden > 0 ? shape.hidden : plan.hidden;
  LegModel m;
  m.stepLimit = stepLimit;
  if (shape.packed()) {
    QGPU_TRY(packing, packOnPlan(plan, shape, spec));
    const model::Qwen35Config wide = legConfig(hidden, kLegScratchUnits, shape, /*allLinear=*/true);
    model::Qwen35Config physical = wide;
    physical.layerTypes.assign(static_cast<size_t>(packing.layers), model::LayerType::Linear);
    physical.linearNumKeyHeads = physical.linearNumValueHeads = shape.heads;
    physical.intermediateSize = shape.units;
    m.packing = packing;
    QGPU_TRY(w, CircuitWeights::packed(wide, physical, std::move(packing), storage));
    m.weights = std::move(w);
  } else {
    // A count-only build on the plan gives the widest layer, the MLP every layer then has.
    model::Qwen35Config config = legConfig(hidden, kLegScratchUnits, shape);
    int units = 0;
    {
      CircuitWeights counted(config, WeightStorage::CountOnly);
      FieldAllocator alloc = plan.allocator();
      QGPU_TRY(pipe, buildExecuteModel(counted, alloc, spec));
      for (int u : pipe.units) units = std::max(units, u);
    }
    config.intermediateSize = units;
    m.weights = std::make_unique<CircuitWeights>(config, storage);
  }
  FieldAllocator alloc = plan.allocator();
  QGPU_TRY(pipe, buildExecuteModel(*m.weights, alloc, spec));
  m.pipeline = std::move(pipe);
  return m;
}

Expected<LegCheckpoint> writeLegCheckpoint(const std::string& dir, int stepLimit,
                                           const LegShape& shape) {
  QGPU_TRY(m, buildLegModel(stepLimit, WeightStorage::Dense, shape));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return makeDiag(ErrorKind::Io, dir + ": " + ec.message());
  QGPU_CHECK(m.weights->write(dir));
  const model::Qwen35Config& written = m.weights->writtenConfig();
  LegCheckpoint c;
  c.stepLimit = stepLimit;
  c.firstTraceRow = shape.firstTraceRow;
  c.layers = static_cast<int>(written.layerTypes.size());
  c.hidden = static_cast<int>(written.hiddenSize);
  c.mlpUnits = static_cast<int>(written.intermediateSize);
  nlohmann::json j = {{"pipeline", kLegPipeline},
                      {"stepLimit", c.stepLimit},
                      {"hidden", c.hidden},
                      {"layers", c.layers},
                      {"mlpUnits", c.mlpUnits},
                      {"keyHeadDim", shape.keyHeadDim},
                      {"firstTraceRow", c.firstTraceRow}};
  if (shape.packed())
    j["packing"] = {{"shape", shape.name},
                    {"headsPerLayer", shape.heads},
                    {"unitsPerLayer", shape.units},
                    {"virtualLayers", m.weights->config().layerTypes.size()}};
  std::ofstream out(fs::path(dir) / kCircuitFile);
  out << j.dump(2) << "\n";
  if (!out) return makeDiag(ErrorKind::Io, dir + "/" + kCircuitFile + ": cannot write");
  std::ofstream tokenizer(fs::path(dir) / "tokenizer.json");
  tokenizer << traceTokenizerJson(shape.firstTraceRow).dump(2) << "\n";
  if (!tokenizer) return makeDiag(ErrorKind::Io, dir + "/tokenizer.json: cannot write");
  return c;
}

nlohmann::json traceTokenizerJson(int64_t firstTraceRow) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int id = 0; id < trace::kVocabSize; ++id)
    vocab[trace::tokenName(static_cast<trace::Token>(id))] = firstTraceRow + id;
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", nlohmann::json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          // tokenizers requires an unk_token; one outside the vocabulary makes an unknown word an
          // error at encode time, in transformers as in model/'s WordLevelTokenizer.
          {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}};
}

Expected<LegCheckpoint> readLegCheckpoint(const std::string& dir) {
  const fs::path path = fs::path(dir) / kCircuitFile;
  std::ifstream in(path);
  if (!in)
    return makeDiag(ErrorKind::Checkpoint,
                    path.string() + ": missing (not a checkpoint `qgpu circuit build` wrote)");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const bool valid = j.is_object() && j.contains("pipeline") && j["pipeline"].is_string() &&
                     j["pipeline"].get<std::string>() == kLegPipeline && j.contains("stepLimit") &&
                     j["stepLimit"].is_number_integer() &&
                     (!j.contains("firstTraceRow") || j["firstTraceRow"].is_number_integer());
  if (!valid)
    return makeDiag(ErrorKind::Checkpoint,
                    path.string() + ": expected {\"pipeline\": \"" + kLegPipeline +
                        "\", \"stepLimit\": N, \"firstTraceRow\": R} (rebuild it with qgpu "
                        "circuit build)");
  // Every number is read as int64 and range-checked before it is narrowed.
  auto outside = [&](const std::string& key, int64_t v, int64_t lo, int64_t hi) {
    return makeDiag(ErrorKind::Checkpoint, path.string() + ": " + key + " " + std::to_string(v) +
                                               " outside " + std::to_string(lo) + ".." +
                                               std::to_string(hi));
  };
  LegCheckpoint c;
  const int64_t stepLimit = j["stepLimit"].get<int64_t>();
  if (stepLimit < 1 || stepLimit > kLegStepLimit)
    return outside("stepLimit", stepLimit, 1, kLegStepLimit);
  c.stepLimit = static_cast<int>(stepLimit);
  c.firstTraceRow = j.value("firstTraceRow", int64_t{0});
  if (c.firstTraceRow < 0)
    return makeDiag(ErrorKind::Checkpoint, path.string() + ": firstTraceRow " +
                                               std::to_string(c.firstTraceRow) + " is negative");
  for (auto [key, to] : {std::pair{"layers", &c.layers}, std::pair{"hidden", &c.hidden},
                         std::pair{"mlpUnits", &c.mlpUnits}}) {
    if (!j.contains(key) || !j[key].is_number_integer()) continue;
    const int64_t v = j[key].get<int64_t>();
    if (v < 0 || v > std::numeric_limits<int>::max())
      return outside(key, v, 0, std::numeric_limits<int>::max());
    *to = static_cast<int>(v);
  }
  return c;
}

std::array<uint32_t, machine::kGlobalWords> finalGlobal(
    const std::array<uint32_t, machine::kGlobalWords>& initial,
    std::span<const trace::TraceEvent> run) {
  std::array<uint32_t, machine::kGlobalWords> global = initial;
  for (const trace::TraceEvent& e : run) {
    const auto* write = std::get_if<trace::MemWrite>(&e);
    if (write == nullptr || write->space != machine::Space::Global) continue;
    for (const trace::WordValue& a : write->accesses)
      if (a.word < global.size()) global[a.word] = a.value;
  }
  return global;
}

}  // namespace qgpu::circuit
