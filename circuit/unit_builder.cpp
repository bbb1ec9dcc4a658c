// qgpu/circuit/unit_builder.cpp — see unit_builder.h.
#include "circuit/unit_builder.h"

#include <cmath>

namespace qgpu::circuit::unit_builder {

Builder::Builder(UnitWriter& units, const MlpContext& ctx, std::string gadget)
    : units_(units), ctx_(ctx), gadget_(std::move(gadget)) {
  gain_ = ctx.lowGainTwin ? 4.0 / ctx.lambda : ctx.gain;
  lg_ = ctx.lambda * gain_;
  report_.onMin = lg_;
  report_.offMax = -lg_;
}

Status Builder::check() const {
  if (ctx_.ballast.dims < 1) return usage(gadget_, "the ballast needs at least 1 dim");
  if (!(ctx_.lambda > 0) || !(ctx_.unit > 0) || !(ctx_.gain > 0))
    return usage(gadget_, "lambda, unit and gain must be positive");
  int e = 0;
  if (std::frexp(ctx_.gain, &e) != 0.5f) return usage(gadget_, "gain must be a power of two");
  if (!ctx_.lowGainTwin && lg_ < 89.0)
    return makeDiag(ErrorKind::OverLimit, gadget_ + " gadget: λ·G = " + std::to_string(lg_) +
                                              " misses the exactness threshold 89 (rule R2)");
  return Ok{};
}

Expected<std::vector<Term>> Builder::gate(const Lin& n) const {
  std::vector<Term> out;
  for (const auto& [dim, coef] : n.terms) out.push_back({dim, static_cast<float>(gain_ * coef)});
  QGPU_TRY(constant, constantTerms(gain_ * n.constant, ctx_.ballast));
  out.insert(out.end(), constant.begin(), constant.end());
  return out;
}

float Builder::weight(double d) const {
  return weightAt(d, ctx_.lambda);
}

float Builder::weightAt(double d, double lambda) const {
  return static_cast<float>(d * ctx_.unit / (lambda * lambda * gain_));
}

std::vector<Term> Builder::downs(const std::vector<Down>& ds, double sign) const {
  std::vector<Term> out;
  for (const Down& d : ds) out.push_back({d.dim, weight(sign * d.d)});
  return out;
}

Status Builder::unit(const Lin& n, const std::vector<Term>& up, const std::vector<Down>& ds) {
  return unitRaw(n, up, downs(ds));
}

Status Builder::unitRaw(const Lin& n, const std::vector<Term>& up, const std::vector<Term>& down) {
  QGPU_TRY(g, gate(n));
  QGPU_TRY(index, units_.add({g, up, down}));
  (void)index;
  ++report_.units;
  return Ok{};
}

Status Builder::step(const Lin& n, const std::vector<Term>& up, const std::vector<Down>& ds,
                     bool unclamped) {
  QGPU_CHECK(unit(n, up, ds));
  if (unclamped) return Ok{};
  std::vector<Down> neg;
  for (const Down& d : ds) neg.push_back({d.dim, -d.d});
  return unit(n.shifted(-1), up, neg);
}

Status Builder::linear(const std::vector<Term>& up, const std::vector<Down>& ds) {
  return linearRaw(up, downs(ds));
}

Status Builder::linearRaw(const std::vector<Term>& up, const std::vector<Term>& down) {
  Lin on;
  on.constant = 1;
  return unitRaw(on, up, down);
}

Status Builder::constant(const std::vector<Down>& ds) {
  if (ds.empty()) return Ok{};
  return linear({ballastUp()}, ds);
}

Status Builder::cancel(const Field& f) {
  for (int i = 0; i < f.dims; ++i) QGPU_CHECK(linear({{f.at(i), 1.0f}}, {{f.at(i), -1}}));
  return Ok{};
}

}  // namespace qgpu::circuit::unit_builder
