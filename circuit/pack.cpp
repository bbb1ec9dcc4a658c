// qgpu/circuit/pack.cpp — see pack.h.
#include "circuit/pack.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>

namespace qgpu::circuit {
namespace {

struct Member {
  int layer = 0;
  bool unit = false;
  int index = 0;
  const MemberDims* dims = nullptr;
  int block() const { return 2 * layer + (unit ? 1 : 0); }
};

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int find(int x) {
    while (parent_[static_cast<size_t>(x)] != x) {
      parent_[static_cast<size_t>(x)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
      x = parent_[static_cast<size_t>(x)];
    }
    return x;
  }
  void unite(int a, int b) { parent_[static_cast<size_t>(find(a))] = find(b); }

 private:
  std::vector<int> parent_;
};

// p_to ≥ p_from + delta.
struct Rule {
  int from = 0, to = 0, delta = 0;
};

// The layer rule for "b's block time after a's" (strict) or "not before" (not strict), with
// times 2p (heads) and 2p + 1 (units).
int ruleDelta(bool fromUnit, bool toUnit, bool strict) {
  if (fromUnit == toUnit) return strict ? 1 : 0;
  if (fromUnit) return 1;  // 2a + 1 ≤ 2b (or <): a < b either way
  return 0;                // 2a ≤ 2b + 1 (or <): a ≤ b either way
}

// Strongly connected components of `next` (iterative Tarjan), in reverse topological order.
std::vector<std::vector<int>> components(const std::vector<std::vector<int>>& next) {
  const int n = static_cast<int>(next.size());
  std::vector<int> index(static_cast<size_t>(n), -1), low(static_cast<size_t>(n), 0);
  std::vector<bool> onStack(static_cast<size_t>(n), false);
  std::vector<int> stack;
  std::vector<std::vector<int>> out;
  int counter = 0;
  struct Frame {
    int node;
    size_t edge;
  };
  for (int root = 0; root < n; ++root) {
    if (index[static_cast<size_t>(root)] >= 0) continue;
    std::vector<Frame> frames{{root, 0}};
    index[static_cast<size_t>(root)] = low[static_cast<size_t>(root)] = counter++;
    stack.push_back(root);
    onStack[static_cast<size_t>(root)] = true;
    while (!frames.empty()) {
      Frame& f = frames.back();
      const auto& edges = next[static_cast<size_t>(f.node)];
      if (f.edge < edges.size()) {
        const int w = edges[f.edge++];
        if (index[static_cast<size_t>(w)] < 0) {
          index[static_cast<size_t>(w)] = low[static_cast<size_t>(w)] = counter++;
          stack.push_back(w);
          onStack[static_cast<size_t>(w)] = true;
          frames.push_back({w, 0});
        } else if (onStack[static_cast<size_t>(w)]) {
          low[static_cast<size_t>(f.node)] =
              std::min(low[static_cast<size_t>(f.node)], index[static_cast<size_t>(w)]);
        }
        continue;
      }
      const int v = f.node;
      frames.pop_back();
      if (!frames.empty())
        low[static_cast<size_t>(frames.back().node)] =
            std::min(low[static_cast<size_t>(frames.back().node)], low[static_cast<size_t>(v)]);
      if (low[static_cast<size_t>(v)] != index[static_cast<size_t>(v)]) continue;
      std::vector<int> component;
      int w = -1;
      do {
        w = stack.back();
        stack.pop_back();
        onStack[static_cast<size_t>(w)] = false;
        component.push_back(w);
      } while (w != v);
      out.push_back(std::move(component));
    }
  }
  return out;
}

}  // namespace

Expected<LayerPacking> packLayers(const std::vector<LayerMembers>& layers,
                                  const PackLimits& limits) {
  if (limits.heads <= 0 || limits.units <= 0 || limits.layers <= 0)
    return makeDiag(ErrorKind::Usage, "packLayers: the limits must be positive");

  // The used members.
  std::vector<Member> members;
  for (size_t l = 0; l < layers.size(); ++l) {
    for (size_t h = 0; h < layers[l].heads.size(); ++h)
      if (layers[l].heads[h].used)
        members.push_back({static_cast<int>(l), false, static_cast<int>(h), &layers[l].heads[h]});
    for (size_t u = 0; u < layers[l].units.size(); ++u)
      if (layers[l].units[u].used)
        members.push_back({static_cast<int>(l), true, static_cast<int>(u), &layers[l].units[u]});
  }

  // Two members may act at one token unless both are guarded by disjoint op kinds.
  auto together = [](uint32_t a, uint32_t b) { return a == 0 || b == 0 || (a & b) != 0; };
  auto kindsOf = [&](int m) { return members[static_cast<size_t>(m)].dims->kinds; };

  // Clusters: a block's writers of one dim that may write at one token.
  UnionFind joined(members.size());
  {
    std::unordered_map<int64_t, std::vector<int>> writers;  // (block, dim) → members
    for (size_t m = 0; m < members.size(); ++m)
      for (int d : members[m].dims->writes)
        writers[int64_t{members[m].block()} << 32 | static_cast<uint32_t>(d)].push_back(
            static_cast<int>(m));
    for (const auto& [key, list] : writers) {
      std::unordered_map<uint32_t, int> firstOfKinds;  // one member per kinds value
      for (int m : list) {
        auto [it, fresh] = firstOfKinds.emplace(kindsOf(m), m);
        if (!fresh) joined.unite(m, it->second);
      }
      for (const auto& [ka, a] : firstOfKinds)
        for (const auto& [kb, b] : firstOfKinds)
          if (ka < kb && together(ka, kb)) joined.unite(a, b);
    }
  }
  std::vector<int> clusterOf(members.size());
  std::vector<int> rootCluster(members.size(), -1);
  int clusters = 0;
  for (size_t m = 0; m < members.size(); ++m) {
    int& c = rootCluster[static_cast<size_t>(joined.find(static_cast<int>(m)))];
    if (c < 0) c = clusters++;
    clusterOf[m] = c;
  }
  std::vector<int> clusterBlock(static_cast<size_t>(clusters));
  for (size_t m = 0; m < members.size(); ++m)
    clusterBlock[static_cast<size_t>(clusterOf[m])] = members[m].block();
  auto isUnit = [&](int c) { return clusterBlock[static_cast<size_t>(c)] % 2 == 1; };

  // Each dim's reads and writes in virtual order (a block's reads before its writes), each with
  // its member's kinds: the rules hold between members that may act at one token.
  struct Event {
    int block = 0;
    int write = 0;  // 0 read, 1 write
    int cluster = 0;
    uint32_t kinds = 0;
    bool operator<(const Event& o) const {
      return std::tie(block, write, cluster, kinds) <
             std::tie(o.block, o.write, o.cluster, o.kinds);
    }
    bool operator==(const Event& o) const {
      return block == o.block && write == o.write && cluster == o.cluster && kinds == o.kinds;
    }
  };
  std::unordered_map<int, std::vector<Event>> events;
  for (size_t m = 0; m < members.size(); ++m) {
    const uint32_t k = members[m].dims->kinds;
    for (int d : members[m].dims->reads)
      events[d].push_back({members[m].block(), 0, clusterOf[m], k});
    for (int d : members[m].dims->writes)
      events[d].push_back({members[m].block(), 1, clusterOf[m], k});
  }
  std::vector<Rule> rules;
  auto rule = [&](int from, int to, bool strict) {
    if (from != to) rules.push_back({from, to, ruleDelta(isUnit(from), isUnit(to), strict)});
  };
  for (auto& [dim, list] : events) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    // Per kinds value: the last write (clusters of one kinds value are ordered among themselves)
    // and the readers since that value's last write that it must not overtake.
    struct Lane {
      int lastWrite = -1;
      std::vector<int> readers;
    };
    std::unordered_map<uint32_t, Lane> lanes;  // every kinds value that writes the dim
    for (const Event& e : list)
      if (e.write == 1) lanes[e.kinds];
    for (const Event& e : list) {
      for (auto& [k, lane] : lanes)
        if (together(k, e.kinds) && lane.lastWrite >= 0)
          rule(lane.lastWrite, e.cluster, /*strict=*/true);
      if (e.write == 0) {
        for (auto& [k, lane] : lanes)
          if (together(k, e.kinds)) lane.readers.push_back(e.cluster);
        continue;
      }
      Lane& own = lanes.at(e.kinds);
      for (int r : own.readers) rule(r, e.cluster, /*strict=*/false);
      own.readers.clear();
      own.lastWrite = e.cluster;
    }
  }

