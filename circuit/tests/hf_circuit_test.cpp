// qgpu/circuit/tests/hf_circuit_test.cpp — the transformers cross-check of circuit checkpoints
// (docs/circuit.md §9 "Transformers cross-check").
//
// For every named case of circuit_cases.h: rebuild its checkpoint in process, check that the
// fixture circuit/tests/data/hf_circuit_<case>.safetensors (written by ci/hf_circuit_reference.py:
// transformers' greedy tokens without a cache, fp32 and bf16) was made from these very weights
// (the FNV-1a 64 digest of model.safetensors) and these prompts and expected tokens, then compare
// three token streams at every generated position:
//   - the trace encoder's expected tokens (the case's, from oracle::appendTrace),
//   - transformers' greedy tokens (the fixture), and
//   - model::Decoder's greedy tokens (generateGreedy: chunked prefill, then one-token decode),
// in fp32 and bf16: 0 mismatches. transformers' top-vs-second logit gap at every generated position
// must be at least the readout's constructed margin.
//
// A missing or stale fixture is a failure that names the script that regenerates it. Twins: the
// comparison counts a flipped token at its position, and the staleness check refuses a digest
// that differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "circuit/margins.h"
#include "circuit/tests/circuit_cases.h"
#include "circuit/tests/harness.h"
#include "model/tests/hf_fixture.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using model::ComputeDtype;

constexpr const char* kRegenerate =
    "regenerate it with: ninja -C build qgpu_make_circuit && "
    "ci/.venv/bin/python ci/hf_circuit_reference.py (ci/requirements-hf.txt)";

std::string fixturePath(const std::string& name) {
  return std::string(QGPU_SOURCE_DIR) + "/circuit/tests/data/hf_circuit_" + name + ".safetensors";
}

// Rows of a flat token tensor cut at `offsets` (n + 1 entries).
std::vector<std::vector<int64_t>> split(const std::vector<int64_t>& flat,
                                        const std::vector<int64_t>& offsets) {
  std::vector<std::vector<int64_t>> rows;
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    const int64_t a = offsets[i], b = offsets[i + 1];
    if (a < 0 || b < a || static_cast<size_t>(b) > flat.size()) return {};
    rows.emplace_back(flat.begin() + a, flat.begin() + b);
  }
  return rows;
}

// Token streams compared position by position.
struct Comparison {
  int64_t positions = 0, mismatches = 0;
  std::string first;
};
void compare(Comparison& c, const std::vector<int64_t>& want, const std::vector<int64_t>& got,
             size_t prompt, const std::string& what) {
  for (size_t q = 0; q < std::max(want.size(), got.size()); ++q) {
    ++c.positions;
    const bool same = q < want.size() && q < got.size() && want[q] == got[q];
    if (same) continue;
    ++c.mismatches;
    if (c.first.empty()) {
      auto name = [](const std::vector<int64_t>& v, size_t i) {
        if (i >= v.size()) return std::string("nothing");
        return v[i] >= 0 && v[i] < trace::kVocabSize ? trace::tokenName(static_cast<trace::Token>(v[i]))
                                                     : "id " + std::to_string(v[i]);
      };
      c.first = what + ": prompt " + std::to_string(prompt) + " generated token " +
                std::to_string(q) + ": expected " + name(want, q) + ", got " + name(got, q);
    }
  }
}

// Why a fixture does not belong to the rebuilt case, or "" when it does.
std::string staleness(const std::map<std::string, std::string>& meta, const std::string& name,
                      const std::string& digest) {
  auto get = [&](const char* k) {
    auto it = meta.find(k);
    return it == meta.end() ? std::string("(absent)") : it->second;
  };
  if (get("qgpu_fixture") != "hf-circuit" || get("version") != "1")
    return "not an hf-circuit v1 fixture (qgpu_fixture " + get("qgpu_fixture") + ", version " +
           get("version") + ")";
  if (get("case") != name) return "made for case " + get("case");
  if (get("weights_fnv1a64") != digest)
    return "stale: made from weights " + get("weights_fnv1a64") + ", the rebuilt checkpoint is " + digest;
  return "";
}

struct Rebuilt {
  std::string dir, digest;
  std::optional<cases::CircuitCase> c;
  bool ok = false;
};

const Rebuilt& rebuilt(const std::string& name) {
  static std::map<std::string, Rebuilt> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Rebuilt& r = cache[name];
  auto c = cases::buildCase(name);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().str());
  if (!c.ok()) return r;
  r.c.emplace(std::move(c).value());
  r.dir = harness::write(r.c->weights, "hf_circuit_" + name);
  r.digest = model::fileDigestHex(r.dir + "/model.safetensors");
  r.ok = true;
  return r;
}

