// qgpu/model/decoder.cpp — see decoder.h. With linear.cpp, the LibTorch translation units of the decoder.
//
// Every function mirrors the op order of transformers' modeling_qwen3_5.py (the eager, pure-PyTorch
// fallbacks) so that fp32 results agree with HF to rounding; comments name the HF function.
#include "model/decoder.h"

#include <torch/torch.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "model/decode_step.h"
#include "model/linear.h"
#include "model/load_plan.h"
#include "model/safetensors.h"

namespace qgpu::model {
namespace {

using torch::Tensor;
namespace F = torch::nn::functional;
using torch::indexing::Slice;
using torch::indexing::None;

torch::ScalarType scalarType(ComputeDtype d) {
  return d == ComputeDtype::BF16 ? torch::kBFloat16 : torch::kFloat32;
}

// Qwen3_5RMSNorm: x * rsqrt(mean(x^2) + eps) in fp32, times (1 + w) in fp32, cast back.
Tensor rmsNorm(const Tensor& x, const Tensor& onePlusW, double eps) {
  Tensor xf = x.to(torch::kFloat32);
  Tensor y = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return (y * onePlusW).to(x.scalar_type());
}

// Qwen3_5RMSNormGated: norm in fp32, cast, times w, times silu(fp32 gate), cast.
Tensor gatedRmsNorm(const Tensor& x, const Tensor& gate, const Tensor& w, double eps) {
  auto inType = x.scalar_type();
  Tensor xf = x.to(torch::kFloat32);
  Tensor h = xf * torch::rsqrt(xf.pow(2).mean(-1, true) + eps);
  h = w * h.to(inType);
  h = h * F::silu(gate.to(torch::kFloat32));
  return h.to(inType);
}

Tensor l2norm(const Tensor& x) { return x * torch::rsqrt((x * x).sum(-1, true) + 1e-6); }

Tensor rotateHalf(const Tensor& x) {
  int64_t h = x.size(-1) / 2;
  return torch::cat({-x.index({"...", Slice(h, None)}), x.index({"...", Slice(None, h)})}, -1);
}

// openblas_set_num_threads where the BLAS LibTorch loaded is OpenBLAS (looked up in the process,
// so that nothing links a particular BLAS); nothing where it is another.
void setBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set != nullptr) set(threads);
}

struct LinearLayer {
  Linear inProjQkv, inProjZ, inProjB, inProjA, outProj;
  Tensor conv1d /*[C, K]*/, dtBias, aLog, normW;
  // Per value head, the rows of its state that can be nonzero (liveStateRows): deltaStep's rows.
  std::vector<std::vector<int32_t>> stateRows;
  // The conv channels whose input can be nonzero (liveConvChannels): convStep's channels.
  std::vector<int32_t> convChannels;
  // The value heads with a live state row (kLong), where some head has none; else undefined.
  Tensor liveHeads;
};

// The conv channels a one-token decode must compute: every channel but those whose in_proj_qkv
// row is zero and whose taps are finite (their window holds zeros, their output is +0: convStep).
// With `compact` false, every channel.
std::vector<int32_t> liveConvChannels(const Linear& inProjQkv, const Tensor& conv1d, bool compact) {
  const Tensor finite = torch::isfinite(conv1d.to(torch::kFloat32)).all(-1).to(torch::kCPU);
  const auto* tapsFinite = finite.data_ptr<bool>();
  std::vector<int32_t> live;
  for (int64_t c = 0; c < conv1d.size(0); ++c)
    if (!compact || inProjQkv.rowMayBeNonzero(c) || !tapsFinite[c])
      live.push_back(static_cast<int32_t>(c));
  return live;
}

// Which rows of each value head's state S [dk, dv] can ever be nonzero. Row i of head h is
// k_i ⊗ δ summed over the tokens, so it stays an exact 0 when key channel i is (its in_proj_qkv
// row all zeros, or its conv1d taps all zeros: the conv is per channel, silu(0) = 0 and l2norm
// keeps a 0); and the whole head stays 0 when every value channel is (δ = v − kᵀS = 0 from S = 0).
// A value head reads key head h / (Hv / Hk), as repeat_interleave pairs them. With `compact`
// false (DecoderOptions::compactZeroBlocks: every weight as stored) every row of every head.
std::vector<std::vector<int32_t>> liveStateRows(const Qwen35Config& c, const Linear& inProjQkv,
                                                const Tensor& conv1d, bool compact) {
  const Tensor convTaps = (conv1d.to(torch::kFloat32) != 0).any(-1).to(torch::kCPU);
  const auto* tapped = convTaps.data_ptr<bool>();
  auto channelLive = [&](int64_t ch) { return inProjQkv.rowMayBeNonzero(ch) && tapped[ch]; };
  const int64_t dk = c.linearKeyHeadDim, dv = c.linearValueHeadDim;
  const int64_t perKeyHead = c.linearNumValueHeads / c.linearNumKeyHeads;
  std::vector<std::vector<int32_t>> live(static_cast<size_t>(c.linearNumValueHeads));
  if (!compact) {
    for (auto& rows : live)
      for (int32_t i = 0; i < static_cast<int32_t>(dk); ++i) rows.push_back(i);
    return live;
  }
  for (int64_t h = 0; h < c.linearNumValueHeads; ++h) {
    bool anyValue = false;
    for (int64_t j = 0; j < dv && !anyValue; ++j)
      anyValue = channelLive(2 * c.linearKeyDim() + h * dv + j);
    if (!anyValue) continue;
    const int64_t keyBase = c.linearKeyDim() + (h / perKeyHead) * dk;
    for (int64_t i = 0; i < dk; ++i)
      if (channelLive(keyBase + i)) live[static_cast<size_t>(h)].push_back(static_cast<int32_t>(i));
  }
  return live;
}

