// qgpu/circuit/tests/record_emit_test.cpp — the output buffer and the record emitter
// (circuit/record_emit.h) through model/'s real decoder, fp32 and bf16.
//
// Inputs. Every sequence is a trace written by the interpreter's encoder (oracle::appendTrace):
//   - real runs of random programs (gen/program_gen.h, oracle::Execution event by event), the
//     prompt first; the outcome of each record comes from the step's OpEffects (per-lane register
//     values, predicate bits, word indices and values), never from the tokens;
//   - an edge run: hand-made StepEffects through the same encoder — 0, −1, INT_MIN, INT_MAX and
//     values of every length 1..7 chunks (±15/16, ±511/512, …), every mask 1..15 (WR with 1..4
//     lanes, or WU by the trace's rule), WP, MG/MS of 1..4 lanes with words 0..125, atomics (a
//     memrec then a regrec), NOPs.
// The token before each record is its record position p: it becomes a carrier row (the trace
// token's embedding + exec + the outcome, `writeCarrier`), lanes outside the mask filled with
// noise. The expected tokens at p+1 .. p+k+1 are the encoder's (the record, then the token after
// it), never the gadget's.
//
// What it pins down:
//   - teacher-forced, every record of every sequence: the argmax at p .. p+k is the trace's next
//     token, 0 wrong, in fp32 and bf16 on the prefill, decode and mixed paths (harness::run);
//   - greedy decoding (model::Decoder::generateGreedy: the prompt is the trace up to p, then the
//     model writes the record alone and the next token): 0 wrong tokens, fp32 and bf16;
//   - the logit margin: the top-vs-second gap at every checked position ≥ the stated 2Wλf;
//   - the full layout: after the last layer every non-quiet dim of every position is exactly ±1
//     at an identity probe (λ = 1);
//   - the failing twin (value j from lane j, not from the j-th set bit of the mask) writes wrong
//     tokens on the same inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <iostream>
#include <random>

#include "circuit/record_emit.h"
#include "circuit/tests/harness.h"
#include "circuit/tests/record_checks.h"
#include "circuit/tokens.h"
#include "gen/program_gen.h"
#include "oracle/interpreter.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;
using trace::Family;
using trace::Token;

constexpr int kHidden = 640;
constexpr int kHeads = 11;
constexpr int kUnits = 2560;
constexpr int64_t kCarrierRows = 3000;
constexpr int64_t kVocab = trace::kVocabSize + kCarrierRows;

model::Qwen35Config config() {
  model::Qwen35Config c = harness::config(kHidden, kRecordLayers, kUnits, kVocab);
  c.linearNumKeyHeads = kHeads;
  c.linearNumValueHeads = kHeads;
  c.linearKeyHeadDim = 64;
  c.linearValueHeadDim = 128;
  return c;
}

// ---- Inputs: traces of the interpreter's encoder and the outcomes of their records. ----

struct Record {
  size_t p = 0;  // the record position (the token before the tag)
  size_t k = 0;  // the record's tokens: p+1 .. p+k; p+k+1 is the next token
  RecordOutcome outcome;
};

struct Sequence {
  std::string name;
  std::vector<Token> trace;     // the encoder's tokens
  std::vector<int64_t> ids;     // the model's input: the trace with carriers at record positions
  std::vector<Record> records;  // records whose next token is in the sequence
};

bool isTag(Token t) {
  const Family f = trace::familyOf(t);
  return f == Family::Wr || f == Family::Wu || f == Family::Wp || f == Family::Mg ||
         f == Family::Ms || f == Family::Nop;
}

