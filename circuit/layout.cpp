// qgpu/circuit/layout.cpp — see layout.h.
#include "circuit/layout.h"

#include <algorithm>

namespace qgpu::circuit {
namespace {

std::string rangeName(const LiveRange& r) {
  return "[" + pointName(r.write) + ", " + pointName(r.lastRead) + ")";
}

}  // namespace

std::string pointName(Point p) {
  if (p.key() == kEmbedding.key()) return "embedding";
  return "L" + std::to_string(p.layer) + (p.block == Block::Mlp ? ".mlp" : ".attn");
}

bool conflicts(const LiveRange& a, const LiveRange& b) {
  return a.write.key() < b.lastRead.key() && b.write.key() < a.lastRead.key();
}

bool livesAt(const LiveRange& r, int key) {
  return r.write.key() <= key && key < r.lastRead.key();
}

bool exclusiveKinds(uint32_t a, uint32_t b) {
  return a != 0 && b != 0 && (a & b) == 0;
}

int LayoutPlan::request(Request r) {
  if (!badRequest_) {
    if (r.dims <= 0)
      badRequest_ = makeDiag(ErrorKind::Usage, "layout: field '" + r.name + "' asks for " +
                                                   std::to_string(r.dims) + " dims");
    else if (r.range.lastRead.key() <= r.range.write.key())
      badRequest_ = makeDiag(ErrorKind::Usage, "layout: field '" + r.name + "' is read last at " +
                                                   pointName(r.range.lastRead) +
                                                   ", not after its writer " +
                                                   pointName(r.range.write));
    else
      for (const Request& o : requests_)
        if (o.name == r.name) {
          badRequest_ = makeDiag(ErrorKind::Usage, "layout: two fields named '" + r.name + "'");
          break;
        }
  }
  requests_.push_back(std::move(r));
  return static_cast<int>(requests_.size()) - 1;
}

int LayoutPlan::add(const std::string& name, int dims, LiveRange range, uint32_t kinds) {
  return request({name, dims, range, std::nullopt, kinds});
}

int LayoutPlan::pin(const std::string& name, int dims, LiveRange range, int offset) {
  return request({name, dims, range, offset});
}

namespace {

// How fields written at the same point are ordered for first fit (true: x before y).
using TieBreak = bool (*)(const LayoutPlan::Request& x, const LayoutPlan::Request& y);
const TieBreak kTieBreaks[] = {
    // larger first (then request order)
    [](const LayoutPlan::Request& x, const LayoutPlan::Request& y) { return x.dims > y.dims; },
    // longer-lived first, then larger
    [](const LayoutPlan::Request& x, const LayoutPlan::Request& y) {
      if (x.range.lastRead.key() != y.range.lastRead.key())
        return x.range.lastRead.key() > y.range.lastRead.key();
      return x.dims > y.dims;
    },
    // shorter-lived first, then larger
    [](const LayoutPlan::Request& x, const LayoutPlan::Request& y) {
      if (x.range.lastRead.key() != y.range.lastRead.key())
        return x.range.lastRead.key() < y.range.lastRead.key();
      return x.dims > y.dims;
    },
};

// The orders first fit is tried in: by write with each tie-break; the fields of kinds after the
// others (they may stack on each other in what is left); the wide fields (a multiplier's or an
// adder's bus) before the others, each group by write — a wide field that lives long needs a
// run of dims that the narrow ones, placed first, leave only in pieces.
constexpr int kWide = 256;
struct Order {
  TieBreak tie;
  bool kindsLast = false;
  bool wideFirst = false;
};
const std::vector<Order> kOrders = [] {
  std::vector<Order> orders;
  for (bool wideFirst : {false, true})
    for (bool kindsLast : {false, true})
      for (TieBreak tie : kTieBreaks) orders.push_back({tie, kindsLast, wideFirst});
  return orders;
}();

}  // namespace

Status LayoutPlan::solve(int hidden) {
  placed_.clear();
  if (badRequest_) return *badRequest_;
  // A placement in progress: occupants[d], the requests placed on dim d so far; placed, by request.
  struct Trial {
    std::vector<std::vector<int>> occupants;
    std::vector<Placement> placed;
    int span = 0;
  };
  auto firstConflict = [&](const Trial& t, const Request& r, int offset) -> std::pair<int, int> {
    for (int d = offset; d < offset + r.dims; ++d)
      for (int o : t.occupants[static_cast<size_t>(d)]) {
        const Request& other = requests_[static_cast<size_t>(o)];
        if (conflicts(other.range, r.range) && !exclusiveKinds(other.kinds, r.kinds)) return {d, o};
      }
    return {-1, -1};
  };
  auto place = [&](Trial& t, int i, int offset) {
    const Request& r = requests_[static_cast<size_t>(i)];
    bool reused = false;
    for (int d = offset; d < offset + r.dims; ++d) {
      reused = reused || !t.occupants[static_cast<size_t>(d)].empty();
      t.occupants[static_cast<size_t>(d)].push_back(i);
    }
    t.placed[static_cast<size_t>(i)] =
        Placement{Field{r.name, offset, r.dims, r.kinds}, r.range, reused};
    t.span = std::max(t.span, offset + r.dims);
  };

  // A field of some kinds goes where it adds the fewest live dims: the fit (from the first, at
  // `first`) with the most dims that a live field of exclusive kinds already holds, the lowest of
  // equal ones — so that the kinds' fields stack instead of taking dims other fields need.
  auto sharedFit = [&](const Trial& t, const Request& r, int first) {
    auto shared = [&](int d) {
      for (int o : t.occupants[static_cast<size_t>(d)]) {
        const Request& other = requests_[static_cast<size_t>(o)];
        if (conflicts(other.range, r.range) && exclusiveKinds(other.kinds, r.kinds)) return true;
      }
      return false;
    };
    int best = first, bestShared = -1;
    for (int offset = first; offset + r.dims <= hidden && bestShared < r.dims; ++offset) {
      if (firstConflict(t, r, offset).first >= 0) continue;
      int n = 0;
      for (int d = offset; d < offset + r.dims; ++d) n += shared(d);
      if (n > bestShared) {
        best = offset;
        bestShared = n;
      }
    }
    return best;
  };

  Trial pinned{std::vector<std::vector<int>>(static_cast<size_t>(std::max(hidden, 0))),
               std::vector<Placement>(requests_.size()), 0};
  for (size_t i = 0; i < requests_.size(); ++i) {
    const Request& r = requests_[i];
    if (!r.offset) continue;
    if (*r.offset < 0 || *r.offset + r.dims > hidden)
      return makeDiag(ErrorKind::Usage, "layout: pinned field '" + r.name + "' at dims [" +
                                            std::to_string(*r.offset) + ", " +
                                            std::to_string(*r.offset + r.dims) +
                                            ") is outside the hidden size " +
                                            std::to_string(hidden));
    const auto [d, o] = firstConflict(pinned, r, *r.offset);
    if (d >= 0) {
      const Request& other = requests_[static_cast<size_t>(o)];
      return makeDiag(ErrorKind::Usage,
                      "layout: field '" + r.name + "' live " + rangeName(r.range) +
                          " is pinned onto dim " + std::to_string(d) + " of field '" + other.name +
                          "', live " + rangeName(other.range) + ": the live ranges overlap");
    }
    place(pinned, static_cast<int>(i), *r.offset);
  }

  // The rest first fit, once per order (kOrders): which field takes the low dims decides the
  // fragmentation. The smallest span wins, the first of equal ones; when none fits, the first
  // order's refusal is the answer.
  auto firstFit = [&](const Order& o) -> Expected<Trial> {
    std::vector<int> order;
    for (size_t i = 0; i < requests_.size(); ++i)
      if (!requests_[i].offset) order.push_back(static_cast<int>(i));
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const Request& x = requests_[static_cast<size_t>(a)];
      const Request& y = requests_[static_cast<size_t>(b)];
      if (o.wideFirst && (x.dims >= kWide) != (y.dims >= kWide)) return x.dims >= kWide;
      if (o.kindsLast && (x.kinds != 0) != (y.kinds != 0)) return y.kinds != 0;
      if (x.range.write.key() != y.range.write.key())
        return x.range.write.key() < y.range.write.key();
      return o.tie(x, y);
    });
    Trial t = pinned;
    for (int i : order) {
      const Request& r = requests_[static_cast<size_t>(i)];
      int offset = 0;
      while (offset + r.dims <= hidden) {
        const auto [d, o] = firstConflict(t, r, offset);
        if (d < 0) break;
        offset = d + 1;  // no fit can start at or before the conflicting dim
      }
      if (r.kinds != 0 && offset + r.dims <= hidden) offset = sharedFit(t, r, offset);
      if (offset + r.dims > hidden)
        return makeDiag(ErrorKind::OverLimit, "layout: field '" + r.name + "' (" +
                                                  std::to_string(r.dims) + " dims, live " +
                                                  rangeName(r.range) + ") does not fit in " +
                                                  std::to_string(hidden) + " residual dims");
      place(t, i, offset);
    }
    return t;
  };
  std::optional<Trial> best;
  std::optional<Diag> firstError;
  for (const Order& o : kOrders) {
    Expected<Trial> t = firstFit(o);
    if (!t.ok()) {
      if (!firstError) firstError = t.error();
      continue;
    }
    if (!best || t->span < best->span) best = std::move(t).value();
  }
  if (!best) return *firstError;
  std::vector<Placement> placed = std::move(best->placed);
  placed_ = std::move(placed);
  return Ok{};
}

