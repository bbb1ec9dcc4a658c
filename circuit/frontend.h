// qgpu/circuit/frontend.h — the first wired stages (docs/circuit.md §4.1 L0–L2, §9 "Built: the
// front end"): the front-end latches, the fetch from the program ROM and the operand reads of the
// register file, in five linear_attention layers driven by nothing but the trace tokens (the
// prompt of oracle/trace.h's encodePrompt, then the interpreter's run).
//
// What every position holds after the stack (all ±u sign fields, the full layout: λ = 1 exactly):
//   execBlock  b of the last EX(b); warp, mask: w, m of the last WM(w,m) (the EXEC latches)
//   opIndex    j: the record tags (WU WR WP MG MS NOP) since the last WM, as 4 bits (j mod 16),
//              and opAtLeast[15] = [j ≥ 16]. The ROM is keyed by record index (trace v5): op k's
//              row is k + the atomics with a register destination before it (each writes two
//              records: its memrec, or NOP without executing lanes, then its regrec), so at every
//              op position j is the row of the op that executes there
//   recordEnd  the position ends a record or starts the step: WM, NOP, or the T that ends a
//              record (the next token starts a record, or the step is over)
//   isOp       recordEnd and the fetched row is no continuation row: the position executes op j's
//              row or the terminator
//   isCont     recordEnd and the fetched row is a continuation row: the position between an
//              atomic's first record and its regrec. No op executes there (isOp = −1); the record
//              emitter starts the atomic's regrec there, from the old values the atomic's own
//              position computed (the later stages' business). Exactly one of isOp, isCont is +1
//              at a record end
//   isTerm     isOp and the block has no row j (j = the block's record count: the scheduler's
//              position); a continuation row is not absent (its head word holds its row ≥ 1)
//   fetched    the ROM words of (b, j): head, sources (and the block's terminator), inverted
//              polarity (−u = bit set), a word left out of the prompt reading 0; a continuation
//              row's head word holds its row and the continuation bit, its sources word is 0
//   operand    the register file's 3 ports × 4 lanes (+u = 1) read at (r_src(k), w), r_src(k) the
//              register of source k when its kind is Reg, else r0 (which reads 0)
//   oldDst     the register file's 4th port × 4 lanes (+u = 1) read at (dst, w), dst the fetched
//              head word's dst field (r0, which reads 0, for an op without one)
//   predPort   the predicate file (predfile.h, in this stage) read at 4 ports — the guard
//              predicate, psrc0, psrc1 (the ALU's p, q) and dstPred — each 4 lanes' raw bits
//              (+u = true) of predicate code − 1 of the fetched field (head word: guard predicate,
//              dstPred; sources word: psrc0, psrc1). Raw: the guard's negate is not applied (the
//              result stage decodes code and negate itself, result_stage.h's g_l). A code 0
//              (none) reads predicate 0 (the consumers ignore it: code 0 = unguarded, no source,
//              no destination) — except port 0: where the head word's guard code is 0 (an
//              unguarded op, a continuation row, the absent row at the terminator position) it
//              reads the TERM word's branch predicate (code − 1; code 0 or 1: predicate 0), so at
//              the terminator position it holds the branch's p before negate (the control
//              stage's, circuit/control.h); an unguarded op's consumers ignore port 0
//   exec       isOp ∧ ¬isTerm: an op executes here (the result stage's and emitter's enable)
// so at the position of op k of a step (row j), every lane's port k holds source k's register as
// the interpreter had it before the op (the previous op's record was written by the same token),
// oldDst dst's, and the predicate ports the predicates' lane bits as the interpreter had them
// before the op (the file is cleared at EX and CTA: block-local, unset = false); at a
// continuation position every register port reads r0 (0) and every predicate port predicate 0.
//
// The maths, layer by layer (L = layer0; the register file's and the assembler's are theirs,
// circuit/regfile.h, circuit/assembler.h):
//   L    heads: the assembler's 3 taps; the EX latch (tap.h, enable the EX family bit, values the
//        token's index bits 0..4 = b). MLP: the register file's index decode and record tag; the
//        prompt-tag detector (PROG BLK GW TERM GMEM RUN OP(s): one detector on the family one-hot).
//   L+1  heads: the assembler's 3 taps, the register file's tag latch, WM latch and value counter;
//        the op counter (counter.h: events = record tags, reset = WM; in a quiet dim), the record
//        kind latch (enable record tag: isWP, isMG, isMS), the prompt-tag latch (enable the
//        prompt-tag detector: isBLK, isTERM, isOP, the OP slot's 3 index bits; RUN latches "none",
//        so no run value writes the ROM). MLP: the assembler; then four clamped ANDs (assembler.h)
//        at a value's T: ROM slot enables head (OP(a)), sources (OP(b)), terminator (TERM) and
//        the BLK value's enable.
//   L+2  heads: the register file's thresholds [n ≥ 1..5]; [n ≥ 6..8] on the value counter (an
//        MG / MS record has up to 8 values); [j ≥ 1..16] on the op counter; the head-word latch
//        (enable: the OP(a) slot enable; values: the assembled value's op-index bits) and the BLK
//        latch (enable: the BLK value's T; values: its block bits) — read after their write, so at
//        an OP(a)'s own T the latch already holds its op index. MLP: the register file's write
//        enables; j's bits from the thermometer (one 2-literal AND per j: [j ≥ v] ∧ ¬[j ≥ v+1]
//        adds +2u to each set bit of v over a −u base); recordEnd = −u + 2u·(one of the exclusive
//        ANDs)
//          WM;  NOP;  T ∧ isWU ∧ ¬isWR ∧ [n ≥ 1];  T ∧ isWP ∧ ¬isMG ∧ ¬isMS ∧ ¬isWR ∧ ¬isWU ∧ [n ≥ 1];
//          T ∧ isWR ∧ ¬isWU ∧ (m = M) ∧ [n ≥ popcount(M)]           for each mask M (15);
//          T ∧ isMG ∧ ¬isMS ∧ ¬isWP ∧ ¬isWR ∧ ¬isWU ∧ (e = E) ∧ [n ≥ 2·popcount(E)], and MS likewise,
//                                                                    for each lane set E (30)
//        (n = the values since the record tag, the register file's counter; within a record n never
//        passes the record's count, so [n ≥ count] at a T is "the record's last value"; e is the
//        tag latch's r, which holds the index + 1 = e of MG(e) / MS(e); before the first record
//        tag the latches hold their pads, which no AND accepts).
//   L+3  heads: the ROM (rom.h) with the head, sources and terminator banks only
//        (payloadSlots = false: 2·(512 / dk) + 1 heads; with FrontEndSpec::payloadBanks all six
//        slots, 6·(512 / dk) + 1, their enables the same AND on the OP slot index), written at the prompt words' T with key
//        (head-word latch op bits, BLK latch) and the assembled word, read at (j, b) with
//        MemoryReadout::PadInverted. MLP: readKey[k] = (r_src(k), w): r_src bit i = kind(k) = Reg ∧
//        index(k) bit i (a 3-literal AND on the fetched sources word), w copied from the WM latch
//        (a cancel + a linear unit per dim); with cont = the fetched head word's continuation bit:
//        isOp = recordEnd ∧ ¬cont, isCont = recordEnd ∧ cont, isTerm = recordEnd ∧ ¬cont ∧
//        ([j ≥ 16] ∨ (¬[j ≥ 16] ∧ row j is absent)), absent = the head word's op-index and opcode
//        bits and source 0's kind bits all clear (a row j ≥ 1, op or continuation, has j in its
//        head word; row 0 is absent only if its opcode is 0 = mov, which has a source:
//        buildFrontEnd checks that on isa.def's table). (Two more ANDs than before: isOp and
//        isCont moved here from L+2, where the fetched row is not yet read.)
//        The 4th register port's key: (dst, w), dst bit i = the head word's dst bit i (a 1-literal
//        AND). The predicate ports' keys: p = code − 1, one AND per code 2..8 on the code's 4 bits
//        (the fetched word's field; code 0 and 1 leave p = 0); port 0 also one AND per code 2..8
//        of the TERM word's branch predicate with the head's guard code 0 (8 literals).
//   L+4  heads: the register file's 16 register heads (4 ports × 4 lanes) queried by readKey, then
//        the predicate file's 4 heads (predfile.h with PredicateFileSpec::Shared: this stage's
//        assembler and record tag; its tag latch at L+1 head 9 [isWP, isWR, p], its write enable
//        in L+1's MLP, its reset detector (EX ∨ CTA) in L's MLP) queried by predKeys (the reads
//        after the same token's WP write, as the register heads'). MLP: the polarity flips; exec
//        = isOp ∧ ¬isTerm (one AND: both are ready after L+3).
//
// Budget (heads per layer, the same at dk 64 and 128 except L+3; the `2b` shape has 16): L 4, L+1
// 10, L+2 26 (5 + 3 + 16 + 2: over one `2b` layer — the op counter's 16 thresholds need a layer of
// their own), L+3 2·512/dk + 1 (17 at dk = 64, 9 at 128), L+4 20 (16 register heads + 4 predicate
// heads: over `2b` by 4; a placement that fits moves the predicate heads to a layer after L+4).
// Units: L 83, L+1 467, L+2 179, L+3 168, L+4 548 (frontend_spec_test's hand counts). Residual dims:
// see FrontEnd. Every read is exact in fp32 at key head dim 64 and 128: the taps and latches and
// the predicate heads use ReadHeight::Exact (circuit/tap.h "The read height"; 4-row cells at
// dk 128), the ROM and the register heads one-row cells with the norm rail at dk 128
// (ReadHeight::NormRail, circuit/memory.h "Key head dim").
//
// Not handled (docs/circuit.md §9 "Built: the front end"): FAULT, LIMIT. The payload banks (i0..i2,
// offset) only with payloadBanks (their reader: circuit/operands.h). oldDst, predPort and exec are
// read by the execute pipeline (circuit/pipeline.h: the ALU's p, q, the result stage, the emitter).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "circuit/predfile.h"
#include "circuit/regfile.h"
#include "circuit/rom.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

