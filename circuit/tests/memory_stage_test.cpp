// qgpu/circuit/tests/memory_stage_test.cpp — the memory stage (circuit/memory_stage.h) run through
// model/'s real decoder (circuit/tests/harness.h): the data memories' five layers with the stage's
// address, fault, load and memrec units, fp32 and bf16, the chunked prefill, the recurrent decode
// and the mixed path.
//
// What it pins down: at probe positions (carrier rows holding a memory op's inputs as test fields:
// head word, offset word, sharedWords, exec, per lane src0 and src1) between the records of a
// hand-made trace that writes both memories, every lane's byte address, fault bit and loaded word,
// the op's fault bit, and for stores its memrec (per-lane values, words, mask, tag) are exactly ±1
// at the probe and equal to:
//   - address: src0 + offset mod 2^32 (docs/machine.md §4, written out here);
//   - fault bits: the interpreter (oracle::run) on a one-op program per lane — the op with src0 an
//     immediate, the case's offset, space and sharedWords — faults or not (never the gadget);
//   - the loaded word: the test's array model of the memories written from the records
//     (docs/trace.md: GW after GMEM, the k-th pair of MG / MS; shared cleared at CTA);
//   - a store's or atomic's value and the old word each lane sees (atomOld): the interpreter's
//     lane-serial loop (execMem) on a copy of the model's words — lanes 0..3 in order, each lane's
//     new word from oracle::evalSubwordStore / oracle::evalAtomic of the word as the lanes before
//     it left it — where the op does not fault; words addr/4; mask = exec; tag MG(e) / MS(e), NOP
//     for e = 0.
// atom.inc, atom.cas and atom.dec also run on their own streams (knownWordStream): global words of
// known value (0, 15, 16, the top ones), lanes on one or two of them with operands near the word
// (inc: M − 1 .. M + 4, 0..3 or the top; dec: M − 1 .. M − 5, 0..3, M .. M + 2 or the top three;
// cas: the word or an earlier lane's swap value), so that runs of lanes on one word cross the
// wrap (or swap) after every number of earlier lanes. The spill ops (ldl, stl) run on a stream of
// their own (spillStream): launches of 1..16 threads, slots up to the last shared word, every warp,
// each lane's slot word the interpreter's (its step effects on a one-op program under the case's
// launch), an MS record writing each ldl's slot words before it.
// Addresses: random and every edge — 0, the last word, one past it (global 504, shared
// 4·sharedWords), a negative offset, wrap-around, every misalignment for each access width,
// sharedWords 0 and 126, bits above the word index; a third of the cases put 2–4 executing lanes on
// one or two valid words (random sub-word offsets, random values).
// Failing twins: the shared bound off by one (faults at w > sharedWords) gets fault bits wrong;
// the chain taking the first earlier same-word lane instead of the nearest gets values wrong;
// atom.inc's wrap test at M instead of M + i gets the increments wrong; atom.cas's test after a
// swap against M and atom.dec's test after a wrap against b_k (not b_k − r) likewise; the spill
// slot's word without the warp reads and writes the wrong slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <iostream>
#include <random>

#include "circuit/memory_stage.h"
#include "circuit/tests/harness.h"
#include "circuit/tests/record_streams.h"
#include "circuit/tokens.h"
#include "oracle/interpreter.h"
#include "oracle/machine.h"
#include "oracle/semantics.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;
using machine::Op;
using machine::Space;
using trace::Family;
using trace::Token;

constexpr int kHidden = 5376;  // the fields take 4,876
constexpr int kLanes = 4;
constexpr int kProbes = 96;
constexpr int kIncProbes = 64;  // atom.inc on words of known value (knownWordStream)
constexpr int kCasProbes = 64;  // atom.cas on them
constexpr int kDecProbes = 64;  // atom.dec on them
constexpr int kSpillProbes = 48;  // ldl / stl (spillCase)
constexpr int kFirstSpillProbe = kProbes + kIncProbes + kCasProbes + kDecProbes;
constexpr int kAllProbes = kFirstSpillProbe + kSpillProbes;
constexpr int kPerLane = 32 + 1 + 32 + 32 + 32;  // addr, laneFault, load, memrec value, atomOld
constexpr int kProbeLogits = kLanes * kPerLane + 1 + 32 + 32;  // + fault, wordMask, tag
constexpr int64_t kVocab = std::max<int64_t>({trace::kVocabSize + kAllProbes, kProbeLogits});
constexpr float kUnit = 16;
constexpr int kUnits = 7168;  // the widest MLP: L+9's 7,146 (L+4: the data memories' 328 + 5,532)

// One probe's memory op.
struct Case {
  Op op = Op::Ld;
  Space space = Space::Global;
  int sharedWords = 0;
  int32_t offset = 0;                        // a spill op's slot
  int spillSlots = 0, blockX = 1, warp = 0;  // the spill ops' launch and warp
  uint8_t exec = 0xf;
  std::array<uint32_t, kLanes> src0{}, src1{}, src2{};  // src2: atom.cas's swap value
};

uint32_t packedHead(Op op, Space space) {
  uint32_t h = 0;
  for (const trace::PackedField& f : trace::packedLayout(trace::PackedWord::OpHead)) {
    const std::string n = f.name;
    if (n == "opcode") h |= static_cast<uint32_t>(op) << f.offset;
    if (n == "space") h |= static_cast<uint32_t>(space == Space::Shared) << f.offset;
    if (n == "dst") h |= 1u << f.offset;
  }
  return h;
}

// Probe i's case: cycles through the ops and both spaces; lane addresses at the edges of the
// space, misaligned, negative offsets, or random.
constexpr int kChainedProbe = kProbes - 1;  // two lanes' st.b8 into one word
constexpr uint32_t kChainedWord = 10;

// The kinds whose memrec value the stage builds (memory_stage.h): every store and atomic of
// isa.def; an op outside them would be counted and left unchecked.
bool valueBuilt(Op op) {
  return op == Op::St || op == Op::StB8 || op == Op::StB16 || op == Op::AtomAnd ||
         op == Op::AtomOr || op == Op::AtomXor || op == Op::AtomExch || op == Op::AtomAdd ||
         op == Op::AtomMinU || op == Op::AtomMaxU || op == Op::AtomMinS || op == Op::AtomMaxS ||
         op == Op::AtomInc || op == Op::AtomCas || op == Op::AtomDec || op == Op::StLocal;
}

bool isSpill(Op op) {
  return machine::opInfo(op).cls == machine::OpClass::Local;
}

// atom.inc's operands on same-word lanes, one class per case: small (a wrap, then the small words
// a wrapped word passes through), high (runs of unwrapped lanes), random. The words here are the
// stream's (often never written: 0); the known words' stream below sets words of known value and
// crosses the wrap after every number of earlier lanes.
uint32_t incOperand(std::mt19937& rng, int mode) {
  static const uint32_t kSmall[] = {0u, 1u, 2u, 3u};
  static const uint32_t kHigh[] = {16u,         17u,         18u,         19u,
                                   0xfffffff1u, 0xfffffff2u, 0xfffffff3u, 0xffffffffu};
  if (mode == 0) return kSmall[rng() % std::size(kSmall)];
  if (mode == 1) return kHigh[rng() % std::size(kHigh)];
  return streams::randomValue(rng);
}

