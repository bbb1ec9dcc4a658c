// qgpu/circuit/predfile.h — gadget: the predicate file, written from the token stream and read by
// predicate index per port (docs/circuit.md §2 "predicates", §4.1 L2, §9 "Built: the predicate
// file").
//
// One DeltaNet head per read port (the memory gadget, circuit/memory.h): row p = predicate p
// (0..kPreds−1, 3 address bits), each row the 4-bit lane mask of the lanes where p is true, dual
// rail. The memory's values need dv/V a power of 4, so a row holds V = 8 value bits (the
// assembler's bits 0..7): the record's bits lie in 0..15 (docs/trace.md), so bits 4..7 are 0 on
// every write and read 0. The read is the 4 lanes' bits at once: the guard and selp / psrc of
// the op read the row of their predicate and take their lane's bit.
//
// The write is the record `WP(p) v(bits)` as it stands: at the T of the value after WP(p), row p
// takes bits. No lane rank and no per-lane enable are needed: the record carries the predicate's
// state in every active lane (guard-false lanes their kept bit) and 0 in the inactive lanes,
// which is the machine's state for this block: predicates are block-local and unset (false) at
// block entry (docs/machine.md §4), and every lane that runs the block is in m. So the heads are
// cleared at every block entry — the `EX` token — and at `CTA` (decay exactly 0, §2.1); after
// that an unwritten predicate reads 0 = false in every lane, which is the interpreter's "an unset
// predicate reads false", and the inactive lanes' 0 is never read (their lanes do not run the
// block). A predicate written twice in a block: the second write replaces the row (beta = 1).
//
// Three layers, the first two shared with the value assembler (circuit/assembler.h), L = layer0:
//   L   attention: the assembler's level-0 taps (heads 0..2).
//       MLP: `recordTag` = the token is a record tag (WU, WR, WP, MG, MS, NOP: one detector on the
//       family one-hot) and `reset` = the token is EX or CTA (one detector).
//   L+1 attention: the assembler's level-1 taps (heads 0..2); the tag latch (head 3, enable
//       recordTag; holds [ballast ×3, isWP, isWR, p (3 bits, the token's index)]).
//       MLP: the assembler (the value at every T), then the write enable (Prior::Replace: −u, then
//       +2u for T ∧ isWP ∧ ¬isWR; before the first tag the latch keeps its pad, isWP = isWR = +1,
//       which the AND refuses, so prompt values write nothing; after any other tag isWP = −1).
//   L+2 attention: the predicate heads, one per port (head `port`): key = the latched p, value =
//       the assembler's bits 0..7, enable as above, reset = `reset`; query = readKey[port] (3
//       sign bits); readout MemoryReadout::PadInverted (an empty row and r0-like unset rows read
//       exactly 0, Σx² unchanged). MLP: the polarity flip (one linear unit per dim, x → −x), so
//       `bits[port]` holds the lanes' bits with + = 1.
// Shared (PredicateFileSpec::Shared, the front end's use): the host's assembler and record tag
// replace L's and L+1's own (no heads 0..2 of its own, no record-tag detector), the tag latch sits
// at the host's head, the predicate heads at a later read layer after the host's heads, and every
// MLP unit after the host's; the read keys may then be computed by the host in between.
// Layout: the full layout (λ = 1, every dim ±u at every layer input). Config: linear_attention
// layers L..L+2, at least max(4, ports) heads per layer with their own key heads, value head dim
// 128, key head dim ≥ 8 (≥ 32 with ReadHeight::Exact: 8 cells of 4 rows).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "circuit/assembler.h"
#include "circuit/memory.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

// The predicate file's shape, derived from the machine (oracle/machine.h, oracle/trace.h).
struct PredicateFileShape {
  int lanes = 0;      // machine::kLanes: the bits of a row
  int preds = 0;      // trace::kPreds: the rows
  int predBits = 0;   // log2(preds): the key and read-key bits
  int valueBits = 8;  // V: the row's value dims (dv/V a power of 4; bits lanes..V−1 are 0)
  int maxPorts = 4;   // the guard, the two predicate sources (psrc0, psrc1) and dstPred's old bit
                      // (the front end's four, frontend.h)
};
PredicateFileShape predicateFileShape();

// Failing-twin knobs: each breaks one rule of the construction and must corrupt reads.
enum class PredicateFileTwin : uint8_t {
  None,      // the gadget
  CtaOnly,   // cleared at CTA only, not at block entry (EX): a predicate of an earlier block
             // reads where the machine reads "unset" (false)
  AnyValue,  // the write enable ignores the tag: every T writes its value (WR, MG, prompt values)
};

struct PredicateFileSpec {
  TokenLayout tokens;          // planned from a fresh allocator over the config's hidden size
  int layer0 = 0;              // L: layers L..L+2
  int ports = 1;               // 1..maxPorts (head `port` in L+2)
  std::vector<Field> readKey;  // `ports` fields of predBits sign dims: the predicate index
  float headGain = 128;        // G of every head (λG = 128)
  float mlpGain = 128;         // G of the MLP gadgets; the ANDs use 2G
  ReadHeight read = ReadHeight::Nominal;  // the predicate heads' read (memory.h); Exact at dk 128
  PredicateFileTwin twin = PredicateFileTwin::None;
  // Inside a host stage (the front end, frontend.h): with `shared` the file builds no assembler and
  // no record-tag detector of its own but takes the host's, its tag latch and predicate heads sit
  // where the host puts them, and its MLP units follow the host's in each layer.
  struct Shared {
    Assembler assembler;   // the host's: its value field's bits 0..7 are the write value
    Field recordTag;       // the host's record-tag dim (+u at WU WR WP MG MS NOP, else −u)
    int latchHead = 3;     // the tag latch's head in L+1
    int readLayer = 0;     // the predicate heads' layer (≥ L+2: the read keys may come later)
    int readHead = 0;      // the first predicate head there (one per port)
    std::array<int, 3> firstUnit{};  // MLP units the host already wrote in L, L+1, readLayer
  };
  std::optional<Shared> shared;
};

struct PredicateFile {
  PredicateFileShape shape;
  Assembler assembler;         // its value field's bits 0..7 are the write value
  Field recordTag;             // L MLP: 1 dim
  Field reset;                 // L MLP: 1 dim, +u at EX and CTA
  Field tagLatch;              // L+1: [ballast ×3, isWP, isWR, p (predBits)]
  Field writeKey;              // the latch's p
  Field enable;                // L+1 MLP: 1 dim
  std::vector<Field> out;      // [port]: V dims, + = 1 after L+2's MLP
  std::vector<Field> bits;     // [port]: out's first `lanes` dims, lane l's bit at dim l
  int headsUsed[3] = {};       // per layer L, L+1, the read layer (shared: the file's own only)
  int unitsUsed[3] = {};       // per layer L, L+1, the read layer (L+1: the assembler's and the
                               // enable's; shared: the file's own only)
  MemoryMargins predicateHead;
  HeadMargins latch;
};

// Builds the assembler and the predicate file into `weights` (fields taken from `alloc`, after
// the token layout and whatever the caller took). Usage diag for a config or spec that does not
// fit (layers, heads, ports, read keys, layout); the gadgets' own refusals pass through.
Expected<PredicateFile> buildPredicateFile(CircuitWeights& weights, FieldAllocator& alloc,
                                           const PredicateFileSpec& spec);

}  // namespace qgpu::circuit
