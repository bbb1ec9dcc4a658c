// qgpu/circuit/assembler.h — gadget: the value assembler. At every terminal chunk T the whole
// 32-bit value of the C* T run that ends there (1..7 chunks, most significant first, the first
// chunk sign-extended: trace::encodeValue) lands in the residual as 32 sign bits.
//
// Two levels, because 7 chunks exceed the conv window of 4 (docs/circuit.md §5):
//   layer0: three tap heads (tap.h) copy the record of p−1, p−2, p−3 from the embedding
//           (tokens.h): 8 bits each = present, chunk[5], isChunk, isTerminal;
//   layer1: three tap heads copy, at tap 3, what layer0 copied at p−3: the records of p−4, p−5,
//           p−6. Before the sequence start a record is the canonical "no token" record (present
//           = isChunk = isTerminal = −1, chunk 0), so downstream it is simply a non-chunk token.
//   layer1's MLP computes the value from the current token's chunk fields and the 6 records.
//
// MLP maths. isC_k = isChunk_k ∧ ¬isTerminal_k (token p−k is a continuation chunk). With
// A_m = isT_0 ∧ isC_1 ∧ … ∧ isC_{m−1} ("p is a T with at least m−1 C's before it"), the run
// length is L = max{m ≤ 7 : A_m}, and [L = m] = A_m − A_{m+1}. Bit i of the value (chunk k = i/5,
// bit j = i%5 counted from the terminal chunk, k = 0) is bit(m, i) = chunk_k[j] when k < m, else
// the sign chunk_{m−1}[4] (sign extension); so
//     value_i = Σ_m [L = m]·bit(m, i) = A_1·bit(1, i) + Σ_{m=2..7} A_m·(bit(m, i) − bit(m−1, i)),
// a sum of ANDs of ±1 literals (terms with bit(m, i) = bit(m−1, i) cancel and are not built).
// Each AND is a clamped pair of SwiGLU units (`addAnd`): silu(Gλ(N + ½)) − silu(Gλ(N − ½)) with
// N = Σ sᵢ·litᵢ − (n − 1): N = +1 when every literal holds, ≤ −1 otherwise, so the pair gives
// exactly Gλ or exactly 0. In the full layout every literal is exactly ±λ (λ = 1), so a single
// detector would do; the pair also stays exact if a literal were a little off.
// Magnitudes (docs/circuit.md §3.2, the full layout): every dim of every circuit token is ±u at
// every layer input, λ = 1 at every layer and MLP input. The heads write their records over the
// fields' +u pads (tap.h, HeadPrior::Pad); the MLP replaces the value field (one cancel unit per
// dim, logic.h buildCancel), then writes −u + 2u·value_i: at a T the value's bits, at every other
// token (A_1 = 0) the canonical value 0 (every bit −u). A run of more than 6 C's before a T (not a
// trace) assembles its last 7 chunks.
#pragma once

#include <array>
#include <utility>
#include <vector>

#include "circuit/logic.h"
#include "circuit/tap.h"
#include "circuit/tokens.h"
#include "circuit/units.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

// A ±1-unit residual dim that holds when it has `sign`.
struct Literal {
  int dim = 0;
  int sign = 1;
};

// Literals that hold iff the field's bits spell `value` (bit b of value at dim b: + for 1).
std::vector<Literal> spells(const Field& f, unsigned value);
// The conjunction of two literal sets (concatenation).
std::vector<Literal> operator+(std::vector<Literal> a, const std::vector<Literal>& b);

struct AndGate {
  Field ballast;      // dims hold +1 unit; constants are split over them (constantTerms)
  double lambda = 1;  // the MLP input's λ (post-attention pre-norm)
  float gain = 128;   // G, a power of two, Gλ ≥ 178 (both units' off side ≤ −89)
};