Expected<Field> LayoutPlan::field(const std::string& name) const {
  for (const Placement& p : placed_)
    if (p.field.name == name) return p.field;
  return makeDiag(ErrorKind::Usage, "layout: no placed field '" + name + "'");
}

LayoutReport LayoutPlan::report() const {
  LayoutReport rep;
  if (placed_.empty()) return rep;
  int lo = placed_.front().range.write.key(), hi = lo;
  for (const Placement& p : placed_) {
    lo = std::min(lo, p.range.write.key());
    hi = std::max(hi, p.range.lastRead.key());
    rep.span = std::max(rep.span, p.field.offset + p.field.dims);
    rep.oneFieldPerValue += p.field.dims;
  }
  // Live at the output of point k: the dims a field with write ≤ k < lastRead is on (fields of
  // exclusive kinds on one dim count it once).
  auto liveAt = [&](int k) {
    std::vector<bool> live(static_cast<size_t>(rep.span), false);
    int n = 0;
    for (const Placement& p : placed_)
      if (livesAt(p.range, k))
        for (int d = p.field.offset; d < p.field.offset + p.field.dims; ++d)
          if (!live[static_cast<size_t>(d)]) {
            live[static_cast<size_t>(d)] = true;
            ++n;
          }
    return n;
  };
  for (int k = lo; k < hi; ++k) {
    const int n = liveAt(k);
    if (n > rep.peak) {
      rep.peak = n;
      rep.peakAt = Point{k < 0 ? -1 : k / 2, (k & 1) ? Block::Mlp : Block::Attention};
    }
  }
  // Key k is layer floor(k / 2): −1 the embedding (its MLP point), then 0, 1, ...
  auto layerOf = [](int k) { return k < 0 ? -1 : k / 2; };
  rep.firstLayer = layerOf(lo);
  for (int layer = rep.firstLayer; layer <= layerOf(hi); ++layer) {
    rep.liveAfterAttention.push_back(liveAt(attentionAt(layer).key()));
    rep.liveAfterMlp.push_back(liveAt(mlpAt(layer).key()));
  }
  rep.fragmentation = rep.span - rep.peak;
  return rep;
}

