// qgpu/circuit/tests/assembler_test.cpp — the tap heads and the value assembler (circuit/tap.h,
// circuit/assembler.h) run through model/'s real decoder: two standard linear_attention layers
// over the trace vocabulary's embedding (circuit/tokens.h), fp32 and bf16, the whole sequence as
// one prompt (chunked prefill, many 64-token chunks), one token per forward (recurrent decode),
// and mixed (100-token prompt, a 40-token cached continuation, then one at a time).
//
// What it pins down: at every position the six records of p−1..p−6 are the fields of those
// tokens (before the sequence start: the canonical "no token" record), and at every terminal
// chunk T the 32-bit value field is the value the test encoded there with trace::encodeValue
// (expected values from the test's own list); at every other token the value field is 0. Every
// bit must be at least half its nominal size (the ballast's size), or it counts as wrong. The
// failing twins (taps that read 0 before the sequence start; no second level) must fail.
//
// Readout: the untied lm_head is a probe (identity rows for every residual dim), so logit d is
// x_d times the final RMSNorm's scale; the ballast's logit is the nominal size of a ±16 field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "circuit/assembler.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "circuit/tests/config.h"
#include "model/decoder.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

namespace fs = std::filesystem;
using model::ComputeDtype;
using trace::Family;
using trace::Token;

constexpr int kHidden = 256;

