// qgpu/circuit/margins.cpp — decision margins from real activations (margins.h).
#include "circuit/margins.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <map>

#include "model/config.h"
#include "model/safetensors.h"

namespace qgpu::circuit {
namespace {

// The rows of `tensor` (a layer's [units, in] weight) that hold a nonzero weight.
Expected<std::vector<int64_t>> liveRows(const CircuitWeights& w, const std::string& tensor,
                                        int64_t rows, int64_t cols) {
  std::vector<int64_t> live;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      QGPU_TRY(v, w.get(tensor, r, c));
      if (v != 0) {
        live.push_back(r);
        break;
      }
    }
  return live;
}

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

bool LayerMargins::ok() const {
  for (const DecisionMargin& d : decisions)
    if (d.inBand != 0) return false;
  return signs.offNominal == 0;
}

bool MarginReport::ok() const {
  for (const LayerMargins& l : layers)
    if (!l.ok()) return false;
  return true;
}

void MarginReport::add(const MarginReport& o) {
  if (layers.empty()) {
    *this = o;
    return;
  }
  positions += o.positions;
  // 0 means "none seen" for the extremes (margins.h), so a 0 never wins a min or a max.
  auto least = [](double& a, double b) { if (b != 0 && (a == 0 || b < a)) a = b; };
  auto most = [](double& a, double b) { if (b != 0 && (a == 0 || b > a)) a = b; };
  for (size_t l = 0; l < layers.size() && l < o.layers.size(); ++l) {
    LayerMargins& a = layers[l];
    const LayerMargins& b = o.layers[l];
    for (size_t k = 0; k < a.decisions.size(); ++k) {
      DecisionMargin& x = a.decisions[k];
      const DecisionMargin& y = b.decisions[k];
      x.units = std::max(x.units, y.units);
      x.values += y.values;
      x.zeros += y.zeros;
      x.off += y.off;
      x.on += y.on;
      if (x.firstInBand.empty()) x.firstInBand = y.firstInBand;
      x.inBand += y.inBand;
      least(x.minAbs, y.minAbs);
      most(x.maxOff, y.maxOff);
      least(x.minOn, y.minOn);
    }
    SignFieldMargin& s = a.signs;
    const SignFieldMargin& t = b.signs;
    if (t.values > 0) {
      s.minRatio = s.values == 0 ? t.minRatio : std::min(s.minRatio, t.minRatio);
      s.maxRatio = s.values == 0 ? t.maxRatio : std::max(s.maxRatio, t.maxRatio);
    }
    s.values += t.values;
    if (s.firstOff.empty()) s.firstOff = t.firstOff;
    s.offNominal += t.offNominal;
  }
}

double MarginReport::smallestAbs() const {
  double m = 0;
  for (const LayerMargins& l : layers)
    for (const DecisionMargin& d : l.decisions)
      if (d.minAbs > 0 && (m == 0 || d.minAbs < m)) m = d.minAbs;
  return m;
}

std::string MarginReport::table() const {
  std::string t = "layer";
  for (const DecisionKindInfo& k : kDecisionKindTable)
    t += std::string(" | ") + k.label + ": units, in band, min |x|";
  t += " | sign dims: |x|/u range, off\n";
  for (const LayerMargins& l : layers) {
    t += std::to_string(l.layer);
    for (const DecisionMargin& d : l.decisions)
      t += " | " + std::to_string(d.units) + ", " + std::to_string(d.inBand) + ", " + fmt(d.minAbs);
    t += " | " + std::to_string(l.signs.dims) + ": [" + fmt(l.signs.minRatio) + ", " +
         fmt(l.signs.maxRatio) + "], " + std::to_string(l.signs.offNominal) + "\n";
  }
  return t;
}

Expected<MarginMeter> MarginMeter::create(const CircuitWeights& weights,
                                          std::span<const Field> signFields, float unit) {
  auto rowsOf = [&weights](int layer, const std::string& suffix, int64_t rows, int64_t cols) {
    return liveRows(weights, weights.layerTensor(layer, suffix), rows, cols);
  };
  return create(weights.config(), rowsOf, signFields, unit);
}

Expected<MarginMeter> MarginMeter::fromCheckpoint(const std::string& dir, std::span<const Field> signFields,
                                                  float unit) {
  QGPU_TRY(config, model::readConfig(dir));
  QGPU_TRY(ckpt, model::Checkpoint::open(dir));
  auto rowsOf = [&](int layer, const std::string& suffix, int64_t rows, int64_t cols)
      -> Expected<std::vector<int64_t>> {
    const std::string name = config.prefix() + "layers." + std::to_string(layer) + "." + suffix;
    QGPU_TRY(t, ckpt.get(name));
    const size_t width = model::stDtypeSize(t.info->dtype);
    if (t.info->shape != std::vector<int64_t>{rows, cols} || (width != 2 && width != 4))
      return makeDiag(ErrorKind::Checkpoint, "margins: " + name + " is not a [" + std::to_string(rows) + ", " +
                                                 std::to_string(cols) + "] float weight",
                      SourceLoc{dir, 0, 0});
    const std::span<const uint8_t> bytes = t.bytes();
    std::vector<int64_t> live;
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* row = bytes.data() + static_cast<size_t>(r * cols) * width;
      for (int64_t c = 0; c < cols; ++c) {
        uint32_t bits = 0;
        std::memcpy(&bits, row + static_cast<size_t>(c) * width, width);
        const uint32_t magnitude = width == 4 ? bits & 0x7fffffffu : bits & 0x7fffu;
        if (magnitude != 0) {
          live.push_back(r);
          break;
        }
      }
    }
    return live;
  };
  return create(config, rowsOf, signFields, unit);
}

