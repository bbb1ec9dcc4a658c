// qgpu/circuit/pack.h — pass `pack_layers` (docs/circuit.md "Packing into a shape"): the stages
// place their heads and units in *virtual* layers as wide as they need (the front end's E+4 holds
// 35 heads at dk 128, the ALU's E+5 6,772 units); a target shape allows fewer per layer (`2b`: 16
// heads, 6,144 units). packLayers moves each member (circuit/members.h: a head or an MLP unit)
// into a *physical* layer of the shape so that every member reads exactly the values it read in
// the virtual model — so the packed model computes the same residual stream, token for token.
//
// The rules, from what each member reads and writes of the residual (a block is a layer's
// attention or its MLP; within a block every member reads the block's input, then all write):
//   - the writers of one dim within one block move together (a *cluster*): a field's cancel and
//     its new value land in the same block, so no block ever sees half a rewrite, and every dim
//     holds at each block input a value it held at some virtual block input (±u: the norm, λ and
//     every gain stay as built);
//   - for each dim, in virtual order: a reader comes after the last write before it (strictly: in
//     a later block) and not after the next write (the same block reads first); consecutive
//     writes keep their order.
// Physical block times are 2p (attention of layer p) and 2p + 1 (its MLP), so each rule is
// p_b ≥ p_a + δ with δ 0 or 1 by the two members' kinds. The virtual placement satisfies every
// rule; the pass keeps them and fills the shape: clusters in virtual order (a block's clusters in
// the order its read-before-write rules ask, clusters that ask it of each other merged), each
// in the first layer at or after its rules' bound with room for it. Members may so move to an
// earlier layer than their virtual one, where a lighter layer has room and their inputs are
// ready. The embedding writes before every block and lm_head reads after every block, so they
// bound nothing.
//
// Errors: OverLimit naming the limit when one cluster needs more heads or units than a layer has,
// or the packing needs more layers than the shape allows. Members the build never touched
// (MemberDims::used false) get no slot.
#pragma once

#include <string>
#include <vector>

#include "circuit/members.h"
#include "common/diag.h"

namespace qgpu::circuit {

struct PackLimits {
  int heads = 0;      // per layer
  int units = 0;      // per layer
  int layers = 0;     // in all
  std::string shape;  // named in errors
};

Expected<LayerPacking> packLayers(const std::vector<LayerMembers>& members,
                                  const PackLimits& limits);

}  // namespace qgpu::circuit