// The heads with a live state row, as a kLong index on `device`; undefined when every head has one.
Tensor liveHeadIndex(const std::vector<std::vector<int32_t>>& stateRows, torch::Device device) {
  std::vector<int64_t> heads;
  for (size_t h = 0; h < stateRows.size(); ++h)
    if (!stateRows[h].empty()) heads.push_back(static_cast<int64_t>(h));
  if (heads.size() == stateRows.size()) return {};
  return torch::tensor(heads, torch::kLong).to(device);
}

struct FullLayer {
  Linear qProj, kProj, vProj, oProj;
  Tensor qNorm1p, kNorm1p;  // norms stored as (1 + w) in fp32
};

struct Layer {
  LayerType type = LayerType::Linear;
  LinearLayer lin;
  FullLayer full;
  Tensor inNorm1p, postNorm1p;
  Linear gate, up, down;
};

struct LayerState {
  std::optional<Tensor> conv;       // [1, C, K] pre-conv qkv window (model dtype)
  std::optional<Tensor> recurrent;  // [1, Hv, dk, dv] fp32
  std::optional<Tensor> scratch;    // recurrent's size: recurrentRule's products
  std::optional<Tensor> k, v;       // [1, Hkv, T, Dh]
};

}  // namespace

const char* computeDtypeName(ComputeDtype dtype) {
  return dtype == ComputeDtype::BF16 ? "bf16" : "f32";
}

int64_t Logits::argmax(int64_t r) const {
  auto rowSpan = row(r);
  return std::max_element(rowSpan.begin(), rowSpan.end()) - rowSpan.begin();
}

struct Decoder::Impl {
  Qwen35Config config;
  DecoderOptions options;
  std::optional<Checkpoint> checkpoint;  // keeps memory-mapped weights alive
  torch::Device device{torch::kCPU};
  torch::ScalarType dtype = torch::kFloat32;
  Tensor embed, finalNorm1p, invFreq;
  Linear lmHead;
  std::vector<std::pair<std::string, Tensor>> named;  // every weight as loaded, for diagnostics
  std::vector<std::string> warnings;                  // LoadPlan::warnings() of the checkpoint
  std::vector<Layer> layers;
  std::vector<LayerState> state;
  int64_t position = 0;
  uint64_t weightBytes = 0;

  std::string checkpointDir;
  std::vector<Activation>* tap = nullptr;  // forwardTapped's sink, else nullptr

  // Records t (its last dim = cols, the rest positions) under (name, layer) when tapping.
  void record(const char* name, size_t layer, const Tensor& t) {
    if (tap == nullptr) return;
    Tensor c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    Activation a;
    a.name = name;
    a.layer = static_cast<int>(layer);
    a.cols = c.size(-1);
    a.rows = a.cols == 0 ? 0 : c.numel() / a.cols;
    a.data.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    tap->push_back(std::move(a));
  }
  size_t tapLayer = 0;  // the layer linearAttention is running, for record()

  // ", weights with non-finite values: a (3), b (1)" for the error message, or "" when all are
  // finite (then the overflow happened in the arithmetic). Only run on the error path.
  std::string nonFiniteWeights() const {
    std::string list;
    int listed = 0;
    for (const auto& [name, w] : named) {
      int64_t n = (~torch::isfinite(w)).sum().item<int64_t>();
      if (n == 0) continue;
      if (++listed <= 8) list += (list.empty() ? "" : ", ") + name + " (" + std::to_string(n) + ")";
    }
    if (listed == 0) return "; every weight is finite, so the arithmetic overflowed";
    if (listed > 8) list += ", and " + std::to_string(listed - 8) + " more";
    return "; weights with non-finite values: " + list;
  }

  Tensor toCompute(const Tensor& t) {
    Tensor out = t.to(device, dtype);
    return out;
  }

  Tensor onePlus(const Tensor& w) { return (1.0 + w.to(torch::kFloat32)).to(device); }