Point pointOfKey(int key) {
  if (key < 0) return kEmbedding;
  return Point{key / 2, key % 2 == 1 ? Block::Mlp : Block::Attention};
}

namespace {

// The widest layer's units (0 for none): where a pad may go without widening the MLP.
int widestLayer(const std::vector<int>& units) {
  return units.empty() ? 0 : *std::max_element(units.begin(), units.end());
}

// The live range of one dim (keys); {lm_head, lm_head + 1} for an untouched dim.
struct DimRange {
  int start = 0, end = 0;
  bool touched = false;
  bool fromEmbedding = false;
  bool needsPad = false;  // its first writer needs the +u pad, given back at start (PadRestore)
};

DimRange dimRange(const ResidualTouches& t, int d) {
  DimRange r;
  int firstWrite = -2, firstRead = -2, lastWrite = -2, lastRead = -2;
  const bool embedded = t.writes(d, -1);
  for (int k = 0; k <= t.lastKey(); ++k) {
    if (t.writes(d, k)) {
      if (firstWrite == -2) firstWrite = k;
      lastWrite = k;
    }
    if (t.reads(d, k)) {
      if (firstRead == -2) firstRead = k;
      lastRead = k;
    }
  }
  r.touched = embedded || firstWrite != -2 || firstRead != -2;
  if (!r.touched) {
    r.start = t.lastKey();
    r.end = t.lastKey() + 1;
    return r;
  }
  const bool replaces = firstWrite >= 0 && firstWrite % 2 == 1 && t.reads(d, firstWrite);
  const bool readEarly = firstRead != -2 && (firstWrite == -2 || firstRead < firstWrite);
  // A first writer that needs the pad — an attention head, or an MLP that adds — can have it
  // back from an MLP: the one before the head's layer, or the adding MLP itself (its pad unit
  // reads the input the adder reads). Layer 0's attention has no MLP before it.
  r.needsPad = !embedded && !readEarly && !replaces && firstWrite >= 1;
  r.fromEmbedding = embedded || readEarly || (!replaces && !r.needsPad);
  if (r.fromEmbedding)
    r.start = -1;
  else if (r.needsPad)
    r.start = firstWrite % 2 == 0 ? firstWrite - 1 : firstWrite;
  else
    r.start = firstWrite;
  r.end = std::max(lastRead, lastWrite + 1);
  r.end = std::max(r.end, r.start + 1);
  if (t.offNorm(d)) r.end = t.lastKey() + 1;
  return r;
}

// How many layers before its writer a field that needs pads may start, so that they go in an MLP
// with room (planByLiveness).
constexpr int kPadLookback = 3;

// The pads a plan needs: per take that does not start at the embedding, its dims whose first
// writer needs the pad (`needs`, by the take's dims in the first build) and that the plan put
// where another take lived before it, as runs of consecutive dims. A run's pad may go in any MLP
// from the last read of the dims' earlier takes up to the take's start (the dims are dead in
// between; a Replace writer's own dims get none, so no MLP cancels a dim twice): the latest with
// room for it under the widest layer's `units`, else the one with the fewest (the pads counted as
// they are placed). A dim no earlier take held still has the embedding's pad.
std::vector<PadRestore> padRestores(const std::vector<Field>& taken,
                                    const std::vector<DimRange>& needs, const LivenessPlan& plan,
                                    std::vector<int> units) {
  const int cap = widestLayer(units);
  std::vector<std::vector<size_t>> on(static_cast<size_t>(plan.hidden));
  for (size_t i = 0; i < plan.fields.size(); ++i)
    for (int j = 0; j < plan.fields[i].dims; ++j)
      on[static_cast<size_t>(plan.fields[i].at(j))].push_back(i);
  std::vector<PadRestore> pads;
  for (size_t i = 0; i < plan.fields.size(); ++i) {
    const int start = plan.ranges[i].write.key();
    if (plan.fromEmbedding[i] || start < 0) continue;
    // The last read of an earlier take on the dim (its pad may go there or later), −1 for none.
    auto freeFrom = [&](int dim) {
      int from = -1;
      for (size_t o : on[static_cast<size_t>(dim)])
        if (o != i && plan.ranges[o].lastRead.key() <= start)
          from = std::max(from, plan.ranges[o].lastRead.key());
      return from;
    };
    const Field& f = plan.fields[i];
    // Per dim of the take: the point its pad may go from, −1 where it needs none.
    std::vector<int> from(static_cast<size_t>(f.dims));
    for (int j = 0; j < f.dims; ++j)
      from[static_cast<size_t>(j)] =
          needs[static_cast<size_t>(taken[i].at(j))].needsPad ? freeFrom(f.at(j)) : -1;
    auto load = [&](int layer) {
      return layer < static_cast<int>(units.size()) ? units[static_cast<size_t>(layer)] : 0;
    };
    for (int j = 0; j < f.dims;) {
      if (from[static_cast<size_t>(j)] < 0) {
        ++j;
        continue;
      }
      int k = j, runFrom = -1;  // the run [j, k) of dims that need a pad, and where it may go from
      for (; k < f.dims && from[static_cast<size_t>(k)] >= 0; ++k)
        runFrom = std::max(runFrom, from[static_cast<size_t>(k)]);
      // MLP l (key 2l + 1) may hold it from l = runFrom / 2 on, up to the take's start.
      const int last = plan.ranges[i].write.layer;
      int layer = last;
      for (int l = last; l >= runFrom / 2; --l) {
        if (load(l) + (k - j) <= cap) {
          layer = l;
          break;
        }
        if (load(l) < load(layer)) layer = l;
      }
      pads.push_back({f.slice(j, k - j, "pad"), layer});
      if (layer < static_cast<int>(units.size())) units[static_cast<size_t>(layer)] += k - j;
      j = k;
    }
  }
  return pads;
}

}  // namespace