// Appends one event's tokens; for a step, its records with the outcomes from its OpEffects. The
// records of an op follow docs/trace.md "What one op writes" (memrec, regrec, predrec; NOP when
// none); the count is checked against the tags the encoder wrote.
void appendEvent(Sequence& s, const oracle::StepEvent& e, std::mt19937& rng) {
  const size_t before = s.trace.size();
  oracle::appendTrace(e, s.trace);
  if (e.kind != oracle::EventKind::Step && e.kind != oracle::EventKind::Fault) return;
  size_t at = before;
  while (trace::familyOf(s.trace[at]) != Family::Ex) ++at;
  at += 2;  // EX WM
  const oracle::StepEffects& fx = e.step;
  std::vector<RecordOutcome> outcomes;
  for (int i = 0; i < fx.numOps; ++i) {
    const oracle::OpEffects& op = fx.ops[static_cast<size_t>(i)];
    const bool memWrite =
        (op.mem == machine::MemEffect::Write || op.mem == machine::MemEffect::ReadWrite) &&
        op.exec != 0;
    RecordOutcome noise;
    for (int l = 0; l < kRecordLanes; ++l) {
      noise.values[static_cast<size_t>(l)] = static_cast<uint32_t>(rng());
      noise.words[static_cast<size_t>(l)] = static_cast<uint8_t>(rng() % 128);
    }
    // trace v5, v6: an atomic with a register destination and no executing lane, and a
    // multiply into a register, write NOP first (two static records: docs/trace.md
    // "Continuation rows").
    if (!memWrite && op.lateReg) outcomes.push_back(noise);
    if (memWrite) {
      RecordOutcome o = noise;
      o.mask = op.exec;
      for (int l = 0; l < kRecordLanes; ++l)
        if (op.exec >> l & 1) {
          o.values[static_cast<size_t>(l)] = op.values[static_cast<size_t>(l)];
          o.words[static_cast<size_t>(l)] = op.words[static_cast<size_t>(l)];
        }
      outcomes.push_back(o);
    }
    if (op.writesReg) {
      RecordOutcome o = noise;
      o.mask = fx.mask;
      for (int l = 0; l < kRecordLanes; ++l)
        if (fx.mask >> l & 1) o.values[static_cast<size_t>(l)] = op.regs[static_cast<size_t>(l)];
      outcomes.push_back(o);
    }
    if (op.writesPred) {
      RecordOutcome o = noise;
      o.mask = fx.mask;
      for (int l = 0; l < kRecordLanes; ++l)  // bit 0: the lane's predicate, inactive lanes 0
        o.values[static_cast<size_t>(l)] = (o.values[static_cast<size_t>(l)] & ~1u) |
                                           (fx.mask >> l & op.predBits >> l & 1u);
      outcomes.push_back(o);
    }
    if (!memWrite && !op.writesReg && !op.writesPred) outcomes.push_back(noise);
  }
  size_t tags = 0;
  for (size_t q = at; q < s.trace.size() && isTag(s.trace[q]); ++tags) {
    size_t end = q + 1;
    while (end < s.trace.size() && isChunkToken(s.trace[end])) ++end;
    if (tags < outcomes.size()) {
      Record r;
      r.p = q - 1;
      r.k = end - q;
      r.outcome = outcomes[tags];
      r.outcome.tag = s.trace[q];
      s.records.push_back(r);
    }
    q = end;
  }
  EXPECT_EQ(tags, outcomes.size()) << s.name << ": the encoder's records and the op effects differ";
}

// The next token of every record; records whose next token is cut off are dropped.
void finish(Sequence& s, size_t maxTokens) {
  if (s.trace.size() > maxTokens) s.trace.resize(maxTokens);
  std::erase_if(s.records, [&](const Record& r) { return r.p + r.k + 1 >= s.trace.size(); });
  for (Record& r : s.records) r.outcome.next = s.trace[r.p + r.k + 1];
}

// A real run of a random program: the prompt, then the run event by event (4 warps, divergence,
// 1–3 CTAs, atomics and shared memory as gen/ draws them).
Sequence realRun(uint64_t seed, size_t maxTokens, bool prompt) {
  Sequence s;
  s.name = "seed " + std::to_string(seed) + (prompt ? " with its prompt" : "");
  gen::Policy p;
  p.minBlockX = 9;
  p.maxBlockX = 16;
  p.maxGrid = 3;
  p.maxRegions = 4;
  p.divergentBarrierProb = 0;
  p.outOfRangeProb = 0;
  p.maxRegions = 3;          // a short prompt: few blocks, few initial words
  p.initNonzeroProb = 0.05;
  auto c = gen::generateProgram(p, seed);
  EXPECT_TRUE(c.ok()) << c.error().message;
  if (!c.ok()) return s;
  s.trace = prompt ? trace::encodePrompt(c->program, c->launch)
                  : std::vector<Token>{trace::single(Family::Run)};
  oracle::RunOptions o;
  o.maxSteps = c->stepBound;
  auto started = oracle::Execution::start(c->program, c->launch, o);
  EXPECT_TRUE(started.ok()) << started.error().message;
  if (!started.ok()) return s;
  oracle::Execution ex = std::move(started).value();
  std::mt19937 rng(static_cast<uint32_t>(seed));
  while (s.trace.size() < maxTokens + 64) {
    const oracle::StepEvent& e = ex.next();
    appendEvent(s, e, rng);
    if (ex.done()) break;
  }
  finish(s, maxTokens);
  return s;
}

