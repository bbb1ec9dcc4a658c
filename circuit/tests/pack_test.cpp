// qgpu/circuit/tests/pack_test.cpp — the torch-free checks of pass pack_layers (circuit/pack.h)
// and of the weights it moves (CircuitWeights::recordMembers, CircuitWeights::packed).
//
// Every packing is checked by `violation`, written from pack.h's contract and not from the pass:
// for every two members that may act at one token and touch one dim, a write is visible to a
// read (block time t = 2·layer, + 1 for a unit: a block reads its input, then writes) in the
// packed model iff it is in the virtual one, and two writes of one dim share a block, or keep
// their order, iff they do in the virtual one; every layer within its limits, every used member
// in a slot of its own, no unused one. Hand-made cases with their failing twins, then random
// circuits (seeded) against the same check.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>

#include "circuit/config.h"
#include "circuit/pack.h"
#include "circuit/weights.h"

namespace qgpu::circuit {
namespace {

MemberDims member(std::vector<int> reads, std::vector<int> writes, uint32_t kinds = 0) {
  std::sort(reads.begin(), reads.end());
  std::sort(writes.begin(), writes.end());
  return MemberDims{true, std::move(reads), std::move(writes), kinds};
}

bool mayActTogether(uint32_t a, uint32_t b) {
  return a == 0 || b == 0 || (a & b) != 0;
}

struct Placed {
  int virtualTime = 0, physicalTime = 0;
  const MemberDims* dims = nullptr;
};

// The first broken rule of pack.h's contract, "" when none.
std::string violation(const std::vector<LayerMembers>& layers, const LayerPacking& p,
                      const PackLimits& limits) {
  std::vector<Placed> placed;
  std::vector<int> heads(static_cast<size_t>(p.layers), 0), units(static_cast<size_t>(p.layers), 0);
  std::set<std::pair<int, int>> headSlots, unitSlots;
  for (size_t v = 0; v < layers.size(); ++v)
    for (int kind = 0; kind < 2; ++kind) {
      const auto& group = kind == 0 ? layers[v].heads : layers[v].units;
      const auto& slots = kind == 0 ? p.heads[v] : p.units[v];
      for (size_t i = 0; i < group.size(); ++i) {
        const MemberSlot s = slots[i];
        const std::string name =
            "layer " + std::to_string(v) + (kind ? " unit " : " head ") + std::to_string(i);
        if (!group[i].used) {
          if (s.layer >= 0) return name + " is unused but has a slot";
          continue;
        }
        if (s.layer < 0 || s.layer >= p.layers) return name + " has no slot";
        const int limit = kind == 0 ? limits.heads : limits.units;
        if (s.slot < 0 || s.slot >= limit) return name + ": slot out of range";
        if (!(kind == 0 ? headSlots : unitSlots).insert({s.layer, s.slot}).second)
          return name + ": slot taken twice";
        ++(kind == 0 ? heads : units)[static_cast<size_t>(s.layer)];
        placed.push_back({2 * static_cast<int>(v) + kind, 2 * s.layer + kind, &group[i]});
      }
    }
  if (p.layers > limits.layers) return "too many layers";
  for (int l = 0; l < p.layers; ++l)
    if (heads[static_cast<size_t>(l)] != p.headsIn[static_cast<size_t>(l)] ||
        units[static_cast<size_t>(l)] != p.unitsIn[static_cast<size_t>(l)])
      return "layer " + std::to_string(l) + "'s counts are wrong";
  auto touches = [](const std::vector<int>& dims, int d) {
    return std::binary_search(dims.begin(), dims.end(), d);
  };
  for (const Placed& w : placed)
    for (const Placed& o : placed) {
      if (&w == &o || !mayActTogether(w.dims->kinds, o.dims->kinds)) continue;
      for (int d : w.dims->writes) {
        if (touches(o.dims->reads, d) &&
            (w.virtualTime < o.virtualTime) != (w.physicalTime < o.physicalTime))
          return "a read of dim " + std::to_string(d) + " sees another set of writes";
        if (touches(o.dims->writes, d) &&
            ((w.virtualTime == o.virtualTime) != (w.physicalTime == o.physicalTime) ||
             (w.virtualTime < o.virtualTime && w.physicalTime > o.physicalTime)))
          return "two writes of dim " + std::to_string(d) + " changed blocks or order";
      }
    }
  return "";
}

TEST(Pack, SplitsAWideLayerKeepingEachReadBeforeTheWriteAfterIt) {
  // One layer, 3 heads: h1 reads d1 that h0 rewrites, h0 reads d0 that h2 rewrites, so
  // h1 ≤ h0 ≤ h2 in layers; 2 heads a layer.
  std::vector<LayerMembers> layers(1);
  layers[0].heads = {member({0}, {1}), member({1}, {2}), member({}, {0})};
  const PackLimits limits{2, 8, 4, "test"};
  auto p = packLayers(layers, limits);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->layers, 2);
  EXPECT_EQ(violation(layers, *p, limits), "");
  EXPECT_LE(p->heads[0][1].layer, p->heads[0][0].layer);
  EXPECT_LE(p->heads[0][0].layer, p->heads[0][2].layer);
  // Twin: the checker sees h2 moved before h0.
  LayerPacking broken = *p;
  broken.heads[0][2].layer = 0;
  broken.heads[0][0].layer = 1;
  broken.headsIn = {broken.headsIn[1], broken.headsIn[0]};
  EXPECT_NE(violation(layers, broken, limits), "");
}

TEST(Pack, AReadOfAnEarlierBlocksWriteStaysAfterIt) {
  // Layer 0's unit writes d3, layer 1's head reads it: the head needs a later layer. Layer 0's
  // head writes d4 that layer 0's unit reads: the same layer serves (attention before the MLP).
  std::vector<LayerMembers> layers(2);
  layers[0].units = {member({4}, {3})};
  layers[0].heads = {member({}, {4})};
  layers[1].heads = {member({3}, {5})};
  const PackLimits limits{4, 4, 4, "test"};
  auto p = packLayers(layers, limits);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->layers, 2);
  EXPECT_EQ(p->heads[1][0].layer, 1);
  EXPECT_EQ(violation(layers, *p, limits), "");
}

