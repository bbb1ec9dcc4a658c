// qgpu/circuit/counter.cpp — see counter.h for the maths.
#include "circuit/counter.h"

#include <cmath>
#include <string>

#include "circuit/tap.h"
#include "circuit/unit_builder.h"
#include "model/tiny.h"

namespace qgpu::circuit {
namespace {

using unit_builder::usage;

// λ and u within 2^±8 keep every derived weight (c/λ, 384/λ, K) a finite float.
bool sane(double lambda, double unit) {
  return lambda >= 1.0 / 256 && lambda <= 256 && unit >= 1.0 / 256 && unit <= 256;
}

// The head's slices of the layer's tensors.
struct HeadSlots {
  int64_t q = 0, k = 0, v = 0;  // first q / k / v channel of the head in in_proj_qkv
  int64_t dk = 0, dv = 0;
  std::string qkv, conv, b, a, aLog, dt, z, norm, out;
};

Expected<HeadSlots> slots(const CircuitWeights& w, int layer, int head, const std::string& gadget) {
  const model::Qwen35Config& c = w.config();
  if (layer < 0 || layer >= c.numLayers() ||
      c.layerTypes[static_cast<size_t>(layer)] != model::LayerType::Linear)
    return usage(gadget, "layer " + std::to_string(layer) + " is not a linear_attention layer");
  if (head < 0 || head >= c.linearNumValueHeads)
    return usage(gadget, "value head " + std::to_string(head) + " does not exist");
  if (c.linearNumValueHeads != c.linearNumKeyHeads)
    return usage(gadget, "needs one key head per value head (Hv = Hk)");
  HeadSlots s;
  s.dk = c.linearKeyHeadDim;
  s.dv = c.linearValueHeadDim;
  // dv/8 a power of 4: the gated norm of 8 equal hot channels is then √(dv/8), a power of two.
  const double hot = std::sqrt(static_cast<double>(s.dv) / 8.0);
  if (s.dv < 16 || !powerOfTwo(hot) || hot * hot * 8.0 != static_cast<double>(s.dv))
    return usage(gadget, "needs a value head dim dv >= 16 with dv/8 a power of 4");
  s.q = head * s.dk;
  s.k = c.linearKeyDim() + head * s.dk;
  s.v = 2 * c.linearKeyDim() + head * s.dv;
  s.qkv = w.layerTensor(layer, "linear_attn.in_proj_qkv.weight");
  s.conv = w.layerTensor(layer, "linear_attn.conv1d.weight");
  s.b = w.layerTensor(layer, "linear_attn.in_proj_b.weight");
  s.a = w.layerTensor(layer, "linear_attn.in_proj_a.weight");
  s.aLog = w.layerTensor(layer, "linear_attn.A_log");
  s.dt = w.layerTensor(layer, "linear_attn.dt_bias");
  s.z = w.layerTensor(layer, "linear_attn.in_proj_z.weight");
  s.norm = w.layerTensor(layer, "linear_attn.norm.weight");
  s.out = w.layerTensor(layer, "linear_attn.out_proj.weight");
  return s;
}

// conv1d [0, 0, 0, 1]: the channel sees the current token only (R8).
Status useChannel(CircuitWeights& w, const HeadSlots& s, int64_t ch) {
  return w.set(s.conv, ch, w.config().linearConvKernelDim - 1, 1.0f);
}

// silu(z) = λGz on every channel of the head, the shared gated-norm weight 1.
// The read at this key head dim (circuit/tap.h "The read height"): key rows 0..R−1 with the same
// terms, the query on the plan's rows (row 1 at λG + δ, δ's pieces on ballast dims 1..). Returns
// the plan; plan.height / 128 is the factor every value gain takes (1 for dk a power of 4, 2 at
// dk = 128: the read (value·t/2) is then the dk = 64 read, bit for bit).
Expected<OneRowRead> keyAndQuery(CircuitWeights& w, const HeadSlots& s, const std::vector<Term>& key,
                                 const Field& ballast, double lambda, float G, ReadHeight mode,
                                 const std::string& gadget) {
  QGPU_TRY(plan, planOneRowRead(s.dk, 128.0, mode, lambda * G));
  if (plan.keyRows > 1 && ballast.dims < 2)
    return usage(gadget, "an exact read at key head dim " + std::to_string(s.dk) +
                             " needs 2 ballast dims (the query's second row)");
  for (int r = 0; r < plan.keyRows; ++r) {
    for (const Term& t : key) QGPU_CHECK(w.set(s.qkv, s.k + r, t.dim, t.weight));
    QGPU_CHECK(useChannel(w, s, s.k + r));
  }
  const Field pieces{ballast.name, ballast.at(0) + 1, ballast.dims - 1};
  for (size_t r = 0; r < plan.queryHeights.size(); ++r) {
    const int64_t row = s.q + static_cast<int64_t>(r);
    QGPU_CHECK(w.set(s.qkv, row, ballast.at(0), G));
    QGPU_TRY(extra, heightTerms((plan.queryHeights[r] - plan.queryHeights[0]) / lambda, pieces,
                                false));
    for (const Term& t : extra.rest) QGPU_CHECK(w.set(s.qkv, row, t.dim, t.weight));
    QGPU_CHECK(useChannel(w, s, row));
  }
  return plan;
}

Status gate(CircuitWeights& w, const HeadSlots& s, int head, int ballast, float gz) {
  for (int64_t ch = 0; ch < s.dv; ++ch) QGPU_CHECK(w.set(s.z, head * s.dv + ch, ballast, gz));
  return w.fill(s.norm, 1.0f);
}

}  // namespace

Expected<EventCounterMargins> buildEventCounter(CircuitWeights& w, const EventCounterSpec& spec) {
  const std::string g = "counter";
  QGPU_TRY(s, slots(w, spec.layer, spec.head, g));
  const int hidden = w.config().hiddenSize;
  if (spec.ballast.dims < 1 || (spec.twin == EventCounterTwin::BetaOff && spec.ballast.dims < 2))
    return usage(g, "the ballast needs 1 dim (2 for the BetaOff twin)");
  for (int d : {spec.event, spec.reset, spec.quiet, spec.ballast.at(0)})
    if (d < 0 || d >= hidden)
      return usage(g, "dim " + std::to_string(d) + " is outside the hidden size");
  if (!powerOfTwo(spec.lambda) || !powerOfTwo(spec.gain) || !powerOfTwo(spec.unit) ||
      !sane(spec.lambda, spec.unit))
    return usage(g,
                 "lambda, gain and unit must be powers of two within 2^-8..2^8 (the key heights "
                 "and the level are then exact powers of two)");
  // ℓ(0)² below half an ulp of u² (every partial sum of Σx² holds at least one u²): 2^(2e0) <
  // u²·2^-25, with a factor 2 to spare for a second quiet dim in the same sum.
  if (2.0 * spec.levelExp > 2.0 * std::log2(spec.unit) - 26.0)
    return usage(g, "level 2^" + std::to_string(spec.levelExp) +
                        " is not tiny enough to leave "
                        "the residual norm unchanged (needs 2^(2·e0) <= u²·2^-26)");
  const double lg = spec.lambda * spec.gain;
  if (lg < 89.0)
    return makeDiag(ErrorKind::OverLimit, "counter gadget: λ·G = " + std::to_string(lg) +
                                              " misses the exactness threshold 89 (rule R2)");
  EventCounterMargins m;
  m.keyOn = lg;
  // c = 2^20 and x = 2^7 in the state (x/c = 2^-13); their gains are c/λ and x/λ.
  const double c = 1048576.0, x = 128.0;
  m.companion = c;
  m.countStart = x;
  const float G = spec.gain;
  const int bal = spec.ballast.at(0);
  constexpr int kCountChannel = 8;

  // Key: row 0 (rows 0..3 at dk = 128) on events and resets; a plain token's key channels are
  // −λG, so its key is exactly 0 after SiLU and the L2 norm and it writes nothing (memory.h's
  // NoWrite::ZeroKey). Query: row 0 (l2norm of one hot channel: exactly e_0), or the plan's two
  // rows (circuit/tap.h "The read height").
  QGPU_TRY(read, keyAndQuery(w, s, {{spec.event, G}, {spec.reset, G}, {bal, G}}, spec.ballast,
                             spec.lambda, G, spec.read, "counter"));
  const double f = read.height / 128.0;  // 1, or 2 with the 4-hot key (its rows hold v/2)
  const float gc = static_cast<float>(f * c / spec.lambda), gx = static_cast<float>(f * x / spec.lambda);
  // Values: the reference c in channels 0..7 on events and resets (the NoCompanion twin: on
  // resets only, so an event halves the reference with the count), x in channel 8 on resets.
  for (int j = 0; j < 8; ++j) {
    if (spec.twin == EventCounterTwin::NoCompanion) {
      QGPU_CHECK(w.set(s.qkv, s.v + j, spec.reset, gc));
      QGPU_CHECK(w.set(s.qkv, s.v + j, spec.event, -gc));
      QGPU_CHECK(w.set(s.qkv, s.v + j, bal, -gc));
    } else {
      QGPU_CHECK(w.set(s.qkv, s.v + j, spec.event, gc));
      QGPU_CHECK(w.set(s.qkv, s.v + j, spec.reset, gc));
      QGPU_CHECK(w.set(s.qkv, s.v + j, bal, gc));
    }
    QGPU_CHECK(useChannel(w, s, s.v + j));
  }
  QGPU_CHECK(w.set(s.qkv, s.v + kCountChannel, spec.reset, gx));
  QGPU_CHECK(useChannel(w, s, s.v + kCountChannel));
  // Beta: b = (G/2)(ballast − event): 0 on an event (β = ½), λG elsewhere (β = 1).
  QGPU_CHECK(w.set(s.b, spec.head, bal, G / 2));
  QGPU_CHECK(w.set(s.b, spec.head, spec.event, -G / 2));
  m.betaEvent = 0;
  m.betaOther = lg;
  if (spec.twin == EventCounterTwin::BetaOff) {
    // + 1/8 on every token, on a second ballast dim (G/2 + 1/(8λ) would not be bf16-exact).
    QGPU_CHECK(w.set(s.b, spec.head, spec.ballast.at(1), static_cast<float>(0.125 / spec.lambda)));
    m.betaEvent = 0.125;
    m.betaOther = lg + 0.125;
  }
  // Decay as an exact reset (docs/circuit.md §2.1): a = G·reset, A_log = 0, dt_bias = 0 →
  // exp(g) = 1 exactly on every other token, exactly 0 on a reset (the state is cleared before
  // the reset's own write, so no trace of the old count survives on either path).
  QGPU_CHECK(w.set(s.a, spec.head, spec.reset, G));
  QGPU_CHECK(w.set(s.aLog, spec.head, 0, 0.0f));
  QGPU_CHECK(w.set(s.dt, spec.head, 0, 0.0f));
  m.resetLogit = lg;
  // z: silu(z) = λGz with λGz = 32.
  const float gz = static_cast<float>(32.0 / spec.lambda);
  QGPU_CHECK(gate(w, s, spec.head, bal, gz));
  // out_proj: y_8 = (x/c)·2^-n·√(dv/8)·λGz; ℓ(n) = 2^e0·2^-n needs the weight
  // 2^e0 / ((x/c)·√(dv/8)·λGz), a power of two.
  const double hot = std::sqrt(static_cast<double>(s.dv) / 8.0);
  const double weight = std::ldexp(1.0, spec.levelExp) / ((x / c) * hot * 32.0);
  const float wo = static_cast<float>(weight);
  if (!bf16Exact(wo) || static_cast<double>(wo) != weight)
    return usage(g, "out_proj weight " + std::to_string(weight) + " is not bf16-exact");
  QGPU_CHECK(w.set(s.out, spec.quiet, spec.head * s.dv + kCountChannel, wo));
  m.level0 = std::ldexp(1.0, spec.levelExp);
  return m;
}

int thresholdRange(int levelExp, double lambda, float unit) {
  // K = 256u/(λℓ(N)) = 2^(8 + log2(u/λ) + N − e0) ≤ 2^127, and ℓ(N)·λ/u = 2^(e0 − N − log2(u/λ))
  // ≥ 2^-126 (a normal bf16 / fp32 number at the threshold head's input).
  const int scale = static_cast<int>(std::lround(std::log2(static_cast<double>(unit) / lambda)));
  const int byWeight = 127 - 8 - scale + levelExp;
  const int byNormal = 126 + levelExp - scale;
  return byWeight < byNormal ? byWeight : byNormal;
}

Expected<ThresholdMargins> buildThreshold(CircuitWeights& w, const ThresholdSpec& spec) {
  const std::string g = "threshold";
  QGPU_TRY(s, slots(w, spec.layer, spec.head, g));
  const int hidden = w.config().hiddenSize;
  if (spec.ballast.dims < 1) return usage(g, "the ballast needs 1 dim");
  for (int d : {spec.quiet, spec.out, spec.ballast.at(0)})
    if (d < 0 || d >= hidden)
      return usage(g, "dim " + std::to_string(d) + " is outside the hidden size");
  if (!powerOfTwo(spec.lambda) || !powerOfTwo(spec.gain) || !powerOfTwo(spec.zGain) ||
      !powerOfTwo(spec.unit) || !sane(spec.lambda, spec.unit))
    return usage(g, "lambda, gain, zGain and unit must be powers of two (λ, u within 2^-8..2^8)");
  const int range = thresholdRange(spec.levelExp, spec.lambda, spec.unit);
  if (spec.threshold < 1 || spec.threshold > range)
    return usage(g, "threshold " + std::to_string(spec.threshold) + " is outside 1.." +
                        std::to_string(range) +
                        " (K = 256u/(λℓ(N)) must stay <= 2^127 and ℓ(N) "
                        "normal)");
  const double lg = spec.lambda * spec.gain, lgz = spec.lambda * spec.zGain;
  if (lg < 89.0 || lgz < 17.0)
    return makeDiag(ErrorKind::OverLimit, "threshold gadget: λ·G = " + std::to_string(lg) +
                                              ", λ·Gz = " + std::to_string(lgz) +
                                              " miss the exactness thresholds 89 / 17 (rule R2)");
  const int bal = spec.ballast.at(0);
  const float G = spec.gain;
  // K = 256u/(λℓ(N)), ℓ(N) = 2^(e0 − N): b = K·h[quiet] − 384 (the ballast reads λ: −384/λ).
  const double K = std::ldexp(256.0 * spec.unit / spec.lambda, spec.threshold - spec.levelExp);
  const float k = static_cast<float>(K), c = static_cast<float>(-384.0 / spec.lambda);
  if (!bf16Exact(k) || !bf16Exact(c) || static_cast<double>(k) != K)
    return usage(g, "a beta / decay weight is not bf16-exact");
  QGPU_CHECK(w.set(s.b, spec.head, spec.quiet, k));
  QGPU_CHECK(w.set(s.b, spec.head, bal, c));
  QGPU_CHECK(w.set(s.a, spec.head, spec.quiet, -k));
  QGPU_CHECK(w.set(s.a, spec.head, bal, -c));
  QGPU_CHECK(w.set(s.aLog, spec.head, 0, 0.0f));  // exp(A_log) = 1: g = −softplus(a)
  QGPU_CHECK(w.set(s.dt, spec.head, 0, 0.0f));
  // One row: constant key and query e_0 (at dk = 128 the plan's 4-hot key and two-row query),
  // 8 hot value channels of height λG (2λG with the 4-hot key: the read is the same).
  QGPU_TRY(read, keyAndQuery(w, s, {{bal, G}}, spec.ballast, spec.lambda, G, spec.read, g));
  const float gv = static_cast<float>(read.height / 128.0) * G;
  for (int j = 0; j < 8; ++j) {
    QGPU_CHECK(w.set(s.qkv, s.v + j, bal, gv));
    QGPU_CHECK(useChannel(w, s, s.v + j));
  }
  QGPU_CHECK(gate(w, s, spec.head, bal, spec.zGain));
  // A fired read is √(dv/8)·λGz on channel 0: it writes −2u into the pad.
  const double hot = std::sqrt(static_cast<double>(s.dv) / 8.0);
  const double weight = -2.0 * spec.unit / (hot * lgz);
  const float wo = static_cast<float>(weight);
  if (!bf16Exact(wo) || static_cast<double>(wo) != weight)
    return usage(g, "out_proj weight " + std::to_string(weight) + " is not bf16-exact");
  QGPU_CHECK(w.set(s.out, spec.out, spec.head * s.dv, wo));
  ThresholdMargins m;
  m.betaOnMin = 128;
  m.betaOffMax = -128;
  m.betaOffMin = -384;
  m.keyOn = lg;
  m.logitWeight = K;
  return m;
}

Expected<int> buildCountDecode(UnitWriter& units, const CountDecodeSpec& spec) {
  const std::string g = "count decode";
  const int K = static_cast<int>(spec.atLeast.size());
  if (K < 1 || spec.out.dims != K + 1)
    return usage(g, "needs K >= 1 thermometer dims and K + 1 out dims");
  if (spec.ballast.dims < 1) return usage(g, "the ballast needs 1 dim");
  if (!powerOfTwo(spec.lambda) || !powerOfTwo(spec.gain) || !powerOfTwo(spec.unit) ||
      !sane(spec.lambda, spec.unit))
    return usage(g, "lambda, gain and unit must be powers of two (λ, u within 2^-8..2^8)");
  const double lg = spec.lambda * spec.gain;
  if (lg < 89.0)
    return makeDiag(ErrorKind::OverLimit, "count decode gadget: λ·G = " + std::to_string(lg) +
                                              " misses the exactness threshold 89 (rule R2)");
  const int bal = spec.ballast.at(0);
  const float G = spec.gain;
  // An always-on unit (gate λG, up λ) times w adds w·λ²G: w = d·u/(λ²G) adds d·u.
  const float per = static_cast<float>(spec.unit / (spec.lambda * spec.lambda * spec.gain));
  const int first = units.used();
  // Cancel what the out dims held (linear units: up = the dim itself, λx̂).
  for (int j = 0; j <= K; ++j) {
    Unit u;
    u.gate = {{bal, G}};
    u.up = {{spec.out.at(j), 1.0f}};
    u.down = {{spec.out.at(j), -per}};
    QGPU_CHECK(units.add(u));
  }
  // −u on every out dim; the detector that holds adds +2u.
  Unit base;
  base.gate = {{bal, G}};
  base.up = {{bal, 1.0f}};
  for (int j = 0; j <= K; ++j) base.down.push_back({spec.out.at(j), -per});
  QGPU_CHECK(units.add(base));
  for (int j = 0; j <= K; ++j) {
    // N = t_j − t_{j+1} − 1, with t_0 = +1 and t_{K+1} = −1 as constants.
    Unit u;
    double constant = -1;
    if (j == 0)
      constant += 1;
    else
      u.gate.push_back({spec.atLeast[static_cast<size_t>(j - 1)], G});
    if (j == K)
      constant += 1;
    else
      u.gate.push_back({spec.atLeast[static_cast<size_t>(j)], -G});
    if (constant != 0) u.gate.push_back({bal, static_cast<float>(G * constant)});
    u.up = {{bal, 1.0f}};
    u.down = {{spec.out.at(j), 2 * per}};
    QGPU_CHECK(units.add(u));
  }
  return units.used() - first;
}

Expected<ThresholdMargins> buildThresholds(CircuitWeights& weights, const ThresholdSpec& first,
                                           const Field& outs) {
  if (outs.dims < 1) return makeDiag(ErrorKind::Usage, "thresholds: no output dims");
  ThresholdMargins last;
  for (int n = 1; n <= outs.dims; ++n) {
    ThresholdSpec ts = first;
    ts.head = first.head + n - 1;
    ts.threshold = n;
    ts.out = outs.at(n - 1);
    QGPU_TRY(m, buildThreshold(weights, ts));
    last = m;
  }
  return last;
}

}  // namespace qgpu::circuit
