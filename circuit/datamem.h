// qgpu/circuit/datamem.h — gadget: the data memories (global and shared, spill slots included),
// written from the token stream and read by a word address per lane (docs/circuit.md §2 "global
// memory", "shared memory", §4.1 L5, §9 "Built: the data memories").
//
// Each space is a memory gadget (circuit/memory.h) of 2^7 = 128 cells of 32 bits (the machine's
// 126 words, oracle/machine.h kGlobalWords / kSharedWords, and 2 rows that no record writes), one
// copy per lane read port (4 ports: every lane reads its own address in the same token, §2: a head
// answers one query per token). A port is `banks` heads (memory.h "Banks"): the top address bits
// pick the head. The cells per head are the key head dim over the rows per cell of the read
// (ReadHeight): key head dim 64 → 64 cells, 2 heads per port; 128 one-row (NormRail, exact with
// its rail channel; Nominal, the twin) → 1 head; 128 Exact (4-row cells, 32 per head) → 4 heads. A token that writes nothing has a zero key
// (NoWrite::ZeroKey: all 128 rows are cells, no scratch row).
//
// The writes (docs/trace.md): global memory from the prompt's `GMEM v(address) GW v(word)` pairs
// (row address ← word at the GW value's T) and from `MG(e) {v(word) v(value)}` records, shared
// memory from `MS(e)` records: per executing lane, in lane order, at the T of the k-th pair's
// value, row word_k ← value_k. The record carries the word after that lane's access, so two lanes
// storing to one word, lane-serial atomics and sub-word stores (docs/machine.md §4: the record is
// the whole word after the read-modify-write) are all plain word writes in record order: the
// delta rule's beta = 1 replaces the row, the last write stays. Shared memory is cleared at `CTA`
// (decay exactly 0, §2.1: shared memory is zeroed at every CTA start); global memory never.
// An unwritten word reads 0 (the pad-inverted readout: an empty row reads the word 0).
//
// Five layers, the first two shared with the value assembler (circuit/assembler.h), L = layer0:
//   L   attention: the assembler's level-0 taps (heads 0..2).
//       MLP: `tag` = the token has a family other than C and T (one detector on the family
//       one-hot): every such token starts a new context for the values that follow.
//   L+1 attention: the assembler's level-1 taps (heads 0..2); the tag latch (head 3, enable tag;
//       holds [ballast ×4, isGMEM, isGW, isMG, isMS] of the last tag); the event counter (head 4,
//       circuit/counter.h; events: every T, reset: tag), so at the k-th value after the tag
//       (0-based) the count is n = k + 1 at its T. MLP: the assembler (the value at every T).
//   L+2 attention: threshold heads [n ≥ N], N = 1..2·lanes (heads 0..2·lanes−1).
//       MLP (Prior::Replace: −u, then +2u for each of the exclusive ANDs, 2 units each):
//         addrEnable = T ∧ [GMEM] ∨ ⋁_k T ∧ ([MG] ∨ [MS]) ∧ rank 2k       (the word of a pair)
//         globalWrite = T ∧ [GW] ∨ ⋁_k T ∧ [MG] ∧ rank 2k+1                (its value)
//         sharedWrite = ⋁_k T ∧ [MS] ∧ rank 2k+1
//       where [X] = the latch holds X (isX ∧ ¬isY for one other flag Y: the empty latch's pad, all
//       flags +1, is refused), rank j = [n ≥ j+1] ∧ ¬[n ≥ j+2] (no second literal at j = 2·lanes−1).
//   L+3 attention: the address latch (head 0, enable addrEnable; holds the value's bits 0..6):
//       at a pair's value T it still holds the pair's word (its own enable is −1 there).
//   L+4 attention: the memory heads, per space per lane `banks` heads (global first): key = the
//       latched address, value = the assembler's 32 bits, enable = the space's write, reset =
//       CTA for shared memory; query = the lane's read address. MLP: the polarity flip (x → −x on
//       every out dim, + = 1 after it) and per space per lane the fault bit
//         fault = high ∨ [word ≥ words]
//       of the read address (word: 7 sign bits, high: 1 sign bit standing for every other reason
//       the computed byte address is invalid — bits above the word index, misalignment — that the
//       address stage decides; docs/machine.md §4): an exclusive sum of ANDs, one per zero bit of
//       `words` plus the equality (for 126: 2), and high alone.
// Layout: the full layout (λ = 1), with the counter's 3 quiet dims (0) and one heavy pad (+2u),
// written into the trace rows (any other circuit row must hold them too). Config: linear_attention
// layers L..L+4, at least max(5, 2·lanes, spaces·lanes·banks) heads with their own key heads,
// value head dim 128, key head dim 64 or 128.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "circuit/assembler.h"
#include "circuit/counter.h"
#include "circuit/memory.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"
#include "oracle/machine.h"