// The edge run: hand-made steps through the encoder.
Sequence edgeRun(size_t maxTokens) {
  Sequence s;
  s.name = "edges";
  s.trace.push_back(trace::single(Family::Run));
  std::mt19937 rng(8);
  const std::vector<uint32_t> edges = {
      0u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 15u, 16u, static_cast<uint32_t>(-16),
      static_cast<uint32_t>(-17), 511u, 512u, static_cast<uint32_t>(-512),
      static_cast<uint32_t>(-513), (1u << 14) - 1, 1u << 14, (1u << 19) - 1, 1u << 19,
      (1u << 24) - 1, 1u << 24, (1u << 29) - 1, 1u << 29, static_cast<uint32_t>(-(1 << 29)) - 1,
      0x12345678u, 0xdeadbeefu, 1u, 2u};
  size_t nextEdge = 0;
  auto edge = [&] { return edges[nextEdge++ % edges.size()]; };
  uint64_t steps = 0;
  // Every mask, the wide ones first (bf16's per-commit prefix sees 1..4 lanes).
  for (int m : {15, 5, 11, 1, 6, 14, 9, 7, 2, 13, 3, 12, 4, 10, 8}) {
    oracle::StepEvent e;
    e.kind = oracle::EventKind::Step;
    e.stepsBefore = steps++;
    e.step.block = static_cast<uint8_t>(m % 32);
    e.step.warp = static_cast<uint8_t>(m % 4);
    e.step.mask = static_cast<uint8_t>(m);
    auto& ops = e.step.ops;
    int n = 0;
    auto op = [&]() -> oracle::OpEffects& {
      oracle::OpEffects& o = ops[static_cast<size_t>(n)];
      o.index = static_cast<uint8_t>(n++);
      o.exec = static_cast<uint8_t>(m);
      return o;
    };
    // Distinct per-lane values (WR unless one lane), then a uniform one (WU).
    for (int v = 0; v < 2; ++v) {
      oracle::OpEffects& o = op();
      o.writesReg = true;
      o.reg = static_cast<uint8_t>(1 + (m + v) % 15);
      for (int l = 0; l < kRecordLanes; ++l)
        if (m >> l & 1) o.regs[static_cast<size_t>(l)] = edge();
    }
    {
      oracle::OpEffects& o = op();
      o.writesReg = true;
      o.reg = static_cast<uint8_t>(1 + m % 15);
      const uint32_t v = edge();
      for (int l = 0; l < kRecordLanes; ++l)
        if (m >> l & 1) o.regs[static_cast<size_t>(l)] = v;
    }
    {
      oracle::OpEffects& o = op();
      o.writesPred = true;
      o.pred = static_cast<uint8_t>(m % 8);
      o.predBits = static_cast<uint8_t>(rng() & static_cast<unsigned>(m));
    }
    // A store and an atomic (memrec, then the old values as a regrec) over a subset of the lanes.
    for (int a = 0; a < 2; ++a) {
      oracle::OpEffects& o = op();
      const unsigned sub = static_cast<unsigned>(m) & static_cast<unsigned>(rng() % 16);
      o.exec = static_cast<uint8_t>(a == 0 || sub == 0 ? static_cast<unsigned>(m) : sub);
      o.mem = a == 0 ? machine::MemEffect::Write : machine::MemEffect::ReadWrite;
      o.space = (m + a) % 2 ? machine::Space::Global : machine::Space::Shared;
      const uint8_t words[] = {0, 125, 15, 16, 31, 32, 64, 100};
      for (int l = 0; l < kRecordLanes; ++l)
        if (o.exec >> l & 1) {
          o.words[static_cast<size_t>(l)] = words[(rng() % 8)];
          o.values[static_cast<size_t>(l)] = edge();
        }
      if (a == 1) {
        o.writesReg = true;
        o.reg = static_cast<uint8_t>(1 + (m * 7) % 15);
        for (int l = 0; l < kRecordLanes; ++l)
          if (m >> l & 1) o.regs[static_cast<size_t>(l)] = edge();
      }
    }
    op();  // a NOP (a load into r0)
    e.step.numOps = static_cast<uint8_t>(n);
    appendEvent(s, e, rng);
    if (m == 6) {
      oracle::StepEvent cta;
      cta.kind = oracle::EventKind::CtaStart;
      appendEvent(s, cta, rng);
    }
  }
  oracle::StepEvent end;
  end.kind = oracle::EventKind::Finished;
  appendEvent(s, end, rng);
  // The run is a trace: the decoder accepts it (WU exactly for equal values, counts, ranges).
  auto decoded = trace::decodeRun(std::span<const Token>(s.trace).subspan(1));
  EXPECT_TRUE(decoded.ok()) << decoded.error().message;
  finish(s, maxTokens);
  return s;
}