class HfCircuit : public ::testing::TestWithParam<std::string> {};

TEST_P(HfCircuit, TransformersAndTheDecoderWriteTheEncodersTokensInFp32AndBf16) {
  const std::string name = GetParam();
  const std::string path = fixturePath(name);
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing: " << kRegenerate;
  const Rebuilt& r = rebuilt(name);
  ASSERT_TRUE(r.ok);

  auto file = model::SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error().str() << "; " << kRegenerate;
  model::HfFixture fx;
  fx.file = *file;
  fx.meta = fx.file->header().metadata;
  const std::string stale = staleness(fx.meta, name, r.digest);
  ASSERT_EQ(stale, "") << path << ": " << kRegenerate;
  const auto prompts = split(fx.read<int64_t>("prompt_tokens"), fx.read<int64_t>("prompt_offsets"));
  const std::vector<int64_t> expectedOffsets = fx.read<int64_t>("expected_offsets");
  const auto fixtureExpected = split(fx.read<int64_t>("expected_tokens"), expectedOffsets);
  ASSERT_EQ(prompts.size(), r.c->prompts.size()) << path << ": stale prompts; " << kRegenerate;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(prompts[i], r.c->prompts[i].prompt) << path << " prompt " << i << ": stale; " << kRegenerate;
    ASSERT_EQ(fixtureExpected[i], r.c->prompts[i].expected)
        << path << " prompt " << i << ": stale expected tokens; " << kRegenerate;
  }

  const std::pair<const char*, ComputeDtype> dtypes[] = {{"f32", ComputeDtype::F32},
                                                         {"bf16", ComputeDtype::BF16}};
  for (const auto& [dname, dtype] : dtypes) {
    const std::string greedyName = std::string("greedy_") + dname;
    ASSERT_NE(fx.file->header().find(greedyName), nullptr)
        << path << " has no " << greedyName << "; " << kRegenerate;
    const auto hf = split(fx.read<int64_t>(greedyName), expectedOffsets);
    const std::vector<float> gaps = fx.read<float>(std::string("gap_") + dname);
    ASSERT_EQ(hf.size(), prompts.size());
    auto dec = harness::load(r.dir, dtype);
    ASSERT_NE(dec, nullptr);
    Comparison hfVsTrace, decVsTrace, decVsHf;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const std::vector<int64_t>& want = r.c->prompts[i].expected;
      dec->reset();
      auto ours = dec->generateGreedy(prompts[i], static_cast<int64_t>(want.size()));
      ASSERT_TRUE(ours.ok()) << ours.error().message;
      compare(hfVsTrace, want, hf[i], i, std::string("transformers ") + dname);
      compare(decVsTrace, want, *ours, i, std::string("model::Decoder ") + dname);
      compare(decVsHf, hf[i], *ours, i, std::string("model::Decoder vs transformers ") + dname);
    }
    EXPECT_GT(hfVsTrace.positions, 0);
    EXPECT_EQ(hfVsTrace.mismatches, 0) << hfVsTrace.first;
    EXPECT_EQ(decVsTrace.mismatches, 0) << decVsTrace.first;
    EXPECT_EQ(decVsHf.mismatches, 0) << decVsHf.first;
    ASSERT_EQ(gaps.size(), static_cast<size_t>(hfVsTrace.positions));
    const float minGap = *std::min_element(gaps.begin(), gaps.end());
    EXPECT_GE(minGap, r.c->statedLogitMargin) << "transformers " << dname;
    std::cout << "[hf circuit] " << name << " " << dname << ": " << prompts.size() << " prompts, "
              << hfVsTrace.positions << " positions compared; mismatches: transformers vs encoder "
              << hfVsTrace.mismatches << ", decoder vs encoder " << decVsTrace.mismatches
              << ", decoder vs transformers " << decVsHf.mismatches
              << "; transformers' smallest logit gap " << minGap << " (stated "
              << r.c->statedLogitMargin << "); " << fx.meta["transformers"] << " / torch "
              << fx.meta["torch"] << "\n";
  }
}

