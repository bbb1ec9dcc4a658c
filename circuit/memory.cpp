// qgpu/circuit/memory.cpp — see memory.h for the maths.
#include "circuit/memory.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "circuit/units.h"

namespace qgpu::circuit {
namespace {

Diag memoryUsage(const std::string& message) {
  return makeDiag(ErrorKind::Usage, "memory gadget: " + message);
}

float ulpAbove(float x) {
  return std::nextafter(x, std::numeric_limits<float>::infinity()) - x;
}

// The gated norm's output for a hot channel read as o beside the rail read as oC, before silu(z):
// fl(o·r) with r = rsqrt(T/dv + eps), T = fl(oC²), when the rail dominates the mean (`hot`
// channels of fl(o²) below ulp(T)/4) and both rsqrt models give the same r; nothing otherwise.
std::optional<float> railNormOutput(float o, float oC, int hot, int64_t dv, float eps) {
  const float T = oC * oC;
  if (!std::isfinite(T) || static_cast<double>(hot) * (o * o) >= ulpAbove(T) / 4) return {};
  const float mean = T / static_cast<float>(dv) + eps;
  const float exact = static_cast<float>(1.0 / std::sqrt(static_cast<double>(mean)));
  const float viaSqrt = 1.0f / std::sqrt(mean);
  if (exact != viaSqrt) return {};
  return o * exact;
}

}  // namespace

Expected<NormRail> planNormRail(int64_t dk, int64_t dv, double height, int hotChannels,
                                double eps) {
  NormRail rail;
  const float s = static_cast<float>(std::pow(static_cast<double>(dk), -0.5));
  const float sqrtDk = static_cast<float>(std::sqrt(static_cast<double>(dk)));
  const float h = static_cast<float>(height);
  if (dk < 1 || dv < 2 || (dv & (dv - 1)) != 0 || hotChannels < 1 || !powerOfTwo(h))
    return memoryUsage(
        "a norm rail needs a positive key head dim, a value head dim that is a "
        "power of two, hot channels and a power-of-two height");
  if (powerOfTwo(h * s) && 1.0f / sqrtDk == s) return rail;  // the one-row read is exact
  if (1.0f / sqrtDk != s || static_cast<float>(1.0 / std::sqrt(static_cast<double>(dk))) != s)
    return memoryUsage("at key head dim " + std::to_string(dk) +
                       " the chunked and the recurrent rule scale a one-hot query differently");
  const float o = h * s, feps = static_cast<float>(eps);
  // C = (1 + i/128)·2^e (bf16), from an exponent where the rail can dominate; zs an fp32 number
  // in [17, 1024) (its bf16 pieces on the ballast). The first pair exact in fp32 and bf16 wins.
  int e0 = 0;
  std::frexp(std::sqrt(static_cast<double>(hotChannels)) * height * 4096.0, &e0);
  for (int e = e0; e < e0 + 8; ++e)
    for (int i = 0; i < 128; ++i) {
      const float C = std::ldexp(1.0f + static_cast<float>(i) / 128.0f, e);
      const auto p = railNormOutput(o, C * s, hotChannels, dv, feps);
      const auto pb = railNormOutput(bf16Round(o), bf16Round(C * s), hotChannels, dv, feps);
      if (!p || !pb) continue;
      // zs: the fp32 numbers next to 2^j / p in [17, 1024) (bf16 rounds the gate to bf16(zs)).
      for (int j = -40; j < 40; ++j) {
        const float target = std::ldexp(1.0f, j), z0 = target / *p;
        if (!(z0 >= 17.0f && z0 < 1024.0f)) continue;
        float up = z0, down = z0;
        for (int k = 0; k < 4;
             ++k, up = std::nextafter(up, 2 * z0), down = std::nextafter(down, 0.0f))
          for (float zs : {up, down}) {
            if (*p * zs != target || bf16Round(bf16Round(*pb) * bf16Round(zs)) != target) continue;
            rail.value = C;
            rail.gate = zs;
            rail.hot = target;
            return rail;
          }
      }
    }
  return memoryUsage("no norm rail makes a one-row read exact at key head dim " +
                     std::to_string(dk) + " (value height " + std::to_string(height) + ")");
}

namespace {

// One bank of the memory: value head `head`, rows for addresses whose top bits are `bank`.
Status buildBank(CircuitWeights& w, const MemorySpec& s, const MemoryMargins& m, int head, int bank,
                 int rowBits, float cOut, const HeightTerms& railGate) {
  const model::Qwen35Config& c = w.config();
  const int A = s.writeAddr.dims, V = s.value.dims;
  const int64_t dv = c.linearValueHeadDim, dk = c.linearKeyHeadDim;
  const double G = s.gain, Gz = G / 2.0;
  const int kh = head / static_cast<int>(c.linearNumValueHeads / c.linearNumKeyHeads);
  const int64_t qBase = kh * dk, kBase = c.linearKeyDim() + kh * dk;
  const int64_t vBase = 2 * c.linearKeyDim() + head * dv;
  const int bal = s.ballast.at(0);
  const int64_t K = c.linearConvKernelDim;
  const std::string qkv = w.layerTensor(s.layer, "linear_attn.in_proj_qkv.weight");
  const std::string conv = w.layerTensor(s.layer, "linear_attn.conv1d.weight");
  auto sign = [](int r, int i) { return (r >> i) & 1 ? 1.0f : -1.0f; };
  auto useChannel = [&](int64_t ch) { return w.set(conv, ch, K - 1, 1.0f); };

  // Rows per cell R (1, or 4 with ReadHeight::Exact at a dk that is not a power of 4, header).
  const int R = m.read.keyRows;
  const Field pieces{s.ballast.name, s.ballast.at(0) + 1, s.ballast.dims - 1};
  for (int r = 0; r < (1 << rowBits); ++r) {
    const int addr = (bank << rowBits) | r;  // the cell rows R·r .. R·r + R − 1 hold
    for (int g = 0; g < R; ++g) {
      const int64_t row = static_cast<int64_t>(R) * r + g;
      // Key: the write decoder over all A bits (the bank's bits fixed), gated by write-enable.
      for (int i = 0; i < A; ++i)
        QGPU_CHECK(w.set(qkv, kBase + row, s.writeAddr.at(i), static_cast<float>(G) * sign(addr, i)));
      QGPU_CHECK(w.set(qkv, kBase + row, s.writeEnable.at(0), static_cast<float>(G)));
      QGPU_CHECK(w.set(qkv, kBase + row, bal, static_cast<float>(-A * G)));
      QGPU_CHECK(useChannel(kBase + row));
    }
    // Query: the read decoder, on the cell's first row (and its second, at λG + δ).
    for (size_t g = 0; g < m.read.queryHeights.size(); ++g) {
      const int64_t row = static_cast<int64_t>(R) * r + static_cast<int64_t>(g);
      for (int i = 0; i < A; ++i)
        QGPU_CHECK(w.set(qkv, qBase + row, s.readAddr.at(i), static_cast<float>(G) * sign(addr, i)));
      QGPU_CHECK(w.set(qkv, qBase + row, bal, static_cast<float>(-(A - 1) * G)));
      const double delta = (m.read.queryHeights[g] - m.read.queryHeights[0]) / s.lambda;
      QGPU_TRY(extra, heightTerms(delta, pieces, false));
      for (const Term& t : extra.rest) QGPU_CHECK(w.set(qkv, qBase + row, t.dim, t.weight));
      QGPU_CHECK(useChannel(qBase + row));
    }
  }
  // The scratch rows take every non-writing token's write (with ZeroKey, nothing does).
  if (s.noWrite == NoWrite::ScratchRow)
    for (int g = 0; g < R; ++g) {
      QGPU_CHECK(w.set(qkv, kBase + m.scratchRow + g, s.writeEnable.at(0), static_cast<float>(-G)));
      QGPU_CHECK(useChannel(kBase + m.scratchRow + g));
    }
  // Value: dual rail at the read plan's height h (λGv for one-row cells); the norm rail's C.
  const float lead = static_cast<float>(m.read.height / s.lambda);
  for (int j = 0; j < V; ++j) {
    QGPU_CHECK(w.set(qkv, vBase + 2 * j, s.value.at(j), lead));
    QGPU_CHECK(w.set(qkv, vBase + 2 * j + 1, s.value.at(j), -lead));
    QGPU_CHECK(useChannel(vBase + 2 * j));
    QGPU_CHECK(useChannel(vBase + 2 * j + 1));
  }
  const NormRail& rail = m.rail;
  if (rail.channel >= 0) {
    QGPU_CHECK(w.set(qkv, vBase + rail.channel, bal, static_cast<float>(rail.value / s.lambda)));
    QGPU_CHECK(useChannel(vBase + rail.channel));
  }
  // Write strength and decay.
  QGPU_CHECK(w.set(w.layerTensor(s.layer, "linear_attn.in_proj_b.weight"), head, bal,
                   s.write == WriteStrength::Full ? static_cast<float>(G) : 0.0f));
  // A_log = −1000 switches decay off; with a reset field, A_log = 0 and a = ±λG pick exp(g) = 1
  // or exactly 0 per token (header maths); the Half twin has A_log = 0 and a = 0.
  const bool resettable = s.reset.dims == 1;
  QGPU_CHECK(w.set(w.layerTensor(s.layer, "linear_attn.A_log"), head, 0,
                   s.decay == Decay::Off && !resettable ? -1000.0f : 0.0f));
  if (resettable)
    QGPU_CHECK(w.set(w.layerTensor(s.layer, "linear_attn.in_proj_a.weight"), head, s.reset.at(0),
                     static_cast<float>(G)));
  QGPU_CHECK(w.set(w.layerTensor(s.layer, "linear_attn.dt_bias"), head, 0, 0.0f));
  // Output gate and norm: silu(z) = λGz on every channel (zs on the data channels with a norm
  // rail: zs's bf16 pieces on the ballast, R4), the shared norm weight 1.
  const std::string z = w.layerTensor(s.layer, "linear_attn.in_proj_z.weight");
  for (int64_t ch = 0; ch < dv; ++ch) {
    if (rail.channel >= 0 && ch < 2 * V) {
      for (const Term& t : railGate.rest) QGPU_CHECK(w.set(z, head * dv + ch, t.dim, t.weight));
      continue;
    }
    QGPU_CHECK(w.set(z, head * dv + ch, bal, static_cast<float>(Gz)));
  }
  QGPU_CHECK(w.fill(w.layerTensor(s.layer, "linear_attn.norm.weight"), 1.0f));
  // out_proj: out_j = c·(y_2j − y_2j+1); every bank adds into the same out dims.
  const std::string outProj = w.layerTensor(s.layer, "linear_attn.out_proj.weight");
  for (int j = 0; j < V; ++j) {
    if (s.readout == MemoryReadout::PadInverted) {  // the 1 rail alone, −2·outUnit (header)
      QGPU_CHECK(w.set(outProj, s.out.at(j), head * dv + 2 * j, -2.0f * cOut));
      continue;
    }
    QGPU_CHECK(w.set(outProj, s.out.at(j), head * dv + 2 * j, cOut));
    QGPU_CHECK(w.set(outProj, s.out.at(j), head * dv + 2 * j + 1, -cOut));
  }
  return Ok{};
}

}  // namespace

Expected<MemoryMargins> buildMemory(CircuitWeights& w, const MemorySpec& s) {
  const model::Qwen35Config& c = w.config();
  const int A = s.writeAddr.dims, V = s.value.dims;
  const int64_t dk = c.linearKeyHeadDim, dv = c.linearValueHeadDim;
  if (s.layer < 0 || s.layer >= c.numLayers() ||
      c.layerTypes[static_cast<size_t>(s.layer)] != model::LayerType::Linear)
    return memoryUsage("layer " + std::to_string(s.layer) + " is not a linear_attention layer");
  int bankBits = 0;
  if (s.banks < 1 || (s.banks & (s.banks - 1)) != 0)
    return memoryUsage("banks must be a power of two, not " + std::to_string(s.banks));
  while ((1 << bankBits) < s.banks) ++bankBits;
  if (s.banks > 1 && s.noWrite != NoWrite::ZeroKey)
    return memoryUsage(
        "a memory of several banks needs NoWrite::ZeroKey (one scratch row per bank "
        "would be written by every non-writing token)");
  if (s.head < 0 || s.head + s.banks > c.linearNumValueHeads)
    return memoryUsage("value heads " + std::to_string(s.head) + ".." +
                       std::to_string(s.head + s.banks - 1) + " do not exist");
  if (c.linearNumValueHeads != c.linearNumKeyHeads && s.banks > 1)
    return memoryUsage("banks need one key head per value head");
  const int rowBits = A - bankBits;
  // The read plan (memory.h "Key head dim"): rows per cell, query heights, the value height. The
  // query row's terms reach (2A − 1)·λG: its δ must sit on that sum's fp32 grid.
  int gridExp = 0;
  std::frexp((2.0 * A) * s.lambda * s.gain, &gridExp);
  auto plan = planOneRowRead(dk, s.lambda * 2.0 * s.gain, s.read, s.lambda * s.gain,
                             std::ldexp(1.0, gridExp - 24));
  if (!plan.ok()) return plan.error();
  const int R = plan.value().keyRows;
  const int64_t rowsNeeded =
      R * ((int64_t{1} << rowBits) + (s.noWrite == NoWrite::ScratchRow ? 1 : 0));
  if (rowBits < 1 || rowBits > 7 || s.readAddr.dims != A || rowsNeeded > dk)
    return memoryUsage(
        "address fields need equal dims, 1..7 of them per bank, and " + std::to_string(R) +
        " rows per cell (+ a scratch group) within the key head dim " + std::to_string(dk));
  if (V < 1 || 2 * V > dv || s.out.dims != V)
    return memoryUsage("value and out fields need V dims, 2V <= value head dim");
  NormRail rail;
  HeightTerms railGate;  // zs / λ as bf16 pieces on the ballast (the data channels' z weights)
  if (s.read == ReadHeight::NormRail) {
    auto planned = planNormRail(dk, dv, plan.value().height, V, c.rmsNormEps);
    if (!planned.ok()) return planned.error();
    rail = planned.value();
    if (rail.value != 0) {
      if (2 * V + 1 > dv)
        return memoryUsage("a norm rail needs 2V + 1 <= value head dim " + std::to_string(dv));
      rail.channel = 2 * V;
      QGPU_TRY(terms, heightTerms(rail.gate / s.lambda, s.ballast, false));
      railGate = terms;
    }
  }
  if (s.reset.dims > 1 || (s.reset.dims == 1 && s.decay != Decay::Off))
    return memoryUsage("the reset field has 0 or 1 dim and excludes the decay twin");
  if (s.writeEnable.dims != 1 || s.ballast.dims < 1)
    return memoryUsage("write-enable needs 1 dim, ballast at least 1");

  const double G = s.gain, Gz = G / 2.0;
  int exponent = 0;
  if (!(s.gain > 0) || std::frexp(s.gain, &exponent) != 0.5f)
    return memoryUsage("gain must be a power of two");
  MemoryMargins m;
  m.keyOn = s.lambda * G;
  m.keyOffMax = -s.lambda * G;
  m.valueHot = s.lambda * 2.0 * G;
  m.betaLogit = s.write == WriteStrength::Full ? s.lambda * G : 0.0;
  m.gateZ = s.lambda * Gz;
  m.scratchRow = s.noWrite == NoWrite::ScratchRow ? R << rowBits : -1;
  m.read = plan.value();
  m.rail = rail;
  m.valueHot = m.read.height;
  if (rail.channel >= 0) m.gateZ = std::min(m.gateZ, static_cast<double>(rail.gate));
  if (m.read.keyRows > 1 && s.ballast.dims < 3)
    return memoryUsage("exact reads at key head dim " + std::to_string(dk) +
                       " need 3 ballast dims (the query's second row's pieces)");
  // Rule R2: off pre-activations must reach −88.8 (silu, sigmoid exactly 0), on ones 17.
  if (m.keyOn < 89.0 || m.gateZ < 17.0)
    return makeDiag(ErrorKind::OverLimit, "memory gadget: λ·G = " + std::to_string(m.keyOn) +
                                              ", λ·G/2 = " + std::to_string(m.gateZ) +
                                              " miss the exactness thresholds 89 / 17 (rule R2)");
  // c = outUnit / (√(128/V)·λGz); rule R4 for the one weight that is not a multiple of G:
  // √(128/V) must be a power of two.
  // With a norm rail a hot channel's output is rail.hot instead.
  const double hot = std::sqrt(static_cast<double>(dv) / V);
  const float cOut = static_cast<float>(rail.channel >= 0 ? s.outUnit / rail.hot
                                                          : s.outUnit / (hot * s.lambda * Gz));
  if (!bf16Exact(cOut))
    return memoryUsage(
        "out_proj weight " + std::to_string(cOut) + " = outUnit / (√(" + std::to_string(dv) + "/" +
        std::to_string(V) +
        ")·λG/2) is not bf16-representable (rule R4): choose V with dv/V a power of 4");
  for (int bank = 0; bank < s.banks; ++bank)
    QGPU_CHECK(buildBank(w, s, m, s.head + bank, bank, rowBits, cOut, railGate));
  return m;
}

}  // namespace qgpu::circuit
