// qgpu/circuit/unit_builder.h — the one SwiGLU unit builder behind the MLP gadgets (internal:
// logic.cpp and alu_bits.cpp; gadgets elsewhere use logic.h's addDetector/addStep/addConstant).
//
// A unit is on or off by the sign of its gate λG·N (rule R1), N an exact integer combination of
// ±1 field bits x̂ = h/λ and ballast constants; with λG ≥ 89 SiLU is exactly the identity or
// exactly −0 there (R2). The unit's silu·up product is then λG·(up in units of λ), and a down
// weight d·u/(λ²G) adds exactly d·u to its dim. The pieces every gadget is made of:
//   detector  N ≥ 1 fires (up = the ballast): a pattern, a table row, a threshold;
//   step      the clamped pair (N, N − 1): λG·[T ≥ θ]·up for N = T − θ + 1, whatever T's excess;
//   linear    always on (N = 1): copies or cancels up's value;
//   prior     Prior::Replace cancels what a field held before the gadget writes it (§3.2).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "circuit/logic.h"
#include "circuit/units.h"
#include "common/diag.h"

namespace qgpu::circuit::unit_builder {

// N = Σ coef·x̂[dim] + constant: a decision in units of λG.
struct Lin {
  std::vector<std::pair<int, double>> terms;
  double constant = 0;
  Lin shifted(double by) const {
    Lin l = *this;
    l.constant += by;
    return l;
  }
  Lin& add(int dim, double coef) {
    terms.push_back({dim, coef});
    return *this;
  }
};

// A target of a unit's output: d units of u on dim when the unit is on at N = 1 (or, for a
// linear unit or a select, per unit of x̂ of its up dim).
struct Down {
  int dim;
  double d;
};

// A sign bit as a value: +1 when set, −1 when clear.
inline double sgn(bool bit) {
  return bit ? 1.0 : -1.0;
}

inline Diag usage(const std::string& gadget, const std::string& message) {
  return makeDiag(ErrorKind::Usage, gadget + " gadget: " + message);
}

// One layer's builder: the context's effective gain (the low-gain twin's 4/λ when asked), the
// unit writer and the running report (units placed, the on/off margins λG and −λG).
class Builder {
 public:
  Builder(UnitWriter& units, const MlpContext& ctx, std::string gadget);

  // The context's own refusals: no ballast, non-positive scales, a gain that is not a power of
  // two (R4), λG below 89 (R2) unless this is the low-gain twin.
  Status check() const;

  // Gate terms of λG·N (the constant split over the ballast dims, R4).
  Expected<std::vector<Term>> gate(const Lin& n) const;
  // The down weight that adds d·u when the unit's silu·up product is λG·λ ...
  float weight(double d) const;
  // ... and the same for a unit that fires on tokens whose pre-norm scale is `lambda`.
  float weightAt(double d, double lambda) const;
  std::vector<Term> downs(const std::vector<Down>& ds, double sign = 1) const;
  Term ballastUp() const { return {ctx_.ballast.at(0), 1.0f}; }

  // One unit with gate λG·N; `unitRaw` takes ready-made down weights.
  Status unit(const Lin& n, const std::vector<Term>& up, const std::vector<Down>& ds);
  Status unitRaw(const Lin& n, const std::vector<Term>& up, const std::vector<Term>& down);
  Status detector(const Lin& n, const std::vector<Down>& ds) { return unit(n, {ballastUp()}, ds); }
  Status detectorRaw(const Lin& n, const std::vector<Term>& down) {
    return unitRaw(n, {ballastUp()}, down);
  }
  // The pair (N, N − 1); `unclamped` places only N (the failing twin of the adder's tests).
  Status step(const Lin& n, const std::vector<Term>& up, const std::vector<Down>& ds,
              bool unclamped = false);
  Status linear(const std::vector<Term>& up, const std::vector<Down>& ds);
  Status linearRaw(const std::vector<Term>& up, const std::vector<Term>& down);
  // A constant d·u on each dim (nothing for an empty list).
  Status constant(const std::vector<Down>& ds);
  // Cancels every dim of f exactly (one linear unit per dim, λ a power of two).
  Status cancel(const Field& f);
  Status prior(Prior p, const Field& f) { return p == Prior::Replace ? cancel(f) : Status(Ok{}); }

  GadgetReport report() const { return report_; }
  double lambdaGain() const { return lg_; }
  const MlpContext& ctx() const { return ctx_; }

 private:
  UnitWriter& units_;
  const MlpContext& ctx_;
  std::string gadget_;
  double gain_ = 0;
  double lg_ = 0;
  GadgetReport report_;
};

}  // namespace qgpu::circuit::unit_builder
