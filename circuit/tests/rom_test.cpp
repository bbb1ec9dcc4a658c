// qgpu/circuit/tests/rom_test.cpp — the ROM gadget (circuit/rom.h) run through model/'s real
// decoder: one standard linear_attention layer with the ROM's 25 value heads in a tiny
// checkpoint, loaded by model::Decoder unchanged, in fp32 and bf16, through the chunked prefill,
// the recurrent decode and the mixed path (the prompt's writes prefilled, the fetches decoded).
//
// What it pins down: a full ROM of random words — every (block, op) row of every ROM slot of
// trace v3 and every block's terminator word — written in prompt order, then every row fetched
// back by a (block, op) query in random order, returns every slot's word exactly (right sign,
// nominal magnitude), and a row that no word was written to reads exactly 0 (the machine's
// reading of a word the prompt leaves out). The expected words come from a plain array, never
// from the gadget. The twin: decay ½ per token (rule R5) loses the rows.
//
// The inputs are given as embedded fields (one token id per position): the slot-enable bits (in
// the circuit: the latched tag decoded at the value's terminal T), the write key (latched block,
// the op index from the head word), the word's 32 bits (the assembler's value) and the read key
// (the latched EXEC block and op counter). docs/circuit.md §9 "Built: the ROM" says how these
// connect to the assembler and the latches. (Beta ½, rule R6, is no twin here: a row written
// once holds v/2, and the gated norm returns it at full size — R6 guards rows written twice,
// which circuit_memory_test's twin shows.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "circuit/rom.h"
#include "circuit/tests/harness.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;

constexpr int kHidden = 384;
constexpr float kUnit = 16;    // every input dim is ±16: a quarter of the dims → mean(x²) = 64
constexpr double kLambda = 2;  // so the pre-norm maps ±16 to exactly ±2
constexpr int kSlots = trace::kRomSlots + 1;  // the op slots and the terminator
constexpr int kWordBits = 32;
constexpr int kBlocks = machine::kMaxBlocks;
constexpr int kOps = machine::kMaxOpsPerBlock;

// One position: it writes `word` into slot `slot`'s row (block, op) (slot −1: no write) and
// reads every slot's row (readBlock, readOp).
struct Step {
  int slot = -1;
  int block = 0, op = 0;
  uint32_t word = 0;
  int readBlock = 0, readOp = 0;
};

struct Layout {
  RomSpec spec;
  RomShape shape;
};

model::Qwen35Config romConfig(int64_t vocab) {
  model::Qwen35Config c = harness::config(kHidden, 1, 8, vocab);
  const RomShape shape = romShape(c);
  c.linearNumKeyHeads = shape.heads;
  c.linearNumValueHeads = shape.heads;
  return c;
}

Layout layout(const model::Qwen35Config& c) {
  Layout l;
  l.shape = romShape(c);
  const int keyBits = l.shape.opBits + l.shape.blockBits;
  FieldAllocator alloc(kHidden);
  const int inputs = kSlots + keyBits + kWordBits + keyBits;
  l.spec.ballast = alloc.take("ballast", kHidden / 4 - inputs).value();
  l.spec.slotEnable = alloc.take("slotEnable", kSlots).value();
  l.spec.writeKey = alloc.take("writeKey", keyBits).value();
  l.spec.word = alloc.take("word", kWordBits).value();
  l.spec.readKey = alloc.take("readKey", keyBits).value();
  for (int s = 0; s < kSlots; ++s)
    l.spec.out.push_back(alloc.take("out" + std::to_string(s), kWordBits).value());
  l.spec.lambda = kLambda;
  return l;
}

struct Built {
  std::string dir;
  RomMargins margins;
};

