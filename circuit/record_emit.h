// qgpu/circuit/record_emit.h — gadget: the output buffer and the record emitter (docs/circuit.md
// §4.1, T1 and T3 of the pipeline). At an op's executing position p the op's outcome is in the
// residual (here: test fields of the embedding, `RecordOutcome`); greedy decoding then writes the
// op's whole record (docs/trace.md "Grammar": WU(r) v | WR(r) v{popcount(m)} | WP(p) v(bits) |
// MG(e)/MS(e) {v(word) v(value)}{popcount(e)} | NOP), token by token at p+1 .. p+k, each value as
// trace::encodeValue writes it (C(d)* T(d), fewest chunks, most significant first), and then the
// given next token. Positions after p see only their own tokens (and the conv window), so the
// outcome is held at depth by latches written at p (the output buffer), and the emitter finds
// where it is inside the record — which value, which lane, which chunk — from the tokens alone.
//
// Contract (inputs). A *record position* p carries exec = +u and the outcome (carrier rows,
// `writeCarrier`; or, with `RecordEmitSpec::outcomeFrom`, the result stage's fields computed in
// the residual, circuit/result_stage.h); every other token carries exec = −u
// (`writeRecordEmbeddings`; or, with `RecordEmitSpec::execFrom`, exec is a residual field the
// caller computes: the front end's, circuit/pipeline.h). The outcome:
//   tag    the record's first token (the kind is given: WU vs WR is the trace's rule, decided
//          upstream); next  the token after the record (the next op's start is not known here)
//   mask   M: regrec / predrec the step's active lanes m; memrec the executing lanes e
//   values per lane: regrec the register's value after the op; memrec the word's value after that
//          lane's access; predrec bit 0 = the predicate in that lane (inactive lanes 0)
//   words  memrec: per lane the word index 0..125
// Lanes outside M are never read (the test fills them with noise). An atomic's memrec and regrec
// are two records: the regrec's record position is the memrec's last T.
//
// Construction (4 layers L..L+3, `firstLayer` = L; every field in the full layout of
// docs/circuit.md §3.2: every dim ±u at every layer input, λ = 1, heads write over +u pads, MLP
// outputs are replaced — one cancel unit per dim, then ±u):
//   L   GDN  the output buffer: 7 latches (tap.h, enable = exec): 4 lane values (32 bits each),
//            words+mask (4 × 7 word bits + 4 mask bits), tag (emit encoding: family sign one-hot +
//            index bits, padded to 32), next (the same); each is read at every later position
//            until the next record position overwrites it.
//            3 tap heads: the 8-bit records (assembler.h: present, chunk, isChunk, isTerminal)
//            of p−1..p−3 (V = 8: with V = 2 the gated norm's eps is not below half an ulp of the
//            mean square, and every copied −u comes out 1 ulp off — measured).
//            The value counter (counter.h): events = T tokens, reset = every non-chunk token
//            (the `isTag` embedding dim), so inside a record n = the values completed since its
//            tag (≤ 8 events between resets: inside the chunked prefill's limit of 24).
//   L+1 GDN  3 tap heads: L's records at tap 3, i.e. p−4..p−6; 8 threshold heads ge_N = [n ≥ N],
//            N = 1..8.
//       MLP  the selection (one AND per (kind, M, value index j) with the lane it names):
//              [n = j] = ge_j ∧ ¬ge_{j+1} (ge_0 ≡ 1); lane(M, k) = the k-th set bit of M, as the
//              AND of M's 4 literals (the enumeration over M is the lookup)
//              WU:      selV_lane(M,0)  ⇐ WU ∧ M ∧ [n = 0]
//              WR:      selV_lane(M,j)  ⇐ WR ∧ M ∧ [n = j],     j < popcount(M)
//              MG / MS: selW_lane(M,j/2) (j even) / selV_lane(M,j/2) (j odd)
//                                       ⇐ MG ∧ M ∧ [n = j],     j < 2·popcount(M)
//              WP:      wpAct           ⇐ WP ∧ [n = 0]
//            so at most one of the 9 dims holds, and none once the record's values are done.
//            Every AND also needs ¬empty: the tag latch's dim 28 (−u at every record position),
//            because before the first record position the empty latch reads its pad, +u on every
//            family dim at once (without it the selection wrote 3u there: measured, λ off).
//   L+2 MLP  the mux: cur_i = Σ_l selV_l ∧ value_l[i] + Σ_l selW_l ∧ word_l[i] (i < 7)
//            + wpAct ∧ value_l[0] for i = l (the predicate bits: one chunk, 0..15); and
//            done = ¬selV_0..3 ∧ ¬selW_0..3 ∧ ¬wpAct (every value of the record written).
//   L+3 MLP  the next token, into the emit field (emit.h's readout: margin 2Wλf):
//              exec:          the latched tag (emit_i ⇐ exec ∧ tag_i)
//              ¬exec ∧ done:  the latched next token
//              otherwise:     chunk e = len(cur) − 1 − r of cur, C if e > 0 else T, where r = the
//                             C's ending at this position (R_k = isC_0 ∧ … ∧ isC_{k−1}, isC =
//                             isChunk ∧ ¬isTerminal, from the token and the 6 records) and
//                             L_m = [len(cur) ≤ m] = AllOnes(cur_{5m−1..31}) + AllZeros(…):
//                             [r = r'][len = n'] = (R_r' − R_{r'+1})(L_n' − L_{n'−1}), each product
//                             an AND of literals times the output bit's literal (emit.h's counter).
//            At a T the count has just moved on (the read follows the write), so `cur` is already
//            the next value and r = 0: the first chunk of value n, or `next` when done.
//            With RecordEmitSpec::overrideFrom every AND above also needs ¬when, `next` is not
//            built (no latch, no carrier field: 10 heads at L), and emit_i ⇐ when ∧ src_i copies
//            the control stage's token where it decides (fan-in ≤ 36).
// Every AND is a clamped pair (assembler.h `addAnd`, Gλ = 256, fan-in ≤ 35 in L+3); every literal
// is exactly ±λ, so every decision is ±Gλ·N with N an exact integer (R1) and each written dim ends
// at exactly ±u.
//
// Budget (counted by the build, pinned by hand in tests/record_emit_spec_test.cpp):
//   heads     L: 7 latches + 3 taps + 1 counter = 11;  L+1: 3 taps + 8 thresholds = 11
//   units     L+1: 9 cancels + 2 base + 2·176 ANDs (WU 15, WR 32, MG 64, MS 64, WP 1) = 363
//             L+2: 33 cancels + 2 base + 2·161 ANDs (128 value bits, 28 word bits, 4 predicate
//                  bits, done) = 357
//             L+3: 28 cancels + 2 base + 2·56 (tag, next) + the chunk ANDs (`units[3]`)
//   dims      embedding extras: exec 1, isTag 1, 3 quiet + 1 heavy pad (the counter, counter.h:
//             Σx² stays H·u²), test fields 4·32 + 32 + 32 + 32 = 224; buffer 224; records 6 · 8;
//             thresholds 8; selection 9; cur + done 33; emit kNumFamilies + tokenIndexBits()
// Before the first record position the latches are empty (their fields keep the pad) and what is
// emitted is not specified; so is every position that is neither a record position nor inside a
// record (the emitter knows nothing of EX / WM / the scheduler).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "circuit/assembler.h"
#include "circuit/counter.h"
#include "circuit/emit.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"
#include "oracle/trace.h"