// ---- The checkpoint ----

struct Built {
  std::string dir;
  RecordEmitter emitter;
  std::unique_ptr<CircuitWeights> weights;
  std::vector<Sequence> sequences;
};

// Carrier rows for every record of every sequence (one row each), then the checkpoint.
Built build(const std::string& name, RecordEmitTwin twin, std::vector<Sequence> sequences) {
  Built b;
  b.weights = std::make_unique<CircuitWeights>(config());
  FieldAllocator alloc(kHidden);
  RecordEmitSpec s;
  s.tokens = planTokenLayout(alloc, kHidden).value();
  s.twin = twin;
  auto r = buildRecordEmitter(*b.weights, s);
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (!r.ok()) return b;
  b.emitter = r.value();
  EXPECT_TRUE(writeRecordEmbeddings(*b.weights, b.emitter).ok());
  int64_t row = trace::kVocabSize;
  for (Sequence& q : sequences) {
    q.ids.assign(q.trace.begin(), q.trace.end());
    for (const Record& rec : q.records) {
      EXPECT_LT(row, kVocab) << "too few carrier rows";
      if (row >= kVocab) break;
      auto w = writeCarrier(*b.weights, b.emitter, row, q.trace[rec.p], rec.outcome);
      EXPECT_TRUE(w.ok()) << w.error().message;
      q.ids[rec.p] = row++;
    }
  }
  b.sequences = std::move(sequences);
  b.dir = harness::write(*b.weights, "record_emit_" + name);
  return b;
}

std::vector<Sequence> inputs() {
  std::vector<Sequence> s;
  // 0: the edge run; 1: a real run without its prompt (the one-token paths and bf16 run these two
  // per commit); 2: a real run with its prompt (the prompt writes no record); 3..: more real runs.
  s.push_back(edgeRun(static_cast<size_t>(harness::inputs(900, 2000))));
  s.push_back(realRun(7000, static_cast<size_t>(harness::inputs(500, 1500)), false));
  s.push_back(realRun(7001, static_cast<size_t>(harness::inputs(1000, 2000)), true));
  const int more = harness::inputs(2, 10);
  for (int i = 0; i < more; ++i)
    s.push_back(realRun(7002 + static_cast<uint64_t>(i), static_cast<size_t>(harness::inputs(500, 1500)), false));
  return s;
}

const Built& exact() {
  static const Built b = build("exact", RecordEmitTwin::None, inputs());
  return b;
}

using Tally = records::Forced;

// Teacher-forced: the logits of `ids` on `path`, checked at p .. p+k of every record that lies
// within the first `n` tokens.
void checkForced(model::Decoder& dec, const Sequence& s, Path path, size_t n, Tally& t) {
  std::vector<int64_t> ids(s.ids.begin(), s.ids.begin() + static_cast<std::ptrdiff_t>(std::min(n, s.ids.size())));
  const auto rows = harness::run(dec, ids, path, trace::kVocabSize);
  for (const Record& r : s.records)
    records::checkForced(t, rows, s.trace, {r.p, r.k}, s.name + " " + trace::tokenName(r.outcome.tag));
}

