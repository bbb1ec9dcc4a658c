// qgpu/circuit/units.h — SwiGLU units: the MLP half of a decoder layer, one unit at a time.
//
// A Qwen3.5 MLP computes, from the post-attention pre-normed residual h (every ±1-unit dim of x is
// ±λ in h, docs/circuit.md R3), down(silu(gate·h) ⊙ (up·h)) and adds it to the residual. A circuit
// writes it as a list of independent units; unit u is the triple
//   gate_u = Σ w·h[dim]   (gate_proj row u)     — the decision, λ·N with N an exact integer (R1)
//   up_u   = Σ w·h[dim]   (up_proj row u)       — usually a constant: a weight on a ballast dim
//   x[dim] += w · silu(gate_u) · up_u           (down_proj column u)
// so that a unit with gate ≤ −88.8 adds exactly 0 (silu = −0, R2) and a unit with gate ≥ 17 adds
// exactly w·gate·up. Gadgets build units; `UnitWriter` places them in consecutive MLP rows of one
// layer and refuses what the layer cannot hold.
//
// Constants: a ballast dim holds +1 unit on every circuit token, so a constant c in a row is a
// weight c on a ballast dim. bf16 keeps 8 significant bits (R4): `constantTerms` splits c over
// several ballast dims, each piece bf16-exact; the fp32 accumulator adds the exact products
// exactly while the sum stays below 2^24 of the smallest piece's ulp.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

// v rounded to fp32, then to bf16 (round to nearest even), as a float.
float bf16Round(double v);

// Whether v survives rounding to bf16 unchanged (rule R4: every weight a bf16 row holds).
bool bf16Exact(float v);

// Whether v is a positive power of two (a gain or a λ that scales every weight exactly).
bool powerOfTwo(double v);

struct Term {
  int dim = 0;        // residual dim
  float weight = 0;   // bf16-exact (rule R4)
};

struct Unit {
  std::vector<Term> gate;
  std::vector<Term> up;
  std::vector<Term> down;
};

// A literal that keeps every unit a writer adds silent where it does not hold (docs/circuit.md
// §3.2 "Exclusive fields"): the units of one op kind's gadgets, whose fields share dims with
// another kind's. The literal is a sign dim (+: holds at +u, −: at −u), and every other dim a
// unit's gate reads holds ±u (a sign field) or, on `ballast`, +u. Where the literal holds the unit
// is unchanged (the guard adds a·x̂ − a = 0, exactly: a is a power of two and the constant −a is
// split over the ballast with the unit's own constant, constantTerms); where it does not, the
// gate is at most −128 whatever the other dims hold (a ≥ (M/λ + 128/λ)/2 over the unit's largest
// gate M), so silu is exactly −0 (rule R2) and the unit adds exactly 0 — a cancel too, so the dims
// keep what they held. A unit already silent there (an AND with the literal) is left as it is.
struct UnitGuard {
  int dim = 0;
  int sign = 1;
  Field ballast;
  double lambda = 1;  // the MLP input's λ (a ±u dim reads ±λ)
  // The op kinds (weights.h FieldKind) at whose positions alone the literal holds: two units
  // whose guards' kinds are disjoint never write at one token (circuit/pack.h relies on it).
  // 0: not stated (the unit counts as writing at every token).
  uint32_t kinds = 0;
};

// Writes units into consecutive rows of one layer's MLP (gate_proj, up_proj rows; down_proj
// columns). Rows already used by another writer are the caller's business: one writer per layer.
class UnitWriter {
 public:
  UnitWriter(CircuitWeights& weights, int layer, int firstUnit = 0);
  // The unit's index. Usage diag when the layer has no free unit, a dim is outside the hidden
  // size, or a weight is not bf16-representable (then nothing is written).
  Expected<int> add(const Unit& unit);
  int used() const { return next_ - first_; }
  int next() const { return next_; }
  // The guard every unit added from now on gets (std::nullopt: none); see UnitGuard.
  void setGuard(std::optional<UnitGuard> guard) { guard_ = std::move(guard); }
  const std::optional<UnitGuard>& guard() const { return guard_; }

 private:
  Expected<Unit> guarded(const Unit& unit) const;
  CircuitWeights& w_;
  int layer_;
  int first_;
  int next_;
  std::optional<UnitGuard> guard_;
};

// Guards writers' units for one scope (UnitWriter::setGuard), then gives each its guard back;
// without a guard (std::nullopt) it changes nothing.
class GuardScope {
 public:
  GuardScope(std::vector<UnitWriter*> writers, const std::optional<UnitGuard>& guard)
      : writers_(guard ? std::move(writers) : std::vector<UnitWriter*>{}) {
    for (UnitWriter* w : writers_) {
      before_.push_back(w->guard());
      w->setGuard(guard);
    }
  }
  ~GuardScope() {
    for (size_t i = 0; i < writers_.size(); ++i) writers_[i]->setGuard(before_[i]);
  }
  GuardScope(const GuardScope&) = delete;
  GuardScope& operator=(const GuardScope&) = delete;

 private:
  std::vector<UnitWriter*> writers_;
  std::vector<std::optional<UnitGuard>> before_;
};

// c as terms on the ballast dims (each dim +1 unit on every token): pieces of at most 8
// significant bits, largest first, one per dim. Usage diag when c needs more pieces than the
// ballast has dims, or c is not a multiple of 2^-24 of its largest piece (it could not be exact).
Expected<std::vector<Term>> constantTerms(double c, const Field& ballast);

}  // namespace qgpu::circuit