  // Gated DeltaNet (Qwen3_5GatedDeltaNet.forward) on h [1, S, D].
  Tensor linearAttention(const LinearLayer& L, LayerState& st, const Tensor& h) {
    const auto& c = config;
    const int64_t S = h.size(1), K = c.linearConvKernelDim;
    Tensor mixed = L.inProjQkv(h).transpose(1, 2);  // [1, C, S]
    Tensor z = L.inProjZ(h).reshape({1, S, -1, c.linearValueHeadDim});
    Tensor b = L.inProjB(h);
    Tensor a = L.inProjA(h);
    record("attn_z", tapLayer, z.reshape({S, -1}));
    record("attn_b", tapLayer, b.reshape({S, -1}));
    const int64_t C = mixed.size(1);
    Tensor w = L.conv1d.unsqueeze(1);  // [C, 1, K]
    // One token on the CPU in fp32 or bf16: convStep (decode_step.h), the same bits in place.
    const bool convInPlace = st.conv && S == 1 && K == 4 && st.conv->is_cpu() &&
                             st.conv->is_contiguous() && L.conv1d.is_contiguous() &&
                             L.conv1d.scalar_type() == dtype &&
                             (dtype == torch::kFloat32 || dtype == torch::kBFloat16);
    if (convInPlace) {
      Tensor x = mixed.contiguous(), pre = torch::zeros_like(x);  // [1, C, 1]
      if (dtype == torch::kFloat32)
        convStep(st.conv->data_ptr<float>(), x.data_ptr<float>(), L.conv1d.data_ptr<float>(),
                 pre.data_ptr<float>(), L.convChannels, K);
      else
        convStep(st.conv->data_ptr<c10::BFloat16>(), x.data_ptr<c10::BFloat16>(),
                 L.conv1d.data_ptr<c10::BFloat16>(), pre.data_ptr<c10::BFloat16>(), L.convChannels,
                 K);
      record("attn_conv", tapLayer, pre.transpose(1, 2));
      mixed = F::silu(pre);
    } else if (st.conv && S == 1) {
      // causal_conv1d_update: window = last K inputs, valid conv, keep the last output.
      Tensor full = torch::cat({*st.conv, mixed}, -1);
      st.conv = full.index({"...", Slice(-K, None)}).clone();
      // The last output of the valid conv over `full` is the window times the kernel, summed.
      Tensor pre = (*st.conv * L.conv1d).sum(-1, /*keepdim=*/true);  // [1, C, 1]
      record("attn_conv", tapLayer, pre.transpose(1, 2));
      mixed = F::silu(pre);
    } else {
      // Cache update_conv_state + causal_conv1d_fn: prepend the window, pad to K, conv, keep last S.
      Tensor full = st.conv ? torch::cat({*st.conv, mixed}, -1) : mixed;
      if (!st.conv && full.size(-1) < K) full = F::pad(full, F::PadFuncOptions({K - full.size(-1), 0}));
      st.conv = full.index({"...", Slice(-K, None)}).clone();
      Tensor out = F::conv1d(full, w, F::Conv1dFuncOptions().padding(K - 1).groups(C));
      out = out.index({"...", Slice(None, full.size(-1))});
      record("attn_conv", tapLayer, out.index({"...", Slice(-S, None)}).transpose(1, 2));
      out = F::silu(out);
      mixed = out.index({"...", Slice(-S, None)});
    }
    mixed = mixed.transpose(1, 2);  // [1, S, C]
    auto parts = torch::split_with_sizes(mixed, {c.linearKeyDim(), c.linearKeyDim(), c.linearValueDim()}, -1);
    Tensor q = parts[0].reshape({1, S, -1, c.linearKeyHeadDim});
    Tensor k = parts[1].reshape({1, S, -1, c.linearKeyHeadDim});
    Tensor v = parts[2].reshape({1, S, -1, c.linearValueHeadDim});
    Tensor beta = b.sigmoid();
    Tensor g = -L.aLog.to(torch::kFloat32).exp() * F::softplus(a.to(torch::kFloat32) + L.dtBias);

    Tensor core;
    if (st.recurrent && S == 1)
      core = recurrentRule(q, k, v, g, beta, L.stateRows, st);
    else
      core = chunkRuleOver(L.liveHeads, q, k, v, g, beta, st);

    core = core.reshape({-1, c.linearValueHeadDim});
    Tensor zz = z.reshape({-1, c.linearValueHeadDim});
    core = gatedRmsNorm(core, zz, L.normW, c.rmsNormEps).reshape({1, S, -1});
    return L.outProj(core);
  }

