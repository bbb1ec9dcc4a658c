// qgpu/circuit/tap.cpp — see tap.h for the maths. Both gadgets are one construction, a one-row
// head described by `OneRowHead`; buildTap and buildLatch only fill it in.
#include "circuit/tap.h"

#include <cmath>
#include <utility>

namespace qgpu::circuit {
namespace {

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
  ReadHeight readHeight = ReadHeight::Exact;
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

  // How the head reads at this key head dim (tap.h "The read height"): one row, or a 4-hot key
  // with the query on two of its rows; the value height h makes every read a power of two.
  // (A λ that is not a power of two cannot read exactly anyway: the plain one-row weights.)
  const bool exactLambda = powerOfTwo(static_cast<float>(s.lambda));
  QGPU_TRY(read, planOneRowRead(c.linearKeyHeadDim, s.lambda * s.Gv,
                                exactLambda ? s.readHeight : ReadHeight::Nominal, s.lambda * s.G));
  if (!exactLambda) read.height = static_cast<float>(s.lambda) * s.Gv;
  const double heightOverLambda = exactLambda ? read.height / s.lambda : s.Gv;
  QGPU_TRY(rail, heightTerms(heightOverLambda, s.ballast, true));
  QGPU_TRY(absent, heightTerms(heightOverLambda, s.ballast, false));
  std::vector<HeightTerms> query;
  for (float q : read.queryHeights) {
    QGPU_TRY(t, heightTerms(exactLambda ? q / s.lambda : s.G, s.ballast, false));
    query.push_back(t);
  }
  const int rows = read.keyRows;
  if ((s.keyDim >= 0 ? 2 : 1) * rows > c.linearKeyHeadDim)
    return usage(s, std::to_string(rows) + "-hot keys need more rows than the key head dim " +
                        std::to_string(c.linearKeyHeadDim));

  const int kh = s.head / static_cast<int>(c.linearNumValueHeads / c.linearNumKeyHeads);
  const int64_t qBase = kh * c.linearKeyHeadDim;
  const int64_t kBase = c.linearKeyDim() + kh * c.linearKeyHeadDim;
  const int64_t vBase = 2 * c.linearKeyDim() + s.head * dv;
  const std::string qkv = w.layerTensor(s.layer, "linear_attn.in_proj_qkv.weight");
  const std::string conv = w.layerTensor(s.layer, "linear_attn.conv1d.weight");
  const int bal = s.ballast.at(0);
  const int64_t now = K - 1, back = K - 1 - s.valueBack;