// The global words knownWordStream writes before its probes: zero, the edges around 16, the top.
constexpr std::array<uint32_t, 8> kIncWords = {0u,          15u,         16u,         0xfffffff0u,
                                               0xfffffffeu, 0xffffffffu, 0x7fffffffu, 2u};

// A probe on the known words: `op` by all lanes or a random subset, the lanes on one or two of the
// words; `operands` sets lane l's sources from the word's value M.
template <typename Operands>
Case knownWordCase(Op op, uint32_t seed, Operands operands) {
  std::mt19937 rng(seed);
  Case c;
  c.op = op;
  c.exec = static_cast<uint8_t>(rng() % 4 == 0 ? rng() % 16 : 15);
  const uint32_t w0 = rng() % kIncWords.size(), w1 = rng() % kIncWords.size();
  const bool one = rng() % 3 != 0;
  for (int l = 0; l < kLanes; ++l) {
    const uint32_t w = one || rng() % 2 ? w0 : w1;
    c.src0[static_cast<size_t>(l)] = 4 * w;
    operands(c, l, kIncWords[w], rng);
  }
  return c;
}

// atom.inc probe j: each operand b near the word's value M (M − 1 .. M + 4, so that M + i ≥ b
// turns on after i = 0..3 earlier lanes or never), a small word a wrapped word passes through
// (0..3), or the top.
Case incCase(int j) {
  return knownWordCase(Op::AtomInc, static_cast<uint32_t>(7000 + j),
                       [](Case& c, int l, uint32_t m, std::mt19937& rng) {
                         const uint32_t pick = rng() % 20;
                         c.src1[static_cast<size_t>(l)] = pick < 12   ? m + rng() % 6 - 1
                                                          : pick < 17 ? rng() % 4
                                                                      : 0xffffffffu;
                       });
}

// atom.cas probe j: each swap value c small and distinct per probe lane, each compare value b the
// word's value M, an earlier lane's c (so that a chain of swaps runs through the lanes), or random.
Case casCase(int j) {
  return knownWordCase(Op::AtomCas, static_cast<uint32_t>(9000 + j),
                       [j](Case& c, int l, uint32_t m, std::mt19937& rng) {
                         const auto lane = static_cast<size_t>(l);
                         c.src2[lane] =
                             100 + 10 * static_cast<uint32_t>(j % 7) + static_cast<uint32_t>(l);
                         const uint32_t pick = rng() % 10;
                         c.src1[lane] = pick < 4 || l == 0 ? m
                                        : pick < 8         ? c.src2[rng() % lane]
                                                           : streams::randomValue(rng);
                       });
}

// atom.dec probe j: each operand b below the word's value M (M − 1 .. M − 5, so that M − i > b
// turns on after some i earlier lanes), small (0..3: the words after a wrap reach 0 or stay above
// a later lane's b), at or above M (no wrap until the word reaches 0), or the top (b + i
// overflows).
Case decCase(int j) {
  return knownWordCase(Op::AtomDec, static_cast<uint32_t>(11000 + j),
                       [](Case& c, int l, uint32_t m, std::mt19937& rng) {
                         const uint32_t pick = rng() % 20;
                         c.src1[static_cast<size_t>(l)] = pick < 7    ? m - 1 - rng() % 5
                                                          : pick < 13 ? rng() % 4
                                                          : pick < 17 ? m + rng() % 3
                                                                      : 0xffffffffu - rng() % 3;
                       });
}

// A spill op (ldl or stl) under a launch that fits: blockX 1..16 threads, the slots after
// sharedWords user words (sharedWords + spillSlots·blockX ≤ 126, so often the last word), a slot
// and a warp that exist, the lanes of that warp's threads executing (or a random subset of them,
// or none); src0 is stl's value.
Case spillCase(int j) {
  std::mt19937 rng(static_cast<uint32_t>(7000 + j));
  Case c;
  c.op = j % 2 == 0 ? Op::StLocal : Op::LdLocal;
  c.space = (j / 2) % 2 ? Space::Shared : Space::Global;  // the head's space bit: ignored
  c.blockX = j % 8 == 0 ? machine::kMaxThreadsPerBlock : 1 + static_cast<int>(rng() % 16);
  const int most = machine::kSharedWords / c.blockX;
  c.spillSlots = j % 3 == 0 ? most : 1 + static_cast<int>(rng() % static_cast<uint32_t>(most));
  const int room = machine::kSharedWords - c.spillSlots * c.blockX;
  c.sharedWords = j % 4 == 0 ? room : static_cast<int>(rng() % static_cast<uint32_t>(room + 1));
  c.offset =
      j % 5 == 0 ? c.spillSlots - 1 : static_cast<int>(rng() % static_cast<uint32_t>(c.spillSlots));
  const int warps = (c.blockX + kLanes - 1) / kLanes;
  c.warp = j % 6 == 0 ? warps - 1 : static_cast<int>(rng() % static_cast<uint32_t>(warps));
  uint8_t threads = 0;  // the warp's lanes that are threads of the CTA
  for (int l = 0; l < kLanes; ++l)
    if (kLanes * c.warp + l < c.blockX) threads |= static_cast<uint8_t>(1u << l);
  c.exec = j % 11 == 5 ? 0 : j % 3 == 1 ? static_cast<uint8_t>(threads & rng()) : threads;
  for (int l = 0; l < kLanes; ++l) {
    c.src0[static_cast<size_t>(l)] = streams::randomValue(rng);
    c.src1[static_cast<size_t>(l)] = streams::randomValue(rng);
    c.src2[static_cast<size_t>(l)] = streams::randomValue(rng);
  }
  return c;
}

