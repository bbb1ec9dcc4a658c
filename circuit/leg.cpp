// qgpu/circuit/leg.cpp — see leg.h.
#include "circuit/leg.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "circuit/alu_stage.h"
#include "circuit/config.h"
#include "circuit/pack.h"

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
// linear too, as a packing needs).
model::Qwen35Config legConfig(int hidden, int units, int keyHeadDim, bool allLinear = false) {
  const ExecuteSpec s = legSpec(kLegStepLimit);
  model::Qwen35Config c = linearConfig(hidden, executeLayers(s), units, trace::kVocabSize);
  const std::vector<int> heads = executePipelineHeads(keyHeadDim, s);
  int most = 0;
  for (size_t l = 0; l < heads.size(); ++l) {
    most = std::max(most, heads[l]);
    if (heads[l] == 0 && !allLinear) c.layerTypes[l] = model::LayerType::Full;
  }
  c.linearNumKeyHeads = c.linearNumValueHeads = most;
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

constexpr int kLegScratchUnits = 16384;

Status checkStepLimit(int stepLimit) {
  if (stepLimit < 1 || stepLimit > kLegStepLimit)
    return makeDiag(ErrorKind::Usage, "model leg: step limit " + std::to_string(stepLimit) +
                                          " outside 1.." + std::to_string(kLegStepLimit) + ")");
  return Ok{};
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

Expected<LayerPacking> packLeg(const LegShape& shape, int stepLimit) {
  QGPU_CHECK(checkStepLimit(stepLimit));
  if (!shape.packed())
    return makeDiag(ErrorKind::Usage,
                    "packLeg: shape '" + shape.name + "' has no per-layer limits");
  const ExecuteSpec spec = legSpec(stepLimit);
  QGPU_TRY(plan, planExecuteLayout(legConfig(0, kLegScratchUnits, shape.keyHeadDim), spec));
  CircuitWeights counted(
      legConfig(plan.hidden, kLegScratchUnits, shape.keyHeadDim, /*allLinear=*/true),
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

Expected<LegModel> buildLegModel(int stepLimit, WeightStorage storage, const LegShape& shape) {
  QGPU_CHECK(checkStepLimit(stepLimit));
  const ExecuteSpec spec = legSpec(stepLimit);
  QGPU_TRY(plan, planExecuteLayout(legConfig(0, kLegScratchUnits, shape.keyHeadDim), spec));
  LegModel m;
  m.stepLimit = stepLimit;
  if (shape.packed()) {
    QGPU_TRY(packing, packLeg(shape, stepLimit));
    const model::Qwen35Config wide =
        legConfig(plan.hidden, kLegScratchUnits, shape.keyHeadDim, /*allLinear=*/true);
    model::Qwen35Config physical = wide;
    physical.layerTypes.assign(static_cast<size_t>(packing.layers), model::LayerType::Linear);
    physical.linearNumKeyHeads = physical.linearNumValueHeads = shape.heads;
    physical.intermediateSize = shape.units;
    m.packing = packing;
    QGPU_TRY(w, CircuitWeights::packed(wide, physical, std::move(packing), storage));
    m.weights = std::move(w);
  } else {
    // A count-only build on the plan gives the widest layer, the MLP every layer then has.
    model::Qwen35Config config = legConfig(plan.hidden, kLegScratchUnits, shape.keyHeadDim);
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

Status writeLegCheckpoint(const std::string& dir, int stepLimit, const LegShape& shape) {
  QGPU_TRY(m, buildLegModel(stepLimit, WeightStorage::Dense, shape));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return makeDiag(ErrorKind::Io, dir + ": " + ec.message());
  QGPU_CHECK(m.weights->write(dir));
  nlohmann::json j = {{"pipeline", kLegPipeline},
                      {"stepLimit", stepLimit},
                      {"hidden", m.weights->writtenConfig().hiddenSize},
                      {"layers", m.weights->writtenConfig().layerTypes.size()},
                      {"mlpUnits", m.weights->writtenConfig().intermediateSize}};
  if (shape.packed())
    j["packing"] = {{"shape", shape.name},
                    {"headsPerLayer", shape.heads},
                    {"unitsPerLayer", shape.units},
                    {"virtualLayers", m.weights->config().layerTypes.size()}};
  std::ofstream out(fs::path(dir) / kCircuitFile);
  out << j.dump(2) << "\n";
  if (!out) return makeDiag(ErrorKind::Io, dir + "/" + kCircuitFile + ": cannot write");
  std::ofstream tokenizer(fs::path(dir) / "tokenizer.json");
  tokenizer << traceTokenizerJson().dump(2) << "\n";
  if (!tokenizer) return makeDiag(ErrorKind::Io, dir + "/tokenizer.json: cannot write");
  return Ok{};
}

nlohmann::json traceTokenizerJson() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int id = 0; id < trace::kVocabSize; ++id) vocab[trace::tokenName(static_cast<trace::Token>(id))] = id;
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

Expected<int> readLegStepLimit(const std::string& dir) {
  const fs::path path = fs::path(dir) / kCircuitFile;
  std::ifstream in(path);
  if (!in)
    return makeDiag(ErrorKind::Checkpoint,
                    path.string() + ": missing (not a checkpoint `qgpu circuit build` wrote)");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const bool valid = j.is_object() && j.contains("pipeline") && j["pipeline"].is_string() &&
                     j["pipeline"].get<std::string>() == kLegPipeline && j.contains("stepLimit") &&
                     j["stepLimit"].is_number_integer();
  if (!valid)
    return makeDiag(ErrorKind::Checkpoint,
                    path.string() + ": expected {\"pipeline\": \"" + kLegPipeline +
                        "\", \"stepLimit\": N} (rebuild it with qgpu circuit build)");
  const int limit = j["stepLimit"].get<int>();
  if (limit < 1 || limit > kLegStepLimit)
    return makeDiag(ErrorKind::Checkpoint, path.string() + ": stepLimit " + std::to_string(limit) +
                                               " outside 1.." + std::to_string(kLegStepLimit));
  return limit;
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