// Margins from real activations: every decision of every layer, at every position of every
// prompt and its expected continuation, on both of the runtime's paths (the whole sequence as one
// chunked prefill; the prompt, then one token per forward), fp32 and bf16: nothing in R2's band,
// every sign field exactly ±u at every layer input. The report is the table of docs/circuit.md §9.
// Nightly only (QGPU_CIRCUIT_FULL=1, ci/nightly.sh): four tapped runs of every prompt take longer
// than a per-commit test may on the loaded 2-core machine.
TEST_P(HfCircuit, MarginsPerLayerFromRealActivationsStayOutOfTheBand) {
  if (!harness::fullInputs()) GTEST_SKIP() << "margins run under QGPU_CIRCUIT_FULL=1 (ci/nightly.sh)";
  const Rebuilt& r = rebuilt(GetParam());
  ASSERT_TRUE(r.ok);
  // The decision units, found once from the weights; each run measures into its own copy.
  const auto empty = MarginMeter::create(r.c->weights, r.c->signFields, r.c->unit);
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  for (ComputeDtype dtype : harness::kDtypes) {
    auto dec = harness::load(r.dir, dtype);
    ASSERT_NE(dec, nullptr);
    for (const bool oneByOne : {false, true}) {
      std::optional<MarginMeter> meter = *empty;
      for (const cases::GreedyPrompt& g : r.c->prompts) {
        std::vector<int64_t> seq = g.prompt;
        seq.insert(seq.end(), g.expected.begin(), g.expected.end() - 1);
        dec->reset();
        const size_t first = oneByOne ? g.prompt.size() : seq.size();
        auto t = dec->forwardTapped(std::span<const int64_t>(seq.data(), first), true);
        ASSERT_TRUE(t.ok()) << t.error().message;
        ASSERT_TRUE(meter->add(t->activations).ok());
        for (size_t q = first; q < seq.size(); ++q) {
          auto step = dec->forwardTapped(std::span<const int64_t>(seq.data() + q, 1));
          ASSERT_TRUE(step.ok()) << step.error().message;
          auto added = meter->add(step->activations);
          ASSERT_TRUE(added.ok()) << added.error().message;
        }
      }
      const MarginReport& m = meter->report();
      const std::string where = std::string(computeDtypeName(dtype)) + (oneByOne ? " decode" : " prefill");
      for (const LayerMargins& l : m.layers) {
        for (size_t k = 0; k < l.decisions.size(); ++k)
          EXPECT_EQ(l.decisions[k].inBand, 0) << where << " layer " << l.layer << " "
                                              << kDecisionKindTable[k].label << ": " << l.decisions[k].firstInBand;
        EXPECT_EQ(l.signs.offNominal, 0) << where << " layer " << l.layer << ": " << l.signs.firstOff;
      }
      std::cout << "[hf circuit margins] " << GetParam() << " " << where << ": " << m.positions
                << " positions, smallest |pre-activation| " << m.smallestAbs() << "\n" << m.table() << std::flush;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, HfCircuit, ::testing::ValuesIn(cases::caseNames()),
                         [](const auto& info) { return info.param; });

// The twins: the checks above can fail.
TEST(HfCircuitChecks, ComparisonCountsAFlippedTokenAtItsPosition) {
  const std::vector<int64_t> want = {98, 201, 182, 178};
  std::vector<int64_t> got = want;
  got[2] = 183;
  Comparison c;
  compare(c, want, got, 5, "twin");
  EXPECT_EQ(c.positions, 4);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_NE(c.first.find("prompt 5 generated token 2"), std::string::npos) << c.first;
  Comparison shorter;
  compare(shorter, want, {98, 201}, 0, "twin");
  EXPECT_EQ(shorter.mismatches, 2);  // a stream that stops early mismatches where it is absent
}

TEST(HfCircuitChecks, StalenessRefusesAnotherDigestCaseOrKind) {
  const std::map<std::string, std::string> meta = {
      {"qgpu_fixture", "hf-circuit"}, {"version", "1"}, {"case", "result_stage"},
      {"weights_fnv1a64", "db31e0edabdcce67"}};
  EXPECT_EQ(staleness(meta, "result_stage", "db31e0edabdcce67"), "");
  EXPECT_NE(staleness(meta, "result_stage", "db31e0edabdcce66").find("stale"), std::string::npos);
  EXPECT_NE(staleness(meta, "record_emit", "db31e0edabdcce67"), "");
  auto other = meta;
  other["qgpu_fixture"] = "hf-logits";
  EXPECT_NE(staleness(other, "result_stage", "db31e0edabdcce67"), "");
}

TEST(HfCircuitChecks, EveryCaseHasPromptsAndExpectedTokens) {
  for (const std::string& name : cases::caseNames()) {
    auto c = cases::buildCase(name);
    ASSERT_TRUE(c.ok()) << c.error().str();
    EXPECT_GE(c->prompts.size(), 3u) << name;
    for (const cases::GreedyPrompt& p : c->prompts) {
      EXPECT_FALSE(p.prompt.empty());
      EXPECT_GE(p.expected.size(), 2u);  // a record's tag, then at least the token after it
    }
  }
  EXPECT_FALSE(cases::buildCase("no_such_case").ok());
}

}  // namespace
}  // namespace qgpu::circuit