Case probeCase(int i) {
  if (i >= kFirstSpillProbe) return spillCase(i - kFirstSpillProbe);
  if (i >= kProbes + kIncProbes + kCasProbes) return decCase(i - kProbes - kIncProbes - kCasProbes);
  if (i >= kProbes + kIncProbes) return casCase(i - kProbes - kIncProbes);
  if (i >= kProbes) return incCase(i - kProbes);
  std::mt19937 rng(static_cast<uint32_t>(1000 + i));
  if (i == kChainedProbe) {
    Case c;
    c.op = Op::StB8;
    c.exec = 0x3;
    c.src0 = {4 * kChainedWord, 4 * kChainedWord + 1, 0, 0};
    c.src1 = {0x5a, 0xc3, 0, 0};
    return c;
  }
  // Early probes cover every built kind (the short bf16 / decode prefixes see only those).
  // 20 entries: each lands on every residue of i mod 3 (the same-word cases are i % 3 == 1).
  static const Op kOps[] = {Op::Ld,       Op::AtomInc, Op::AtomMinU, Op::AtomAdd,  Op::St,
                            Op::AtomMaxS, Op::AtomXor, Op::AtomMinS, Op::StB8,     Op::AtomMaxU,
                            Op::AtomAnd,  Op::AtomInc, Op::StB16,    Op::AtomOr,   Op::AtomExch,
                            Op::AtomAdd,  Op::AtomDec, Op::AtomMinU, Op::AtomMaxS, Op::AtomCas};
  Case c;
  c.op = kOps[static_cast<size_t>(i) % std::size(kOps)];
  if (i % 3 == 1) {
    // Same-word lanes: 2–4 executing lanes on one or two valid words, random sub-word offsets
    // for st.b8 / st.b16, random values, any offset; never faulting.
    c.space = rng() % 2 ? Space::Shared : Space::Global;
    c.sharedWords = 1 + static_cast<int>(rng() % 126);
    const uint32_t words = c.space == Space::Global ? machine::kGlobalWords
                                                    : static_cast<uint32_t>(c.sharedWords);
    c.exec = static_cast<uint8_t>(rng() % 4 == 0 ? 3 + 4 * (rng() % 4) : 15);
    const int32_t offsets[] = {0, 4, -4, 8, -400, 500};
    c.offset = offsets[rng() % std::size(offsets)];
    const uint32_t w0 = static_cast<uint32_t>(rng() % words);
    const std::array<uint32_t, 2> word = {w0, static_cast<uint32_t>(rng() % words)};
    const bool one = rng() % 2 == 0;  // every lane on one word
    const int incMode = static_cast<int>(rng() % 3);
    for (int l = 0; l < kLanes; ++l) {
      const uint32_t sub = c.op == Op::StB8 ? rng() % 4 : c.op == Op::StB16 ? 2 * (rng() % 2) : 0;
      const uint32_t a = 4u * word[one ? 0 : rng() % 2] + sub;
      c.src0[static_cast<size_t>(l)] = a - static_cast<uint32_t>(c.offset);
      c.src1[static_cast<size_t>(l)] = c.op == Op::AtomInc || c.op == Op::AtomDec
                                           ? incOperand(rng, incMode)
                                           : streams::randomValue(rng);
      // atom.cas: half the lanes compare with an earlier lane's swap value.
      c.src2[static_cast<size_t>(l)] = streams::randomValue(rng);
      if (c.op == Op::AtomCas && l > 0 && rng() % 2 == 0)
        c.src1[static_cast<size_t>(l)] = c.src2[rng() % static_cast<size_t>(l)];
    }
    return c;
  }
  c.space = (i / 7) % 2 ? Space::Shared : Space::Global;
  static const int kShared[] = {0, 1, 6, 40, 125, 126};
  c.sharedWords = i % 5 == 0 ? kShared[static_cast<size_t>(i / 5) % std::size(kShared)]
                             : static_cast<int>(rng() % 127);
  const int words = c.space == Space::Global ? machine::kGlobalWords : c.sharedWords;
  c.exec = static_cast<uint8_t>(i % 9 == 4 ? 0 : i % 3 == 0 ? 15 : rng() % 16);
  const int32_t offsets[] = {0, 4, -4, 8, -400, 12, 3, 2, 1, 500, -1};
  c.offset = i % 4 == 0 ? 0 : offsets[rng() % std::size(offsets)];
  for (int l = 0; l < kLanes; ++l) {
    uint32_t a = 0;  // the byte address wanted
    switch ((i + 3 * l) % 10) {
      case 0: a = 0; break;
      case 1: a = 4u * static_cast<uint32_t>(words > 0 ? words - 1 : 0); break;  // last word
      case 2: a = 4u * static_cast<uint32_t>(words); break;                      // one past
      case 3: a = 4u * (rng() % 126) + 1 + rng() % 3; break;                     // misaligned
      case 4: a = 4u * (rng() % 126) + 2; break;                                  // halfword
      case 5: a = static_cast<uint32_t>(rng()); break;                            // anywhere
      case 6: a = 0xfffffffcu; break;                                             // −4
      case 7: a = 4u * (rng() % 128) + 512u * (1 + rng() % 3); break;             // high bits
      default: a = 4u * (rng() % static_cast<uint32_t>(std::max(words, 1))) + (rng() % 4 == 0 ? rng() % 4 : 0);
    }
    c.src0[static_cast<size_t>(l)] = a - static_cast<uint32_t>(c.offset);
    c.src1[static_cast<size_t>(l)] = streams::randomValue(rng);
    c.src2[static_cast<size_t>(l)] = streams::randomValue(rng);
  }
  return c;
}

uint32_t address(const Case& c, int l) {
  return c.src0[static_cast<size_t>(l)] + static_cast<uint32_t>(c.offset);
}

// The shared words a spill op's lanes access, from the interpreter: a one-block program of the
// op (ldl into r1, or stl of 0) under the case's launch, the effects of the case's warp's step.
std::array<uint32_t, kLanes> interpreterSpillWords(const Case& c) {
  machine::Instr in;
  in.op = c.op;
  in.dst = c.op == Op::LdLocal ? 1 : 0;
  in.offset = c.offset;
  if (c.op == Op::StLocal) in.src[0] = machine::Operand::i(0);
  machine::Program p;
  p.name = "spill";
  p.sharedWords = static_cast<uint8_t>(c.sharedWords);
  p.spillSlots = static_cast<uint8_t>(c.spillSlots);
  machine::Block b;
  b.ops.push_back(in);
  p.blocks.push_back(b);
  machine::Launch launch;
  launch.blockX = static_cast<uint32_t>(c.blockX);
  std::array<uint32_t, kLanes> words{};
  auto run = oracle::Execution::start(p, launch);
  EXPECT_TRUE(run.ok()) << run.error().message;
  if (!run.ok()) return words;
  for (;;) {
    const oracle::StepEvent& e = run.value().next();
    if (e.kind == oracle::EventKind::Step && e.step.warp == c.warp) {
      for (int l = 0; l < kLanes; ++l)
        words[static_cast<size_t>(l)] = e.step.ops[0].words[static_cast<size_t>(l)];
      return words;
    }
    if (e.kind != oracle::EventKind::Step && e.kind != oracle::EventKind::CtaStart) {
      ADD_FAILURE() << "the interpreter ran no step of warp " << c.warp;
      return words;
    }
  }
}

// Whether the interpreter faults on this lane's access: a one-op program of one thread.
bool interpreterFaults(const Case& c, int l) {
  machine::Instr in;
  in.op = c.op;
  in.dst = machine::writesReg(c.op) ? 1 : 0;
  in.space = c.space;
  in.offset = c.offset;
  in.src[0] = machine::Operand::i(c.src0[static_cast<size_t>(l)]);
  for (int k = 1; k < machine::numGeneralSources(c.op); ++k)
    in.src[static_cast<size_t>(k)] =
        machine::Operand::i((k == 1 ? c.src1 : c.src2)[static_cast<size_t>(l)]);
  machine::Program p;
  p.name = "probe";
  p.sharedWords = static_cast<uint8_t>(c.sharedWords);
  machine::Block b;
  b.ops.push_back(in);
  p.blocks.push_back(b);
  machine::Launch launch;
  auto r = oracle::run(p, launch);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() && r.value().status == oracle::RunStatus::Fault;
}

struct Inputs {
  Field head, offset, sharedWords, blockX, warp, exec;
  std::array<MemoryLaneIn, kLanes> lanes;
};

struct Bench {
  std::string dir;
  MemoryStage stage;
  int dims = 0;
};