  // Common preprocessing of both delta-rule paths: GQA repeat, [B, H, S, d] fp32, l2norm.
  void prepare(Tensor& q, Tensor& k, Tensor& v, Tensor& beta, Tensor& g) {
    const int64_t hk = q.size(2), hv = v.size(2);
    if (hk != hv) {
      q = q.repeat_interleave(hv / hk, 2);
      k = k.repeat_interleave(hv / hk, 2);
    }
    auto fix = [](const Tensor& x) { return x.transpose(1, 2).to(torch::kFloat32).contiguous(); };
    q = fix(q), k = fix(k), v = fix(v), beta = fix(beta), g = fix(g);
    q = l2norm(q);
    k = l2norm(k);
  }

  // torch_recurrent_gated_delta_rule for one token with an existing state, the state updated in
  // place: S ← S·exp(g); δ = (v − kᵀS)·β; S ← S + k ⊗ δ; out = qᵀS. HF's element-wise products
  // and sums over dk; on the CPU in two passes over the live rows of S per head (deltaStep,
  // `rows` from liveStateRows), elsewhere as tensor ops with one scratch tensor, so that a token
  // allocates no state-sized temporary (at 51 heads of 64 × 128 those were 1.7 MB each, six per
  // layer per token: most of the decode's time).
  Tensor recurrentRule(Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta,
                       const std::vector<std::vector<int32_t>>& rows, LayerState& st) {
    auto inType = q.scalar_type();
    prepare(q, k, v, beta, g);
    q = q / std::sqrt(static_cast<double>(q.size(-1)));
    Tensor& s = *st.recurrent;  // [1, H, dk, dv] fp32, owned by this layer's state
    if (s.device().is_cpu() && s.is_contiguous()) {
      Tensor decay = g.exp().contiguous(), out = torch::empty_like(v);  // [1, H, 1], [1, H, 1, dv]
      deltaStep(s.data_ptr<float>(), q.contiguous().data_ptr<float>(),
                k.contiguous().data_ptr<float>(), v.contiguous().data_ptr<float>(),
                decay.data_ptr<float>(), beta.contiguous().data_ptr<float>(), out.data_ptr<float>(),
                rows, s.size(2), s.size(3));
      return out.transpose(1, 2).contiguous().to(inType);  // [1, 1, H, dv]
    }
    if (!st.scratch || !st.scratch->sizes().equals(s.sizes())) st.scratch = torch::empty_like(s);
    Tensor& scratch = *st.scratch;
    Tensor qt = q.select(2, 0), kt = k.select(2, 0), vt = v.select(2, 0);
    s.mul_(g.select(2, 0).exp().unsqueeze(-1).unsqueeze(-1));
    Tensor bt = beta.select(2, 0).unsqueeze(-1);
    Tensor mem = torch::mul_out(scratch, s, kt.unsqueeze(-1)).sum(-2);
    Tensor delta = (vt - mem) * bt;
    s.add_(torch::mul_out(scratch, kt.unsqueeze(-1), delta.unsqueeze(-2)));  // s + k ⊗ δ
    Tensor out = torch::mul_out(scratch, s, qt.unsqueeze(-1)).sum(-2);  // [1, H, dv]
    return out.unsqueeze(2).transpose(1, 2).contiguous().to(inType);  // [1, 1, H, dv]
  }

  // The chunked rule over the heads `live` only (kLong; undefined: every head). Every other head
  // has a state that stays zero and an output that is zero (its keys or its values are: see
  // liveStateRows), and each head's products are its own matrices, so the live heads' bits do
  // not depend on which others are computed.
  Tensor chunkRuleOver(const Tensor& live, Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta,
                       LayerState& st) {
    if (!live.defined()) return chunkRule(q, k, v, g, beta, st);
    const auto inType = q.scalar_type();
    const int64_t H = v.size(2), S = v.size(1), dk = q.size(3), dv = v.size(3);
    Tensor state = st.recurrent ? *st.recurrent
                                : torch::zeros({1, H, dk, dv}, v.options().dtype(torch::kFloat32));
    Tensor out = torch::zeros({1, S, H, dv}, v.options().dtype(inType));
    if (live.numel() > 0) {
      const Tensor keyHeads = live.div(H / q.size(2), "floor");
      LayerState part;
      if (st.recurrent) part.recurrent = state.index_select(1, live);
      Tensor o = chunkRule(q.index_select(2, keyHeads), k.index_select(2, keyHeads),
                           v.index_select(2, live), g.index_select(2, live),
                           beta.index_select(2, live), part);
      out.index_copy_(2, live, o);
      state = state.index_copy(1, live, *part.recurrent);
    }
    st.recurrent = state;
    return out;
  }

