// qgpu/circuit/margins.h — decision margins measured from real activations (issue 8 item 6,
// docs/circuit.md §9 "Margins"): given a circuit's weights and the per-layer intermediates of a run
// through model/ (model::Decoder::forwardTapped, model/activation.h), how far every decision stayed
// from the region where rounding could change it.
//
// The decisions are the inputs of every nonlinearity the circuit uses (rule R2): SiLU of the MLP
// gate, of the conv output (q, k, v channels) and of the z gate; sigmoid of b. A nonlinearity's
// output is exact only where its input is exactly 0, at most kOffAtMost (silu = −0, sigmoid = 0)
// or at least kOnAtLeast (silu(x) = x, sigmoid = 1). An input anywhere else is **in band**: a
// leak the circuit's rules forbid. Decision units are found from the weights, not from the stack's
// own bookkeeping: an MLP unit whose gate_proj row, a conv channel whose in_proj_qkv row, a z dim
// whose in_proj_z row, a head whose in_proj_b row holds a nonzero weight.
//
// The sign fields (rule R3): every dim of the given fields must be exactly ±u at every layer
// input; the report gives the smallest and largest |x|/u and how many differ from 1.
//
// Contract: pure, torch-free (it reads model::Activation, a plain struct); an activation whose
// shape does not fit the weights' config is a Usage diag naming it. The thresholds are R2's
// measured constants, not the stack's.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "circuit/weights.h"
#include "common/diag.h"
#include "model/activation.h"

namespace qgpu::circuit {

inline constexpr float kOffAtMost = -88.8f;  // silu(x) = −0 and sigmoid(x) = 0 at and below
inline constexpr float kOnAtLeast = 17.0f;   // silu(x) = x (fp32; bf16 from 8) and sigmoid(x) = 1

// The decision kinds, one row each: the tap's name and the weight whose nonzero rows mark the
// units that decide.
enum class DecisionKind : uint8_t { MlpGate, Conv, Z, Beta };
inline constexpr int kDecisionKinds = 4;
struct DecisionKindInfo {
  DecisionKind kind;
  const char* tap;     // model::Activation::name
  const char* weight;  // layer tensor suffix
  const char* label;   // in reports
};
inline constexpr DecisionKindInfo kDecisionKindTable[kDecisionKinds] = {
    {DecisionKind::MlpGate, "mlp_gate", "mlp.gate_proj.weight", "mlp gate"},
    {DecisionKind::Conv, "attn_conv", "linear_attn.in_proj_qkv.weight", "conv"},
    {DecisionKind::Z, "attn_z", "linear_attn.in_proj_z.weight", "z"},
    {DecisionKind::Beta, "attn_b", "linear_attn.in_proj_b.weight", "b"},
};

// One kind of decision in one layer, over every tapped position.
struct DecisionMargin {
  int64_t units = 0;            // decision units (nonzero weight rows)
  int64_t values = 0;           // units × positions seen
  int64_t zeros = 0, off = 0, on = 0;
  int64_t inBand = 0;           // neither: the count that must be 0
  double minAbs = 0;            // smallest |x| ≠ 0 (0 when every value was 0 or none was seen)
  double maxOff = 0;            // largest x ≤ kOffAtMost (0: none)
  double minOn = 0;             // smallest x ≥ kOnAtLeast (0: none)
  std::string firstInBand;      // "position p unit i: x"
};

struct SignFieldMargin {
  int64_t dims = 0, values = 0;
  int64_t offNominal = 0;       // |x| ≠ u
  double minRatio = 0, maxRatio = 0;  // of |x| / u
  std::string firstOff;
};

struct LayerMargins {
  int layer = 0;
  std::array<DecisionMargin, kDecisionKinds> decisions{};
  SignFieldMargin signs;
  bool ok() const;  // nothing in band, every sign field exactly ±u
};

struct MarginReport {
  std::vector<LayerMargins> layers;
  int64_t positions = 0;
  bool ok() const;
  // Adds another run's measurement of the same weights (counts add, extremes combine).
  void add(const MarginReport& other);
  // The smallest nonzero |pre-activation| of any decision in any layer.
  double smallestAbs() const;
  // One line per layer: per kind units, in band, smallest |x|; the sign fields' |x|/u range.
  std::string table() const;
};

// The rows of layer `layer`'s weight `suffix` (kDecisionKindTable's, `rows` × `cols`) that hold a
// nonzero weight.
using LiveRows = std::function<Expected<std::vector<int64_t>>(int layer, const std::string& suffix, int64_t rows,
                                                              int64_t cols)>;

// Accumulates runs: finds the decision units of `weights` once, then measures each run's taps.
class MarginMeter {
 public:
  static Expected<MarginMeter> create(const CircuitWeights& weights, std::span<const Field> signFields,
                                      float unit);
  // The same for any weights: `config` and a source of their nonzero rows.
  static Expected<MarginMeter> create(const model::Qwen35Config& config, const LiveRows& liveRows,
                                      std::span<const Field> signFields, float unit);
  // The decision units of a checkpoint directory's weights as stored (model.safetensors, F32,
  // BF16 or F16: a weight is nonzero when a bit besides the sign is set), read from the mapped
  // file: the meter of a model the caller runs from that directory, without its CircuitWeights.
  static Expected<MarginMeter> fromCheckpoint(const std::string& dir, std::span<const Field> signFields,
                                              float unit);
  // One forwardTapped run's taps (prefill or one token: positions add up).
  Status add(std::span<const model::Activation> taps);
  const MarginReport& report() const { return report_; }

 private:
  MarginMeter() = default;
  model::Qwen35Config config_;
  std::vector<Field> fields_;
  float unit_ = 0;
  // live_[layer][kind]: the rows with a nonzero weight.
  std::vector<std::array<std::vector<int64_t>, kDecisionKinds>> live_;
  MarginReport report_;
};

// MarginMeter over one set of taps.
Expected<MarginReport> measureMargins(const CircuitWeights& weights,
                                      std::span<const model::Activation> taps,
                                      std::span<const Field> signFields, float unit);

}  // namespace qgpu::circuit