Bench build(const std::string& name, MemoryStageTwin twin = MemoryStageTwin::None) {
  model::Qwen35Config cfg = harness::config(kHidden, kMemoryStageLayers, kUnits, kVocab);
  cfg.linearNumKeyHeads = cfg.linearNumValueHeads = 16;
  cfg.linearKeyHeadDim = 64;
  CircuitWeights w(cfg);
  FieldAllocator alloc(kHidden);
  const TokenLayout tokens = planTokenLayout(alloc, kHidden).value();
  EXPECT_TRUE(writeTokenEmbeddings(w, tokens).ok());
  Inputs in;
  in.head = alloc.take("in.head", 32).value();
  in.offset = alloc.take("in.offset", 32).value();
  in.sharedWords = alloc.take("in.sharedWords", 7).value();
  in.blockX = alloc.take("in.blockX", 5).value();
  in.warp = alloc.take("in.warp", 2).value();
  in.exec = alloc.take("in.exec", kLanes).value();
  for (auto& l : in.lanes)
    l = {alloc.take("in.src0", 32).value(), alloc.take("in.src1", 32).value(),
         alloc.take("in.src2", 32).value()};
  MemoryStageSpec s;
  s.tokens = tokens;
  s.head = in.head;
  s.offset = in.offset;
  s.sharedWords = in.sharedWords;
  s.blockX = in.blockX;
  s.warp = in.warp;
  s.exec = in.exec;
  s.lanes = in.lanes;
  s.twin = twin;
  auto st = buildMemoryStage(w, alloc, s);
  EXPECT_TRUE(st.ok()) << st.error().message;
  Bench b;
  if (!st.ok()) return b;
  b.stage = st.value();
  b.dims = alloc.used();
  const std::string e = w.globalTensor("embed_tokens.weight");
  for (int i = 0; i < kAllProbes; ++i) {
    const int64_t row = trace::kVocabSize + i;
    harness::fillRow(w, row, kUnit);
    for (const Field& f :
         {tokens.family, tokens.index, tokens.chunk, tokens.isChunk, tokens.isTerminal})
      harness::setSigns(w, row, f, 0, kUnit);
    for (int q = 0; q < b.stage.dm.quiet.dims; ++q)
      EXPECT_TRUE(w.set(e, row, b.stage.dm.quiet.at(q), 0).ok());
    EXPECT_TRUE(w.set(e, row, b.stage.dm.heavy.at(0), 2 * kUnit).ok());
    const Case c = probeCase(i);
    harness::setSigns(w, row, in.head, packedHead(c.op, c.space), kUnit);
    harness::setSigns(w, row, in.offset, static_cast<uint32_t>(c.offset), kUnit);
    harness::setSigns(w, row, in.sharedWords, static_cast<uint64_t>(c.sharedWords), kUnit);
    harness::setSigns(w, row, in.blockX, static_cast<uint64_t>(c.blockX), kUnit);
    harness::setSigns(w, row, in.warp, static_cast<uint64_t>(c.warp), kUnit);
    harness::setSigns(w, row, in.exec, c.exec, kUnit);
    for (int l = 0; l < kLanes; ++l) {
      harness::setSigns(w, row, in.lanes[static_cast<size_t>(l)].src0, c.src0[static_cast<size_t>(l)], kUnit);
      harness::setSigns(w, row, in.lanes[static_cast<size_t>(l)].src1, c.src1[static_cast<size_t>(l)], kUnit);
      harness::setSigns(w, row, in.lanes[static_cast<size_t>(l)].src2,
                        c.src2[static_cast<size_t>(l)], kUnit);
    }
  }
  for (int l = 0; l < kLanes; ++l) {
    const int first = l * kPerLane;
    harness::probe(w, first, b.stage.addr[static_cast<size_t>(l)]);
    harness::probe(w, first + 32, b.stage.laneFault[static_cast<size_t>(l)]);
    harness::probe(w, first + 33, b.stage.load[static_cast<size_t>(l)]);
    harness::probe(w, first + 65, b.stage.memrec.value[static_cast<size_t>(l)]);
    harness::probe(w, first + 97, b.stage.atomOld[static_cast<size_t>(l)]);
  }
  harness::probe(w, kLanes * kPerLane, b.stage.fault);
  harness::probe(w, kLanes * kPerLane + 1, b.stage.memrec.wordMask);
  harness::probe(w, kLanes * kPerLane + 33, b.stage.memrec.tag);
  b.dir = harness::write(w, "memstage_" + name);
  return b;
}

// ---- The array model of the memories (docs/trace.md), as datamem_test's. ----

struct Model {
  std::array<std::array<uint32_t, 128>, 2> mem{};
  enum class Tag { None, Gmem, Gw, Mg, Ms, Other } tag = Tag::None;
  int n = 0;
  uint32_t addr = 0;
  streams::ValueReader reader;

  void step(int64_t id) {
    if (id >= trace::kVocabSize) return;
    const Token t = static_cast<Token>(id);
    const Family f = trace::familyOf(t);
    uint32_t v = 0;
    if (reader.step(t, v)) {
      ++n;
      const bool word = n % 2 == 1 && n <= 2 * kLanes, value = n % 2 == 0 && n <= 2 * kLanes;
      if (tag == Tag::Gmem || ((tag == Tag::Mg || tag == Tag::Ms) && word)) {
        addr = v & 127;
      } else if (tag == Tag::Gw || ((tag == Tag::Mg || tag == Tag::Ms) && value)) {
        mem[tag == Tag::Ms ? 1 : 0][addr] = v;
      }
      return;
    }
    if (f == Family::C || f == Family::T) return;
    n = 0;
    tag = f == Family::Gmem ? Tag::Gmem
          : f == Family::Gw ? Tag::Gw
          : f == Family::Mg ? Tag::Mg
          : f == Family::Ms ? Tag::Ms
                            : Tag::Other;
    if (f == Family::Cta) mem[1] = {};
  }
};

// What one probe position must show: bits and which of them are specified.
struct Want {
  std::vector<bool> bits, checked;
};

struct Counts {
  int probes = 0, faultingLanes = 0, faultingOps = 0, nonzeroLoads = 0, stores = 0, subword = 0,
      atomicLanes = 0,   // executing lanes of atomics in ops that do not fault
      chained = 0,       // checked lane values / old words after an earlier lane on the same word
      deep = 0,          // of them, lanes with two or more earlier lanes on their word
      adds = 0,          // checked atom.add lane values
      minmax = 0,        // checked atom.min / max lane values
      incs = 0,          // checked atom.inc lane values
      incChained = 0,    // of them, after an earlier lane on their word
      incSmall = 0,      // of those, on a small word (≤ 3: mostly one an earlier lane wrapped)
      incLate = 0,       // of those, lanes that wrap the unwrapped word M + i only because of the
                         // i earlier lanes: M < b ≤ M + i
      cas = 0,           // checked atom.cas lane values
      casAfterSwap = 0,  // of them, on a word an earlier lane swapped (old' ≠ M)
      casSwaps = 0,      // of those, lanes that swap again (compare equal to the swapped-in value)
      decs = 0,          // checked atom.dec lane values
      decChained = 0,    // of them, after an earlier lane on their word
      decAfterWrap = 0,  // of those, on a word an earlier lane wrapped (old' ≠ M − earlier lanes)
      decWrapAgain = 0,   // of those, lanes that wrap it again
      decAtZero = 0,      // lanes after an earlier lane that wrap because they see 0
      spillLoads = 0,     // checked ldl lanes
      spillStores = 0,    // checked stl lanes
      spillHighWarp = 0,  // of both, lanes of warps 1..3
      unbuilt = 0;        // lane values of atomics the stage does not build (none today)
};