Expected<MarginMeter> MarginMeter::create(const model::Qwen35Config& c, const LiveRows& rowsOf,
                                          std::span<const Field> signFields, float unit) {
  if (!(unit > 0)) return makeDiag(ErrorKind::Usage, "margins: the unit must be positive");
  for (const Field& f : signFields)
    if (f.offset < 0 || f.dims < 0 || f.offset + f.dims > c.hiddenSize)
      return makeDiag(ErrorKind::Usage, "margins: sign field " + f.name + " [" + std::to_string(f.offset) +
                                            ", +" + std::to_string(f.dims) + ") is outside the hidden size " +
                                            std::to_string(c.hiddenSize));
  MarginMeter m;
  m.config_ = c;
  m.fields_.assign(signFields.begin(), signFields.end());
  m.unit_ = unit;
  const int layers = static_cast<int>(c.numLayers());
  m.report_.layers.resize(static_cast<size_t>(layers));
  int64_t dims = 0;
  for (const Field& f : signFields) dims += f.dims;
  m.live_.resize(static_cast<size_t>(layers));
  for (int l = 0; l < layers; ++l) {
    LayerMargins& lm = m.report_.layers[static_cast<size_t>(l)];
    lm.layer = l;
    lm.signs.dims = dims;
    // A full_attention layer has only the MLP's decisions (its attention is not a circuit's).
    const bool linear = c.layerTypes[static_cast<size_t>(l)] == model::LayerType::Linear;
    const int64_t rows[kDecisionKinds] = {c.intermediateSize, 2 * c.linearKeyDim() + c.linearValueDim(),
                                          c.linearValueDim(), c.linearNumValueHeads};
    for (int k = 0; k < (linear ? kDecisionKinds : 1); ++k) {
      QGPU_TRY(live, rowsOf(l, kDecisionKindTable[k].weight, rows[k], c.hiddenSize));
      lm.decisions[static_cast<size_t>(k)].units = static_cast<int64_t>(live.size());
      m.live_[static_cast<size_t>(l)][static_cast<size_t>(k)] = std::move(live);
    }
  }
  return m;
}

