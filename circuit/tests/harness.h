// qgpu/circuit/tests/harness.h — shared helper for gadget tests that run through model/'s real
// decoder: build a tiny checkpoint (config, embedding rows, probe lm_head), load it with
// model::Decoder unchanged, and run a token sequence in fp32 or bf16 through the chunked prefill,
// the recurrent decode, or the mixed path, reading the probe logits back.
//
// The probe: the checkpoint's untied lm_head copies chosen residual dims into logits 0..P−1
// (identity rows), so logit i is dim i's value times the final RMSNorm's positive scale. In the
// "full" layout every dim of every circuit token holds ±u (pads +u), so mean(x²) = u² and the
// probe reads every sign field as exactly ±1.
//
// Input sizes: by default (per commit) every test runs reduced inputs that still reach every path
// and edge case; QGPU_CIRCUIT_FULL=1 (ci/nightly.sh sets it) runs the full measurement of
// docs/circuit.md §9. Tests pick their sizes with `inputs(perCommit, full)`.
//
// The expected values are the test's business: this file only builds and runs.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "circuit/config.h"
#include "circuit/weights.h"
#include "model/decoder.h"

namespace qgpu::circuit::harness {

using model::ComputeDtype;
constexpr ComputeDtype kDtypes[] = {ComputeDtype::F32, ComputeDtype::BF16};

// QGPU_CIRCUIT_FULL set (to anything but "0"): the full inputs.
inline bool fullInputs() {
  const char* v = std::getenv("QGPU_CIRCUIT_FULL");
  return v != nullptr && std::string(v) != "0";
}
// The per-commit size, or the full one under QGPU_CIRCUIT_FULL.
inline int inputs(int perCommit, int full) { return fullInputs() ? full : perCommit; }

// All layers linear_attention, one 128/128 DeltaNet head (zero unless a gadget writes it), an MLP
// of `units`, an untied lm_head.
inline model::Qwen35Config config(int hidden, int layers, int units, int64_t vocab) {
  return linearConfig(hidden, layers, units, vocab);
}

// The checkpoint directories this test process wrote; removed when the process exits (a gadget
// checkpoint is 10 MB to 0.7 GB, and a CI run writes hundreds of them). QGPU_KEEP_CHECKPOINTS=1
// keeps them for inspection.
struct TempDirs {
  std::vector<std::string> paths;
  ~TempDirs() {
    const char* keep = std::getenv("QGPU_KEEP_CHECKPOINTS");
    if (keep != nullptr && std::string(keep) != "0") return;
    std::error_code ignored;  // best effort: a directory already gone is fine
    for (const std::string& p : paths) std::filesystem::remove_all(p, ignored);
  }
};
inline TempDirs& tempDirs() {
  static TempDirs dirs;
  return dirs;
}

inline std::string tempDir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path p =
      fs::temp_directory_path() / ("qgpu_gadget_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  tempDirs().paths.push_back(p.string());
  return p.string();
}

// Every dim of token `t`'s embedding row = v (the full layout's pads).
inline void fillRow(CircuitWeights& w, int64_t t, float v) {
  const std::string e = w.globalTensor("embed_tokens.weight");
  for (int d = 0; d < w.config().hiddenSize; ++d) ASSERT_TRUE(w.set(e, t, d, v).ok());
}

// Bit i of `value` as ±unit in dim i of `f`.
inline void setSigns(CircuitWeights& w, int64_t t, const Field& f, uint64_t value, float unit) {
  const std::string e = w.globalTensor("embed_tokens.weight");
  for (int i = 0; i < f.dims; ++i)
    ASSERT_TRUE(w.set(e, t, f.at(i), (value >> i) & 1 ? unit : -unit).ok());
}

// Logits first..first+f.dims−1 read f.
inline void probe(CircuitWeights& w, int first, const Field& f) {
  for (int i = 0; i < f.dims; ++i) ASSERT_TRUE(w.set("lm_head.weight", first + i, f.at(i), 1.0f).ok());
}

inline std::string write(const CircuitWeights& w, const std::string& name) {
  auto exact = w.checkBf16Exact();
  EXPECT_TRUE(exact.ok()) << exact.error().message;
  const std::string dir = tempDir(name);
  auto written = w.write(dir);
  EXPECT_TRUE(written.ok()) << written.error().message;
  return dir;
}

inline std::unique_ptr<model::Decoder> load(const std::string& dir, ComputeDtype dtype) {
  auto dec = model::Decoder::load(dir, {dtype, "cpu"});
  EXPECT_TRUE(dec.ok()) << dec.error().message;
  return dec.ok() ? std::move(dec).value() : nullptr;
}

// Prefill: the whole sequence as one prompt (chunked rule). Decode: one token per forward. Mixed:
// a prompt of min(100, n/2) tokens, a 40-token continuation from the cached state, then one by one.
enum class Path { Prefill, Decode, Mixed };
constexpr Path kPaths[] = {Path::Prefill, Path::Decode, Path::Mixed};
inline const char* pathName(Path p) {
  return p == Path::Prefill ? "prefill" : p == Path::Decode ? "decode" : "mixed";
}

// The first `probes` logits of every position.
inline std::vector<std::vector<float>> run(model::Decoder& dec, const std::vector<int64_t>& tokens,
                                           Path path, int probes) {
  dec.reset();
  std::vector<std::vector<float>> rows;
  auto forward = [&](size_t begin, size_t end, bool all) {
    auto logits = dec.forward(std::span<const int64_t>(tokens.data() + begin, end - begin), all);
    EXPECT_TRUE(logits.ok()) << logits.error().message;
    for (int64_t r = 0; logits.ok() && r < logits.value().rows; ++r) {
      auto row = logits.value().row(r);
      rows.emplace_back(row.begin(), row.begin() + probes);
    }
  };
  const size_t n = tokens.size();
  size_t oneByOne = 0;
  if (path == Path::Prefill) {
    forward(0, n, true);
    oneByOne = n;
  } else if (path == Path::Mixed) {
    const size_t prompt = std::min<size_t>(100, n / 2), cont = std::min<size_t>(prompt + 40, n);
    forward(0, prompt, true);
    if (cont > prompt) forward(prompt, cont, true);
    oneByOne = cont;
  }
  for (size_t t = oneByOne; t < n; ++t) forward(t, t + 1, false);
  return rows;
}

// Probing a layer input: the same weights with everything after a point silenced. A layer whose
// out_proj and down_proj are zero adds exactly 0 to the residual, so the probe (after the final
// norm) then reads the residual after layer `layer` (withMlp) or after its attention only (the
// input of its MLP). layer −1: every layer silenced (the probe reads the embedding).
inline void silenceAfter(CircuitWeights& w, int layer, bool withMlp) {
  for (int l = std::max(layer, 0); l < w.config().numLayers(); ++l) {
    if (l > layer) {
      ASSERT_TRUE(w.fill(w.layerTensor(l, "linear_attn.out_proj.weight"), 0).ok());
    }
    if (l > layer || !withMlp) {
      ASSERT_TRUE(w.fill(w.layerTensor(l, "mlp.down_proj.weight"), 0).ok());
    }
  }
}

// The full layout at the probe: every probed logit of every position must be exactly ±nominal
// (every residual dim exactly ±u, so Σx² = H·u² and λ at the next layer input is exactly the
// layout's). Counts the logits that are not, and the distinct magnitudes.
struct LayoutCheck {
  int64_t logits = 0;
  int64_t offNominal = 0;
  std::set<float> magnitudes;
  std::string first;
  bool ok() const { return offNominal == 0; }
  std::string summary() const {
    return std::to_string(logits) + " logits, " + std::to_string(offNominal) + " not ±nominal, " +
           std::to_string(magnitudes.size()) + " magnitude(s)" + (first.empty() ? "" : "; first: " + first);
  }
};
inline LayoutCheck checkLayout(const std::vector<std::vector<float>>& rows, float nominal) {
  LayoutCheck c;
  for (size_t p = 0; p < rows.size(); ++p)
    for (size_t d = 0; d < rows[p].size(); ++d) {
      const float m = std::fabs(rows[p][d]);
      ++c.logits;
      c.magnitudes.insert(m);
      if (m != nominal) {
        ++c.offNominal;
        if (c.first.empty())
          c.first = "position " + std::to_string(p) + " dim " + std::to_string(d) + ": " +
                    std::to_string(rows[p][d]);
      }
    }
  return c;
}

// Sign-field check: expected[p][i] is the bit probe i must show at position p, as ±nominal.
struct SignCheck {
  int64_t values = 0;
  int64_t wrongSign = 0;     // the sign decodes to the other bit (or the logit is 0)
  int64_t inexact = 0;       // right sign, magnitude ≠ nominal
  double minRatio = 1e30;    // smallest |logit| / nominal
  double maxRatio = 0;
  std::set<float> magnitudes;
  std::string first;         // the first failure, for the message
  bool ok() const { return wrongSign == 0 && inexact == 0; }
  std::string summary() const {
    return std::to_string(values) + " bits, " + std::to_string(wrongSign) + " wrong, " +
           std::to_string(inexact) + " inexact, " + std::to_string(magnitudes.size()) +
           " magnitude(s), |logit|/nominal in [" + std::to_string(minRatio) + ", " +
           std::to_string(maxRatio) + "]" + (first.empty() ? "" : "; first: " + first);
  }
};

inline void checkBits(SignCheck& c, const std::vector<float>& row, const std::vector<bool>& bits,
                      double nominal, const std::string& where) {
  for (size_t i = 0; i < bits.size(); ++i) {
    const float l = row[i];
    ++c.values;
    const double mag = std::fabs(l);
    c.magnitudes.insert(static_cast<float>(mag));
    c.minRatio = std::min(c.minRatio, mag / nominal);
    c.maxRatio = std::max(c.maxRatio, mag / nominal);
    const bool sign = l > 0;
    const bool bad = l == 0 || sign != bits[i];
    const bool off = !bad && mag != nominal;
    c.wrongSign += bad ? 1 : 0;
    c.inexact += off ? 1 : 0;
    if ((bad || off) && c.first.empty())
      c.first = where + " probe " + std::to_string(i) + ": expected " + (bits[i] ? "+" : "-") +
                std::to_string(nominal) + ", logit " + std::to_string(l) + " (ratio " + std::to_string(mag / nominal - 1) + ")";
  }
}

// Bits 0..n−1 of v.
inline std::vector<bool> bitsOf(uint64_t v, int n) {
  std::vector<bool> b(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) b[static_cast<size_t>(i)] = (v >> i) & 1;
  return b;
}

}  // namespace qgpu::circuit::harness
