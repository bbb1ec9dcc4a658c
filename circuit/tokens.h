// qgpu/circuit/tokens.h — the embedding rows of the trace vocabulary as residual fields.
//
// Every trace token (oracle/trace.h: all families of trace::kFamilies, read generically, so a
// family added or removed needs no edit here) embeds as the same set of ±`unit` dims; only the
// signs differ from token to token, so every circuit token has the same norm and the pre-norm's
// λ is one number for all of them (rule R3 of docs/circuit.md):
//   ballast      B dims, +1 on every token (constants, beta, z gates, the tap heads' "present")
//   family       F = kNumFamilies dims, sign one-hot: +1 on the token's family, −1 on the others
//   index        I = ⌈log2(largest family count)⌉ sign bits of the index within the family
//                (bit i: +1 = 1)
//   chunk        5 (trace::kChunkBits) sign bits of the chunk value for a C or T token; all −1
//                (value 0) for every other token
//   isChunk      +1 for C and T, −1 otherwise
//   isTerminal   +1 for T, −1 otherwise
// The full layout (docs/circuit.md §3.2): every other dim of the hidden size — the pads, where
// later layers write their fields — holds +unit in the embedding, so every dim of every circuit
// token is ±unit, mean(x²) = unit² and λ = unit/√(unit²) = 1 exactly: every ±unit dim leaves the
// pre-norm as exactly ±1 in fp32 and bf16 (the eps 1e-6 is below half an ulp of unit²). Every
// later gadget replaces its destination dims with ±unit (tap.h, logic.h, assembler.h), so λ is
// the same 1 at every layer input.
//
// The trace sits at embedding rows [rowOffset, rowOffset + trace::kVocabSize): 0 for a
// trace-only vocabulary, trace::kQwenFirstId (248077) for the `2b` shape. Rows outside stay as the
// caller left them (zero: the circuit never reads a text token in this leg).
//
// `emitLogits` is the matching readout (emit.h uses it): an lm_head row per trace token that reads
// a family one-hot + index sign field.
#pragma once

#include <cstdint>
#include <string>

#include "circuit/weights.h"
#include "common/diag.h"
#include "oracle/trace.h"

namespace qgpu::circuit {

// Sign bits needed for the index within the largest family (at least 1).
int tokenIndexBits();

struct TokenLayout {
  Field ballast;
  Field family;      // kNumFamilies dims, in kFamilies order
  Field index;       // tokenIndexBits() dims
  Field chunk;       // kChunkBits dims
  Field isChunk;     // 1 dim
  Field isTerminal;  // 1 dim
  float unit = 16;   // every embedding dim is ±unit (pads +unit)
  double lambda = 1; // the pre-norm output of a +unit dim, at every layer input (full layout)
  int hidden = 0;    // the hidden size the layout was planned for (every dim is written)
  int64_t rowOffset = 0;
  int fieldDims() const {
    return ballast.dims + family.dims + index.dims + chunk.dims + isChunk.dims + isTerminal.dims;
  }
};

// The dim of family f's sign in the layout (one definition for every gadget that reads a tag).
inline int familyDim(const TokenLayout& t, trace::Family f) {
  return t.family.at(static_cast<int>(f));
}

// A packed prompt word's field by name (oracle/trace.h packedLayout: the host packer's own
// table), so that a gadget reads the same bits encodePrompt writes; Usage diag naming `gadget`
// for a field the word does not have.
Expected<trace::PackedField> packedField(trace::PackedWord word, const char* name,
                                         const std::string& gadget);
// The dims of that field in `word`, a field holding the whole packed word (its bit i at dim
// i); Usage diag naming `gadget` when the field is missing or not `width` bits wide.
Expected<Field> packedSlice(const Field& word, trace::PackedWord kind, const char* name, int width,
                            const std::string& gadget);

// Ballast dims of the token layout: constants of up to 8 pieces of 8 significant bits (R4).
inline constexpr int kTokenBallastDims = 8;

// Allocates the token fields at the start of `alloc` (which must be fresh, over `hidden` dims).
// OverLimit when the hidden size cannot hold the fields and the ballast.
Expected<TokenLayout> planTokenLayout(FieldAllocator& alloc, int hidden, int64_t rowOffset = 0);

// The sign (+1 / −1) a layout field holds for `token` (a local trace id < kVocabSize): the
// embedding is unit × these signs. Exposed for the writer and for gadgets that need to know which
// tokens set a field; tests compute their expectations from oracle/trace.h, not from this.
int familySign(trace::Token token, int family);
int indexBit(trace::Token token, int bit);
int chunkBit(trace::Token token, int bit);
bool isChunkToken(trace::Token token);
bool isTerminalToken(trace::Token token);

// Writes the kVocabSize embedding rows: the fields' signs × unit, +unit on every other dim. Usage
// diag when the rows do not fit the config's vocab or the layout was planned for another hidden
// size.
Status writeTokenEmbeddings(CircuitWeights& weights, const TokenLayout& layout);

}  // namespace qgpu::circuit