Built build(const std::string& name, const std::vector<Step>& steps,
            WriteStrength write = WriteStrength::Full, Decay decay = Decay::Off) {
  const model::Qwen35Config c = romConfig(static_cast<int64_t>(steps.size()));
  CircuitWeights w(c);
  Layout l = layout(c);
  l.spec.write = write;
  l.spec.decay = decay;
  auto margins = buildRom(w, l.spec);
  EXPECT_TRUE(margins.ok()) << margins.error().message;
  const int opBits = l.shape.opBits;
  const std::string embed = w.globalTensor("embed_tokens.weight");
  for (size_t t = 0; t < steps.size(); ++t) {
    const Step& s = steps[t];
    const auto row = static_cast<int64_t>(t);
    for (int i = 0; i < l.spec.ballast.dims; ++i)
      EXPECT_TRUE(w.set(embed, row, l.spec.ballast.at(i), kUnit).ok());
    for (int k = 0; k < kSlots; ++k)
      EXPECT_TRUE(w.set(embed, row, l.spec.slotEnable.at(k), k == s.slot ? kUnit : -kUnit).ok());
    harness::setSigns(w, row, l.spec.writeKey, static_cast<uint64_t>(s.op | s.block << opBits), kUnit);
    harness::setSigns(w, row, l.spec.word, s.word, kUnit);
    harness::setSigns(w, row, l.spec.readKey,
                      static_cast<uint64_t>(s.readOp | s.readBlock << opBits), kUnit);
  }
  // The slots' fields were taken one after another (layout above): one probe reads them all.
  harness::probe(w, 0, Field{"out", l.spec.out.front().offset, kSlots * kWordBits});
  return {harness::write(w, name), margins.ok() ? margins.value() : RomMargins{}};
}

// The prompt's order: per block, per op, every op slot's word, then the block's terminator word
// (op index 0 in its key: the terminator bank reads the block bits only). Each write also reads
// its own row. After the first half of the blocks, `earlyFetches` fetches of random rows (most
// of them in blocks not yet written: they read exactly 0); at the end every (block, op) row once
// in random order (with fewer than all blocks written: every row of the written blocks and 32
// others). The first words are the edge cases 0, ~0, INT_MIN, 1.
std::vector<Step> program(uint32_t seed, int blocks, int earlyFetches) {
  std::mt19937 rng(seed);
  const uint32_t edges[] = {0u, 0xffffffffu, 0x80000000u, 1u};
  size_t n = 0;
  auto word = [&]() -> uint32_t { return n < 4 ? edges[n++] : (++n, static_cast<uint32_t>(rng())); };
  std::vector<Step> steps;
  auto fetch = [&](int b, int j) { steps.push_back({-1, 0, 0, 0, b, j}); };
  for (int b = 0; b < blocks; ++b) {
    for (int j = 0; j < kOps; ++j) {
      for (int s = 0; s < trace::kRomSlots; ++s) steps.push_back({s, b, j, word(), b, j});
    }
    steps.push_back({trace::kRomSlots, b, 0, word(), b, 0});
    if (b == blocks / 2 - 1) {
      for (int i = 0; i < earlyFetches; ++i)
        fetch(static_cast<int>(rng() % kBlocks), static_cast<int>(rng() % kOps));
    }
  }
  std::vector<std::pair<int, int>> rows, others;
  for (int b = 0; b < kBlocks; ++b)
    for (int j = 0; j < kOps; ++j) (b < blocks ? rows : others).push_back({b, j});
  std::shuffle(others.begin(), others.end(), rng);
  if (blocks < kBlocks) others.resize(32);
  rows.insert(rows.end(), others.begin(), others.end());
  std::shuffle(rows.begin(), rows.end(), rng);
  for (auto [b, j] : rows) fetch(b, j);
  return steps;
}

// The reference: a plain array of optional words per (slot, block, op).
struct Reference {
  std::optional<uint32_t> rom[kSlots][kBlocks][kOps];
  void apply(const Step& s) {
    if (s.slot < 0) return;
    rom[s.slot][s.block][s.slot == trace::kRomSlots ? 0 : s.op] = s.word;
  }
  std::optional<uint32_t> read(int slot, int b, int j) const {
    return rom[slot][b][slot == trace::kRomSlots ? 0 : j];
  }
};

struct Stats {
  int64_t words = 0, emptyReads = 0, wrong = 0;  // wrong: a word read wrong, weak or not 0
  std::map<int, std::set<float>> magnitudes;     // per count of non-empty slot reads
  double worstRatio = 0;                         // max |magnitude / nominal − 1|
  std::string first;
};

// After the layer, a position whose reads hit n written rows holds H/4 = 96 dims at ±16 plus 32n
// read bits at ±16: the final norm scales a read bit to 16 / sqrt((96 + 32n)·256 / H).
double nominal(int n) {
  return kUnit / std::sqrt((kHidden / 4 + kWordBits * n) * kUnit * kUnit / kHidden);
}