TEST(RecordEmitter, InputsCoverEveryRecordKindMaskAndValueLength) {
  const Built& b = exact();
  ASSERT_GT(b.emitter.logitMargin, 0) << "the emitter was not built";
  std::set<Family> kinds;
  std::set<int> lengths, wrLanes;
  int records = 0;
  for (const Sequence& s : b.sequences) {
    const size_t run = std::find(s.trace.begin(), s.trace.end(), trace::single(Family::Run)) - s.trace.begin();
    std::cout << "[record emit] " << s.name << ": " << s.trace.size() << " tokens (prompt " << run + 1
              << "), " << s.records.size() << " records\n";
    for (const Record& r : s.records) {
      ++records;
      kinds.insert(trace::familyOf(r.outcome.tag));
      if (trace::familyOf(r.outcome.tag) == Family::Wr) wrLanes.insert(std::popcount(r.outcome.mask));
      for (size_t q = r.p + 1; q <= r.p + r.k; ++q)
        if (trace::familyOf(s.trace[q]) == Family::T) {
          size_t c = q;
          while (c > r.p + 1 && trace::familyOf(s.trace[c - 1]) == Family::C) --c;
          lengths.insert(static_cast<int>(q - c + 1));
        }
    }
  }
  EXPECT_EQ(kinds.size(), 6u);
  EXPECT_EQ(lengths.size(), 7u);
  EXPECT_EQ(wrLanes, (std::set<int>{2, 3, 4}));
  std::cout << "[record emit] " << b.sequences.size() << " sequences, " << records
            << " records; heads per layer " << b.emitter.heads[0] << ", " << b.emitter.heads[1]
            << ", 0, 0; MLP units 0, " << b.emitter.units[1] << ", " << b.emitter.units[2] << ", "
            << b.emitter.units[3] << "; residual dims " << b.emitter.dims << " of " << kHidden
            << "; widest AND " << b.emitter.maxFanIn << " literals; stated margin "
            << b.emitter.logitMargin << "\n";
}

TEST(RecordEmitter, TeacherForcedEveryRecordTokenIsTheTracesOnEveryPathAndDtype) {
  const Built& b = exact();
  ASSERT_GT(b.emitter.logitMargin, 0) << "the emitter was not built";
  for (ComputeDtype dtype : harness::kDtypes) {
    auto dec = harness::load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    for (Path path : harness::kPaths) {
      // Per commit: fp32 prefill everything; the one-token paths and bf16 a prefix (the mixed
      // path's prompt and continuation cross the 64-token chunk boundary).
      // fp32 decode / mixed: 150 tokens of the edge run and the first real run; bf16 prefill 250
      // and 150 tokens of them, bf16 decode 100 and mixed 130 tokens of the edge run (the mixed
      // path's prompt of 65 tokens crosses the chunk boundary).
      const bool full = harness::fullInputs() || (dtype == ComputeDtype::F32 && path == Path::Prefill);
      const bool bf16 = dtype == ComputeDtype::BF16;
      Tally t;
      for (size_t i = 0; i < b.sequences.size(); ++i) {
        if (!full && i > (bf16 && path != Path::Prefill ? 0u : 1u)) break;
        const size_t n = full                       ? SIZE_MAX
                         : !bf16                    ? 150
                         : path == Path::Decode     ? 100
                         : path == Path::Mixed      ? 130
                         : i == 0                   ? 250
                                                    : 150;
        checkForced(*dec, b.sequences[i], path, n, t);
      }
      EXPECT_GE(t.records, 8);  // the smallest per-commit input: bf16 decode, 100 tokens
      EXPECT_EQ(t.wrong, 0) << computeDtypeName(dtype) << " " << harness::pathName(path) << ": " << t.first;
      EXPECT_GE(t.minGap, b.emitter.logitMargin) << computeDtypeName(dtype) << " " << harness::pathName(path);
      std::cout << "[record emit forced] " << computeDtypeName(dtype) << " " << harness::pathName(path)
                << ": " << t.records << " records, " << t.positions << " positions, " << t.wrong
                << " wrong; smallest gap " << t.minGap << " (stated " << b.emitter.logitMargin << ")\n";
    }
  }
}