// Adds amount·[AND(literals)] to each (dim, amount) of `outs`: two units (a clamped pair; the
// header's maths). Duplicate literals are merged; a contradictory set (a dim with both signs) is
// never true and writes nothing (returns false). The empty set is always true (a constant).
// Down weights amount/(Gλ²) are rounded to bf16.
Expected<bool> addAnd(UnitWriter& units, const AndGate& gate, std::vector<Literal> literals,
                      const std::vector<std::pair<int, double>>& outs);

// Sign fields written as −u + 2u·Σ(disjoint ANDs), the stages' idiom (memory_stage, result_stage).
// `start` replaces each field (one cancel unit per dim, logic.h buildCancel with `cancel`), then
// puts −u on every dim (the empty AND, 2 units): a dim no AND reaches reads −u (bit 0); a dim
// exactly one of its ANDs reaches reads +u. `add` is addAnd with the gate and records the widest
// fan-in in `maxFanIn`; a contradictory set writes nothing (as addAnd).
struct AndFieldWriter {
  AndGate gate;
  MlpContext cancel;  // the cancel units' context (its λ must be the layout's λ at this MLP)
  double unit = 16;   // u
  int& maxFanIn;
  Status add(UnitWriter& units, std::vector<Literal> literals,
             const std::vector<std::pair<int, double>>& outs) const;
  Status start(UnitWriter& units, const std::vector<Field>& fields) const;
};

// The 8-bit record a tap head copies: present, chunk[kChunkBits], isChunk, isTerminal.
struct TokenRecord {
  Field f;
  int present() const { return f.at(0); }
  int chunk(int j) const { return f.at(1 + j); }
  int isChunk() const { return f.at(1 + trace::kChunkBits); }
  int isTerminal() const { return f.at(2 + trace::kChunkBits); }
};
inline constexpr int kRecordBits = 3 + trace::kChunkBits;
inline constexpr int kValueBits = 32;
inline constexpr int kWindow = 6;  // records p−1 .. p−6

struct AssemblerSpec {
  TokenLayout tokens;
  int layer0 = 0;
  int layer1 = 1;
  int firstHead = 0;        // heads firstHead .. firstHead+2 in layer0 (and layer1 unless set)
  int firstHead1 = -1;      // heads of layer1 from here (−1: firstHead)
  float headGain = 128;     // G = Gv of the tap heads (λG = 128); Gz = headGain/4
  float mlpGain = 256;      // G of the MLP's ANDs: Gλ = 256 (both off sides ≤ −128)
  float unit = 16;          // the value field's ±size
  int firstUnit = 0;        // first MLP unit of layer1
  Padding padding = Padding::Canonical;  // Zero: the failing twin
  bool secondLevel = true;  // false (a failing twin): no layer1 heads, p−4..p−6 keep their pads
  bool accumulateTwin = false;  // failing twin: heads write ±u over the pads (HeadPrior::Zero) and
                                // the MLP does not cancel the value field (Σx² grows, λ ≠ 1)
  ReadHeight read = ReadHeight::Exact;  // the tap heads' read (tap.h); Nominal: the dk = 128 twin
};

struct Assembler {
  std::array<TokenRecord, kWindow> back;  // back[k−1]: the record of p−k
  Field value;                            // kValueBits sign bits, +unit = 1
  std::array<double, 3> lambda{};  // λ at layer0's input, layer1's input, layer1's MLP input
                                   // (the layout's λ at each: 1 in the full layout)
  std::array<HeadMargins, 6> heads{};
  int units = 0;          // MLP units used in layer1 (incl. the value field's cancel units)
  int maxFanIn = 0;       // literals of the widest AND
  double andOn = 0;       // the clamp's on pre-activations Gλ/2 (the smaller of the pair)
  double andOff = 0;      // the clamp's off side: −Gλ/2 at most
};

// Allocates the 6 records and the value field from `alloc` (after the token layout) and writes
// both layers. Errors from the heads and the unit writer pass through.
Expected<Assembler> buildAssembler(CircuitWeights& weights, FieldAllocator& alloc,
                                   const AssemblerSpec& spec);

}  // namespace qgpu::circuit