Stats check(const std::vector<Step>& steps, const std::vector<std::vector<float>>& rows) {
  Stats st;
  Reference ref;
  for (size_t p = 0; p < steps.size() && p < rows.size(); ++p) {
    const Step& s = steps[p];
    ref.apply(s);
    int n = 0;
    for (int k = 0; k < kSlots; ++k) n += ref.read(k, s.readBlock, s.readOp) ? 1 : 0;
    for (int k = 0; k < kSlots; ++k) {
      const std::optional<uint32_t> want = ref.read(k, s.readBlock, s.readOp);
      bool ok = true;
      uint32_t got = 0;
      for (int i = 0; i < kWordBits; ++i) {
        const float l = rows[p][static_cast<size_t>(k * kWordBits + i)];
        if (!want) {
          ok = ok && l == 0.0f;
          continue;
        }
        const double mag = std::fabs(l);
        st.magnitudes[n].insert(static_cast<float>(mag));
        st.worstRatio = std::max(st.worstRatio, std::fabs(mag / nominal(n) - 1));
        if (mag < nominal(n) / 2) ok = false;
        if (l > 0) got |= 1u << i;
      }
      if (want) {
        ++st.words;
        ok = ok && got == *want;
      } else {
        ++st.emptyReads;
      }
      if (!ok && st.wrong++ == 0)
        st.first = "position " + std::to_string(p) + " slot " + std::to_string(k) + " row (" +
                   std::to_string(s.readBlock) + ", " + std::to_string(s.readOp) + "): expected " +
                   (want ? std::to_string(*want) : std::string("empty")) + ", read " +
                   std::to_string(got);
    }
  }
  return st;
}

// Prefill: every position in one forward (chunked rule). Decode: one token per forward. Mixed:
// the writes (the prompt) in one forward, the next 40 tokens as a cached continuation, then one
// by one (the model leg's generation).
std::vector<std::vector<float>> run(model::Decoder& dec, const std::vector<Step>& steps, Path path) {
  dec.reset();
  std::vector<int64_t> tokens(steps.size());
  for (size_t t = 0; t < steps.size(); ++t) tokens[t] = static_cast<int64_t>(t);
  std::vector<std::vector<float>> rows;
  auto forward = [&](size_t begin, size_t end) {
    auto logits = dec.forward(std::span<const int64_t>(tokens.data() + begin, end - begin), true);
    EXPECT_TRUE(logits.ok()) << logits.error().message;
    for (int64_t r = 0; logits.ok() && r < logits.value().rows; ++r) {
      auto row = logits.value().row(r);
      rows.emplace_back(row.begin(), row.begin() + kSlots * kWordBits);
    }
  };
  size_t oneByOne = 0;
  if (path == Path::Prefill) {
    forward(0, steps.size());
    oneByOne = steps.size();
  } else if (path == Path::Mixed) {
    size_t prompt = 0;
    while (prompt < steps.size() && !(steps[prompt].slot < 0 && prompt > steps.size() / 2)) ++prompt;
    forward(0, prompt);
    const size_t cont = std::min(prompt + 40, steps.size());
    forward(prompt, cont);
    oneByOne = cont;
  }
  for (size_t t = oneByOne; t < steps.size(); ++t) forward(t, t + 1);
  return rows;
}

void expectExact(const std::string& what, const Stats& st, ComputeDtype dtype, Path path) {
  EXPECT_EQ(st.wrong, 0) << what << " " << computeDtypeName(dtype) << " "
                         << harness::pathName(path) << ": " << st.first;
  size_t distinct = 0;
  for (const auto& [n, m] : st.magnitudes) distinct = std::max(distinct, m.size());
  EXPECT_EQ(distinct, 1u) << what << ": one magnitude per read count";
  EXPECT_LT(st.worstRatio, dtype == ComputeDtype::F32 ? 1e-6 : 1e-2) << what;
  std::cout << "[rom " << what << "] " << computeDtypeName(dtype) << " "
            << harness::pathName(path) << ": " << st.words << " words read, " << st.emptyReads
            << " empty reads, " << st.wrong << " wrong, magnitudes per read count " << distinct
            << " distinct, worst |magnitude/nominal - 1| " << st.worstRatio << "\n";
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

TEST(RomGadget, ShapeIsDerivedFromTheMachineAndThePromptSlots) {
  const RomShape s = romShape(harness::config(kHidden, 1, 8, 16));
  EXPECT_EQ(s.opBits, 4);         // 16 ops per block
  EXPECT_EQ(s.blockBits, 5);      // 32 blocks
  EXPECT_EQ(s.opSlots, 6);        // a, b, i0, i1, i2, off (trace v3)
  EXPECT_EQ(s.banksPerSlot, 4);   // 512 rows over heads of 128
  EXPECT_EQ(s.heads, 25);         // + the terminator bank
}

TEST(RomGadget, RefusesFieldsOfTheWrongWidthAndTooFewHeads) {
  const model::Qwen35Config c = romConfig(16);
  CircuitWeights w(c);
  Layout l = layout(c);
  RomSpec narrow = l.spec;
  narrow.word.dims = 16;
  auto got = buildRom(w, narrow);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("word needs 32 dims"), std::string::npos);
  RomSpec fewer = l.spec;
  fewer.out.pop_back();
  got = buildRom(w, fewer);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("out needs 7 fields"), std::string::npos)
      << got.error().message;
  RomSpec narrowOut = l.spec;
  narrowOut.out[2].dims = 16;
  got = buildRom(w, narrowOut);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("each out field needs 32 dims"), std::string::npos);
  RomSpec late = l.spec;
  late.firstHead = 1;
  got = buildRom(w, late);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("needs value heads 1..25"), std::string::npos)
      << got.error().message;
  EXPECT_TRUE(buildRom(w, l.spec).ok());
}

