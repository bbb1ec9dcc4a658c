// qgpu/harness/model_leg.cpp — see model_leg.h.
#include "harness/model_leg.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>

#include "circuit/leg.h"
#include "common/digest.h"
#include "harness/check.h"
#include "host/cuda/compile.h"
#include "oracle/interpreter.h"

namespace qgpu::harness {
namespace {

namespace fs = std::filesystem;
using trace::Family;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

std::string firstTokenDifference(const std::vector<trace::Token>& want, const std::vector<trace::Token>& got,
                                 size_t prompt) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  if (i == want.size() && i == got.size()) return "";
  int steps = 0;
  std::string record = "none";
  for (size_t k = 0; k < i && k < want.size(); ++k) {
    const Family f = trace::familyOf(want[k]);
    if (f == Family::Ex) ++steps;
    if (f != Family::C && f != Family::T) record = trace::tokenName(want[k]);
  }
  auto name = [](const std::vector<trace::Token>& t, size_t k) {
    return k < t.size() ? trace::tokenName(t[k]) : std::string("(end)");
  };
  return "token " + std::to_string(prompt + i) + " (run token " + std::to_string(i) +
         ", step " + std::to_string(steps) + ", after " + record + "): interpreter " +
         name(want, i) + ", model " + name(got, i);
}

const char* legStopName(LegStop s) {
  switch (s) {
    case LegStop::End: return "END";
    case LegStop::Fault: return "FAULT";
    case LegStop::Limit: return "LIMIT";
    case LegStop::Budget: return "token budget";
  }
  return "?";
}

std::vector<int64_t> LegRun::modelIds(bool withRun) const {
  std::vector<int64_t> ids;
  ids.reserve(prompt.size() + (withRun ? run.size() : 0));
  for (trace::Token t : prompt) ids.push_back(firstTraceRow + t);
  if (withRun)
    for (trace::Token t : run) ids.push_back(firstTraceRow + t);
  return ids;
}

namespace {

// The trace token of the model's row `row`, or TraceInvalid naming the run position when the row
// is outside the trace's rows (a text token: a circuit that wrote it is wrong).
Expected<trace::Token> traceTokenOfRow(int64_t row, int64_t firstTraceRow, size_t runIndex) {
  const int64_t t = row - firstTraceRow;
  if (t < 0 || t >= trace::kVocabSize)
    return makeDiag(ErrorKind::TraceInvalid,
                    "model leg: run token " + std::to_string(runIndex) +
                        ": the model's argmax is row " + std::to_string(row) +
                        ", outside the trace's rows [" + std::to_string(firstTraceRow) + ", " +
                        std::to_string(firstTraceRow + trace::kVocabSize) + ")");
  return static_cast<trace::Token>(t);
}

}  // namespace

Expected<LegRun> runLeg(model::Decoder& decoder, const machine::Program& program,
                        const machine::Launch& launch, size_t tokenBudget, int64_t firstTraceRow) {
  QGPU_CHECK(machine::verify(program, launch));
  QGPU_CHECK(circuit::pipelineExecutes(program));
  const int64_t vocab = decoder.config().vocabSize;
  if (firstTraceRow < 0 || firstTraceRow + trace::kVocabSize > vocab)
    return makeDiag(ErrorKind::Checkpoint, "model leg: the checkpoint's vocabulary has " +
                                               std::to_string(vocab) + " rows, the trace's " +
                                               std::to_string(trace::kVocabSize) + " from row " +
                                               std::to_string(firstTraceRow) + " do not fit");
  LegRun r;
  r.firstTraceRow = firstTraceRow;
  r.prompt = trace::encodePrompt(program, launch);
  decoder.reset();
  const std::vector<int64_t> ids = r.modelIds(/*withRun=*/false);
  Clock::time_point t0 = Clock::now();
  QGPU_TRY(first, decoder.forward(ids));
  r.prefillSeconds = since(t0);
  t0 = Clock::now();
  model::Logits logits = std::move(first);
  while (r.run.size() < tokenBudget) {
    const int64_t next = logits.argmax(0);
    QGPU_TRY(token, traceTokenOfRow(next, firstTraceRow, r.run.size()));
    r.run.push_back(token);
    const Family f = trace::familyOf(token);
    if (f == Family::End || f == Family::FaultTok || f == Family::Limit) {
      r.stop = f == Family::End ? LegStop::End : f == Family::FaultTok ? LegStop::Fault : LegStop::Limit;
      break;
    }
    QGPU_TRY(more, decoder.forward(std::span<const int64_t>(&next, 1)));
    logits = std::move(more);
  }
  r.decodeSeconds = since(t0);
  r.global = launch.global;
  if (r.stop == LegStop::Budget) return r;
  QGPU_TRY(events, trace::decodeRun(r.run, r.prompt.size()));
  r.global = circuit::finalGlobal(launch.global, events);
  return r;
}

Expected<std::string> replayOnTheChunkedPath(model::Decoder& decoder, const LegRun& leg) {
  std::vector<int64_t> ids = leg.modelIds(/*withRun=*/true);
  if (!ids.empty()) ids.pop_back();  // the last token is predicted, never fed
  decoder.reset();
  constexpr size_t kChunk = 512;
  for (size_t at = 0; at < ids.size(); at += kChunk) {
    const size_t n = std::min(kChunk, ids.size() - at);
    QGPU_TRY(logits, decoder.forward(std::span<const int64_t>(ids.data() + at, n), /*allLogits=*/true));
    for (size_t r = 0; r < n; ++r) {
      const size_t position = at + r;  // its argmax predicts token position + 1
      if (position + 1 < leg.prompt.size()) continue;
      const size_t i = position + 1 - leg.prompt.size();
      const int64_t row = logits.argmax(static_cast<int64_t>(r));
      if (row != leg.firstTraceRow + leg.run[i]) {
        auto predicted = traceTokenOfRow(row, leg.firstTraceRow, i);
        return "run token " + std::to_string(i) + ": the one-token path " +
               trace::tokenName(leg.run[i]) + ", the chunked path " +
               (predicted.ok() ? trace::tokenName(*predicted) : "row " + std::to_string(row));
      }
    }
  }
  return std::string();
}

Backend modelBackend(model::ComputeDtype dtype) {
  return dtype == model::ComputeDtype::BF16 ? Backend::ModelBf16 : Backend::ModelF32;
}

CaseResult refusedModelCase(const std::string& kernel, host::Compiler compiler, Backend leg, const Diag& why) {
  CaseResult r;
  r.kernel = kernel;
  r.compiler = host::compilerName(compiler);
  r.backend = leg;
  r.verdict = caseVerdict(why);
  r.error = why.kind;
  r.detail = why.str();
  return r;
}

Expected<std::unique_ptr<ModelSession>> ModelSession::open(const ModelLegOptions& options) {
  std::unique_ptr<ModelSession> s(new ModelSession());
  s->options_ = options;
  if (options.checkpoint.empty()) {
    s->tempDir_ = (fs::temp_directory_path() / ("qgpu_leg_" + std::to_string(::getpid()))).string();
    s->dir_ = s->tempDir_;
    QGPU_CHECK(circuit::writeLegCheckpoint(s->dir_, circuit::kLegStepLimit));
  } else {
    s->dir_ = options.checkpoint;
  }
  QGPU_TRY(leg, circuit::readLegCheckpoint(s->dir_));
  s->stepLimit_ = leg.stepLimit;
  s->firstTraceRow_ = leg.firstTraceRow;
  model::DecoderOptions decoderOptions{options.dtype, "cpu"};
  decoderOptions.blasThreads = options.blasThreads;
  QGPU_TRY(dec, model::Decoder::load(s->dir_, decoderOptions));
  s->decoder_ = std::move(dec);
  return s;
}

ModelSession::~ModelSession() {
  if (tempDir_.empty()) return;
  std::error_code ignored;  // best effort: the directory may be gone already
  fs::remove_all(tempDir_, ignored);
}

Expected<LegMargins> ModelSession::margins(const BuiltKernel& kernel) {
  const machine::Launch launch = kernel.image.toMachineLaunch();
  QGPU_TRY(leg, runLeg(*decoder_, kernel.program, launch, options_.tokenBudget, firstTraceRow_));
  LegMargins m;
  m.promptTokens = leg.prompt.size();
  m.runTokens = leg.run.size();
  m.stop = leg.stop;
  const std::vector<int64_t> ids = leg.modelIds(/*withRun=*/true);
  // The chunked path, in forwards of at most 256 tokens (a tapped forward holds every layer's
  // intermediates of every position), over the prompt and the run.
  // No sign fields: the decisions alone (the unit only scales sign fields).
  QGPU_TRY(prefill, circuit::MarginMeter::fromCheckpoint(dir_, {}, 1.0f));
  decoder_->reset();
  constexpr size_t kChunk = 256;
  for (size_t at = 0; at < ids.size(); at += kChunk) {
    const size_t n = std::min(kChunk, ids.size() - at);
    QGPU_TRY(tapped, decoder_->forwardTapped(std::span<const int64_t>(ids.data() + at, n), true));
    QGPU_CHECK(prefill.add(tapped.activations));
  }
  m.prefill = prefill.report();
  // The one-token path: the prompt untapped, then each run token alone.
  QGPU_TRY(decode, circuit::MarginMeter::fromCheckpoint(dir_, {}, 1.0f));
  decoder_->reset();
  QGPU_TRY(primed, decoder_->forward(std::span<const int64_t>(ids.data(), m.promptTokens)));
  (void)primed;
  for (size_t i = m.promptTokens; i < ids.size(); ++i) {
    QGPU_TRY(tapped, decoder_->forwardTapped(std::span<const int64_t>(ids.data() + i, 1)));
    QGPU_CHECK(decode.add(tapped.activations));
  }
  m.decode = decode.report();
  return m;
}

std::string ModelSession::description() const {
  const model::Qwen35Config& c = decoder_->config();
  std::ostringstream os;
  os << "the leg's pipeline (memory, spill slots, atomics, warp ops, mul and mad), " << c.layerTypes.size()
     << " layers, hidden " << c.hiddenSize << ", MLP " << c.intermediateSize << ", "
     << model::computeDtypeName(options_.dtype) << ", step limit " << stepLimit_ << ", "
     << (decoder_->weightBytes() + 500'000) / 1'000'000 << " MB of weights held"
     << (tempDir_.empty() ? ", from " + dir_ : ", built");
  return os.str();
}

CaseResult ModelSession::compare(const kernels::KernelSpec& spec, const BuiltKernel& kernel,
                                 std::array<uint32_t, machine::kGlobalWords>* final) {
  const Clock::time_point started = Clock::now();
  CaseResult r;
  r.kernel = spec.name;
  r.compiler = host::compilerName(kernel.compiler);
  r.backend = modelBackend(options_.dtype);
  r.ptxDigest = kernel.ptxDigest;
  r.machineBlocks = static_cast<int>(kernel.program.blocks.size());
  r.spillSlots = kernel.stats.spillSlots;
  auto finish = [&](Verdict v, std::string detail, std::optional<ErrorKind> error = {}) {
    r.verdict = v;
    r.detail = std::move(detail);
    r.error = error;
    r.wallSeconds = since(started);
    return r;
  };
  const machine::Launch launch = kernel.image.toMachineLaunch();
  lastTiming_.clear();
  auto leg = runLeg(*decoder_, kernel.program, launch, options_.tokenBudget, firstTraceRow_);
  if (!leg.ok()) {
    const Diag& d = leg.error();
    // A run the model wrote that is no trace is the model's failure, not the input's.
    const Verdict v = d.kind == ErrorKind::TraceInvalid ? Verdict::Mismatch : caseVerdict(d);
    return finish(v, d.str(), d.kind);
  }
  // The leg against itself first: the same tokens on the decoder's other path.
  auto replay = replayOnTheChunkedPath(*decoder_, *leg);
  if (!replay.ok()) return finish(Verdict::HarnessError, replay.error().str(), replay.error().kind);
  if (!replay->empty()) return finish(Verdict::Mismatch, "the model's two paths disagree: " + *replay);
  auto rate = [](size_t tokens, double seconds) {
    return fmt::format("{} tokens in {:.2f} s ({:.0f} tokens/s)", tokens, seconds,
                       seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0);
  };
  lastTiming_ = "prefill " + rate(leg->prompt.size(), leg->prefillSeconds) + ", decode " +
                rate(leg->run.size(), leg->decodeSeconds);
  r.traceDigest = digestString(trace::digest(leg->run));
  r.traceTokens = leg->run.size();
  r.steps = static_cast<uint64_t>(std::count_if(leg->run.begin(), leg->run.end(), [](trace::Token t) {
    return trace::familyOf(t) == Family::Ex;  // one EX per block execution
  }));
  if (final != nullptr) *final = leg->global;
  std::string check;
  if (options_.check) {
    oracle::RunOptions o;
    o.maxSteps = static_cast<uint64_t>(stepLimit_);
    auto interp = oracle::run(kernel.program, launch, o);
    if (!interp.ok()) return finish(Verdict::HarnessError, interp.error().str(), interp.error().kind);
    // A run the budget cut is compared as far as the model wrote it (the verdict below is then
    // inconclusive); a model that goes on where the interpreter ended still differs there.
    std::vector<trace::Token>& want = interp->trace;
    if (leg->stop == LegStop::Budget && want.size() > leg->run.size()) want.resize(leg->run.size());
    const std::string diff = firstTokenDifference(want, leg->run, leg->prompt.size());
    if (!diff.empty()) return finish(Verdict::Mismatch, "--check: " + diff);
    check = "; --check: " + std::to_string(leg->run.size()) + " run tokens, 0 differ";
  }
  switch (leg->stop) {
    case LegStop::Budget:
      return finish(Verdict::Inconclusive,
                    "no END after " + std::to_string(leg->run.size()) + " tokens (token budget)" + check);
    case LegStop::Limit:
      return finish(Verdict::Inconclusive,
                    "LIMIT: the model's step limit " + std::to_string(stepLimit_) + check,
                    ErrorKind::StepLimit);
    case LegStop::Fault:
      return finish(Verdict::Mismatch, "the model wrote FAULT" + check, ErrorKind::MachineFault);
    case LegStop::End:
      break;
  }
  auto differences = kernels::checkOutputs(spec, kernel.image, leg->global);
  if (!differences.ok()) return finish(Verdict::HarnessError, differences.error().str(), differences.error().kind);
  for (std::string& d : writesOutsideArrays(kernel.image, kernel.image.global, leg->global))
    differences->push_back(std::move(d));
  if (!differences->empty()) {
    std::string detail = differences->front();
    if (differences->size() > 1) detail += " (and " + std::to_string(differences->size() - 1) + " more)";
    return finish(Verdict::Mismatch, detail + check);
  }
  return finish(Verdict::Match, std::to_string(leg->run.size()) + " tokens generated (the chunked path agrees)" + check);
}

Expected<std::unique_ptr<ModelLegs>> ModelLegs::open(const ModelLegOptions& options,
                                                     const std::vector<Backend>& legs, int perLeg) {
  std::unique_ptr<ModelLegs> m(new ModelLegs());
  ModelLegOptions each = options;
  // Workers decode at once on their own threads: one BLAS thread each (DecoderOptions).
  if (perLeg > 1 || legs.size() > 1) each.blasThreads = 1;
  if (each.checkpoint.empty() && !legs.empty()) {
    m->tempDir_ = (fs::temp_directory_path() / ("qgpu_legs_" + std::to_string(::getpid()))).string();
    QGPU_CHECK(circuit::writeLegCheckpoint(m->tempDir_, circuit::kLegStepLimit));
    each.checkpoint = m->tempDir_;
  }
  for (Backend leg : legs) {
    if (!isModel(leg) || m->sessions_.count(leg)) continue;
    each.dtype = leg == Backend::ModelBf16 ? model::ComputeDtype::BF16 : model::ComputeDtype::F32;
    for (int n = 0; n < std::max(1, perLeg); ++n) {
      QGPU_TRY(session, ModelSession::open(each));
      m->free_[leg].push_back(session.get());
      m->sessions_[leg].push_back(std::move(session));
    }
  }
  return m;
}

ModelLegs::~ModelLegs() {
  sessions_.clear();
  if (tempDir_.empty()) return;
  std::error_code ignored;  // best effort
  fs::remove_all(tempDir_, ignored);
}

std::string ModelLegs::description() const {
  return sessions_.empty() ? std::string("no model legs") : sessions_.begin()->second.front()->description();
}

CaseResult ModelLegs::run(const kernels::KernelSpec& spec, host::Compiler compiler, Backend leg) {
  if (!sessions_.count(leg))
    return refusedModelCase(spec.name, compiler, leg,
                            makeDiag(ErrorKind::Internal, std::string("no session for ") + backendName(leg)));
  const BuildOptions build = circuitBuildOptions();
  auto built = buildKernel(spec, compiler, build);
  if (!built.ok()) return refusedModelCase(spec.name, compiler, leg, built.error());
  if (Status executes = circuit::pipelineExecutes(built->program); !executes.ok())
    return refusedModelCase(spec.name, compiler, leg, executes.error());
  ModelSession* session = nullptr;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    returned_.wait(lock, [&] { return !free_[leg].empty(); });
    session = free_[leg].back();
    free_[leg].pop_back();
  }
  CaseResult r = session->compare(spec, *built);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_[leg].push_back(session);
  }
  returned_.notify_one();
  r.programDigest = programDigest(built->program);
  r.inputDigest = inputDigest(built->image.global, built->image.params);
  r.gridX = built->image.gridX;
  r.blockX = built->image.blockX;
  return r;
}

}  // namespace qgpu::harness