Want expectProbe(const Case& c, const Model& m, Counts& n) {
  Want w;
  auto put = [&](uint64_t v, int bits, bool check) {
    for (int i = 0; i < bits; ++i) {
      w.bits.push_back((v >> i) & 1);
      w.checked.push_back(check);
    }
  };
  const int sp = c.space == Space::Shared || isSpill(c.op) ? 1 : 0;
  const bool store = c.op == Op::St || c.op == Op::StB8 || c.op == Op::StB16;
  const bool atomic = machine::opInfo(c.op).mem == machine::MemEffect::ReadWrite;
  const bool writes = machine::writesMemory(c.op);
  const bool spill = isSpill(c.op);
  bool opFault = false;
  std::array<bool, kLanes> bad{};  // a spill op never faults (verify keeps its slots in memory)
  for (int l = 0; l < kLanes && !spill; ++l) {
    bad[static_cast<size_t>(l)] = interpreterFaults(c, l);
    opFault = opFault || (((c.exec >> l) & 1) && bad[static_cast<size_t>(l)]);
  }
  // Each lane's word: the address's, or a spill op's slot word (the interpreter's).
  std::array<uint32_t, kLanes> wordOf{};
  if (spill) {
    wordOf = interpreterSpillWords(c);
  } else {
    for (int l = 0; l < kLanes; ++l) wordOf[static_cast<size_t>(l)] = (address(c, l) >> 2) & 127;
  }
  // The interpreter's lane-serial order (oracle/interpreter.cpp execMem): lanes 0..3 each read
  // the word as the lanes before them left it, on a copy of the model's memory; evalSubwordStore
  // and evalAtomic give each lane's new word. A faulting op writes nothing (no memrec).
  std::array<uint32_t, 128> mem = m.mem[static_cast<size_t>(sp)];
  std::array<uint32_t, kLanes> oldSeen{}, newWord{};
  std::array<int, kLanes> earlier{};  // executing lanes before l on l's word
  for (int l = 0; l < kLanes; ++l) {
    const uint32_t a = address(c, l);
    if (!((c.exec >> l) & 1) || opFault) continue;
    for (int k = 0; k < l; ++k)
      earlier[static_cast<size_t>(l)] +=
          ((c.exec >> k) & 1) && wordOf[static_cast<size_t>(k)] == wordOf[static_cast<size_t>(l)];
    uint32_t& word = mem[wordOf[static_cast<size_t>(l)]];
    const uint32_t b = c.src1[static_cast<size_t>(l)];
    oldSeen[static_cast<size_t>(l)] = word;
    if (c.op == Op::St) word = b;
    else if (c.op == Op::StLocal)
      word = c.src0[static_cast<size_t>(l)];
    else if (c.op == Op::StB8 || c.op == Op::StB16) word = oracle::evalSubwordStore(c.op, word, a, b).value();
    else if (atomic)
      word = oracle::evalAtomic(c.op, word, b, c.src2[static_cast<size_t>(l)]).value();
    newWord[static_cast<size_t>(l)] = word;
  }
  for (int l = 0; l < kLanes; ++l) {
    const uint32_t a = address(c, l);
    const bool ex = (c.exec >> l) & 1;
    const bool b = bad[static_cast<size_t>(l)];
    const uint32_t word = m.mem[static_cast<size_t>(sp)][wordOf[static_cast<size_t>(l)]];
    const bool acts = ex && !opFault && writes;
    const bool chained = earlier[static_cast<size_t>(l)] > 0;
    const bool valueCheck = acts && valueBuilt(c.op);
    // old'_l is right for every kind on a lane with no earlier lane on its word; after one, only
    // where the earlier lanes' values are built.
    const bool oldCheck = ex && !opFault && (valueBuilt(c.op) || !writes || !chained);
    put(a, 32, true);
    put(ex && b, 1, true);
    put(word, 32, spill ? ex : !b);  // a spill op's word: the executing lanes' (the interpreter's)
    put(newWord[static_cast<size_t>(l)], 32, valueCheck);
    put(writes ? oldSeen[static_cast<size_t>(l)] : word, 32, oldCheck);
    n.faultingLanes += ex && b ? 1 : 0;
    n.nonzeroLoads += !b && word != 0 ? 1 : 0;
    n.subword += (c.op == Op::StB8 || c.op == Op::StB16) && acts ? 1 : 0;
    n.atomicLanes += atomic && acts ? 1 : 0;
    n.chained += acts && chained && valueCheck ? 1 : 0;
    n.deep += acts && earlier[static_cast<size_t>(l)] >= 2 && valueCheck ? 1 : 0;
    n.unbuilt += acts && !valueBuilt(c.op) ? 1 : 0;
    n.adds += acts && c.op == Op::AtomAdd ? 1 : 0;
    const bool inc = acts && c.op == Op::AtomInc;
    n.incs += inc ? 1 : 0;
    n.incChained += inc && chained ? 1 : 0;
    n.incSmall += inc && chained && oldSeen[static_cast<size_t>(l)] < kLanes ? 1 : 0;
    const uint64_t unwrapped =
        uint64_t{word} + static_cast<uint64_t>(earlier[static_cast<size_t>(l)]);
    const uint32_t operand = c.src1[static_cast<size_t>(l)];
    n.incLate += inc && chained && oldSeen[static_cast<size_t>(l)] == unwrapped && word < operand &&
                         operand <= unwrapped
                     ? 1
                     : 0;
    const bool cas = acts && c.op == Op::AtomCas;
    const bool afterSwap = cas && oldSeen[static_cast<size_t>(l)] != word;
    n.cas += cas ? 1 : 0;
    n.casAfterSwap += afterSwap ? 1 : 0;
    n.casSwaps += afterSwap && operand == oldSeen[static_cast<size_t>(l)] ? 1 : 0;
    const bool dec = acts && c.op == Op::AtomDec;
    const uint32_t seen = oldSeen[static_cast<size_t>(l)];
    const bool decWraps = dec && (seen == 0 || seen > operand);
    const bool afterWrap =
        dec && chained && seen != word - static_cast<uint32_t>(earlier[static_cast<size_t>(l)]);
    n.decs += dec ? 1 : 0;
    n.decChained += dec && chained ? 1 : 0;
    n.decAfterWrap += afterWrap ? 1 : 0;
    n.decWrapAgain += afterWrap && decWraps ? 1 : 0;
    n.decAtZero += dec && chained && seen == 0 ? 1 : 0;
    n.spillLoads += ex && c.op == Op::LdLocal ? 1 : 0;
    n.spillStores += acts && c.op == Op::StLocal ? 1 : 0;
    n.spillHighWarp += ex && spill && c.warp > 0 ? 1 : 0;
    n.minmax += acts && (c.op == Op::AtomMinU || c.op == Op::AtomMaxU || c.op == Op::AtomMinS ||
                         c.op == Op::AtomMaxS)
                    ? 1
                    : 0;
  }
  put(opFault, 1, true);
  uint32_t wordMask = 0;
  for (int l = 0; l < kLanes; ++l) wordMask |= wordOf[static_cast<size_t>(l)] << (7 * l);
  if (writes) wordMask |= static_cast<uint32_t>(c.exec) << 28;
  for (int i = 0; i < 32; ++i) {
    const int l = i / 7;
    const bool laneWord = i < 28 && ((c.exec >> l) & 1) && !bad[static_cast<size_t>(l)];
    w.bits.push_back((wordMask >> i) & 1);
    w.checked.push_back(laneWord || i >= 28);
  }
  // The tag in the emit encoding: MG(e) / MS(e), NOP for e = 0; all −1 for a load.
  uint32_t tag = 0;
  if (writes) {
    const Token t = c.exec == 0 ? trace::single(Family::Nop)
                    : sp == 0   ? trace::mg(c.exec)
                                : trace::ms(c.exec);
    tag |= 1u << static_cast<int>(trace::familyOf(t));
    for (int b = 0; b < tokenIndexBits(); ++b)
      if (indexBit(t, b) > 0) tag |= 1u << (trace::kNumFamilies + b);
  }
  put(tag, 32, true);
  ++n.probes;
  n.faultingOps += opFault ? 1 : 0;
  n.stores += store && c.exec != 0 ? 1 : 0;
  return w;
}

