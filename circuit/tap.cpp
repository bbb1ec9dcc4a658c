// qgpu/circuit/tap.cpp — see tap.h for the maths.
#include "circuit/tap.h"

#include <cmath>

#include "model/tiny.h"

namespace qgpu::circuit {
namespace {

Diag usage(const char* gadget, const std::string& message) {
  return makeDiag(ErrorKind::Usage, std::string(gadget) + ": " + message);
}

bool powerOfTwo(float v) {
  int e = 0;
  return v > 0 && std::frexp(v, &e) == 0.5f;
}

float bf16(double v) {
  return model::bf16ToFloat(model::floatToBf16(static_cast<float>(v)));
}

// The channels and settings both one-row heads share.
struct Head {
  int64_t qBase = 0, kBase = 0, vBase = 0, dv = 0, K = 0;
  std::string qkv, conv;
};

Expected<Head> checkHead(const char* gadget, const CircuitWeights& w, int layer, int head, int V,
                         int channels, double lambda, float G, float Gv, float Gz,
                         const Field& ballast, const Field& out, const std::vector<int>& sources) {
  const model::Qwen35Config& c = w.config();
  if (layer < 0 || layer >= c.numLayers() ||
      c.layerTypes[static_cast<size_t>(layer)] != model::LayerType::Linear)
    return usage(gadget, "layer " + std::to_string(layer) + " is not a linear_attention layer");
  if (head < 0 || head >= c.linearNumValueHeads)
    return usage(gadget, "value head " + std::to_string(head) + " does not exist");
  Head h;
  h.dv = c.linearValueHeadDim;
  h.K = c.linearConvKernelDim;
  if (V < 1 || channels > h.dv || out.dims != V)
    return usage(gadget, std::to_string(V) + " bits need " + std::to_string(channels) +
                             " value channels (of " + std::to_string(h.dv) + ") and an out field of " +
                             std::to_string(V) + " dims");
  // √(dv/V) must be a power of two for the gated norm's output to be one exact number.
  const double hot = std::sqrt(static_cast<double>(h.dv) / V);
  if (h.dv % V != 0 || !powerOfTwo(static_cast<float>(hot)))
    return usage(gadget, "dv/V = " + std::to_string(h.dv) + "/" + std::to_string(V) +
                             " is not a power of 4");
  if (ballast.dims < 1) return usage(gadget, "needs a ballast dim");
  for (int d : sources)
    if (d < 0 || d >= c.hiddenSize) return usage(gadget, "source dim " + std::to_string(d) + " outside the hidden size");
  if (!powerOfTwo(G) || !powerOfTwo(Gv) || !powerOfTwo(Gz))
    return usage(gadget, "gains must be powers of two (rule R4)");
  if (lambda * G < 89 || lambda * Gv < 89 || lambda * Gz < 17)
    return makeDiag(ErrorKind::OverLimit,
                    std::string(gadget) + ": λG = " + std::to_string(lambda * G) + ", λGv = " +
                        std::to_string(lambda * Gv) + ", λGz = " + std::to_string(lambda * Gz) +
                        " miss the exactness thresholds 89 / 89 / 17 (rule R2)");
  const int kh = head / static_cast<int>(c.linearNumValueHeads / c.linearNumKeyHeads);
  h.qBase = kh * c.linearKeyHeadDim;
  h.kBase = c.linearKeyDim() + kh * c.linearKeyHeadDim;
  h.vBase = 2 * c.linearKeyDim() + head * h.dv;
  h.qkv = w.layerTensor(layer, "linear_attn.in_proj_qkv.weight");
  h.conv = w.layerTensor(layer, "linear_attn.conv1d.weight");
  return h;
}

// Beta 1, decay off, z = Gz·ballast on every channel, norm weight 1; returns the read size and c.
Expected<HeadMargins> finishHead(CircuitWeights& w, int layer, int head, const Head& h, int V,
                                 double lambda, float G, float Gv, float Gz, float outUnit,
                                 int bal, float* c) {
  QGPU_CHECK(w.set(w.layerTensor(layer, "linear_attn.in_proj_b.weight"), head, bal, G));
  QGPU_CHECK(w.set(w.layerTensor(layer, "linear_attn.A_log"), head, 0, -1000.0f));
  QGPU_CHECK(w.set(w.layerTensor(layer, "linear_attn.dt_bias"), head, 0, 0.0f));
  const std::string z = w.layerTensor(layer, "linear_attn.in_proj_z.weight");
  for (int64_t ch = 0; ch < h.dv; ++ch) QGPU_CHECK(w.set(z, head * h.dv + ch, bal, Gz));
  QGPU_CHECK(w.fill(w.layerTensor(layer, "linear_attn.norm.weight"), 1.0f));
  HeadMargins m;
  m.keyOn = lambda * G;
  m.valueHot = lambda * Gv;
  m.gateZ = lambda * Gz;
  const double hot = std::sqrt(static_cast<double>(h.dv) / V);
  *c = bf16(outUnit / (hot * m.gateZ));
  m.readUnit = *c * hot * m.gateZ;
  m.readUnitError = std::abs(m.readUnit / outUnit - 1.0);
  return m;
}

}  // namespace

double normLambda(int nonzeroDims, int hidden) {
  return std::sqrt(static_cast<double>(hidden) / nonzeroDims);
}

Expected<HeadMargins> buildTap(CircuitWeights& w, const TapSpec& s) {
  const int V = static_cast<int>(s.sources.size());
  QGPU_TRY(h, checkHead("tap head", w, s.layer, s.head, V, 3 * V, s.lambda, s.gain, s.valueGain,
                        s.zGain, s.ballast, s.out, s.sources));
  if (s.tap < 1 || s.tap > h.K - 1)
    return usage("tap head", "tap " + std::to_string(s.tap) + " is outside 1.." +
                                 std::to_string(h.K - 1) + " (the conv window)");
  const int bal = s.ballast.at(0);
  const int64_t now = h.K - 1, back = h.K - 1 - s.tap;
  // Constant key and query: channel 0, current token.
  QGPU_CHECK(w.set(h.qkv, h.kBase, bal, s.gain));
  QGPU_CHECK(w.set(h.conv, h.kBase, now, 1.0f));
  QGPU_CHECK(w.set(h.qkv, h.qBase, bal, s.gain));
  QGPU_CHECK(w.set(h.conv, h.qBase, now, 1.0f));
  for (int j = 0; j < V; ++j) {
    const int src = s.sources[static_cast<size_t>(j)];
    QGPU_CHECK(w.set(h.qkv, h.vBase + 2 * j, src, s.valueGain));
    QGPU_CHECK(w.set(h.qkv, h.vBase + 2 * j + 1, src, -s.valueGain));
    QGPU_CHECK(w.set(h.conv, h.vBase + 2 * j, back, 1.0f));
    QGPU_CHECK(w.set(h.conv, h.vBase + 2 * j + 1, back, 1.0f));
    if (s.padding == Padding::Canonical) {
      const int64_t a = h.vBase + 2 * V + j;
      QGPU_CHECK(w.set(h.qkv, a, bal, s.valueGain));
      QGPU_CHECK(w.set(h.conv, a, now, 1.0f));
      QGPU_CHECK(w.set(h.conv, a, back, -2.0f));
    }
  }
  float c = 0;
  QGPU_TRY(m, finishHead(w, s.layer, s.head, h, V, s.lambda, s.gain, s.valueGain, s.zGain,
                         s.outUnit, bal, &c));
  const std::string outProj = w.layerTensor(s.layer, "linear_attn.out_proj.weight");
  for (int j = 0; j < V; ++j) {
    QGPU_CHECK(w.set(outProj, s.out.at(j), s.head * h.dv + 2 * j, c));
    QGPU_CHECK(w.set(outProj, s.out.at(j), s.head * h.dv + 2 * j + 1, -c));
    if (s.padding == Padding::Canonical)
      QGPU_CHECK(w.set(outProj, s.out.at(j), s.head * h.dv + 2 * V + j, -c));
  }
  return m;
}

Expected<HeadMargins> buildLatch(CircuitWeights& w, const LatchSpec& s) {
  const int V = static_cast<int>(s.sources.size());
  std::vector<int> dims = s.sources;
  dims.push_back(s.enable);
  QGPU_TRY(h, checkHead("latch", w, s.layer, s.head, V, 2 * V, s.lambda, s.gain, s.valueGain,
                        s.zGain, s.ballast, s.out, dims));
  const int bal = s.ballast.at(0);
  const int64_t now = h.K - 1;
  QGPU_CHECK(w.set(h.qkv, h.kBase, s.enable, s.gain));
  QGPU_CHECK(w.set(h.conv, h.kBase, now, 1.0f));
  QGPU_CHECK(w.set(h.qkv, h.kBase + 1, s.enable, -s.gain));  // the scratch row
  QGPU_CHECK(w.set(h.conv, h.kBase + 1, now, 1.0f));
  QGPU_CHECK(w.set(h.qkv, h.qBase, bal, s.gain));
  QGPU_CHECK(w.set(h.conv, h.qBase, now, 1.0f));
  for (int j = 0; j < V; ++j) {
    const int src = s.sources[static_cast<size_t>(j)];
    QGPU_CHECK(w.set(h.qkv, h.vBase + 2 * j, src, s.valueGain));
    QGPU_CHECK(w.set(h.qkv, h.vBase + 2 * j + 1, src, -s.valueGain));
    QGPU_CHECK(w.set(h.conv, h.vBase + 2 * j, now, 1.0f));
    QGPU_CHECK(w.set(h.conv, h.vBase + 2 * j + 1, now, 1.0f));
  }
  float c = 0;
  QGPU_TRY(m, finishHead(w, s.layer, s.head, h, V, s.lambda, s.gain, s.valueGain, s.zGain,
                         s.outUnit, bal, &c));
  const std::string outProj = w.layerTensor(s.layer, "linear_attn.out_proj.weight");
  for (int j = 0; j < V; ++j) {
    QGPU_CHECK(w.set(outProj, s.out.at(j), s.head * h.dv + 2 * j, c));
    QGPU_CHECK(w.set(outProj, s.out.at(j), s.head * h.dv + 2 * j + 1, -c));
  }
  return m;
}

}  // namespace qgpu::circuit
