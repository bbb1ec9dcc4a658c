// qgpu/circuit/regfile.h — gadget: the committed register file, written from the token stream and
// read by (warp, register) per port (docs/circuit.md §2 "registers, committed", §4.1 L2, §9
// "Built: the register file").
//
// Per lane one DeltaNet head per read port (the memory gadget, circuit/memory.h): rows keyed by
// (warp w, register r) as row 16w + r — 4 × 16 = 64 rows, of which the 60 with r ≥ 1 are ever
// written (r0 is the zero register: its rows stay empty and read 0) — each row one 32-bit value,
// dual rail (64 of the head's 128 value dims, dv/V = 4, R4). A token that writes nothing has an
// exactly zero key (NoWrite::ZeroKey, rule R6's "a key exactly 0": 64 rows fill a 64-dim key head,
// so there is no room for a scratch row). A `CTA` token clears every row (decay exactly 0, §2.1:
// registers are 0 at every CTA start). Every port is a copy of the same rows, written by the same
// tokens (§2: a head answers one query per token).
//
// Four layers, the first two shared with the value assembler (circuit/assembler.h), L = layer0:
//   L   attention: the assembler's level-0 taps (heads 0..2).
//       MLP: decode of the token's index field (a 6 → 10 lookup, circuit/logic.h): as a WM(w,m)
//       index p = 15w + m − 1 → w, m; as a WR(r) / WU(r) index p = r − 1 → r; and `recordTag`
//       = the token is a record tag (WU, WR, WP, MG, MS, NOP: one detector on the family one-hot).
//   L+1 attention: the assembler's level-1 taps (heads 0..2); two latches (circuit/tap.h): the
//       WM latch (enable: the WM family bit; holds w, m) and the tag latch (enable: recordTag;
//       holds isWR, isWU and r); the event counter (circuit/counter.h; events: every T, reset:
//       recordTag), so at the k-th value of a record (0-based) the count is n = k + 1 at its T.
//       MLP: the assembler (the value at every T).
//   L+2 attention: threshold heads [n ≥ N], N = 1..5. MLP: the per-lane write enables.
//   L+3 attention: the register heads, ports × lanes (head port·4 + lane). MLP: the operand
//       fields' polarity (below).
// The write enable of lane l (a ±u sign dim, Prior::Replace: −u, then +2u for each exclusive AND):
//   WR: T ∧ isWR ∧ ¬isWU ∧ m_l ∧ (m_0..m_{l−1} = P) ∧ [n ≥ k + 1] ∧ ¬[n ≥ k + 2], one AND per
//       pattern P of the lower mask bits, k = popcount(P): lane l is the (k+1)-th set bit of m, so
//       it takes the record's k-th value (docs/trace.md: values of all active lanes in lane order);
//   WU: T ∧ isWU ∧ ¬isWR ∧ m_l ∧ [n ≥ 1] ∧ ¬[n ≥ 2]: the record's one value, every active lane.
//   Before the first record tag the tag latch is empty and its out field keeps its pad (isWR =
//   isWU = +1), which neither AND accepts, so prompt values write nothing; values of WP, MG, MS
//   records see isWR = isWU = −1. 2 + 4 + 8 + 16 = 15 WR ANDs, 4 WU ANDs (2 units each, addAnd).
// The write: key = (the latched r, the latched w), value = the assembler's 32 bits, enable as
// above; every head of lane l (one per port) writes the same row.
// The read: port p's four heads are queried by readKey[p] = (r_src, w) (6 sign bits, register low)
// and write over the operand field's +u pad with MemoryReadout::PadInverted: a set bit → −u,
// a clear bit or an empty row → +u. So an unwritten register and r0 read exactly 0 with no second
// norm (every operand dim is ±u whatever is read, Σx² and λ unchanged). The L+3 MLP flips every
// operand dim in place (one linear unit each: x → −x, exact at λ = 1), so `operand[p][l]` holds
// the value with + = 1 after L+3. (A consumer that reads the inverted polarity saves these units.)
//
// Layout: the full layout of docs/circuit.md §3.2 (every dim ±u at every layer input, λ = 1 exactly),
// with the counter's 3 quiet dims (0) and one heavy pad (+2u) — buildRegisterFile writes those into
// the trace embedding rows; any other circuit row (a test's probe tokens) must hold them too.
// Ports: up to 4 — the 3 source operands and, in the front end (frontend.h), the destination's old
// value (keyed by (dst, w), the result stage's old_l).
// Config: linear_attention layers L..L+3, at least max(6, ports·4) heads per layer with their own
// key heads (Hv = Hk), key head dim ≥ 64, value head dim 128. The register heads read one-row
// cells with the norm rail (memory.h "Key head dim"): every read bit exactly ±u in fp32 and bf16
// at key head dim 64 and at 128, where the rail takes value channel 64.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "circuit/assembler.h"
#include "circuit/counter.h"
#include "circuit/logic.h"
#include "circuit/memory.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