// Runs `steps` on the given dtypes and paths; every path must match prefill bit for bit.
void expectRomExact(const std::string& what, const std::vector<Step>& steps,
                    const std::vector<std::pair<ComputeDtype, std::vector<Path>>>& runs) {
  Built b = build("rom_" + what, steps);
  EXPECT_EQ(b.margins.shape.heads, 25);
  EXPECT_EQ(b.margins.bank.keyOn, 128.0);
  EXPECT_EQ(b.margins.bank.keyOffMax, -128.0);
  for (const auto& [dtype, paths] : runs) {
    auto dec = harness::load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    std::vector<std::vector<float>> prefill;
    for (Path path : paths) {
      const auto start = std::chrono::steady_clock::now();
      auto rows = run(*dec, steps, path);
      ASSERT_EQ(rows.size(), steps.size());
      const Stats st = check(steps, rows);
      expectExact(what, st, dtype, path);
      std::cout << "  (" << steps.size() << " positions, " << seconds(start) << " s)\n";
      if (path == Path::Prefill) {
        prefill = std::move(rows);
      } else if (!prefill.empty()) {
        EXPECT_EQ(rows, prefill) << computeDtypeName(dtype) << " " << harness::pathName(path)
                                 << " differs from prefill";
      }
    }
  }
}

bool fullRun() { return std::getenv("QGPU_CIRCUIT_FULL") != nullptr; }

// The full ROM: 32 blocks × 16 ops × 6 slots + 32 terminators = 3,104 words, 64 early fetches,
// 512 final fetches (3,680 positions, 58 chunks): fp32 prefill and mixed (the writes prefilled,
// the fetches decoded one by one). QGPU_CIRCUIT_FULL=1 adds the fp32 decode path and bf16
// prefill and mixed (10 minutes here; measured 0 wrong, docs/circuit.md §9).
TEST(RomGadget, FullRomOfRandomWordsReadsBackExactly) {
  std::vector<std::pair<ComputeDtype, std::vector<Path>>> runs = {
      {ComputeDtype::F32, {Path::Prefill, Path::Mixed}}};
  if (fullRun()) {
    runs[0].second.push_back(Path::Decode);
    runs.push_back({ComputeDtype::BF16, {Path::Prefill, Path::Mixed}});
  }
  expectRomExact("full", program(7, kBlocks, 64), runs);
}

// Two blocks written (194 words), 16 early fetches, the 32 rows of those blocks and 32 rows of
// unwritten blocks (exactly 0) fetched: every dtype × every path (the one-token forwards of bf16
// are the slow part here).
TEST(RomGadget, TwoBlocksReadBackExactlyInFp32AndBf16OnEveryPath) {
  const std::vector<Path> all(std::begin(harness::kPaths), std::end(harness::kPaths));
  expectRomExact("2 blocks", program(9, 2, 16),
                 {{ComputeDtype::F32, all}, {ComputeDtype::BF16, all}});
}

// Twins: the same program and check must find wrong reads with one rule broken.
TEST(RomGadget, FailingTwinDecayLosesTheRows) {
  const std::vector<Step> steps = program(7, 8, 32);
  Built b = build("rom_decay", steps, WriteStrength::Full, Decay::Half);
  auto dec = harness::load(b.dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  const Stats st = check(steps, run(*dec, steps, Path::Prefill));
  EXPECT_GT(st.wrong, 0);
  std::cout << "[rom twin decay 1/2] f32 prefill: " << st.wrong << " of " << st.words + st.emptyReads
            << " slot reads wrong; first: " << st.first << "\n";
}

}  // namespace
}  // namespace qgpu::circuit