std::vector<int64_t> prefix(const std::vector<int64_t>& t, size_t n) {
  return {t.begin(), t.begin() + static_cast<long>(std::min(n, t.size()))};
}

// The stream: a hand-made trace writing both memories, a probe after every few records (never
// inside a value), each probe case at least once.
std::vector<int64_t> stream(int steps) {
  const std::vector<Token> t = streams::handMade(5, steps, 40);
  std::vector<int64_t> out;
  int next = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const bool inValue = i > 0 && trace::familyOf(t[i - 1]) == Family::C;
    if (!inValue && i % 5 == 0) out.push_back(trace::kVocabSize + (next++ % kProbes));
    out.push_back(t[i]);
  }
  return out;
}

// The known words' stream: the global words kIncWords written (GMEM / GW pairs), RUN, then `count`
// probes from `first` once each. No record after RUN, so every probe sees the same words.
std::vector<int64_t> knownWordStream(int first, int count) {
  std::vector<Token> t;
  for (size_t w = 0; w < kIncWords.size(); ++w) {
    t.push_back(trace::single(Family::Gmem));
    trace::appendValue(t, static_cast<uint32_t>(w));
    t.push_back(trace::single(Family::Gw));
    trace::appendValue(t, kIncWords[w]);
  }
  t.push_back(trace::single(Family::Run));
  std::vector<int64_t> out(t.begin(), t.end());
  for (int j = 0; j < count; ++j) out.push_back(trace::kVocabSize + first + j);
  return out;
}

struct Result {
  harness::SignCheck bits;
  harness::LayoutCheck layout;
  Counts counts;
};

Result runAndCheck(const Bench& b, const std::vector<int64_t>& tokens, ComputeDtype dtype,
                   Path path) {
  Result res;
  auto dec = harness::load(b.dir, dtype);
  if (!dec) return res;
  const auto rows = harness::run(*dec, tokens, path, kProbeLogits);
  EXPECT_EQ(rows.size(), tokens.size());
  res.layout = harness::checkLayout(rows, 1.0f);
  Model m;
  for (size_t p = 0; p < rows.size() && p < tokens.size(); ++p) {
    m.step(tokens[p]);
    if (tokens[p] < trace::kVocabSize) continue;
    const Case c = probeCase(static_cast<int>(tokens[p] - trace::kVocabSize));
    const Want w = expectProbe(c, m, res.counts);
    std::vector<float> row;
    std::vector<bool> bits;
    for (size_t i = 0; i < w.bits.size(); ++i)
      if (w.checked[i]) {
        row.push_back(rows[p][i]);
        bits.push_back(w.bits[i]);
      }
    harness::checkBits(res.bits, row, bits, 1.0, "position " + std::to_string(p));
  }
  return res;
}

const char* dtypeName(ComputeDtype d) { return d == ComputeDtype::F32 ? "fp32" : "bf16"; }

// The stage's checkpoint, built once per process (the main test and the two-lane check share it).
const Bench& stageBench() {
  static const Bench b = build("stage");
  return b;
}

TEST(MemoryStage, AddressesFaultsLoadsAndMemrecsMatchTheInterpreterOnEveryPath) {
  const Bench& b = stageBench();
  ASSERT_FALSE(b.dir.empty());
  std::cout << "hidden used " << b.dims << " of " << kHidden << "; stage units per layer";
  for (int u : b.stage.units) std::cout << " " << u;
  std::cout << "; datamem units";
  for (int u : b.stage.dm.unitsUsed) std::cout << " " << u;
  std::cout << "; widest AND " << b.stage.maxFanIn << "\n";
  const std::vector<int64_t> tokens = stream(harness::inputs(60, 200));
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : harness::kPaths) {
      const bool f32 = dtype == ComputeDtype::F32;
      // bf16 matmuls and one forward per token are the cost here: shorter prefixes per commit.
      const size_t n = path == Path::Prefill ? (f32 ? tokens.size() : harness::inputs(80, 600))
                       : path == Path::Mixed ? harness::inputs(f32 ? 120 : 96, 600)
                                             : harness::inputs(f32 ? 48 : 24, 300);
      const std::vector<int64_t> t = prefix(tokens, n);
      const auto start = std::chrono::steady_clock::now();
      const Result r = runAndCheck(b, t, dtype, path);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cout << "  " << dtypeName(dtype) << " " << harness::pathName(path) << " (" << t.size()
                << " tokens, " << r.counts.probes << " probes: " << r.counts.faultingLanes
                << " faulting lanes, " << r.counts.faultingOps << " faulting ops, "
                << r.counts.nonzeroLoads << " nonzero lane loads, " << r.counts.stores
                << " stores, " << r.counts.subword << " sub-word lane stores, "
                << r.counts.atomicLanes << " atomic lanes (" << r.counts.adds << " atom.add, "
                << r.counts.minmax << " min / max, " << r.counts.incs
                << " atom.inc: " << r.counts.incChained << " after an earlier lane, "
                << r.counts.incSmall << " of them on a small word; " << r.counts.cas
                << " atom.cas, " << r.counts.decs << " atom.dec), " << r.counts.chained
                << " lanes after an earlier lane on their word (" << r.counts.deep
                << " after two or more), " << r.counts.unbuilt
                << " unbuilt atomics' lane values unchecked; " << s << " s): " << r.bits.summary()
                << "; layout " << r.layout.summary() << "\n";
      EXPECT_TRUE(r.bits.ok()) << dtypeName(dtype) << " " << harness::pathName(path) << ": "
                               << r.bits.summary();
      EXPECT_TRUE(r.layout.ok()) << r.layout.summary();
      if (f32 && path == Path::Prefill) {
        EXPECT_GT(r.counts.faultingLanes, 20);
        EXPECT_GT(r.counts.faultingOps, 10);
        EXPECT_GT(r.counts.nonzeroLoads, 20);
        EXPECT_GT(r.counts.subword, 10);
        EXPECT_GT(r.counts.atomicLanes, 20);
        EXPECT_GT(r.counts.chained, 20);
        EXPECT_GT(r.counts.deep, 10);
        EXPECT_GT(r.counts.adds, 10);
        EXPECT_GT(r.counts.minmax, 20);
        EXPECT_GT(r.counts.cas, 5);  // the known words' stream below chains the swaps
        EXPECT_GT(r.counts.incChained,
                  10);  // the known words' stream below crosses the wrap in every place
      }
    }
}

// A twin of the stage on the bench's first 700 tokens, fp32 prefill; `dir` names its checkpoint.
Result streamTwin(const char* dir, MemoryStageTwin twin, const char* what) {
  const Bench b = build(dir, twin);
  EXPECT_FALSE(b.dir.empty());
  if (b.dir.empty()) return {};
  const Result r = runAndCheck(b, prefix(stream(60), 700), ComputeDtype::F32, Path::Prefill);
  std::cout << what << ": " << r.bits.summary() << "\n";
  return r;
}

