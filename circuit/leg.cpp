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

// The leg pipeline's config before the plan fixes the hidden size and the MLP width.
model::Qwen35Config legConfig(int hidden, int units) {
  constexpr int kKeyHeadDim = 64;
  const ExecuteSpec s = legSpec(kLegStepLimit);
  model::Qwen35Config c = linearConfig(hidden, executeLayers(s), units, trace::kVocabSize);
  const std::vector<int> heads = executePipelineHeads(kKeyHeadDim, s);
  int most = 0;
  for (size_t l = 0; l < heads.size(); ++l) {
    most = std::max(most, heads[l]);
    if (heads[l] == 0) c.layerTypes[l] = model::LayerType::Full;
  }
  c.linearNumKeyHeads = c.linearNumValueHeads = most;
  c.linearKeyHeadDim = kKeyHeadDim;
  return c;
}

}  // namespace

ExecuteSpec legSpec(int stepLimit) {
  ExecuteSpec spec;
  spec.memory = true;
  spec.atomics = true;
  spec.atomicRegrec = true;
  spec.multiply = true;
  spec.warpOps = true;
  spec.stepLimit = stepLimit;
  return spec;
}

Status pipelineExecutes(const machine::Program& program) {
  return pipelineExecutes(program, legSpec(kLegStepLimit));
}

Expected<LegModel> buildLegModel(int stepLimit, WeightStorage storage) {
  if (stepLimit < 1 || stepLimit > kLegStepLimit)
    return makeDiag(ErrorKind::Usage, "model leg: step limit " + std::to_string(stepLimit) +
                                          " outside 1.." + std::to_string(kLegStepLimit) + ")");
  constexpr int kScratchUnits = 16384;
  const ExecuteSpec spec = legSpec(stepLimit);
  QGPU_TRY(plan, planExecuteLayout(legConfig(0, kScratchUnits), spec));
  // A count-only build on the plan gives the widest layer, the MLP every layer then has.
  model::Qwen35Config config = legConfig(plan.hidden, kScratchUnits);
  int units = 0;
  {
    CircuitWeights counted(config, WeightStorage::CountOnly);
    FieldAllocator alloc = plan.allocator();
    QGPU_TRY(pipe, buildExecuteModel(counted, alloc, spec));
    for (int u : pipe.units) units = std::max(units, u);
  }
  config.intermediateSize = units;
  LegModel m;
  m.stepLimit = stepLimit;
  m.weights = std::make_unique<CircuitWeights>(config, storage);
  FieldAllocator alloc = plan.allocator();
  QGPU_TRY(pipe, buildExecuteModel(*m.weights, alloc, spec));
  m.pipeline = std::move(pipe);
  return m;
}

Status writeLegCheckpoint(const std::string& dir, int stepLimit) {
  QGPU_TRY(m, buildLegModel(stepLimit));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return makeDiag(ErrorKind::Io, dir + ": " + ec.message());
  QGPU_CHECK(m.weights->write(dir));
  nlohmann::json j = {{"pipeline", kLegPipeline},
                      {"stepLimit", stepLimit},
                      {"hidden", m.weights->config().hiddenSize},
                      {"layers", m.weights->config().layerTypes.size()},
                      {"mlpUnits", m.weights->config().intermediateSize}};
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