Expected<LivenessPlan> planByLiveness(const std::vector<Field>& taken,
                                      const ResidualTouches& touches, int pinnedDims,
                                      const std::vector<int>& unitsPerLayer) {
  const int hidden = touches.hidden();
  std::vector<int> owner(static_cast<size_t>(hidden), -1);
  for (size_t i = 0; i < taken.size(); ++i) {
    const Field& f = taken[i];
    if (f.offset < 0 || f.offset + f.dims > hidden)
      return makeDiag(ErrorKind::Internal, "layout: field '" + f.name + "' lies outside the " +
                                               std::to_string(hidden) + " recorded dims");
    for (int d = f.offset; d < f.offset + f.dims; ++d) {
      int& o = owner[static_cast<size_t>(d)];
      if (o >= 0)
        return makeDiag(ErrorKind::Internal, "layout: fields '" + taken[static_cast<size_t>(o)].name +
                                                 "' and '" + f.name + "' were both taken on dim " +
                                                 std::to_string(d));
      o = static_cast<int>(i);
    }
  }
  LivenessPlan plan;
  LayoutPlan layout;
  std::vector<DimRange> dims(static_cast<size_t>(hidden));
  for (int d = 0; d < hidden; ++d) {
    dims[static_cast<size_t>(d)] = dimRange(touches, d);
    if (dims[static_cast<size_t>(d)].touched && owner[static_cast<size_t>(d)] < 0)
      return makeDiag(ErrorKind::Internal, "layout: dim " + std::to_string(d) +
                                               " is touched by the weights but no field holds it");
  }
  const int cap = widestLayer(unitsPerLayer);
  std::vector<int> reserved(unitsPerLayer.size(), 0);  // pad units a start was moved for
  for (size_t i = 0; i < taken.size(); ++i) {
    const Field& f = taken[i];
    DimRange r{touches.lastKey(), touches.lastKey() + 1, false, false};
    bool any = false;
    int padDims = 0;
    for (int d = f.offset; d < f.offset + f.dims; ++d) {
      const DimRange& x = dims[static_cast<size_t>(d)];
      if (!x.touched) continue;
      r.start = any ? std::min(r.start, x.start) : x.start;
      r.end = any ? std::max(r.end, x.end) : x.end;
      r.fromEmbedding = r.fromEmbedding || x.fromEmbedding;
      padDims += x.needsPad;
      any = true;
    }
    if (!r.fromEmbedding && padDims > 0 && r.start < 2 * static_cast<int>(unitsPerLayer.size())) {
      // Its pads may all be needed: start at the latest MLP within kPadLookback layers that has
      // room for them under the widest layer's units (none has: the start as it is).
      const int latest = r.start / 2;
      for (int l = latest; l >= std::max(0, latest - kPadLookback); --l) {
        int& pads = reserved[static_cast<size_t>(l)];
        if (unitsPerLayer[static_cast<size_t>(l)] + pads + padDims > cap) continue;
        pads += padDims;
        r.start = 2 * l + 1;
        break;
      }
    }
    const LiveRange range{pointOfKey(r.start), pointOfKey(r.end)};
    const std::string name = f.name + "#" + std::to_string(i);  // names need not be unique
    if (f.offset + f.dims <= pinnedDims)
      layout.pin(name, f.dims, range, f.offset);
    else
      layout.add(name, f.dims, range, r.fromEmbedding || padDims > 0 ? 0 : f.kinds);
    plan.ranges.push_back(range);
    plan.fromEmbedding.push_back(r.fromEmbedding);
  }
  QGPU_CHECK(layout.solve(hidden));
  for (size_t i = 0; i < taken.size(); ++i) {
    plan.fields.push_back(layout.placements()[i].field);
    plan.fields.back().name = taken[i].name;
  }
  plan.report = layout.report();
  plan.hidden = plan.report.span;
  plan.pads = padRestores(taken, dims, plan, unitsPerLayer);
  return plan;
}

}  // namespace qgpu::circuit