Status MarginMeter::add(std::span<const model::Activation> taps) {
  const model::Qwen35Config& c = config_;
  const int layers = static_cast<int>(c.numLayers());
  for (const model::Activation& a : taps) {
    if (a.layer < 0 || a.layer >= layers)
      return makeDiag(ErrorKind::Usage, "margins: tap " + a.name + " of layer " + std::to_string(a.layer) +
                                            ", the config has " + std::to_string(layers));
    if (a.rows < 0 || a.cols < 0 || a.data.size() != static_cast<size_t>(a.rows * a.cols))
      return makeDiag(ErrorKind::Usage, "margins: tap " + a.name + " of layer " + std::to_string(a.layer) +
                                            " holds " + std::to_string(a.data.size()) + " values, not rows × cols");
    LayerMargins& lm = report_.layers[static_cast<size_t>(a.layer)];
    if (a.name == "residual_in") {
      if (a.cols != c.hiddenSize)
        return makeDiag(ErrorKind::Usage, "margins: residual_in of layer " + std::to_string(a.layer) +
                                              " has " + std::to_string(a.cols) + " dims, the config " +
                                              std::to_string(c.hiddenSize));
      if (a.layer == 0) report_.positions += a.rows;
      SignFieldMargin& s = lm.signs;
      for (int64_t p = 0; p < a.rows; ++p)
        for (const Field& f : fields_)
          for (int i = 0; i < f.dims; ++i) {
            const double r = std::fabs(a.at(p, f.at(i))) / unit_;
            if (s.values++ == 0) s.minRatio = s.maxRatio = r;
            s.minRatio = std::min(s.minRatio, r);
            s.maxRatio = std::max(s.maxRatio, r);
            if (r != 1.0 && s.offNominal++ == 0)
              s.firstOff = "position " + std::to_string(p) + " " + f.name + "[" + std::to_string(i) +
                           "]: " + fmt(a.at(p, f.at(i)));
          }
      continue;
    }
    int k = 0;
    while (k < kDecisionKinds && a.name != kDecisionKindTable[k].tap) ++k;
    if (k == kDecisionKinds) continue;  // a tap margins does not read
    const std::vector<int64_t>& units = live_[static_cast<size_t>(a.layer)][static_cast<size_t>(k)];
    DecisionMargin& d = lm.decisions[static_cast<size_t>(k)];
    for (int64_t u : units)
      if (u >= a.cols)
        return makeDiag(ErrorKind::Usage, "margins: tap " + a.name + " of layer " + std::to_string(a.layer) +
                                              " has " + std::to_string(a.cols) + " columns, the weights " +
                                              std::to_string(units.back() + 1) + " or more");
    for (int64_t p = 0; p < a.rows; ++p)
      for (int64_t u : units) {
        const double x = a.at(p, u);
        ++d.values;
        if (x == 0) {
          ++d.zeros;
          continue;
        }
        const double m = std::fabs(x);
        d.minAbs = d.minAbs == 0 ? m : std::min(d.minAbs, m);
        if (x <= kOffAtMost) {
          ++d.off;
          d.maxOff = d.maxOff == 0 ? x : std::max(d.maxOff, x);
        } else if (x >= kOnAtLeast) {
          ++d.on;
          d.minOn = d.minOn == 0 ? x : std::min(d.minOn, x);
        } else if (d.inBand++ == 0) {
          d.firstInBand = "position " + std::to_string(p) + " unit " + std::to_string(u) + ": " + fmt(x);
        }
      }
  }
  return Ok{};
}

Expected<MarginReport> measureMargins(const CircuitWeights& weights,
                                      std::span<const model::Activation> taps,
                                      std::span<const Field> signFields, float unit) {
  QGPU_TRY(meter, MarginMeter::create(weights, signFields, unit));
  QGPU_CHECK(meter.add(taps));
  return meter.report();
}

}  // namespace qgpu::circuit