TEST(MemoryStageTwin, SharedBoundOffByOneFaultsWrong) {
  EXPECT_GT(streamTwin("twin", MemoryStageTwin::SharedBoundOffByOne, "shared bound off by one")
                .bits.wrongSign,
            0);
}

// min.s / max.s's failing twin: lt.s read as lt.u (min / max's signed compare is lt.u and the sign
// bits, memory_stage.h) — wrong where a lane's operands differ in sign, which the random words do.
TEST(MemoryStageTwin, SignedMinMaxByLtUSelectsWrong) {
  EXPECT_GT(streamTwin("twin_signed", MemoryStageTwin::SignedMinMaxByLtU, "min.s / max.s by lt.u")
                .bits.wrongSign,
            0);
}

// The chain's failing twin: lane l takes the FIRST earlier lane on its word as its old word, not
// the nearest — wrong wherever three or more lanes share a word.
TEST(MemoryStageTwin, FirstSameWordLaneChainsWrong) {
  const Result r = streamTwin("twin_first", MemoryStageTwin::FirstSameWordLane,
                              "chain takes the first same-word lane");
  std::cout << "  (" << r.counts.deep << " lanes after two or more on their word)\n";
  EXPECT_GT(r.counts.deep, 0);
  EXPECT_GT(r.bits.wrongSign, 0);
}

// atom.inc without the serial chain (memory_stage.h): runs of lanes on one word of known value
// cross the wrap after 0..3 earlier lanes, or never, or pass through small words after a wrap; the
// values and old words must be the interpreter's lane-serial ones on every path.
TEST(MemoryStage, IncOnWordsOfKnownValueIsTheInterpretersLaneSerialIncrement) {
  const Bench& b = stageBench();
  ASSERT_FALSE(b.dir.empty());
  const std::vector<int64_t> tokens = knownWordStream(kProbes, kIncProbes);
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : harness::kPaths) {
      const Result r = runAndCheck(b, tokens, dtype, path);
      std::cout << "  atom.inc " << dtypeName(dtype) << " " << harness::pathName(path) << " ("
                << tokens.size() << " tokens, " << r.counts.probes << " probes, " << r.counts.incs
                << " lanes: " << r.counts.incChained << " after an earlier lane on their word, "
                << r.counts.incSmall << " of them on a small word, " << r.counts.incLate
                << " wrapping only because of the earlier lanes): " << r.bits.summary() << "\n";
      EXPECT_TRUE(r.bits.ok()) << dtypeName(dtype) << " " << harness::pathName(path) << ": "
                               << r.bits.summary();
      EXPECT_EQ(r.counts.probes, kIncProbes);
      EXPECT_GT(r.counts.incChained, 60);
      EXPECT_GT(r.counts.incSmall, 10);
      EXPECT_GT(r.counts.incLate, 10);
    }
}

// atom.cas by states (memory_stage.h): lanes on one word of known value compare with the word or
// with an earlier lane's swap value, so that chains of swaps run through the lanes; the values and
// old words must be the interpreter's lane-serial ones.
TEST(MemoryStage, CasOnWordsOfKnownValueIsTheInterpretersLaneSerialSwap) {
  const Bench& b = stageBench();
  ASSERT_FALSE(b.dir.empty());
  const std::vector<int64_t> tokens = knownWordStream(kProbes + kIncProbes, kCasProbes);
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : harness::kPaths) {
      const Result r = runAndCheck(b, tokens, dtype, path);
      std::cout << "  atom.cas " << dtypeName(dtype) << " " << harness::pathName(path) << " ("
                << tokens.size() << " tokens, " << r.counts.probes << " probes, " << r.counts.cas
                << " lanes: " << r.counts.casAfterSwap << " on a word an earlier lane swapped, "
                << r.counts.casSwaps << " of them swapping again): " << r.bits.summary() << "\n";
      EXPECT_TRUE(r.bits.ok()) << dtypeName(dtype) << " " << harness::pathName(path) << ": "
                               << r.bits.summary();
      EXPECT_EQ(r.counts.probes, kCasProbes);
      EXPECT_GT(r.counts.casAfterSwap, 40);
      EXPECT_GT(r.counts.casSwaps, 10);
    }
}

// atom.dec by states (memory_stage.h): lanes on one word of known value with operands below the
// word, small, above it or at the top, so that runs of lanes wrap the word after every number of
// earlier lanes, reach 0, and wrap it again after a wrap; the values and old words must be the
// interpreter's lane-serial ones.
TEST(MemoryStage, DecOnWordsOfKnownValueIsTheInterpretersLaneSerialDecrement) {
  const Bench& b = stageBench();
  ASSERT_FALSE(b.dir.empty());
  const std::vector<int64_t> tokens =
      knownWordStream(kProbes + kIncProbes + kCasProbes, kDecProbes);
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : harness::kPaths) {
      const Result r = runAndCheck(b, tokens, dtype, path);
      std::cout << "  atom.dec " << dtypeName(dtype) << " " << harness::pathName(path) << " ("
                << tokens.size() << " tokens, " << r.counts.probes << " probes, " << r.counts.decs
                << " lanes: " << r.counts.decChained << " after an earlier lane on their word, "
                << r.counts.decAfterWrap << " of them on a word an earlier lane wrapped, "
                << r.counts.decWrapAgain << " wrapping it again, " << r.counts.decAtZero
                << " seeing 0): " << r.bits.summary() << "\n";
      EXPECT_TRUE(r.bits.ok()) << dtypeName(dtype) << " " << harness::pathName(path) << ": "
                               << r.bits.summary();
      EXPECT_EQ(r.counts.probes, kDecProbes);
      EXPECT_GT(r.counts.decChained, 60);
      EXPECT_GT(r.counts.decAfterWrap, 20);
      EXPECT_GT(r.counts.decWrapAgain, 5);
      EXPECT_GT(r.counts.decAtZero, 5);
    }
}

// The spill slots (memory_stage.h): ldl and stl under launches of 1..16 threads, slots up to the
// last shared word, every warp, between the records of the hand-made trace that writes shared
// memory, and before every ldl an MS record that writes its lanes' slot words (the interpreter's)
// — each lane's slot word, load, stored value, mask and tag the interpreter's.
std::vector<int64_t> spillStream() {
  const std::vector<Token> t = streams::handMade(5, 60, 40);
  std::mt19937 rng(11);
  std::vector<int64_t> out;
  int next = 0;
  // Between records only (never between a tag and its value, nor between EX and WM).
  auto recordStarts = [&](size_t i) {
    const Family f = trace::familyOf(t[i]);
    const Family before = i > 0 ? trace::familyOf(t[i - 1]) : Family::Run;
    return f != Family::C && f != Family::T && f != Family::Wm && f != Family::Run &&
           (before == Family::T || before == Family::Wm || before == Family::Nop ||
            before == Family::Cta || before == Family::Run);
  };
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != trace::single(Family::Run) && i > 0 && recordStarts(i) && i % 3 == 0) {
      const int probe = kFirstSpillProbe + next++ % kSpillProbes;
      const Case c = probeCase(probe);
      if (c.op == Op::LdLocal && c.exec != 0) {
        std::vector<Token> record = {trace::ms(c.exec)};
        const std::array<uint32_t, kLanes> words = interpreterSpillWords(c);
        for (int l = 0; l < kLanes; ++l) {
          if (!((c.exec >> l) & 1)) continue;
          trace::appendValue(record, words[static_cast<size_t>(l)]);
          trace::appendValue(record, streams::randomValue(rng));
        }
        out.insert(out.end(), record.begin(), record.end());
      }
      out.push_back(trace::kVocabSize + probe);
    }
    out.push_back(t[i]);
  }
  return out;
}