TEST(Pack, AMemberFloatsToAnEarlierLayerWithRoomWhenItsInputsAreReady) {
  // Layer 1's unit reads only the embedding's dims: it joins layer 0's MLP.
  std::vector<LayerMembers> layers(2);
  layers[0].units = {member({0}, {1})};
  layers[1].units = {member({2}, {3})};
  const PackLimits limits{4, 4, 4, "test"};
  auto p = packLayers(layers, limits);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->layers, 1);
  EXPECT_EQ((std::vector<int>{0, 1}), p->from[0]);
  EXPECT_EQ(violation(layers, *p, limits), "");
}

TEST(Pack, WritersOfOneDimThatActTogetherShareALayer) {
  // A cancel and its value on d5: one unit a layer cannot hold them.
  std::vector<LayerMembers> layers(1);
  layers[0].units = {member({5}, {5}), member({0}, {5})};
  auto p = packLayers(layers, PackLimits{4, 1, 8, "tiny"});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(p.error().message.find("2 MLP units that write one field together"), std::string::npos)
      << p.error().message;
  EXPECT_NE(p.error().message.find("'tiny' has 1 units"), std::string::npos);
  // Guarded by disjoint kinds they never act at one token: each may have a layer of its own.
  layers[0].units = {member({5}, {5}, kKindAtomAdd), member({0}, {5}, kKindAtomInc)};
  const PackLimits one{4, 1, 8, "tiny"};
  auto split = packLayers(layers, one);
  ASSERT_TRUE(split.ok()) << split.error().message;
  EXPECT_EQ(split->layers, 2);
  EXPECT_EQ(violation(layers, *split, one), "");
  // Twin: kinds that overlap act together.
  layers[0].units = {member({5}, {5}, kKindAtomAdd), member({0}, {5}, kKindAtomAdd | kKindAtomInc)};
  EXPECT_FALSE(packLayers(layers, one).ok());
}

TEST(Pack, MembersThatEachReadWhatTheOtherRewritesShareALayer) {
  std::vector<LayerMembers> layers(1);
  layers[0].units = {member({1}, {2}), member({2}, {1})};
  EXPECT_FALSE(packLayers(layers, PackLimits{4, 1, 8, "tiny"}).ok());
  const PackLimits two{4, 2, 8, "test"};
  auto p = packLayers(layers, two);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->layers, 1);
  EXPECT_EQ(violation(layers, *p, two), "");
}

