// qgpu/circuit/units.cpp — see units.h.
#include "circuit/units.h"

#include <cmath>
#include <string>

#include "model/tiny.h"

namespace qgpu::circuit {

float bf16Round(double v) {
  return model::bf16ToFloat(model::floatToBf16(static_cast<float>(v)));
}

bool bf16Exact(float v) {
  return bf16Round(v) == v;
}

bool powerOfTwo(double v) {
  int e = 0;
  return v > 0 && std::frexp(v, &e) == 0.5;
}

UnitWriter::UnitWriter(CircuitWeights& weights, int layer, int firstUnit)
    : w_(weights), layer_(layer), first_(firstUnit), next_(firstUnit) {}

Expected<Unit> UnitWriter::guarded(const Unit& unit) const {
  const UnitGuard& g = *guard_;
  const auto onBallast = [&](int dim) {
    return dim >= g.ballast.offset && dim < g.ballast.offset + g.ballast.dims;
  };
  // The unit's gate where the literal does not hold, at its largest (in weights: × λ for the gate).
  double constant = 0, offMax = 0;
  Unit out = unit;
  out.gate.clear();
  for (const Term& t : unit.gate) {
    if (onBallast(t.dim)) {
      constant += t.weight;
      continue;
    }
    offMax += t.dim == g.dim ? -g.sign * static_cast<double>(t.weight) : std::abs(t.weight);
    out.gate.push_back(t);
  }
  offMax += constant;
  constexpr double kOff = 128;  // the guarded-off gate's bound: past rule R2's −88.8
  if (g.lambda * offMax <= -kOff) return unit;
  double a = 1;
  while (g.lambda * (offMax - 2 * a) > -kOff) a *= 2;
  out.gate.push_back({g.dim, static_cast<float>(g.sign * a)});
  QGPU_TRY(pieces, constantTerms(constant - a, g.ballast));
  out.gate.insert(out.gate.end(), pieces.begin(), pieces.end());
  return out;
}

Expected<int> UnitWriter::add(const Unit& plain) {
  Unit guardedUnit;
  if (guard_) {
    QGPU_TRY(u, guarded(plain));
    guardedUnit = std::move(u);
  }
  const Unit& unit = guard_ ? guardedUnit : plain;
  const model::Qwen35Config& c = w_.config();
  const std::string where = "layer " + std::to_string(layer_) + " MLP unit " + std::to_string(next_);
  if (next_ >= c.intermediateSize)
    return makeDiag(ErrorKind::Usage, where + ": the layer has only " +
                                          std::to_string(c.intermediateSize) + " units");
  for (const std::vector<Term>* terms : {&unit.gate, &unit.up, &unit.down})
    for (const Term& t : *terms) {
      if (t.dim < 0 || t.dim >= c.hiddenSize)
        return makeDiag(ErrorKind::Usage, where + ": dim " + std::to_string(t.dim) +
                                              " is outside the hidden size " +
                                              std::to_string(c.hiddenSize));
      if (!bf16Exact(t.weight))
        return makeDiag(ErrorKind::Usage, where + ": weight " + std::to_string(t.weight) +
                                              " on dim " + std::to_string(t.dim) +
                                              " is not bf16-representable (rule R4)");
    }
  const std::string gate = w_.layerTensor(layer_, "mlp.gate_proj.weight");
  const std::string up = w_.layerTensor(layer_, "mlp.up_proj.weight");
  const std::string down = w_.layerTensor(layer_, "mlp.down_proj.weight");
  // Terms on one dim add up (a gadget may name a dim twice); the sum must stay bf16-exact too.
  auto accumulate = [&](const std::string& name, int64_t row, int64_t col, float v) -> Status {
    QGPU_TRY(old, w_.get(name, row, col));
    if (!bf16Exact(old + v))
      return makeDiag(ErrorKind::Usage, where + ": weights on one dim sum to " +
                                            std::to_string(old + v) +
                                            ", not bf16-representable (rule R4)");
    return w_.set(name, row, col, old + v);
  };
  for (const Term& t : unit.gate) QGPU_CHECK(accumulate(gate, next_, t.dim, t.weight));
  for (const Term& t : unit.up) QGPU_CHECK(accumulate(up, next_, t.dim, t.weight));
  for (const Term& t : unit.down) QGPU_CHECK(accumulate(down, t.dim, next_, t.weight));
  if (w_.loggingUnits()) {
    CircuitWeights::UnitRecord r{
        layer_, guard_ ? guard_->dim : -1, {}, next_, guard_ ? guard_->kinds : 0u};
    for (const Term& t : unit.down) r.writes.push_back(t.dim);
    w_.addUnitRecord(std::move(r));
  }
  return next_++;
}

Expected<std::vector<Term>> constantTerms(double c, const Field& ballast) {
  std::vector<Term> out;
  if (c == 0) return out;
  const double top = std::abs(c);
  double rest = c;
  for (int i = 0; i < ballast.dims && rest != 0; ++i) {
    int e = 0;
    std::frexp(rest, &e);  // |rest| in [2^(e-1), 2^e)
    const double step = std::ldexp(1.0, e - 8);  // 8 significant bits
    const double piece = std::trunc(rest / step) * step;
    out.push_back({ballast.at(i), static_cast<float>(piece)});
    rest -= piece;
  }
  if (rest != 0)
    return makeDiag(ErrorKind::Usage, "constant " + std::to_string(c) + " needs more than " +
                                          std::to_string(ballast.dims) +
                                          " bf16 pieces (ballast dims) to be exact (rule R4)");
  // Every piece is a multiple of the last piece's step; the fp32 sum is exact below 2^24 steps.
  int e = 0;
  std::frexp(out.back().weight, &e);
  if (top >= std::ldexp(1.0, e - 8 + 24))
    return makeDiag(ErrorKind::Usage, "constant " + std::to_string(c) +
                                          " spans more than 24 bits: its sum is not exact in fp32");
  return out;
}

}  // namespace qgpu::circuit
