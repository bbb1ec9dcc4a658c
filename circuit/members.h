// qgpu/circuit/members.h — a layer's members, the pieces a layer can be split into: its DeltaNet
// heads and its MLP units (docs/circuit.md "Packing into a shape").
//
// A head owns its rows of in_proj_qkv (q, k and v channels), in_proj_z, in_proj_b, in_proj_a,
// conv1d, dt_bias and A_log and its columns of out_proj; a unit its row of gate_proj and up_proj
// and its column of down_proj. Nothing else in a layer belongs to one member: the norms
// (input_layernorm, post_attention_layernorm, linear_attn.norm) are the layer's. Heads are
// numbered by value head and need as many key heads (Hk = Hv).
//
// What a member touches of the residual, as CircuitWeights::recordMembers logs it: it *reads* dim
// d when one of its input rows (q, k, v, z, b, a; gate, up) has a nonzero weight in column d,
// *writes* d when its output (out_proj's columns, down_proj's column) has one in row d.
//
// LayerPacking says where each member of a built circuit (the *virtual* layers, as the stages
// place them) sits in a checkpoint of fewer heads or units per layer (the *physical* layers):
// circuit/pack.h computes it, CircuitWeights(virtual, physical, packing) writes a build through it.
#pragma once

#include <cstdint>
#include <vector>

namespace qgpu::circuit {

struct MemberDims {
  bool used = false;        // any nonzero weight of its own
  std::vector<int> reads;   // residual dims, ascending, once each
  std::vector<int> writes;  // likewise
  // A unit's guard's op kinds (units.h UnitGuard::kinds): it writes only where one of them
  // executes. 0: at every token (no guard, a head).
  uint32_t kinds = 0;
};

struct LayerMembers {
  std::vector<MemberDims> heads;  // by value head
  std::vector<MemberDims> units;  // by MLP unit
};

// A member's place in the physical checkpoint: layer and head or unit index there (−1, −1: the
// member is unused and has no place).
struct MemberSlot {
  int layer = -1;
  int slot = -1;
};

struct LayerPacking {
  int layers = 0;  // physical layers
  // [virtual layer][member] → its slot.
  std::vector<std::vector<MemberSlot>> heads, units;
  // Per physical layer: heads and units placed there, and the virtual layers they come from
  // (ascending).
  std::vector<int> headsIn, unitsIn;
  std::vector<std::vector<int>> from;
};

}  // namespace qgpu::circuit