TEST(Pack, RefusesMoreLayersThanTheShapeAllows) {
  // A chain through three layers' heads, one head a layer.
  std::vector<LayerMembers> layers(3);
  layers[0].heads = {member({0}, {1})};
  layers[1].heads = {member({1}, {2}), member({}, {7})};
  layers[2].heads = {member({2}, {3})};
  auto p = packLayers(layers, PackLimits{1, 4, 3, "small"});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(p.error().message.find("needs 4 layers"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("allows 3"), std::string::npos);
  EXPECT_TRUE(packLayers(layers, PackLimits{1, 4, 4, "small"}).ok());
  EXPECT_FALSE(packLayers(layers, PackLimits{0, 4, 4, "zero"}).ok());
}

TEST(Pack, UnusedMembersGetNoSlot) {
  std::vector<LayerMembers> layers(1);
  layers[0].heads = {MemberDims{}, member({0}, {1})};
  const PackLimits limits{1, 1, 2, "test"};
  auto p = packLayers(layers, limits);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->heads[0][0].layer, -1);
  EXPECT_EQ(p->heads[0][1].slot, 0);
  EXPECT_EQ(violation(layers, *p, limits), "");
}

TEST(Pack, RandomCircuitsKeepEveryReadAndWrite) {
  const uint32_t kinds[] = {0, kKindAtomAdd, kKindAtomInc, kKindAtomAdd | kKindAtomInc};
  int packed = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    std::vector<LayerMembers> layers(static_cast<size_t>(1 + pick(4)));
    auto dims = [&](int most) {
      std::set<int> s;
      for (int i = pick(most + 1); i > 0; --i) s.insert(pick(12));
      return std::vector<int>(s.begin(), s.end());
    };
    for (LayerMembers& l : layers) {
      for (int h = pick(5); h > 0; --h) l.heads.push_back(member(dims(3), dims(2)));
      for (int u = pick(9); u > 0; --u) l.units.push_back(member(dims(3), dims(2), kinds[pick(4)]));
      if (!l.units.empty() && pick(3) == 0) l.units[0].used = false;
    }
    const PackLimits limits{1 + pick(3), 1 + pick(6), 12, "random"};
    auto p = packLayers(layers, limits);
    if (!p.ok()) {
      EXPECT_EQ(p.error().kind, ErrorKind::OverLimit) << "seed " << seed;
      continue;
    }
    ++packed;
    EXPECT_EQ(violation(layers, *p, limits), "") << "seed " << seed;
    // Without limits every member could stay where it is: no more layers than the virtual ones.
    const PackLimits wide{1000, 1000, 1000, "wide"};
    auto q = packLayers(layers, wide);
    ASSERT_TRUE(q.ok());
    EXPECT_LE(q->layers, static_cast<int>(layers.size())) << "seed " << seed;
    EXPECT_EQ(violation(layers, *q, wide), "") << "seed " << seed;
  }
  EXPECT_GT(packed, 150);  // most random circuits pack: the check above ran on them
}

// ---- the weights: members recorded, entries moved ----

model::Qwen35Config twoHeads(int layers, int heads, int units) {
  model::Qwen35Config c = linearConfig(16, layers, units, 4);
  c.linearNumKeyHeads = c.linearNumValueHeads = heads;
  c.linearKeyHeadDim = 4;
  c.linearValueHeadDim = 4;
  return c;
}

TEST(PackWeights, RecordsWhatEachHeadAndUnitReadsAndWrites) {
  CircuitWeights w(twoHeads(1, 2, 3), WeightStorage::CountOnly);
  ASSERT_TRUE(w.recordMembers().ok());
  const std::string qkv = w.layerTensor(0, "linear_attn.in_proj_qkv.weight");
  // Head 1's k channel 2 (rows: q 0..7, k 8..15, v 16..23) reads dim 5; its out_proj column
  // (v channels 4..7) writes dim 9; unit 2 reads dim 3 and writes dim 11; head 0 has only A_log.
  ASSERT_TRUE(w.set(qkv, 8 + 4 + 2, 5, 1.0f).ok());
  ASSERT_TRUE(w.set(w.layerTensor(0, "linear_attn.out_proj.weight"), 9, 4 + 1, 1.0f).ok());
  ASSERT_TRUE(w.set(w.layerTensor(0, "mlp.up_proj.weight"), 2, 3, 1.0f).ok());
  ASSERT_TRUE(w.set(w.layerTensor(0, "mlp.down_proj.weight"), 11, 2, 1.0f).ok());
  ASSERT_TRUE(w.set(w.layerTensor(0, "linear_attn.A_log"), 0, 0, 1.0f).ok());
  ASSERT_TRUE(w.set(w.layerTensor(0, "mlp.gate_proj.weight"), 1, 6, 0.0f).ok());  // a zero: no use
  const std::vector<LayerMembers> m = w.members();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(m[0].heads[0].used);
  EXPECT_TRUE(m[0].heads[0].reads.empty());
  EXPECT_EQ(m[0].heads[1].reads, std::vector<int>{5});
  EXPECT_EQ(m[0].heads[1].writes, std::vector<int>{9});
  EXPECT_FALSE(m[0].units[1].used);
  EXPECT_EQ(m[0].units[2].reads, std::vector<int>{3});
  EXPECT_EQ(m[0].units[2].writes, std::vector<int>{11});
}