// Failing-twin knobs: each breaks one rule and must give wrong fetches or reads.
enum class FrontEndTwin : uint8_t {
  None,             // the stage
  OpIndexOffByOne,  // j's bits decode the thermometer as j + 1 (fetches the next op's words)
  PredKeyOffByOne,  // a predicate port reads predicate p + 1 mod 8 (p = code − 1, code 0: p0)
};

struct FrontEndSpec {
  TokenLayout tokens;     // the full layout (λ = 1) of the config's hidden size
  int layer0 = 0;         // L: layers L..L+4
  float headGain = 128;   // G of every head (λG = 128)
  float mlpGain = 128;    // G of the MLP gadgets; the ANDs use 2G
  FrontEndTwin twin = FrontEndTwin::None;
  // The ROM's payload banks (i0..i2, offset; circuit/operands.h): their slot enables in L+1's
  // MLP and 4·(512 / dk) more heads at L+3. Off: the payload slots' dims stay pads.
  bool payloadBanks = false;
};

struct FrontEnd {
  RegisterFile rf;      // its assembler, latches, counter, thresholds and register heads
  RomShape romShape;
  Field exLatch;        // L: [b (5), ballast ×3] of the last EX
  Field execBlock;      // exLatch's b
  Field warp, mask;     // rf.wmLatch's w, m
  Field promptTag;      // L MLP: 1 dim
  Field kindLatch;      // L+1: [isWP, isMG, isMS, ballast ×5] of the last record tag
  Field promptLatch;    // L+1: [isBLK, isTERM, isOP, slot (3), ballast ×2] of the last prompt tag
  Field slotEnable;     // L+1 MLP: kRomSlots + 1 dims (head, sources and terminator written)
  Field blkEnable;      // L+1 MLP: 1 dim
  Field moreAtLeast;    // L+2: [n ≥ 6..8] on the value counter
  Field opAtLeast;      // L+2: dim N−1 = [j ≥ N], N = 1..kMaxOpsPerBlock
  Field romKeys;        // L+2: the head-word latch [ballast ×4, op (4)], then the BLK latch
                        // [b (5), ballast ×3]
  Field romWriteKey;    // romKeys' op bits and block bits (9 consecutive dims)
  Field opIndex;        // L+2 MLP: j mod 16 (4 dims), followed by exLatch
  Field fetchKey;       // opIndex + execBlock (9 consecutive dims): the ROM's read key
  Field recordEnd;      // L+2 MLP: 1 dim (WM, NOP, a record's last T)
  std::vector<Field> rom;  // L+3: kRomSlots + 1 words of 32 dims (the slots', the terminator's),
                           // inverted polarity; payload slots pads unless payloadBanks
  Field headWord, sourcesWord, termWord;  // rom's slots
  std::array<Field, 3> immWord;  // rom's slots i0..i2 (pads unless payloadBanks)
  Field offsetWord;              // rom's slot off (a pad unless payloadBanks)
  std::vector<Field> readKey;  // L+3 MLP: per port (r_src (4), w (2))
  Field isTerm;         // L+3 MLP: 1 dim
  Field isOp;           // L+3 MLP: 1 dim, recordEnd ∧ ¬(continuation row)
  Field isCont;         // L+3 MLP: 1 dim, recordEnd ∧ (continuation row)
  std::array<Field, 4> oldDst;  // L+4: the register file's 4th port per lane (32 dims, + = 1):
                                // dst's value before the op (0 for r0)
  Field predKeys;       // L+3 MLP: the predicate ports' keys, 3 dims each (guard, psrc0, psrc1,
                        // dstPred): p = code − 1 (code 0, none: p = 0)
  PredicateFile pf;     // the predicate file (shared assembler and record tag; heads at L+4)
  std::array<Field, 4> predPort;  // L+4: [guard, psrc0, psrc1, dstPred] per port 4 dims, lane l's
                                  // raw bit of the port's predicate at dim l (+u = true)
  Field exec;           // L+4 MLP: 1 dim, isOp ∧ ¬isTerm
  int heads[5] = {};    // per layer L..L+4
  int units[5] = {};    // per layer L..L+4 (the register file's and the assembler's included)
};

// Builds the stage into `weights` (fields from `alloc`, after the token layout). Usage diag for a
// config that does not fit (layers, heads with their own key heads, key head dim); the gadgets'
// refusals pass through.
Expected<FrontEnd> buildFrontEnd(CircuitWeights& weights, FieldAllocator& alloc,
                                 const FrontEndSpec& spec);

// Value heads per layer L..L+4 that buildFrontEnd needs for a key head dim (and the flag).
std::vector<int> frontEndHeads(int64_t keyHeadDim, bool payloadBanks = false);

}  // namespace qgpu::circuit