  // torch_chunk_gated_delta_rule (chunk 64), continuing from the cached state when there is one.
  Tensor chunkRule(Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta, LayerState& st) {
    constexpr int64_t C = 64;
    auto inType = q.scalar_type();
    prepare(q, k, v, beta, g);
    const int64_t B = q.size(0), H = q.size(1), S = q.size(2), dk = q.size(3), dv = v.size(3);
    q = q * std::pow(static_cast<double>(dk), -0.5);
    const int64_t pad = (C - S % C) % C;
    q = F::pad(q, F::PadFuncOptions({0, 0, 0, pad}));
    k = F::pad(k, F::PadFuncOptions({0, 0, 0, pad}));
    v = F::pad(v, F::PadFuncOptions({0, 0, 0, pad}));
    beta = F::pad(beta, F::PadFuncOptions({0, pad}));
    g = F::pad(g, F::PadFuncOptions({0, pad}));
    const int64_t n = (S + pad) / C;
    Tensor vBeta = v * beta.unsqueeze(-1);
    Tensor kBeta = k * beta.unsqueeze(-1);
    q = q.reshape({B, H, n, C, dk});
    k = k.reshape({B, H, n, C, dk});
    kBeta = kBeta.reshape({B, H, n, C, dk});
    vBeta = vBeta.reshape({B, H, n, C, dv});
    g = g.reshape({B, H, n, C});
    Tensor upper = torch::ones({C, C}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
    Tensor cum = g.cumsum(3);
    Tensor pair = (cum.unsqueeze(4) - cum.unsqueeze(3)).masked_fill(upper, -INFINITY).exp();
    Tensor ut = torch::matmul(kBeta, k.transpose(-1, -2)) * pair;
    Tensor intra = torch::matmul(q, k.transpose(-1, -2)) * pair;
    Tensor decayedKBeta = kBeta * cum.exp().unsqueeze(-1);
    Tensor newValues = torch::linalg_solve_triangular(ut, vBeta, /*upper=*/false, /*left=*/true, /*unitriangular=*/true);
    Tensor kCumDecay = torch::linalg_solve_triangular(ut, decayedKBeta, false, true, true);
    Tensor s = st.recurrent ? st.recurrent->to(newValues.scalar_type())
                            : torch::zeros({B, H, dk, dv}, newValues.options());
    Tensor out = torch::zeros_like(newValues);
    q = q * cum.exp().unsqueeze(-1);
    k = k * (cum.index({"...", Slice(-1, None)}) - cum).exp().unsqueeze(-1);
    Tensor chunkDecay = cum.index({"...", -1}).exp().unsqueeze(-1).unsqueeze(-1);
    for (int64_t i = 0; i < n; ++i) {
      Tensor vNew = newValues.select(2, i) - torch::matmul(kCumDecay.select(2, i), s);
      Tensor inter = torch::matmul(q.select(2, i), s);
      out.select(2, i).copy_(inter + torch::matmul(intra.select(2, i), vNew));
      s = s * chunkDecay.select(2, i) + torch::matmul(k.select(2, i).transpose(-1, -2), vNew);
    }
    st.recurrent = s;
    out = out.reshape({B, H, -1, dv}).index({Slice(), Slice(), Slice(None, S)});
    return out.transpose(1, 2).contiguous().to(inType);
  }

  // Qwen3_5Attention.forward (eager attention) on h [1, S, D].
  Tensor fullAttention(const FullLayer& L, LayerState& st, const Tensor& h, const Tensor& cos,
                       const Tensor& sin) {
    const auto& c = config;
    const int64_t S = h.size(1), Dh = c.headDim, R = c.rotaryDim();
    auto qg = torch::chunk(L.qProj(h).view({1, S, -1, Dh * 2}), 2, -1);
    Tensor gate = qg[1].reshape({1, S, -1});
    Tensor q = rmsNorm(qg[0], L.qNorm1p, c.rmsNormEps).transpose(1, 2);
    Tensor k = rmsNorm(L.kProj(h).view({1, S, -1, Dh}), L.kNorm1p, c.rmsNormEps).transpose(1, 2);
    Tensor v = L.vProj(h).view({1, S, -1, Dh}).transpose(1, 2);
    Tensor cs = cos.unsqueeze(1), sn = sin.unsqueeze(1);
    auto rope = [&](const Tensor& x) {
      Tensor rot = x.index({"...", Slice(None, R)});
      Tensor pass = x.index({"...", Slice(R, None)});
      return torch::cat({rot * cs + rotateHalf(rot) * sn, pass}, -1);
    };
    q = rope(q);
    k = rope(k);
    if (st.k) {
      k = torch::cat({*st.k, k}, 2);
      v = torch::cat({*st.v, v}, 2);
    }
    st.k = k;
    st.v = v;
    const int64_t rep = c.numAttentionHeads / c.numKeyValueHeads, T = k.size(2);
    auto repeatKv = [&](const Tensor& x) {
      if (rep == 1) return x;
      return x.unsqueeze(2).expand({1, c.numKeyValueHeads, rep, T, Dh}).reshape({1, c.numKeyValueHeads * rep, T, Dh});
    };
    Tensor scores = torch::matmul(q, repeatKv(k).transpose(2, 3)) * std::pow(static_cast<double>(Dh), -0.5);
    if (S > 1) {
      // Query i (absolute position T - S + i) sees keys 0..T - S + i; HF adds finfo.min elsewhere.
      auto opts = torch::TensorOptions().dtype(torch::kLong).device(scores.device());
      Tensor qi = torch::arange(T - S, T, opts).unsqueeze(1);
      Tensor kj = torch::arange(0, T, opts).unsqueeze(0);
      const double minValue = scores.scalar_type() == torch::kBFloat16 ? -3.3895313892515355e38
                                                                       : std::numeric_limits<float>::lowest();
      scores = scores + torch::zeros({S, T}, scores.options()).masked_fill(kj > qi, minValue);
    }
    Tensor probs = torch::softmax(scores, -1, torch::kFloat32).to(q.scalar_type());
    Tensor attn = torch::matmul(probs, repeatKv(v)).transpose(1, 2).contiguous();
    attn = attn.reshape({1, S, -1}).contiguous();
    attn = attn * torch::sigmoid(gate);
    return L.oProj(attn);
  }

  Tensor forwardHidden(const Tensor& ids) {
    const int64_t S = ids.size(0);
    Tensor x = embed.index_select(0, ids).unsqueeze(0);  // [1, S, D]
    // Qwen3_5TextRotaryEmbedding: fp32 angles, cos/sin cast to the model dtype.
    Tensor pos = torch::arange(position, position + S, torch::TensorOptions().dtype(torch::kLong).device(device));
    Tensor freqs = pos.unsqueeze(-1).to(torch::kFloat32) * invFreq;
    Tensor cos = torch::cat({freqs.cos(), freqs.cos()}, -1).to(dtype).unsqueeze(0);
    Tensor sin = torch::cat({freqs.sin(), freqs.sin()}, -1).to(dtype).unsqueeze(0);
    for (size_t i = 0; i < layers.size(); ++i) {
      const Layer& L = layers[i];
      record("residual_in", i, x.squeeze(0));
      tapLayer = i;
      Tensor y = rmsNorm(x, L.inNorm1p, config.rmsNormEps);
      // An attention layer whose o_proj is all zeros adds an exact 0 (Linear::isZero): its
      // scores and its KV cache are never computed, since nothing reads them.
      if (L.type == LayerType::Linear)
        y = linearAttention(L.lin, state[i], y);
      else if (L.full.oProj.isZero())
        y = torch::zeros_like(y);
      else
        y = fullAttention(L.full, state[i], y, cos, sin);
      x = x + y;
      y = rmsNorm(x, L.postNorm1p, config.rmsNormEps);
      Tensor gate = L.gate(y);
      record("mlp_gate", i, gate.squeeze(0));
      y = L.down(F::silu(gate) * L.up(y));
      x = x + y;
    }
    return rmsNorm(x, finalNorm1p, config.rmsNormEps);
  }
};

Decoder::Decoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Decoder::~Decoder() = default;

const Qwen35Config& Decoder::config() const { return impl_->config; }
const DecoderOptions& Decoder::options() const { return impl_->options; }
uint64_t Decoder::weightBytes() const { return impl_->weightBytes; }
int64_t Decoder::position() const { return impl_->position; }

void Decoder::reset() {
  impl_->state.assign(impl_->layers.size(), LayerState{});
  impl_->position = 0;
}

Expected<std::unique_ptr<Decoder>> Decoder::load(const std::string& dir, const DecoderOptions& options) {
  // The one validation (load_plan.h): every tensor present with its shape and a float dtype.
  QGPU_TRY(plan, planLoad(dir));
  const Qwen35Config& config = plan.config;
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->options = options;
  impl->warnings = plan.warnings();
  impl->checkpointDir = dir;
  impl->dtype = scalarType(options.dtype);
  try {
    impl->device = torch::Device(options.device);
  } catch (const std::exception&) {
    return makeDiag(ErrorKind::Usage, "bad device '" + options.device + "'", SourceLoc{});
  }
  if (impl->device.is_cuda() && !torch::cuda::is_available())
    return makeDiag(ErrorKind::NoDevice, "LibTorch has no CUDA device", SourceLoc{});
  if (options.cpuThreads < 0)
    return makeDiag(ErrorKind::Usage, "cpuThreads must be 0 (LibTorch's default) or positive");
  if (options.cpuThreads > 0) torch::set_num_threads(options.cpuThreads);
  if (options.blasThreads < 0)
    return makeDiag(ErrorKind::Usage, "blasThreads must be 0 (the BLAS's setting) or positive");
  if (options.blasThreads > 0) setBlasThreads(options.blasThreads);

  // The weights as stored (a view of the mapping, or a copy where the file's bytes are not aligned
  // for their dtype); `compute` converts what the decoder keeps of them.
  std::map<std::string, Tensor> weights;
  std::map<std::string, const CheckpointTensor*> sources;
  std::set<std::string> views;  // the weights the decoder keeps as views of the mapping
  for (const PlannedTensor& p : plan.tensors) {
    const CheckpointTensor& t = p.source;
    torch::ScalarType st = t.info->dtype == StDtype::F32    ? torch::kFloat32
                           : t.info->dtype == StDtype::BF16 ? torch::kBFloat16
                                                            : torch::kHalf;  // planLoad allows F16 too
    auto bytes = t.bytes();
    void* ptr = const_cast<uint8_t*>(bytes.data());
    Tensor view = torch::from_blob(ptr, p.spec.shape, torch::TensorOptions().dtype(st));
    const bool aligned = reinterpret_cast<uintptr_t>(ptr) % stDtypeSize(t.info->dtype) == 0;
    weights[p.spec.name] = aligned ? view : view.clone();
    if (aligned) sources[p.spec.name] = &t;
  }
  // `part` of weight `name` (the whole weight or a copy of some of it) in the compute dtype on the
  // device: the mapped view itself where that is already so, else a converted copy (F16 and BF16
  // converted as transformers converts them), after which the file's pages of the weight are
  // released.
  auto compute = [&](const std::string& name, const Tensor& part) {
    const bool isView = sources.count(name) && part.data_ptr() == weights[name].data_ptr() &&
                        part.sizes() == weights[name].sizes();
    if (isView && part.scalar_type() == impl->dtype && impl->device.is_cpu()) {
      views.insert(name);
      return part;
    }
    Tensor out = part.to(impl->device, impl->dtype, false, /*copy=*/isView);
    if (sources.count(name)) sources[name]->file->release(*sources[name]->info);
    return out;
  };
  const std::string P = config.prefix();

  Impl& m = *impl;
  // What the decoder holds of each weight, for diagnostics and weightBytes(): the weight itself
  // (the embedding, a dense linear), a compact linear's block, or a small tensor's copy.
  auto hold = [&](const std::string& name, const Tensor& t) {
    m.named.emplace_back(name, t);
    m.weightBytes += static_cast<uint64_t>(t.numel()) * t.element_size();
  };
  // Norms, the conv and the decay vectors are small: copied, so that they hold no view.
  auto copied = [&](const std::string& name) {
    Tensor t = compute(name, weights[name]);
    if (views.erase(name)) t = t.clone();
    hold(name, t);
    return t;
  };
  // A linear weight: its nonzero block when that is at most half of it (makeLinear), else whole.
  // A linear weight: dense, its nonzero block or its sparse rows (model/linear.h).
  auto linear = [&](const std::string& name) {
    Linear l = Linear::make(weights[name], options.compactZeroBlocks, impl->device.is_cpu());
    if (l.form() == Linear::Form::Sparse) {
      if (sources.count(name)) sources[name]->file->release(*sources[name]->info);
    } else {
      l.setWeight(compute(name, l.weight()));
    }
    hold(name, l.weight());
    return l;
  };
  const std::string embedName = P + "embed_tokens.weight";
  m.embed = compute(embedName, weights[embedName]);
  m.lmHead = plan.headFromFile ? linear("lm_head.weight") : Linear::make(m.embed, false, false);
  m.finalNorm1p = m.onePlus(copied(P + "norm.weight"));
  for (int64_t i = 0; i < config.numLayers(); ++i) {
    const std::string L = P + "layers." + std::to_string(i) + ".";
    Layer layer;
    layer.type = config.layerTypes[static_cast<size_t>(i)];
    layer.inNorm1p = m.onePlus(copied(L + "input_layernorm.weight"));
    layer.postNorm1p = m.onePlus(copied(L + "post_attention_layernorm.weight"));
    layer.gate = linear(L + "mlp.gate_proj.weight");
    layer.up = linear(L + "mlp.up_proj.weight");
    layer.down = linear(L + "mlp.down_proj.weight");
    if (layer.type == LayerType::Linear) {
      const std::string A = L + "linear_attn.";
      auto& l = layer.lin;
      l.inProjQkv = linear(A + "in_proj_qkv.weight");
      l.inProjZ = linear(A + "in_proj_z.weight");
      l.inProjB = linear(A + "in_proj_b.weight");
      l.inProjA = linear(A + "in_proj_a.weight");
      l.conv1d = copied(A + "conv1d.weight").squeeze(1);
      l.stateRows = liveStateRows(config, l.inProjQkv, l.conv1d, options.compactZeroBlocks);
      l.convChannels = liveConvChannels(l.inProjQkv, l.conv1d, options.compactZeroBlocks);
      l.liveHeads = liveHeadIndex(l.stateRows, m.device);
      l.dtBias = copied(A + "dt_bias");
      l.aLog = copied(A + "A_log");
      l.normW = copied(A + "norm.weight");
      l.outProj = linear(A + "out_proj.weight");
    } else {
      const std::string A = L + "self_attn.";
      auto& f = layer.full;
      f.qProj = linear(A + "q_proj.weight");
      f.kProj = linear(A + "k_proj.weight");
      f.vProj = linear(A + "v_proj.weight");
      f.oProj = linear(A + "o_proj.weight");
      f.qNorm1p = m.onePlus(copied(A + "q_norm.weight"));
      f.kNorm1p = m.onePlus(copied(A + "k_norm.weight"));
    }
    m.layers.push_back(std::move(layer));
  }
  // When the embedding is the last view (every linear compact), copy it too and drop the mapping.
  if (views.size() == 1 && views.count(embedName)) {
    m.embed = m.embed.clone();
    if (!plan.headFromFile) m.lmHead.setWeight(m.embed);
    views.clear();
  }
  hold(embedName, m.embed);
  const int64_t R = config.rotaryDim();
  Tensor exponent = torch::arange(0, R, 2, torch::TensorOptions().dtype(torch::kFloat32)) / static_cast<double>(R);
  m.invFreq = (1.0 / torch::pow(config.ropeTheta, exponent)).to(m.device);
  // Keep the mapping only while a weight points into it; otherwise unmap it now, so that an
  // upcast or compacted model does not also hold the file's pages.
  if (!views.empty()) m.checkpoint = std::move(plan.checkpoint);
  std::unique_ptr<Decoder> decoder(new Decoder(std::move(impl)));
  decoder->reset();
  return decoder;
}

Expected<Logits> Decoder::forward(std::span<const int64_t> tokens, bool allLogits) {
  if (tokens.empty()) return makeDiag(ErrorKind::Usage, "forward() needs at least one token");
  for (int64_t t : tokens)
    if (t < 0 || t >= impl_->config.vocabSize)
      return makeDiag(ErrorKind::Usage, "token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                                            std::to_string(impl_->config.vocabSize) + ")");
  torch::NoGradGuard noGrad;
  Impl& m = *impl_;
  Tensor ids = torch::from_blob(const_cast<int64_t*>(tokens.data()), {static_cast<int64_t>(tokens.size())},
                                torch::kLong).to(m.device);
  Tensor hidden = m.forwardHidden(ids);  // [1, S, D]
  m.position += static_cast<int64_t>(tokens.size());
  if (!allLogits) hidden = hidden.index({Slice(), Slice(-1, None)});
  Tensor logits = m.lmHead(hidden).squeeze(0).to(torch::kCPU, torch::kFloat32).contiguous();
  Logits out;
  out.rows = logits.size(0);
  out.vocab = logits.size(1);
  out.data.assign(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
  // One pass over the logits (vocab floats per row): a NaN or Inf would make argmax meaningless
  // and every later token silently wrong.
  const int64_t firstRow = m.position - (allLogits ? static_cast<int64_t>(tokens.size()) : 1);
  for (int64_t r = 0; r < out.rows; ++r) {
    auto row = out.row(r);
    auto bad = std::find_if(row.begin(), row.end(), [](float v) { return !std::isfinite(v); });
    if (bad == row.end()) continue;
    int64_t nan = 0, inf = 0;
    for (float v : row) nan += std::isnan(v), inf += std::isinf(v);
    return makeDiag(ErrorKind::Checkpoint,
                    "non-finite logits at sequence position " + std::to_string(firstRow + r) + ": " +
                        std::to_string(nan) + " NaN and " + std::to_string(inf) + " infinite of " +
                        std::to_string(out.vocab) + " (first at token id " + std::to_string(bad - row.begin()) +
                        ")" + m.nonFiniteWeights() + "; the sequence state is now invalid, reset() before reuse",
                    SourceLoc{m.checkpointDir});
  }
  return out;
}

Expected<TappedForward> Decoder::forwardTapped(std::span<const int64_t> tokens, bool allLogits) {
  TappedForward out;
  impl_->tap = &out.activations;
  auto logits = forward(tokens, allLogits);
  impl_->tap = nullptr;
  if (!logits.ok()) return logits.error();
  out.logits = std::move(logits).value();
  return out;
}

const std::vector<std::string>& Decoder::warnings() const { return impl_->warnings; }

Expected<std::vector<int64_t>> Decoder::generateGreedy(std::span<const int64_t> prompt, int64_t maxNewTokens,
                                                       std::span<const int64_t> stopTokens) {
  std::vector<int64_t> out;
  QGPU_TRY(logits, forward(prompt, false));
  int64_t next = logits.argmax(0);
  while (static_cast<int64_t>(out.size()) < maxNewTokens) {
    out.push_back(next);
    if (std::find(stopTokens.begin(), stopTokens.end(), next) != stopTokens.end()) break;
    if (static_cast<int64_t>(out.size()) == maxNewTokens) break;
    int64_t tok = next;
    QGPU_TRY(step, forward(std::span<const int64_t>(&tok, 1), false));
    next = step.argmax(0);
  }
  return out;
}

}  // namespace qgpu::model