// The register file's shape, derived from the machine (oracle/machine.h).
struct RegisterFileShape {
  int lanes = 0;        // machine::kLanes: one head per lane per port
  int warpBits = 0;     // warps 0..kMaxWarps−1
  int regBits = 0;      // registers 0..kRegs−1 (r0 the zero register)
  int keyBits = 0;      // regBits + warpBits: row 2^regBits·w + r
  int rows = 0;         // 2^keyBits rows per head
  int writtenRows = 0;  // kMaxWarps · (kRegs − 1): the rows a trace can write
  int wordBits = 32;
  int thresholds = 0;   // [n ≥ N] heads, N = 1..lanes + 1 (the rank of a value and "past the end")
  int maxPorts = 4;     // the 3 source operands per op and the destination's old value (the
                        // front end's 4th port, frontend.h)
};
RegisterFileShape registerFileShape();

// Failing-twin knobs: each breaks one rule of the construction and must corrupt reads.
enum class RegisterFileTwin : uint8_t {
  None,          // the gadget
  RankOffByOne,  // lane l takes the value of rank popcount(m & ((2 << l) − 1)) (its own bit
                 // counted): every WR lane gets its successor's value, the last one none
  NoReset,       // the heads' decay is not connected to CTA: values survive a CTA start
  NominalRead,   // the register heads read one-row cells without the norm rail (memory.h): at key
                 // head dim 128 the read bits come back ulps off ±u (signs right)
};

struct RegisterFileSpec {
  TokenLayout tokens;              // planned from a fresh allocator over the config's hidden size
  int layer0 = 0;                  // L (see the header): layers L..L+3
  int ports = 3;                   // read ports 1..maxPorts (heads port·4 + lane in L+3)
  std::vector<Field> readKey;      // `ports` fields of keyBits sign dims: r_src (regBits, low),
                                   // then the warp (warpBits)
  int readLayer = -1;              // the register heads' layer: L+3 (−1), or any later layer
                                   // (the front end computes readKey in between, frontend.h)
  float headGain = 128;            // G of every head (λG = 128)
  float mlpGain = 128;             // G of the MLP gadgets (λG = 128); the ANDs use 2G
  RegisterFileTwin twin = RegisterFileTwin::None;
};

struct RegisterFile {
  RegisterFileShape shape;
  Assembler assembler;          // its value field is the write value
  Field decoded;                // L MLP: w (warpBits), m (lanes), r (regBits) of the token's index
  Field recordTag;              // L MLP: 1 dim
  Field tagLatch;               // L+1: [ballast, ballast, isWR, isWU, r (regBits)] of the last tag
  Field wmLatch;                // L+1: [w (warpBits), m (lanes), ballast, ballast] of the last WM
  Field writeKey;               // = tagLatch r + wmLatch w (consecutive): (r, w) of the write
  Field quiet;                  // 3 quiet dims (0); quiet.at(0) holds the counter's level
  Field heavy;                  // 1 dim at +2u (keeps Σx² with the quiet dims)
  Field atLeast;                // L+2 heads: dim N−1 = [n ≥ N]
  Field enable;                 // L+2 MLP: lane l's write enable
  std::vector<std::array<Field, 4>> operand;  // [port][lane]: 32 dims, + = 1 after L+3's MLP
  int headsUsed[4] = {};        // per layer L..L+3
  int unitsUsed[4] = {};        // per layer L..L+3 (L+1: the assembler's)
  MemoryMargins registerHead;   // every register head has the same margins
  EventCounterMargins counter;
  ThresholdMargins threshold;   // of N = lanes + 1 (the smallest K)
  HeadMargins latch;
  int maxAndLiterals = 0;       // the widest write-enable AND
};

// Builds the assembler and the register file into `weights` (its fields taken from `alloc`, after
// the token layout and whatever the caller took), and writes the quiet dims and the heavy pad into
// the trace rows.
// Usage diag for a config or spec that does not fit (layers, heads, key head dim, ports, read
// keys); the gadgets' own refusals pass through.
Expected<RegisterFile> buildRegisterFile(CircuitWeights& weights, FieldAllocator& alloc,
                                         const RegisterFileSpec& spec);

// The index decode of L's MLP as a table (index p → w | m << warpBits | r << (warpBits + lanes)),
// exposed for the spec test.
std::vector<uint32_t> registerIndexTable();

}  // namespace qgpu::circuit