TEST(RecordEmitter, GreedyDecodingWritesTheRecordAndTheNextToken) {
  const Built& b = exact();
  ASSERT_GT(b.emitter.logitMargin, 0) << "the emitter was not built";
  for (ComputeDtype dtype : harness::kDtypes) {
    auto dec = harness::load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    records::Greedy g;
    // Per commit: fp32 every 8th record with p < 400 of the edge run and the first real run and
    // every 12th of the run after its prompt, bf16 every 8th with p < 150 of the first two (prompts
    // cross the 64-token chunk boundary); QGPU_CIRCUIT_FULL every record of every sequence.
    const bool full = harness::fullInputs();
    const size_t every = full ? 1 : 8;
    const size_t below = full ? SIZE_MAX : dtype == ComputeDtype::F32 ? 400 : 150;
    for (size_t i = 0; i < b.sequences.size(); ++i) {
      const bool withPrompt = i == 2;  // fp32 per commit: every 12th record after the prompt
      if (!full && (i > 2 || (withPrompt && dtype == ComputeDtype::BF16))) break;
      const Sequence& s = b.sequences[i];
      for (size_t j = 0; j < s.records.size(); j += withPrompt && !full ? 12 : every) {
        const Record& r = s.records[j];
        if (r.p >= below && !withPrompt) continue;
        records::checkGreedy(g, *dec, s.ids, s.trace, {r.p, r.k}, s.name);
      }
    }
    EXPECT_GT(g.records, 3);
    EXPECT_EQ(g.wrong, 0) << computeDtypeName(dtype) << ": " << g.first;
    std::cout << "[record emit greedy] " << computeDtypeName(dtype) << ": " << g.records
              << " records, " << g.tokens << " generated tokens, " << g.wrong << " wrong\n";
  }
}

TEST(RecordEmitter, EveryDimAfterTheLastLayerIsExactlyPlusMinusOne) {
  const Built& b = exact();
  ASSERT_GT(b.emitter.logitMargin, 0) << "the emitter was not built";
  CircuitWeights probed = *b.weights;
  ASSERT_TRUE(probed.fill("lm_head.weight", 0).ok());
  int probes = 0;
  for (int d = 0; d < kHidden; ++d) {
    if (d >= b.emitter.quiet.offset && d < b.emitter.quiet.offset + b.emitter.quiet.dims) continue;
    if (d == b.emitter.heavy.at(0)) continue;  // +2u by design
    ASSERT_TRUE(probed.set("lm_head.weight", probes++, d, 1.0f).ok());
  }
  const std::string dir = harness::write(probed, "record_emit_layout");
  const Sequence& s = b.sequences[0];
  const std::vector<int64_t> ids(s.ids.begin(), s.ids.begin() + std::min<std::ptrdiff_t>(300, static_cast<std::ptrdiff_t>(s.ids.size())));
  for (ComputeDtype dtype : harness::kDtypes) {
    auto dec = harness::load(dir, dtype);
    ASSERT_NE(dec, nullptr);
    const std::vector<int64_t> part(ids.begin(), ids.begin() + (dtype == ComputeDtype::F32 ? static_cast<std::ptrdiff_t>(ids.size()) : 100));
    const auto rows = harness::run(*dec, part, Path::Prefill, probes);
    const harness::LayoutCheck c = harness::checkLayout(rows, 1.0f);
    EXPECT_TRUE(c.ok()) << computeDtypeName(dtype) << ": " << c.summary();
    std::cout << "[record emit λ] " << computeDtypeName(dtype) << ": " << c.summary() << "\n";
  }
}

TEST(RecordEmitter, FailingTwinTakingValueJFromLaneJWritesWrongTokens) {
  std::vector<Sequence> in;
  in.push_back(edgeRun(900));
  in.push_back(realRun(7000, 500, false));
  const Built b = build("twin", RecordEmitTwin::LaneByValueIndex, std::move(in));
  ASSERT_GT(b.emitter.logitMargin, 0) << "the twin was not built";
  auto dec = harness::load(b.dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  Tally t;
  for (const Sequence& s : b.sequences) checkForced(*dec, s, Path::Prefill, SIZE_MAX, t);
  EXPECT_GT(t.wrong, 0);
  std::cout << "[record emit twin lane = value index] " << t.wrong << " wrong of " << t.positions
            << " positions; first: " << t.first << "\n";
}

}  // namespace
}  // namespace qgpu::circuit