std::string tempDir(const std::string& name) {
  fs::path p =
      fs::temp_directory_path() / ("qgpu_asm_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

model::Qwen35Config config() {
  model::Qwen35Config c =
      testing::linearConfig(kHidden, 2, 1024, std::max<int64_t>(trace::kVocabSize, kHidden));
  c.linearNumKeyHeads = 3;
  c.linearNumValueHeads = 3;
  return c;
}

struct Built {
  std::string dir;
  TokenLayout tokens;
  Assembler assembler;
};

Built build(const std::string& name, Padding padding, bool secondLevel) {
  CircuitWeights w(config());
  FieldAllocator alloc(kHidden);
  Built b;
  b.tokens = planTokenLayout(alloc, kHidden).value();
  EXPECT_TRUE(writeTokenEmbeddings(w, b.tokens).ok());
  AssemblerSpec s;
  s.tokens = b.tokens;
  s.padding = padding;
  s.secondLevel = secondLevel;
  auto a = buildAssembler(w, alloc, s);
  EXPECT_TRUE(a.ok()) << a.error().message;
  if (a.ok()) b.assembler = a.value();
  for (int d = 0; d < kHidden; ++d) EXPECT_TRUE(w.set("lm_head.weight", d, d, 1.0f).ok());
  auto exact = w.checkBf16Exact();
  EXPECT_TRUE(exact.ok()) << exact.error().message;
  b.dir = tempDir(name);
  auto written = w.write(b.dir);
  EXPECT_TRUE(written.ok()) << written.error().message;
  return b;
}

// ---- The test's own sequence: values and the positions of their T tokens. ----
struct Sequence {
  std::vector<Token> tokens;
  std::map<size_t, uint32_t> valueAt;  // position of a T → the value encoded there
};

std::vector<Token> nonChunkTokens() {
  std::vector<Token> out;
  for (int id = 0; id < trace::kVocabSize; ++id) {
    const Family f = trace::familyOf(static_cast<Token>(id));
    if (f != Family::C && f != Family::T) out.push_back(static_cast<Token>(id));
  }
  return out;
}

Sequence sequence(uint32_t seed, int randomValues) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> values = {0u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 15u, 16u,
                                  static_cast<uint32_t>(-15), static_cast<uint32_t>(-16),
                                  511u, 512u, static_cast<uint32_t>(-511), static_cast<uint32_t>(-512)};
  // Every length 1..7, both signs: random values of exactly b significant bits.
  for (int i = 0; i < randomValues; ++i) {
    const int bits = static_cast<int>(rng() % 32) + 1;
    uint32_t v = static_cast<uint32_t>(rng()) & (bits == 32 ? 0xffffffffu : (1u << bits) - 1);
    if (rng() % 2) v = ~v;
    values.push_back(v);
  }
  const std::vector<Token> others = nonChunkTokens();
  Sequence s;
  // The first value starts at position 0 (its chunks see the padding), the second follows at once.
  for (size_t i = 0; i < values.size(); ++i) {
    const int gap = i < 2 ? 0 : static_cast<int>(rng() % 4);  // 0..3 non-chunk tokens between
    for (int g = 0; g < gap; ++g) s.tokens.push_back(others[rng() % others.size()]);
    for (Token t : trace::encodeValue(values[i])) s.tokens.push_back(t);
    s.valueAt[s.tokens.size() - 1] = values[i];
  }
  return s;
}

// ---- Running through model::Decoder. ----
enum class Path { Prefill, Decode, Mixed };
constexpr Path kPaths[] = {Path::Prefill, Path::Decode, Path::Mixed};
const char* pathName(Path p) {
  return p == Path::Prefill ? "prefill" : p == Path::Decode ? "decode" : "mixed";
}

std::vector<std::vector<float>> run(model::Decoder& dec, const std::vector<Token>& seq, Path path) {
  dec.reset();
  std::vector<int64_t> tokens(seq.begin(), seq.end());
  std::vector<std::vector<float>> rows;
  auto forward = [&](size_t begin, size_t end, bool all) {
    auto logits = dec.forward(std::span<const int64_t>(tokens.data() + begin, end - begin), all);
    EXPECT_TRUE(logits.ok()) << logits.error().message;
    for (int64_t r = 0; logits.ok() && r < logits.value().rows; ++r) {
      auto row = logits.value().row(r);
      rows.emplace_back(row.begin(), row.begin() + kHidden);
    }
  };
  const size_t n = tokens.size();
  size_t oneByOneFrom = 0;
  if (path == Path::Prefill) {
    forward(0, n, true);
    oneByOneFrom = n;
  } else if (path == Path::Mixed) {
    forward(0, 100, true);
    forward(100, 140, true);
    oneByOneFrom = 140;
  }
  for (size_t t = oneByOneFrom; t < n; ++t) forward(t, t + 1, false);
  return rows;
}

// ---- The check: expectations from the trace vocabulary and the test's value list. ----
struct Stats {
  int values = 0;          // T positions checked
  int wrongValues = 0;     // a T whose value field decodes to another value
  int wrongZero = 0;       // a non-T whose value field is not 0
  int wrongRecords = 0;    // a record bit with the wrong sign
  int weak = 0;            // a bit below half the nominal size
  double minBit = 1e30;    // smallest |bit| / nominal over all checked bits
  double maxBit = 0;
  std::set<double> lambda1;  // λ at layer1's input, recomputed from the probed residual
  std::string firstWrong;
};

Stats check(const Built& b, const Sequence& s, const std::vector<std::vector<float>>& rows) {
  Stats st;
  const TokenLayout& t = b.tokens;
  const Assembler& a = b.assembler;
  auto note = [&](const std::string& what) {
    if (st.firstWrong.empty()) st.firstWrong = what;
  };
  for (size_t p = 0; p < rows.size(); ++p) {
    const std::vector<float>& row = rows[p];
    const double nominal = row[static_cast<size_t>(t.ballast.at(0))];
    auto bitIs = [&](int dim, bool one, const std::string& what) {
      const double v = row[static_cast<size_t>(dim)] / nominal;
      const double mag = std::fabs(v);
      st.minBit = std::min(st.minBit, mag);
      st.maxBit = std::max(st.maxBit, mag);
      if (mag < 0.5) {
        ++st.weak;
        note("position " + std::to_string(p) + " " + what + ": " + std::to_string(v) + " x nominal");
      }
      return (v > 0) == one;
    };
    // Records of p−1 .. p−6.
    for (int k = 1; k <= kWindow; ++k) {
      const TokenRecord& r = a.back[static_cast<size_t>(k - 1)];
      const bool present = p >= static_cast<size_t>(k);
      const Token tok = present ? s.tokens[p - static_cast<size_t>(k)] : Token{0};
      const Family f = trace::familyOf(tok);
      const bool chunk = present && (f == Family::C || f == Family::T);
      const int cv = chunk ? trace::indexOf(tok) : 0;
      bool ok = bitIs(r.present(), present, "present") &&
                bitIs(r.isChunk(), chunk, "isChunk") &&
                bitIs(r.isTerminal(), present && f == Family::T, "isTerminal");
      for (int j = 0; j < trace::kChunkBits; ++j)
        ok = bitIs(r.chunk(j), (cv >> j) & 1, "chunk bit") && ok;
      if (!ok) {
        ++st.wrongRecords;
        note("position " + std::to_string(p) + ": record of p-" + std::to_string(k) + " wrong");
      }
    }
    // The value field.
    uint32_t got = 0;
    for (int i = 0; i < kValueBits; ++i)
      if (bitIs(a.value.at(i), true, "value bit " + std::to_string(i))) got |= 1u << i;
    auto it = s.valueAt.find(p);
    if (it != s.valueAt.end()) {
      ++st.values;
      if (got != it->second) {
        ++st.wrongValues;
        note("position " + std::to_string(p) + ": expected " +
             std::to_string(static_cast<int32_t>(it->second)) + ", assembled " +
             std::to_string(static_cast<int32_t>(got)));
      }
    } else if (got != 0) {
      ++st.wrongZero;
      note("position " + std::to_string(p) + ": a non-terminal token assembled " +
           std::to_string(got));
    }
    // λ at layer1's input: the embedding fields plus the three layer0 records, re-computed from
    // the probed sizes (each field's logit / the ballast's logit × 16).
    double sumSq = 0;
    const int last = a.back[2].f.at(a.back[2].f.dims - 1);
    for (int d = 0; d <= last; ++d) {
      const double x = 16.0 * row[static_cast<size_t>(d)] / nominal;
      sumSq += x * x;
    }
    st.lambda1.insert(std::round(16.0 / std::sqrt(sumSq / kHidden) * 1e4) / 1e4);
  }
  return st;
}

std::unique_ptr<model::Decoder> load(const std::string& dir, ComputeDtype dtype) {
  auto dec = model::Decoder::load(dir, {dtype, "cpu"});
  EXPECT_TRUE(dec.ok()) << dec.error().message;
  return dec.ok() ? std::move(dec).value() : nullptr;
}

TEST(Assembler, EveryValueAndEveryRecordIsExactInFp32AndBf16OnEveryPath) {
  Built b = build("exact", Padding::Canonical, true);
  const Assembler& a = b.assembler;
  std::cout << "[assembler] λ design: layer0 " << a.lambda[0] << ", layer1 " << a.lambda[1]
            << ", layer1 MLP " << a.lambda[2] << "; MLP units " << a.units << ", widest AND "
            << a.maxFanIn << " literals; AND on ±" << a.andOn << "; tap read size "
            << a.heads[0].readUnit << " (level 0) " << a.heads[3].readUnit
            << " (level 1, bf16 rounding of out_proj " << a.heads[3].readUnitError << ")\n";
  EXPECT_EQ(a.lambda[0], 2.0);
  EXPECT_GE(a.andOn, 89.0);
  // The long sequence (thousands of values) runs as one prompt; the one-token-per-forward paths
  // (about 25 ms a token on the shared CPU) run a shorter one with the same edge values.
  // bf16 runs half of the long sequence (its CPU prefill is about 10x slower than fp32's).
  const Sequence longSeq = sequence(2026, 2000);
  const Sequence longBf16 = sequence(2026, 1000);
  const Sequence shortSeq = sequence(2027, 60);
  for (const Sequence* seq : {&longSeq, &longBf16, &shortSeq}) {
    std::set<int> lengths;  // every length 1..7 is present
    for (auto [pos, v] : seq->valueAt) lengths.insert(trace::valueLength(v));
    EXPECT_EQ(lengths.size(), 7u);
    std::cout << "[assembler] sequence: " << seq->tokens.size() << " tokens, "
              << seq->valueAt.size() << " values\n";
  }
  for (ComputeDtype dtype : {ComputeDtype::F32, ComputeDtype::BF16}) {
    auto dec = load(b.dir, dtype);
    ASSERT_NE(dec, nullptr);
    const std::pair<const Sequence*, Path> runs[] = {
        {dtype == ComputeDtype::F32 ? &longSeq : &longBf16, Path::Prefill},
                                                     {&shortSeq, Path::Prefill},
                                                     {&shortSeq, Path::Decode},
                                                     {&shortSeq, Path::Mixed}};
    for (auto [seq, path] : runs) {
      const Sequence& s = *seq;
      const auto start = std::chrono::steady_clock::now();
      auto rows = run(*dec, s.tokens, path);
      ASSERT_EQ(rows.size(), s.tokens.size());
      const Stats st = check(b, s, rows);
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string where = std::string(computeDtypeName(dtype)) + " " + pathName(path) +
                                " (" + std::to_string(s.tokens.size()) + " tokens)";
      EXPECT_EQ(st.values, static_cast<int>(s.valueAt.size())) << where;
      EXPECT_EQ(st.wrongValues, 0) << where << ": " << st.firstWrong;
      EXPECT_EQ(st.wrongZero, 0) << where << ": " << st.firstWrong;
      EXPECT_EQ(st.wrongRecords, 0) << where << ": " << st.firstWrong;
      EXPECT_EQ(st.weak, 0) << where << ": " << st.firstWrong;
      EXPECT_EQ(st.lambda1.size(), 1u) << where;
      std::cout << "[assembler] " << where << ": " << st.values << " values, " << st.wrongValues
                << " wrong, " << st.wrongZero << " non-T not 0, " << st.wrongRecords
                << " wrong records; bits " << st.minBit << " .. " << st.maxBit
                << " x nominal; λ(layer1 input) " << st.lambda1.size() << " value(s): "
                << *st.lambda1.begin() << " (" << secs << " s)\n";
    }
  }
}

// Failing twins: the same sequence and check must find errors.
TEST(Assembler, FailingTwinTapsReadingZeroBeforeTheStartAreCaught) {
  Built b = build("zero_pad", Padding::Zero, true);
  const Sequence s = sequence(2026, 100);
  auto dec = load(b.dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  for (Path path : kPaths) {
    const Stats st = check(b, s, run(*dec, s.tokens, path));
    EXPECT_GT(st.weak, 0) << pathName(path);
    std::cout << "[assembler twin zero padding] " << pathName(path) << ": " << st.weak
                << " weak bits, " << st.wrongValues << " wrong values; first: " << st.firstWrong
                << "\n";
  }
}

TEST(Assembler, FailingTwinWithoutTheSecondLevelGetsLongValuesWrong) {
  Built b = build("one_level", Padding::Canonical, false);
  const Sequence s = sequence(2026, 100);
  auto dec = load(b.dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  for (Path path : kPaths) {
    const Stats st = check(b, s, run(*dec, s.tokens, path));
    EXPECT_GT(st.wrongValues, 0) << pathName(path);
    std::cout << "[assembler twin one level] " << pathName(path) << ": " << st.wrongValues
              << " wrong values of " << st.values << "\n";
  }
}

}  // namespace
}  // namespace qgpu::circuit