TEST(PackWeights, EveryEntryLandsAtItsMembersSlot) {
  const model::Qwen35Config virt = twoHeads(2, 2, 3);
  model::Qwen35Config phys = twoHeads(3, 1, 2);
  LayerPacking p;
  p.layers = 3;
  p.heads = {{{0, 0}, {2, 0}}, {{1, 0}, {-1, -1}}};
  p.units = {{{1, 1}, {-1, -1}, {0, 0}}, {{2, 1}, {-1, -1}, {-1, -1}}};
  p.headsIn = {1, 1, 1};
  p.unitsIn = {1, 1, 1};
  p.from = {{0}, {0, 1}, {0, 1}};
  auto w = CircuitWeights::packed(virt, phys, p);
  ASSERT_TRUE(w.ok()) << w.error().message;
  CircuitWeights& cw = **w;
  EXPECT_EQ(cw.config().numLayers(), 2);
  EXPECT_EQ(cw.writtenConfig().numLayers(), 3);
  // Virtual layer 0, head 1 → physical layer 2, head 0: its v channel 3 (virtual row
  // 2·8 + 4 + 3 = 23) is physical row 2·4 + 0 + 3 = 11; A_log; out_proj column 4 + 3 → 3.
  ASSERT_TRUE(cw.set(cw.layerTensor(0, "linear_attn.in_proj_qkv.weight"), 23, 7, 2.0f).ok());
  ASSERT_TRUE(cw.set(cw.layerTensor(0, "linear_attn.A_log"), 1, 0, 3.0f).ok());
  ASSERT_TRUE(cw.set(cw.layerTensor(0, "linear_attn.out_proj.weight"), 5, 7, 4.0f).ok());
  // Virtual layer 1, unit 0 → physical layer 2, unit 1.
  ASSERT_TRUE(cw.set(cw.layerTensor(1, "mlp.down_proj.weight"), 6, 0, 5.0f).ok());
  // A norm: every physical layer, by fill or by set; get() reads it back.
  ASSERT_TRUE(cw.fill(cw.layerTensor(1, "linear_attn.norm.weight"), 1.0f).ok());
  ASSERT_TRUE(cw.set(cw.layerTensor(0, "input_layernorm.weight"), 4, 0, 0.5f).ok());
  auto norm = cw.get(cw.layerTensor(1, "input_layernorm.weight"), 4, 0);
  ASSERT_TRUE(norm.ok()) << norm.error().message;
  EXPECT_EQ(*norm, 0.5f);
  auto at = [&](int layer, const std::string& suffix, int64_t row, int64_t col) {
    auto v = cw.written("model.layers." + std::to_string(layer) + "." + suffix, row, col);
    return v.ok() ? *v : -1.0f;
  };
  EXPECT_EQ(at(2, "linear_attn.in_proj_qkv.weight", 11, 7), 2.0f);
  EXPECT_EQ(at(2, "linear_attn.A_log", 0, 0), 3.0f);
  EXPECT_EQ(at(2, "linear_attn.out_proj.weight", 5, 3), 4.0f);
  EXPECT_EQ(at(2, "mlp.down_proj.weight", 6, 1), 5.0f);
  EXPECT_EQ(at(2, "mlp.down_proj.weight", 6, 0), 0.0f);
  for (int l = 0; l < 3; ++l) {
    EXPECT_EQ(at(l, "linear_attn.norm.weight", 2, 0), 1.0f) << l;
    EXPECT_EQ(at(l, "input_layernorm.weight", 4, 0), 0.5f) << l;
  }
  // get() reads back through the same map.
  auto back = cw.get(cw.layerTensor(0, "linear_attn.in_proj_qkv.weight"), 23, 7);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, 2.0f);
  // A member the packing has no place for is an Internal diag.
  auto lost = cw.set(cw.layerTensor(1, "linear_attn.A_log"), 1, 0, 1.0f);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.error().kind, ErrorKind::Internal);
  // Two layers that want different norms in one physical layer: Internal.
  auto clash = cw.fill(cw.layerTensor(0, "linear_attn.norm.weight"), 2.0f);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error().kind, ErrorKind::Internal);
  // Configs that differ in more than layers, heads and units: Usage.
  model::Qwen35Config wider = phys;
  wider.hiddenSize = 32;
  auto bad = CircuitWeights::packed(virt, wider, p);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::Usage);
}

}  // namespace
}  // namespace qgpu::circuit