namespace qgpu::circuit {

inline constexpr int kRecordLanes = 4;      // machine::kLanes
inline constexpr int kRecordWordBits = 7;   // word indices 0..125
inline constexpr int kRecordCountMax = 8;   // a memrec of 4 lanes: 8 values
inline constexpr int kRecordLayers = 4;

// What one op's record shows, as the fields the result stage (T1) would hand over.
struct RecordOutcome {
  trace::Token tag = trace::single(trace::Family::Nop);
  trace::Token next = trace::single(trace::Family::End);
  uint8_t mask = 0;                            // m (regrec, predrec) or e (memrec)
  std::array<uint32_t, kRecordLanes> values{}; // see the header
  std::array<uint8_t, kRecordLanes> words{};   // memrec: word indices
};

// Where the buffer latches read an outcome computed in the residual (the result stage,
// circuit/result_stage.h) instead of the carrier's test fields: the same shapes and encodings as
// RecordEmitter::inValue / inWordMask / inTag (32 sign dims each, +u = 1).
struct RecordOutcomeFields {
  std::array<Field, kRecordLanes> value;  // per lane: the value (predrec: bit 0 = the lane's bit)
  Field wordMask;                         // 4 × 7 word bits, then 4 mask bits
  Field tag;                              // the emit encoding, −u above it
};

enum class RecordEmitTwin : uint8_t {
  None,           // the gadget
  LaneByValueIndex,  // failing twin: value j comes from lane j (memrec: lane j/2), not from the
                     // j-th set bit of the mask (wrong for every mask with a gap below a lane)
};

struct RecordEmitSpec {
  TokenLayout tokens;     // planned first on a fresh allocator over the config's hidden size
  int firstLayer = 0;     // layers firstLayer .. firstLayer + 3
  int firstHead = 0;      // heads firstHead .. firstHead + 10 in the first two layers
  float headGain = 128;   // G = Gv of the latches and taps (λG = 128), Gz = headGain/4
  float mlpGain = 256;    // the ANDs: Gλ = 256
  float emitWeight = 8;   // W of the readout
  RecordEmitTwin twin = RecordEmitTwin::None;
  // Set: the value, word/mask and tag latches read these fields (T1's), and the test fields
  // inValue / inWordMask / inTag are not allocated (writeCarrier then writes exec and inNext
  // only). The next token stays a test field (the scheduler's, not connected yet).
  std::optional<RecordOutcomeFields> outcomeFrom;
  // Null: the emitter's fields follow the token layout, from an allocator of its own; else it
  // takes them from this one (the caller's, after the caller's own fields, or a planned layout).
  FieldAllocator* into = nullptr;
  // Set: exec is this 1-dim residual field (±u, +u = a record position: the front end's exec,
  // circuit/frontend.h), computed before firstLayer; no exec embedding dim is allocated and
  // writeRecordExtras / writeCarrier leave exec alone (RecordEmitter::exec is this field).
  std::optional<Field> execFrom;
  // Set: where `when` (1 dim, ±u, computed before firstLayer + 3) is +u the emitted token is
  // `emit`'s — the control stage's (circuit/control.h: EX, WM, CTA, END, LIMIT, FAULT at reset,
  // terminator, EX and faulting positions) — and the emitter's own choice elsewhere: every AND of
  // L+3 gains the literal ¬when, and one AND per emit dim copies `emit` (when ∧ emit_i). The
  // next-token latch and its carrier field are then not built (10 heads at L): the token after a
  // record is the control stage's (a terminator position) or the next op's tag (exec).
  struct Override {
    EmitField emit;
    Field when;
  };
  std::optional<Override> overrideFrom;
};

struct RecordEmitter {
  TokenLayout tokens;
  // Embedding extras (writeRecordEmbeddings / writeCarrier fill them; exec is the caller's field
  // with RecordEmitSpec::execFrom).
  Field exec, isTag, quiet, heavy;
  bool execEmbedded = true;  // false with execFrom
  std::array<Field, kRecordLanes> inValue;  // test fields at a record position (32 dims each;
                                            // 0 dims with outcomeFrom)
  Field inWordMask;                         // 4 × 7 word bits, then 4 mask bits (or 0 dims)
  Field inTag, inNext;                      // emit encoding, 32 dims (the rest −u; inTag: or 0;
                                            // inNext: 0 dims with overrideFrom)
  // The output buffer (latch outputs), same shapes.
  std::array<Field, kRecordLanes> value;
  Field wordMask, tag, next;                // next: 0 dims with overrideFrom
  std::array<TokenRecord, kWindow> back;  // the 8-bit records of p−1 .. p−6 (assembler.h)
  Field atLeast;                    // kRecordCountMax dims: [n ≥ N], N = 1..8
  Field sel;                        // selV_0..3, selW_0..3, wpAct
  Field cur;                        // 32 bits: the value being written
  Field done;                       // 1 dim
  EmitField emit;
  std::array<int, kRecordLayers> heads{};  // per layer (from firstLayer)
  std::array<int, kRecordLayers> units{};  // per layer, incl. the cancels
  int dims = 0;                            // residual dims used in all (the allocator's span)
  int maxFanIn = 0;                        // literals of the widest AND
  double logitMargin = 0;                  // 2·W·λf
};

// Needs ≥ firstLayer + 4 linear_attention layers, ≥ firstHead + 11 value heads (Hv = Hk), dv
// with dv/32, dv/8 and dv/2 powers of 4 (128), an untied head and room for the fields in the
// hidden size (OverLimit otherwise). Writes the heads, the MLP units and the lm_head rows.
Expected<RecordEmitter> buildRecordEmitter(CircuitWeights& weights, const RecordEmitSpec& spec);

// The trace rows of the embedding: writeTokenEmbeddings plus the extras (exec −u, isTag, the
// counter's quiet and heavy dims); the test fields keep their +u pads.
Status writeRecordEmbeddings(CircuitWeights& weights, const RecordEmitter& emitter);
// The extras alone, over trace rows already written: for a stack whose other stages wrote their
// own embedding dims at build (the register file's counter dims: writeTokenEmbeddings would
// reset them to pads). circuit/pipeline.h calls it.
Status writeRecordExtras(CircuitWeights& weights, const RecordEmitter& emitter);

// A carrier row (≥ kVocabSize): the embedding of `base` (the token at the record position, whose
// trace row must be written) with exec = +u and the outcome in the test fields (with outcomeFrom:
// only `next`; the rest of `outcome` is then the caller's fields' business; with execFrom exec is
// not written: the row is base's there). Usage diag for a
// row outside the vocabulary or a tag that is not a record tag.
Status writeCarrier(CircuitWeights& weights, const RecordEmitter& emitter, int64_t row,
                    trace::Token base, const RecordOutcome& outcome);

}  // namespace qgpu::circuit