  // Key: constant on rows 0..rows−1 (l2norm: e_0, or ½ on each of 4 rows), or those rows /
  // the scratch rows rows..2·rows−1 by the enable bit. Query: constant, rows 0 (and 1).
  for (int r = 0; r < rows; ++r) {
    if (s.keyDim < 0) {
      QGPU_CHECK(w.set(qkv, kBase + r, bal, s.G));
    } else {
      QGPU_CHECK(w.set(qkv, kBase + r, s.keyDim, s.G));
      QGPU_CHECK(w.set(qkv, kBase + rows + r, s.keyDim, -s.G));
      QGPU_CHECK(w.set(conv, kBase + rows + r, now, 1.0f));
    }
    QGPU_CHECK(w.set(conv, kBase + r, now, 1.0f));
  }
  for (size_t r = 0; r < query.size(); ++r) {
    for (const Term& t : query[r].rest)
      QGPU_CHECK(w.set(qkv, qBase + static_cast<int64_t>(r), t.dim, t.weight));
    QGPU_CHECK(w.set(conv, qBase + static_cast<int64_t>(r), now, 1.0f));
  }
  // Value rails (and absence channels): exactly V hot channels of height h at every position
  // (λGv for a power-of-4 dk, 2λGv with the 4-hot key); the cold one is h − 2λ·lead ≤ −λGv.
  for (int j = 0; j < V; ++j) {
    const int src = s.sources[static_cast<size_t>(j)];
    QGPU_CHECK(w.set(qkv, vBase + 2 * j, src, rail.lead));
    QGPU_CHECK(w.set(qkv, vBase + 2 * j + 1, src, -rail.lead));
    for (const Term& t : rail.rest) {
      QGPU_CHECK(w.set(qkv, vBase + 2 * j, t.dim, t.weight));
      QGPU_CHECK(w.set(qkv, vBase + 2 * j + 1, t.dim, t.weight));
    }
    QGPU_CHECK(w.set(conv, vBase + 2 * j, back, 1.0f));
    QGPU_CHECK(w.set(conv, vBase + 2 * j + 1, back, 1.0f));
    if (s.absence) {
      const int64_t a = vBase + 2 * V + j;
      for (const Term& t : absent.rest) QGPU_CHECK(w.set(qkv, a, t.dim, t.weight));
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
  m.valueHot = read.height;
  m.read = read;
  m.gateZ = s.lambda * s.Gz;
  // Pad: a hot 0 rail (or absence channel) adds −2u; Zero: every rail adds ±u.
  const double nominal = s.prior == HeadPrior::Pad ? 2.0 * s.unit : s.unit;
  const float cw = bf16Round(nominal / (hot * m.gateZ));
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

namespace {

// fl32(q_a + q_b) = t, a power of two, on both paths' query scales and under both models of the
// l2norm's rsqrt (correctly rounded; 1/sqrtf).
bool pairReadsPowerOfTwo(float a, float b, float chunkScale, float sqrtDk, float* sum) {
  const float norm2 = (a * a + b * b) + 1e-6f;
  const float exact = static_cast<float>(1.0 / std::sqrt(static_cast<double>(norm2)));
  const float viaSqrt = 1.0f / std::sqrt(norm2);
  float t = 0;
  for (float r : {exact, viaSqrt}) {
    const float ea = a * r, eb = b * r;
    const float chunk = ea * chunkScale + eb * chunkScale;
    const float decode = ea / sqrtDk + eb / sqrtDk;
    if (chunk != decode || !powerOfTwo(chunk) || (t != 0 && chunk != t)) return false;
    t = chunk;
  }
  *sum = t;
  return true;
}

}  // namespace

Expected<OneRowRead> planOneRowRead(int64_t keyHeadDim, double nominalHeight, ReadHeight mode,
                                    double queryHeight, double queryGrid) {
  if (keyHeadDim < 1 || !(nominalHeight > 0) || !(queryHeight > 0))
    return makeDiag(ErrorKind::Usage, "one-row read: key head dim " + std::to_string(keyHeadDim) +
                                          ", value height " + std::to_string(nominalHeight) +
                                          " and query height " + std::to_string(queryHeight) +
                                          " must be positive");
  // The two paths' query scales (model/decoder.cpp, HF alike): the chunked rule multiplies the
  // l2-normed query by dk^-½, the decode divides it by √dk.
  const double dk = static_cast<double>(keyHeadDim);
  const float chunkScale = static_cast<float>(std::pow(dk, -0.5));
  const float sqrtDk = static_cast<float>(std::sqrt(dk));
  OneRowRead r;
  r.scale = chunkScale;
  r.queryHeights = {static_cast<float>(queryHeight)};
  r.height = static_cast<float>(nominalHeight);
  r.read = r.height * chunkScale;
  const bool oneHotExact = powerOfTwo(chunkScale) && 1.0f / sqrtDk == chunkScale;
  r.powerOfTwo = oneHotExact && powerOfTwo(r.read);
  if (mode == ReadHeight::Nominal || mode == ReadHeight::NormRail || oneHotExact) return r;
  int e = 0;
  if (mode == ReadHeight::OneRowCompensated) {
    // Candidate (b): one row, the fp32 h nearest X/s with fl(h·s) = X on both scales.
    const double m = std::frexp(nominalHeight * static_cast<double>(chunkScale), &e);
    const float X = static_cast<float>(std::ldexp(1.0, m == 0.5 ? e - 1 : e));
    const float h0 = static_cast<float>(static_cast<double>(X) / chunkScale);
    for (int k = 0; k <= 8; ++k) {
      float up = h0, down = h0;
      for (int i = 0; i < k; ++i) up = std::nextafter(up, 2 * h0), down = std::nextafter(down, 0.0f);
      for (float h : {up, down})
        if (h * chunkScale == X && h * (1.0f / sqrtDk) == X) {
          r.height = h;
          r.read = X;
          r.powerOfTwo = true;
          return r;
        }
    }
    return makeDiag(ErrorKind::Usage, "one-row read: no compensated height at key head dim " +
                                          std::to_string(keyHeadDim));
  }
  // Two query rows over a 4-hot key (tap.h): the query's second row at b = a + k·ulp(a), the
  // first k ≥ 1 whose two scaled l2norm entries sum to a power of two t on both paths.
  const float a = static_cast<float>(queryHeight);
  std::frexp(a, &e);
  const float ulp = queryGrid > 0 ? static_cast<float>(queryGrid) : std::ldexp(1.0f, e - 24);
  float t = 0, b = 0;
  for (int k = 1; k <= 1 << 16 && t == 0; ++k) {
    const float cand = a + static_cast<float>(k) * ulp;
    float sum = 0;
    if (pairReadsPowerOfTwo(a, cand, chunkScale, sqrtDk, &sum)) t = sum, b = cand;
  }
  if (t == 0)
    return makeDiag(ErrorKind::Usage, "one-row read: no second query height within 2^16 ulp of " +
                                          std::to_string(queryHeight) +
                                          " reads a power of two at key head dim " +
                                          std::to_string(keyHeadDim) + " on both delta-rule paths");
  // X: the power of two at or above λGv·s; rows hold h/2 (key entries ½), the read is (h/2)·t.
  const double m = std::frexp(nominalHeight * static_cast<double>(chunkScale), &e);
  const float X = static_cast<float>(std::ldexp(1.0, m == 0.5 ? e - 1 : e));
  if (!std::isfinite(2.0f * X / t) || X < std::ldexp(1.0f, -100))
    return makeDiag(ErrorKind::Usage, "one-row read: value height " + std::to_string(nominalHeight) +
                                          " is outside fp32's range for an exact read");
  r.keyRows = 4;
  r.queryHeights = {a, b};
  r.querySum = t;
  r.height = 2.0f * X / t;
  r.read = X;
  r.powerOfTwo = true;
  return r;
}

Expected<HeightTerms> heightTerms(double heightOverLambda, const Field& ballast, bool onSign) {
  // Pieces of 8 significant bits, largest first. heightOverLambda is an fp32 number M·2^k
  // (M < 2^24): every piece is a multiple of 2^k and every partial sum is below 2^(k+24), so the
  // fp32 matmul adds them exactly in any order.
  if (static_cast<double>(static_cast<float>(heightOverLambda)) != heightOverLambda)
    return makeDiag(ErrorKind::Usage, "height " + std::to_string(heightOverLambda) +
                                          " is not an fp32 number: its pieces would not sum exactly");
  auto piece = [](double v) {
    int e = 0;
    std::frexp(v, &e);
    const double step = std::ldexp(1.0, e - 8);  // 8 significant bits: bf16-exact
    return std::trunc(v / step) * step;
  };
  HeightTerms t;
  double rest = heightOverLambda;
  if (onSign) {
    t.lead = static_cast<float>(piece(rest));
    rest -= t.lead;
  }
  for (int i = 0; rest != 0; ++i) {
    if (i >= ballast.dims)
      return makeDiag(ErrorKind::Usage,
                      "height " + std::to_string(heightOverLambda) + " needs more than " +
                          std::to_string(ballast.dims) + " ballast dims for its bf16 pieces (R4)");
    const double p = piece(rest);
    t.rest.push_back({ballast.at(i), static_cast<float>(p)});
    rest -= p;
  }
  return t;
}

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
  h.readHeight = s.read;
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
  h.readHeight = s.read;
  return build(w, h);
}

LatchSpec tokenLatch(const TokenLayout& t, float headGain, int layer, int head, int enable,
                     std::vector<int> sources, const Field& out) {
  LatchSpec ls;
  ls.layer = layer;
  ls.head = head;
  ls.ballast = t.ballast;
  ls.enable = enable;
  ls.sources = std::move(sources);
  ls.out = out;
  ls.lambda = t.lambda;
  ls.gain = ls.valueGain = headGain;
  ls.zGain = headGain / 4;
  ls.outUnit = t.unit;
  return ls;
}

}  // namespace qgpu::circuit
