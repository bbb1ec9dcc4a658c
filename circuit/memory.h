// qgpu/circuit/memory.h — gadget: one Gated DeltaNet value head as a memory of 2^A cells.
//
// Each circuit token may write one cell and reads one cell (after its own write). The gadget
// writes only the weights of its own head (its q/k/v channels, b, a, z, out_proj columns) plus
// the layer-wide settings it relies on (A_log and dt_bias of its head, the shared gated-norm
// weight = 1); everything else in the layer stays as the caller left it. It is a function of its
// spec alone: same spec, same weights.
//
// Inputs, read from the pre-normed residual h = RMSNorm(x)·(1 + 0). Every input dim holds ±1 unit
// in x, which the pre-norm maps to exactly ±λ (λ = `spec.lambda`, a property of the caller's
// constant-norm layout: docs/circuit.md R3); the first dim of `ballast` holds +λ on every token:
//   we        1 sign bit: +1 = write, −1 = no write (the token writes the scratch row instead, or,
//             with `noWrite = ZeroKey`, no row at all)
//   waddr     A sign bits, the cell to write (bit i: +1 = 1)
//   value     V sign bits, the value to write
//   raddr     A sign bits, the cell to read
//   reset     optional, 1 sign bit: +1 = clear every cell before this token's write
// Output: `out`, V dims; the read lands as ±`outUnit` (+ = bit 1), or exactly 0 for a cell that
// was never written.
//
// Maths (G = spec.gain, Gv = 2G, Gz = G/2, s_i(r) = +1 if bit i of r is set else −1, every
// pre-activation below is λ times an exact integer N; R1–R8 of docs/circuit.md):
//   key channel r < 2^A :  k_r = G·(Σ_i s_i(r)·waddr_i + we − A·ballast)  = λG·N, N = +1 iff
//                          waddr = r and we = +1, else N ≤ −1
//   key channel 2^A     :  k_s = −G·we                                    = λG·(∓1): scratch row
//                          (ScratchRow only; with ZeroKey a non-writing token's key channels are
//                          all ≤ −λG, so SiLU makes the key exactly 0, its L2 norm is
//                          0·rsqrt(eps) = 0 and the delta rule adds β·(v − S·0)·0ᵀ = 0: no row
//                          changes, and all 2^A ≤ dk rows hold cells)
//   query channel r     :  q_r = G·(Σ_i s_i(r)·raddr_i − (A − 1)·ballast) = λG·N, N = +1 iff
//                          raddr = r, else N ≤ −1
//   value channel 2j    :  v = +Gv·value_j ;  channel 2j+1: v = −Gv·value_j   (dual rail)
//   conv1d              :  [0, 0, 0, 1] on every used channel (current token only)
//   b = G·ballast = λG → beta = sigmoid(λG) = 1 exactly (λG ≥ 17)
//   a = 0, dt_bias = 0, A_log = −1000 → g = −exp(−1000)·softplus(0) = −0, decay exp(g) = 1
//   with a reset field instead: a = G·reset, A_log = 0, dt_bias = 0 → g = −softplus(±λG):
//     reset = −1: softplus(−λG) = log1p(exp(−128)) = 0 (exp underflows) → g = −0, decay 1;
//     reset = +1: g = −λG ≤ −104 → decay exp(g) = 0 exactly, the state is cleared in one token.
//     The chunked rule sees g ∈ {−0, −λG}: its cumulative sums are exact multiples of λG, so
//     every exp(G_i − G_j) is exactly 1 or 0 (docs/circuit.md §2.1, "decay as an exact reset").
//   z = Gz·ballast = λGz on every channel of the head → silu(z) = λGz exactly (λGz ≥ 17)
// With λG ≥ 89 every off channel is ≤ −89, so SiLU gives exactly −0 and the hot one passes
// unchanged; the L2 norm of a one-hot of height λG (a power of two here) is exactly e_r. The
// delta rule with beta = 1 and key e_r replaces row r by v: S_r ← S_r + (v − S_r) = v (rows only
// ever hold 0 or X = λGv, so the subtraction is exact); the query e_r/√128 reads S_r. A row of V
// hot entries of X among 128 channels has the gated-norm output √(128/V) on its hot rails, times
// silu(z) = λGz; out_proj column pair (2j, 2j+1) → out_j with weights ±c,
// c = outUnit / (√(128/V)·λGz). Decisions: the sign of (rail 2j − rail 2j+1).
//
// Banks: with `banks` = 2^B > 1 the memory spans value heads head .. head + 2^B − 1 (each with
// its own key head), the top B address bits pick the head and the low A − B bits the row. Every
// key and query channel of bank k also matches k's bits: N = Σ_i s_i(addr)·addr_i (over all A
// bits, the bank's bits fixed to k) + we − A·ballast, so the other banks' keys and queries are
// exactly 0 — a zero query reads exactly 0 (0 through the gated norm), a zero key writes nothing
// (NoWrite::ZeroKey is required) — and the banks' out_proj columns add into one `out`: the sum is
// the selected bank's read plus exact zeros.
//
// Readout `PadInverted` (the full layout, docs/circuit.md §3.2; used by the register file,
// circuit/regfile.h): `out` holds the layout's +outUnit pad at the layer input, and out_proj
// reads only the 1 rail: out_j += −c'·y_2j, c' = 2·outUnit / (√(128/V)·λGz). A set bit adds
// exactly −2·outUnit (→ −outUnit), a clear bit and an empty row add exactly 0 (→ +outUnit). So the
// field holds the read with inverted polarity (+ = 0), an empty row reads as the word 0 with no
// re-quantiser, and Σx² is the same whatever is read (every out dim ends at ±outUnit), where the
// Signed readout's empty 0 would change the next norm (a second λ per combination of empty reads).
//
// Key head dim (circuit/tap.h "The read height"): with dk a power of 4 the one-row read above is
// exact. With dk = 128 (the `2b` shape) the query's scale fl(2^-3.5) leaves fp32 reads 1–4 ulp off
// ±X (decisions stay right). `read = ReadHeight::Exact` makes them exact there: every cell is a
// group of 4 key rows (4r..4r+3, the key ½ on each; the scratch group after the cells), the query
// hot on rows 4r and 4r+1 at λG and λG + δ (δ from `planOneRowRead` on the fp32 grid of the
// decoder's sums, its pieces on ballast dims 1..), value rails at h = 2X/t (a power of two) — so
// the read is X on both paths, the dk = 64 read bit for bit. The cost: a head holds dk/4 cells
// (32 at dk = 128; 31 with a scratch group). `Nominal` (the default) is the one-row construction.
// `read = ReadHeight::NormRail` keeps one row per cell (128 cells per head at dk = 128) and makes
// the read exact after the gated norm instead (docs/circuit.md §9 "The norm rail"):
//   - the one-row read is exact *as a number* on both paths: o = h·s with h a power of two (every
//     product of s with a row value or a row difference is exact, FMA or not) and the one-hot
//     query entry s = fl(dk^-½) = fl(1/fl(√dk)) on both; only o is no power of two, and the gated
//     norm's mean of the V hot channels' fl(o²) rounds differently for each pattern of hot rails
//   - a rail channel 2V holds C on every written cell (value C·ballast, C bf16, C ≫ h): its
//     fl(fl(C·s)²) = T dominates the mean — V·fl(o²) < ulp(T)/4, so every partial sum that holds T
//     rounds back to T in any order (fp32 or wider accumulators) — and the mean is T/dv, one fp32
//     number for every read; C is chosen so that its rsqrt is the same under the correctly
//     rounded and the 1/sqrtf model
//   - the data channels' gate z = zs (an fp32 number ≥ 17, so silu(zs) = zs; its bf16 pieces on
//     the ballast, R4) is chosen so that y = fl(fl(o·r)·zs) is a power of two, and the bf16 path
//     (o, C·s, the norm output and z rounded to bf16) gives the same y; out_proj's c = outUnit / y
//     is a power of two. (With C and zs both bf16 there is none: p ≈ √2 times a ratio of 8-bit
//     numbers is never within 2^-24 of a power of two.) dk = 128, h = 256, V = 32: C = 8,454,144
//     (≈ 2^23), zs = 22.8042, y = 2^-7 (norm_rail_test).
//   A rail channel's own output has out_proj weight 0; an empty cell reads 0 on every channel, the
//   rail too, so it still reads exactly 0. `planNormRail` searches C and zs and refuses a
//   geometry with no solution. Cost: one value channel (2V + 1 ≤ dv) and no heads. With dk a
//   power of 4 the one-row read is exact and NormRail builds exactly what Nominal builds.
//
// Failing-twin knobs (they break one rule each and must corrupt reads): `write = Half` sets
// b = 0 (beta = ½: a write leaves half of the old row, R6); `decay = Half` sets A_log = 0
// (exp(g) = exp(−softplus(0)) = ½ per token: rows fade until the norm's eps takes over, R5).
#pragma once