namespace qgpu::circuit {

// The data memories' shape, derived from the machine (oracle/machine.h).
struct DataMemoryShape {
  int lanes = 0;          // machine::kLanes: read ports per space
  int words[2] = {};      // kGlobalWords, kSharedWords (machine limits; fault at ≥)
  int addrBits = 0;       // ⌈log2 max(words)⌉: 7
  int rows = 0;           // 2^addrBits cells per copy
  int wordBits = 32;
  int thresholds = 0;     // [n ≥ N], N = 1..2·lanes (a memrec has ≤ lanes pairs)
};
DataMemoryShape dataMemoryShape();

// Heads per port for a key head dim and read height (the cells per head: dk over the read's rows
// per cell). Usage diag when the key head dim holds no power-of-two number of cells ≥ 2.
Expected<int> dataMemoryBanks(int64_t keyHeadDim, ReadHeight read);

// The gadget's own heads per layer L..L+4 for `banks` heads per port and `spaces` spaces: the
// assembler's taps (3), the tag latch and counter with the assembler's next taps (5), the
// thresholds, the address latch (1), the memory heads (spaces × lanes × banks).
std::array<int, 5> dataMemoryHeads(int banks, int spaces);

// Failing-twin knobs: each breaks one rule of the construction and must corrupt reads.
enum class DataMemoryTwin : uint8_t {
  None,        // the gadget
  PairShift,   // the address is latched at a pair's value and written at the next pair's word
               // (rank off by one): every MG/MS write lands at the wrong word
  NoCtaClear,  // shared memory's heads are not cleared at CTA: a CTA reads the last one's words
};

struct DataMemorySpec {
  TokenLayout tokens;           // planned from a fresh allocator over the config's hidden size
  int layer0 = 0;               // L: layers L..L+4
  bool spaces[2] = {true, true};  // build global, shared
  // Per space (indexed by machine::Space) per lane: 8 sign dims, the word index (7 bits, low first), then
  // `high` (+1: the address is invalid for another reason). Empty for a space not built.
  std::array<std::vector<Field>, 2> readAddr;
  ReadHeight read = ReadHeight::NormRail;  // the memory heads' read (memory.h); Exact: 4-row
                                           // cells at dk 128; Nominal: the one-row twin
  float headGain = 128;
  float mlpGain = 128;          // the ANDs use 2G
  // Where its heads and units start in each layer L..L+4 (a host's own come first there).
  std::array<int, 5> firstHead{};
  std::array<int, 5> firstUnit{};
  DataMemoryTwin twin = DataMemoryTwin::None;
};

struct DataMemory {
  DataMemoryShape shape;
  Assembler assembler;          // its value field is the write value
  Field tag;                    // L MLP: 1 dim
  Field tagLatch;               // L+1: [ballast ×4, isGMEM, isGW, isMG, isMS]
  Field quiet;                  // 3 quiet dims (0); quiet.at(0) holds the counter's level
  Field heavy;                  // 1 dim at +2u
  Field atLeast;                // L+2 heads: dim N−1 = [n ≥ N]
  Field addrEnable;             // L+2 MLP: 1 dim
  Field write;                  // L+2 MLP: [globalWrite, sharedWrite]
  Field addrLatch;              // L+3: [word bits 0..6, ballast]
  Field writeKey;               // addrLatch's first addrBits dims
  int banks = 0;                // heads per port
  std::array<std::vector<Field>, 2> out;    // [space][lane]: 32 dims, + = 1 after L+4's MLP
  std::array<std::vector<Field>, 2> fault;  // [space][lane]: 1 dim, +u = the address faults
  int headsUsed[5] = {};        // per layer L..L+4: the gadget's own, from spec.firstHead
  int unitsUsed[5] = {};        // per layer (L+1: the assembler's), from spec.firstUnit
  MemoryMargins memoryHead;
  EventCounterMargins counter;
  ThresholdMargins threshold;
  HeadMargins latch;
  int faultAnds = 0;            // ANDs of one lane's fault bit
};

// Builds the assembler and the data memories into `weights` (fields from `alloc` after the token
// layout and whatever the caller took) and writes the quiet dims and the heavy pad into the trace
// rows. Usage diag for a config or spec that does not fit (layers, heads, key head dim, read
// addresses, layout); the gadgets' own refusals pass through.
Expected<DataMemory> buildDataMemory(CircuitWeights& weights, FieldAllocator& alloc,
                                     const DataMemorySpec& spec);

}  // namespace qgpu::circuit