  // Clusters of one block that must share a layer (each reads what the other writes) merge; the
  // groups then go in block order, a block's in the order of its read-before-write rules.
  std::vector<std::vector<int>> sameBlockNext(static_cast<size_t>(clusters));
  for (const Rule& r : rules)
    if (clusterBlock[static_cast<size_t>(r.from)] == clusterBlock[static_cast<size_t>(r.to)])
      sameBlockNext[static_cast<size_t>(r.from)].push_back(r.to);
  std::vector<std::vector<int>> groups = components(sameBlockNext);
  std::reverse(groups.begin(), groups.end());  // topological
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    return clusterBlock[static_cast<size_t>(a[0])] < clusterBlock[static_cast<size_t>(b[0])];
  });
  std::vector<int> groupOf(static_cast<size_t>(clusters));
  for (size_t g = 0; g < groups.size(); ++g)
    for (int c : groups[g]) groupOf[static_cast<size_t>(c)] = static_cast<int>(g);
  std::vector<std::vector<std::pair<int, int>>> before(groups.size());  // (group, delta)
  for (const Rule& r : rules) {
    const int from = groupOf[static_cast<size_t>(r.from)], to = groupOf[static_cast<size_t>(r.to)];
    if (from != to) before[static_cast<size_t>(to)].push_back({from, r.delta});
  }
  std::vector<std::vector<int>> groupMembers(groups.size());
  for (size_t m = 0; m < members.size(); ++m)
    groupMembers[static_cast<size_t>(groupOf[static_cast<size_t>(clusterOf[m])])].push_back(
        static_cast<int>(m));

  // Each group in the first layer at or after its rules' bound with room for it.
  LayerPacking out;
  out.heads.resize(layers.size());
  out.units.resize(layers.size());
  for (size_t l = 0; l < layers.size(); ++l) {
    out.heads[l].assign(layers[l].heads.size(), MemberSlot{});
    out.units[l].assign(layers[l].units.size(), MemberSlot{});
  }
  std::vector<int> placed(groups.size(), -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    const bool unit = isUnit(groups[g][0]);
    const int need = static_cast<int>(groupMembers[g].size());
    const int room = unit ? limits.units : limits.heads;
    const Member& first = members[static_cast<size_t>(groupMembers[g][0])];
    if (need > room)
      return makeDiag(ErrorKind::OverLimit,
                      "pack: layer " + std::to_string(first.layer) + "'s " + std::to_string(need) +
                          (unit ? " MLP units" : " heads") +
                          " that write one field together need one layer, the shape '" +
                          limits.shape + "' has " + std::to_string(room) +
                          (unit ? " units" : " heads") + " per layer");
    int bound = 0;
    for (const auto& [from, delta] : before[g])
      bound = std::max(bound, placed[static_cast<size_t>(from)] + delta);
    int p = bound;
    for (;; ++p) {
      if (p >= static_cast<int>(out.headsIn.size())) {
        out.headsIn.push_back(0);
        out.unitsIn.push_back(0);
        out.from.emplace_back();
      }
      int& used = unit ? out.unitsIn[static_cast<size_t>(p)] : out.headsIn[static_cast<size_t>(p)];
      if (used + need <= room) break;
    }
    placed[g] = p;
    int& used = unit ? out.unitsIn[static_cast<size_t>(p)] : out.headsIn[static_cast<size_t>(p)];
    std::vector<int>& from = out.from[static_cast<size_t>(p)];
    for (int m : groupMembers[g]) {
      const Member& mm = members[static_cast<size_t>(m)];
      auto& slots = mm.unit ? out.units : out.heads;
      slots[static_cast<size_t>(mm.layer)][static_cast<size_t>(mm.index)] = MemberSlot{p, used++};
      if (std::find(from.begin(), from.end(), mm.layer) == from.end()) from.push_back(mm.layer);
    }
  }
  for (auto& from : out.from) std::sort(from.begin(), from.end());
  out.layers = static_cast<int>(out.headsIn.size());
  if (out.layers > limits.layers)
    return makeDiag(ErrorKind::OverLimit, "pack: the circuit needs " + std::to_string(out.layers) +
                                              " layers of " + std::to_string(limits.heads) +
                                              " heads and " + std::to_string(limits.units) +
                                              " MLP units, the shape '" + limits.shape +
                                              "' allows " + std::to_string(limits.layers));
  return out;
}

}  // namespace qgpu::circuit