#include <cstdint>
#include <string>

#include "circuit/tap.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

enum class WriteStrength : uint8_t {
  Full,  // beta = 1 exactly: the delta rule replaces the row (the gadget)
  Half,  // beta = 1/2: a failing twin
};

// What a token that does not write (we = −1) does to the head.
enum class NoWrite : uint8_t {
  ScratchRow,  // writes a reserved row (row 2^A): 2^A + 1 ≤ dk, so at most 64 cells of 128
  ZeroKey,     // writes nothing: its key is exactly 0 (rule R6's "a key exactly 0"); 2^A ≤ dk
};

// How a read lands in `out` (header: "Readout").
enum class MemoryReadout : uint8_t {
  Signed,       // out holds 0 before: ±outUnit per bit (+ = 1), an empty row exactly 0
  PadInverted,  // out holds a +outUnit pad before: −outUnit for a set bit, +outUnit for a clear
                // bit or an empty row (inverted polarity; Σx² unchanged)
};

enum class Decay : uint8_t {
  Off,   // exp(g) = 1 exactly (the gadget)
  Half,  // exp(g) = 1/2 per token: a failing twin
};

struct MemorySpec {
  int layer = 0;       // decoder layer
  int head = 0;        // value head (its key head is head / (Hv / Hk))
  Field ballast;       // dims[0] is +1 unit on every token
  Field writeEnable;   // 1 dim
  Field writeAddr;     // A dims, 1 ≤ A − B ≤ 7 (B = log2 banks); R·(2^(A−B) + 1) ≤ key head dim
                       // (ScratchRow), R·2^(A−B) ≤ key head dim (ZeroKey); R = rows per cell
  Field value;         // V dims, 2V ≤ value head dim, dv/V a power of 4 (out_proj exact, R4)
  Field readAddr;      // A dims
  Field out;           // V dims, written by out_proj
  Field reset;         // 0 dims (no reset) or 1 dim: +1 clears the memory (decay exactly 0)
  double lambda = 2;   // pre-norm output of a +1 unit dim (exact for a power-of-two layout)
  float gain = 64;     // G, a power of two; λG ≥ 89 (rule R2)
  float outUnit = 16;  // magnitude of a read bit in the residual
  WriteStrength write = WriteStrength::Full;
  Decay decay = Decay::Off;
  NoWrite noWrite = NoWrite::ScratchRow;
  int banks = 1;       // a power of two; value heads head .. head + banks − 1; > 1 needs ZeroKey
  MemoryReadout readout = MemoryReadout::Signed;
  ReadHeight read = ReadHeight::Nominal;  // Exact: 4-row cells; NormRail: one-row cells and a
                                          // rail channel; both exact at any dk (header)
};

