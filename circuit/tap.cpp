// qgpu/circuit/tap.cpp — see tap.h for the maths. Both gadgets are one construction, a one-row
// head described by `OneRowHead`; buildTap and buildLatch only fill it in.
#include "circuit/tap.h"

#include <cmath>

#include "model/tiny.h"

namespace qgpu::circuit {
namespace {

bool powerOfTwo(float v) {
  int e = 0;
  return v > 0 && std::frexp(v, &e) == 0.5f;
}

float bf16(double v) {
  return model::bf16ToFloat(model::floatToBf16(static_cast<float>(v)));
}

// Everything the two gadgets differ in, and what they share.
struct OneRowHead {
  const char* gadget = "";
  int layer = 0, head = 0;
  Field ballast;
  std::vector<int> sources;  // V dims
  Field out;
  int keyDim = -1;           // −1: constant key (ballast); else the enable dim (+ scratch row)
  int valueBack = 0;         // conv positions back of the value rails (0 = the current token)
  bool absence = false;      // absence channels (tap heads with canonical padding)
  double lambda = 1;
  float G = 0, Gv = 0, Gz = 0, unit = 16;
  HeadPrior prior = HeadPrior::Pad;
};

Diag usage(const OneRowHead& s, const std::string& message) {
  return makeDiag(ErrorKind::Usage, std::string(s.gadget) + ": " + message);
}

Expected<HeadMargins> build(CircuitWeights& w, const OneRowHead& s) {
  const model::Qwen35Config& c = w.config();
  if (s.layer < 0 || s.layer >= c.numLayers() ||
      c.layerTypes[static_cast<size_t>(s.layer)] != model::LayerType::Linear)
    return usage(s, "layer " + std::to_string(s.layer) + " is not a linear_attention layer");
  if (s.head < 0 || s.head >= c.linearNumValueHeads)
    return usage(s, "value head " + std::to_string(s.head) + " does not exist");
  const int V = static_cast<int>(s.sources.size());
  const int64_t dv = c.linearValueHeadDim, K = c.linearConvKernelDim;
  const int channels = (s.absence ? 3 : 2) * V;
  if (V < 1 || channels > dv || s.out.dims != V)
    return usage(s, std::to_string(V) + " bits need " + std::to_string(channels) +
                        " value channels (of " + std::to_string(dv) + ") and an out field of " +
                        std::to_string(V) + " dims");
  // √(dv/V) must be a power of two for the gated norm's output to be one exact number.
  const double hot = std::sqrt(static_cast<double>(dv) / V);
  if (dv % V != 0 || !powerOfTwo(static_cast<float>(hot)))
    return usage(s, "dv/V = " + std::to_string(dv) + "/" + std::to_string(V) +
                        " is not a power of 4");
  if (s.valueBack < 0 || s.valueBack > K - 1)
    return usage(s, "tap " + std::to_string(s.valueBack) + " is outside 1.." +
                        std::to_string(K - 1) + " (the conv window)");
  if (s.ballast.dims < 1) return usage(s, "needs a ballast dim");
  std::vector<int> dims = s.sources;
  if (s.keyDim >= 0) dims.push_back(s.keyDim);
  for (int d : dims)
    if (d < 0 || d >= c.hiddenSize)
      return usage(s, "source dim " + std::to_string(d) + " outside the hidden size");
  if (!powerOfTwo(s.G) || !powerOfTwo(s.Gv) || !powerOfTwo(s.Gz))
    return usage(s, "gains must be powers of two (rule R4)");
  if (s.lambda * s.G < 89 || s.lambda * s.Gv < 89 || s.lambda * s.Gz < 17)
    return makeDiag(ErrorKind::OverLimit,
                    std::string(s.gadget) + ": λG = " + std::to_string(s.lambda * s.G) +
                        ", λGv = " + std::to_string(s.lambda * s.Gv) + ", λGz = " +
                        std::to_string(s.lambda * s.Gz) +
                        " miss the exactness thresholds 89 / 89 / 17 (rule R2)");

  const int kh = s.head / static_cast<int>(c.linearNumValueHeads / c.linearNumKeyHeads);
  const int64_t qBase = kh * c.linearKeyHeadDim;
  const int64_t kBase = c.linearKeyDim() + kh * c.linearKeyHeadDim;
  const int64_t vBase = 2 * c.linearKeyDim() + s.head * dv;
  const std::string qkv = w.layerTensor(s.layer, "linear_attn.in_proj_qkv.weight");
  const std::string conv = w.layerTensor(s.layer, "linear_attn.conv1d.weight");
  const int bal = s.ballast.at(0);
  const int64_t now = K - 1, back = K - 1 - s.valueBack;

  // Key: constant e_0, or e_0 / e_1 (scratch) by the enable bit. Query: constant e_0.
  if (s.keyDim < 0) {
    QGPU_CHECK(w.set(qkv, kBase, bal, s.G));
  } else {
    QGPU_CHECK(w.set(qkv, kBase, s.keyDim, s.G));
    QGPU_CHECK(w.set(qkv, kBase + 1, s.keyDim, -s.G));
    QGPU_CHECK(w.set(conv, kBase + 1, now, 1.0f));
  }
  QGPU_CHECK(w.set(conv, kBase, now, 1.0f));
  QGPU_CHECK(w.set(qkv, qBase, bal, s.G));
  QGPU_CHECK(w.set(conv, qBase, now, 1.0f));
  // Value rails (and absence channels): exactly V hot channels of height λGv at every position.
  for (int j = 0; j < V; ++j) {
    const int src = s.sources[static_cast<size_t>(j)];
    QGPU_CHECK(w.set(qkv, vBase + 2 * j, src, s.Gv));
    QGPU_CHECK(w.set(qkv, vBase + 2 * j + 1, src, -s.Gv));
    QGPU_CHECK(w.set(conv, vBase + 2 * j, back, 1.0f));
    QGPU_CHECK(w.set(conv, vBase + 2 * j + 1, back, 1.0f));
    if (s.absence) {
      const int64_t a = vBase + 2 * V + j;
      QGPU_CHECK(w.set(qkv, a, bal, s.Gv));
      QGPU_CHECK(w.set(conv, a, now, 1.0f));
      QGPU_CHECK(w.set(conv, a, back, -2.0f));
    }
  }
  // Beta 1, decay off, z = Gz·ballast on every channel, norm weight 1.
  QGPU_CHECK(w.set(w.layerTensor(s.layer, "linear_attn.in_proj_b.weight"), s.head, bal, s.G));
  QGPU_CHECK(w.set(w.layerTensor(s.layer, "linear_attn.A_log"), s.head, 0, -1000.0f));
  QGPU_CHECK(w.set(w.layerTensor(s.layer, "linear_attn.dt_bias"), s.head, 0, 0.0f));
  const std::string z = w.layerTensor(s.layer, "linear_attn.in_proj_z.weight");
  for (int64_t ch = 0; ch < dv; ++ch) QGPU_CHECK(w.set(z, s.head * dv + ch, bal, s.Gz));
  QGPU_CHECK(w.fill(w.layerTensor(s.layer, "linear_attn.norm.weight"), 1.0f));

  HeadMargins m;
  m.keyOn = s.lambda * s.G;
  m.valueHot = s.lambda * s.Gv;
  m.gateZ = s.lambda * s.Gz;
  // Pad: a hot 0 rail (or absence channel) adds −2u; Zero: every rail adds ±u.
  const double nominal = s.prior == HeadPrior::Pad ? 2.0 * s.unit : s.unit;
  const float cw = bf16(nominal / (hot * m.gateZ));
  m.readUnit = cw * hot * m.gateZ;
  m.readUnitError = std::abs(m.readUnit / nominal - 1.0);
  const std::string outProj = w.layerTensor(s.layer, "linear_attn.out_proj.weight");
  for (int j = 0; j < V; ++j) {
    const int o = s.out.at(j);
    const int64_t col = s.head * dv;
    if (s.prior == HeadPrior::Zero) QGPU_CHECK(w.set(outProj, o, col + 2 * j, cw));
    QGPU_CHECK(w.set(outProj, o, col + 2 * j + 1, -cw));
    if (s.absence) QGPU_CHECK(w.set(outProj, o, col + 2 * V + j, -cw));
  }
  return m;
}

}  // namespace

double normLambda(int nonzeroDims, int hidden) {
  return std::sqrt(static_cast<double>(hidden) / nonzeroDims);
}

Expected<HeadMargins> buildTap(CircuitWeights& w, const TapSpec& s) {
  if (s.tap < 1) return makeDiag(ErrorKind::Usage, "tap head: tap " + std::to_string(s.tap) +
                                                       " is outside 1..K−1 (the conv window)");
  OneRowHead h;
  h.gadget = "tap head";
  h.layer = s.layer;
  h.head = s.head;
  h.ballast = s.ballast;
  h.sources = s.sources;
  h.out = s.out;
  h.valueBack = s.tap;
  h.absence = s.padding == Padding::Canonical;
  h.lambda = s.lambda;
  h.G = s.gain;
  h.Gv = s.valueGain;
  h.Gz = s.zGain;
  h.unit = s.outUnit;
  h.prior = s.prior;
  return build(w, h);
}

Expected<HeadMargins> buildLatch(CircuitWeights& w, const LatchSpec& s) {
  OneRowHead h;
  h.gadget = "latch";
  h.layer = s.layer;
  h.head = s.head;
  h.ballast = s.ballast;
  h.sources = s.sources;
  h.out = s.out;
  h.keyDim = s.enable;
  h.valueBack = 0;
  h.lambda = s.lambda;
  h.G = s.gain;
  h.Gv = s.valueGain;
  h.Gz = s.zGain;
  h.unit = s.outUnit;
  h.prior = s.prior;
  return build(w, h);
}

}  // namespace qgpu::circuit