TEST(MemoryStage, SpillSlotsAreTheInterpretersSharedWords) {
  const Bench& b = stageBench();
  ASSERT_FALSE(b.dir.empty());
  const std::vector<int64_t> tokens = spillStream();
  for (ComputeDtype dtype : harness::kDtypes)
    for (Path path : harness::kPaths) {
      const Result r = runAndCheck(b, tokens, dtype, path);
      std::cout << "  ldl / stl " << dtypeName(dtype) << " " << harness::pathName(path) << " ("
                << tokens.size() << " tokens, " << r.counts.probes << " probes, "
                << r.counts.spillLoads << " ldl lanes (" << r.counts.nonzeroLoads
                << " nonzero loads), " << r.counts.spillStores << " stl lanes, "
                << r.counts.spillHighWarp << " of both in warps 1..3): " << r.bits.summary()
                << "\n";
      EXPECT_TRUE(r.bits.ok()) << dtypeName(dtype) << " " << harness::pathName(path) << ": "
                               << r.bits.summary();
      EXPECT_GE(r.counts.probes, kSpillProbes);
      EXPECT_GT(r.counts.spillLoads, 40);
      EXPECT_GT(r.counts.spillStores, 40);
      EXPECT_GT(r.counts.spillHighWarp, 30);
      EXPECT_GT(r.counts.nonzeroLoads, 40);  // the words the MS record before each ldl wrote
    }
}

// The spill slots' failing twin: the slot word without the warp (C + l): warps 1..3 read and write
// warp 0's slots.
TEST(MemoryStageTwin, SpillSlotsWithoutTheWarpAreWrong) {
  const Bench b = build("twin_spill", MemoryStageTwin::SpillWithoutTheWarp);
  ASSERT_FALSE(b.dir.empty());
  const Result r = runAndCheck(b, spillStream(), ComputeDtype::F32, Path::Prefill);
  std::cout << "spill slots without the warp: " << r.bits.summary() << "\n";
  EXPECT_GT(r.bits.wrongSign, 0);
}

// atom.dec's failing twin: r lanes after a lane wrapped the word to b_k, the wrap test compares
// with b_k, not with the word b_k − r.
TEST(MemoryStageTwin, DecIgnoringTheLanesSinceTheWrapDecrementsWrong) {
  const Bench b = build("twin_dec", MemoryStageTwin::DecIgnoresLanesSinceTheWrap);
  ASSERT_FALSE(b.dir.empty());
  const Result r = runAndCheck(b, knownWordStream(kProbes + kIncProbes + kCasProbes, kDecProbes),
                               ComputeDtype::F32, Path::Prefill);
  std::cout << "dec ignoring the lanes since the wrap: " << r.bits.summary() << " ("
            << r.counts.decAfterWrap << " lanes on a word an earlier lane wrapped)\n";
  EXPECT_GT(r.counts.decAfterWrap, 0);
  EXPECT_GT(r.bits.wrongSign, 0);
}

// atom.cas's failing twin: after an earlier lane swapped, the compare is still with the old word
// M, not with the swapped-in value.
TEST(MemoryStageTwin, CasComparingTheOldWordSwapsWrong) {
  const Bench b = build("twin_cas", MemoryStageTwin::CasComparesTheOldWord);
  ASSERT_FALSE(b.dir.empty());
  const Result r = runAndCheck(b, knownWordStream(kProbes + kIncProbes, kCasProbes),
                               ComputeDtype::F32, Path::Prefill);
  std::cout << "cas comparing the old word: " << r.bits.summary() << " (" << r.counts.casSwaps
            << " lanes swapping after an earlier swap)\n";
  EXPECT_GT(r.counts.casSwaps, 0);
  EXPECT_GT(r.bits.wrongSign, 0);
}

// atom.inc's failing twin: the wrap test of a lane after i earlier lanes on its word compares the
// old word M with b, not M + i — wrong where M < b ≤ M + i.
TEST(MemoryStageTwin, IncWrapTestAtTheOldWordIncrementsWrong) {
  const Bench b = build("twin_inc", MemoryStageTwin::IncWrapsAtTheOldWord);
  ASSERT_FALSE(b.dir.empty());
  const Result r =
      runAndCheck(b, knownWordStream(kProbes, kIncProbes), ComputeDtype::F32, Path::Prefill);
  std::cout << "inc's wrap test at the old word: " << r.bits.summary() << " (" << r.counts.incLate
            << " lanes wrapping only because of the earlier lanes)\n";
  EXPECT_GT(r.counts.incLate, 0);
  EXPECT_GT(r.bits.wrongSign, 0);
}

// Was the known gap (the finding before the chain): lanes 0 and 1 of one st.b8 write bytes 0 and
// 1 of one word. The interpreter's record shows lane 1's word with lane 0's byte (lane-serial);
// the stage now builds lane 1's value from lane 0's new word.
TEST(MemoryStage, SubwordStoresOfTwoLanesToOneWordAreChained) {
  const Bench& b = stageBench();
  ASSERT_FALSE(b.dir.empty());
  const std::vector<int64_t> all = stream(60);
  const auto at = std::find(all.begin(), all.end(), trace::kVocabSize + kChainedProbe);
  ASSERT_NE(at, all.end());
  const std::vector<int64_t> tokens(all.begin(), at + 1);
  auto dec = harness::load(b.dir, ComputeDtype::F32);
  ASSERT_TRUE(dec);
  const auto rows = harness::run(*dec, tokens, Path::Prefill, kProbeLogits);
  ASSERT_EQ(rows.size(), tokens.size());
  Model m;
  for (int64_t id : tokens) m.step(id);
  const Case c = probeCase(kChainedProbe);
  const uint32_t old = m.mem[0][kChainedWord];
  const uint32_t afterLane0 = oracle::evalSubwordStore(Op::StB8, old, c.src0[0], c.src1[0]).value();
  const uint32_t chained =
      oracle::evalSubwordStore(Op::StB8, afterLane0, c.src0[1], c.src1[1]).value();
  const uint32_t unchained = oracle::evalSubwordStore(Op::StB8, old, c.src0[1], c.src1[1]).value();
  ASSERT_NE(chained, unchained) << "the case must tell the two apart";
  auto word = [&](int first) {
    uint32_t v = 0;
    for (int i = 0; i < 32; ++i)
      v |= (rows.back()[static_cast<size_t>(first + i)] > 0 ? 1u : 0u) << i;
    return v;
  };
  const uint32_t got = word(kPerLane + 65), gotOld = word(kPerLane + 97);
  std::cout << "lane 1's memrec value: " << got << ", the interpreter's " << chained
            << ", unchained " << unchained << "; lane 1's old word " << gotOld << " (lane 0's new "
            << afterLane0 << ")\n";
  EXPECT_EQ(got, chained);
  EXPECT_EQ(gotOld, afterLane0);
}

}  // namespace
}  // namespace qgpu::circuit