// The norm rail of a NormRail read (header "Key head dim"); channel −1: no rail (the one-row read
// is a power of two: dk a power of 4).
struct NormRail {
  int channel = -1;  // the rail's value channel within the head (2V)
  float value = 0;   // C: the rail's value on every write (bf16)
  float gate = 0;    // zs = silu(z) of the data channels (fp32, ≥ 17; bf16 pieces on the ballast)
  float hot = 0;     // y: a hot data channel's gated-norm output times zs, a power of two (fp32
                     // and bf16, prefill and decode)
};

// C and zs for hot value channels of height `height` (a power of two), at most `hotChannels` of
// them per read, in heads of key head dim dk and value head dim dv (a power of two), with the
// gated norm's eps. Usage diag when the two paths' one-hot query entries differ or no C and zs
// in the searched range work.
Expected<NormRail> planNormRail(int64_t dk, int64_t dv, double height, int hotChannels, double eps);

// The margins the construction guarantees (pre-activation units, before SiLU / sigmoid).
struct MemoryMargins {
  double keyOn = 0;      // the hot key / query channel: λG
  double keyOffMax = 0;  // every other key / query channel is at most this: −λG
  double valueHot = 0;   // a hot value rail before SiLU: λGv (the cold one is −λGv)
  double betaLogit = 0;  // b: λG (Full) or 0 (Half)
  double gateZ = 0;      // z: λGz
  int scratchRow = -1;   // the first key row a non-writing token writes; −1 with ZeroKey
  OneRowRead read;       // rows per cell (read.keyRows), the query heights, h and the read X
  NormRail rail;         // NormRail reads at a dk whose one-row read is no power of two
};

// Writes the memory head into `weights`. Usage diag for a spec that does not fit the config or
// would need a weight that bf16 cannot hold (gain not a power of two, dv/V not a power of 4);
// OverLimit when λG < 89 or λGz < 17 (the exactness thresholds of rule R2).
Expected<MemoryMargins> buildMemory(CircuitWeights& weights, const MemorySpec& spec);

}  // namespace qgpu::circuit
