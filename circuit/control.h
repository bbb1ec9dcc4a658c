// qgpu/circuit/control.h — the control stage (docs/circuit.md §4.1 T2, T3; §9 "Built: the control
// stage"): the scheduler (circuit/scheduler.h) fed from the model's own fields instead of test
// fields, and the step header, CTA, END, LIMIT and FAULT tokens emitted from it, on top of the
// front end (circuit/frontend.h, built first into the same weights).
//
// What it computes (every field ±u, the full layout, λ = 1 exactly):
//   reset    +1 at a RUN or CTA token (the token family one-hot)
//   term     the front end's isTerm (the block's terminator position)
//   kind, taken, next, negate   decoded from the fetched TERM word (fe.termWord, inverted polarity:
//            −u = bit set), at their packedLayout(Terminator) offsets
//   warp, mask   the front end's WM latch (fe.warp, fe.mask)
//   pred     per lane: the supplied predicate field xor the TERM word's negate bit
//   blockX, gridX   latched from the PROG word (as circuit/operands.h latches it: a PROG-tag latch,
//            progEnable = T ∧ PROG-tag, two launch latches of the assembled value's bits)
//   lastCta  [c ≥ gridX − 1], c = the CTA tokens since RUN (an event counter and 15 thresholds)
//   the step count s = s_1 + R1·s_2 + R1·R2·s_3 (trace.md "Step ticks", R_k = 100) in three event
//            counters: s_1 the EX tokens since RUN or TICK(1), s_2 the TICK(1) since RUN or
//            TICK(2), s_3 the TICK(2) since RUN; due_k = [s_k ≥ R_k] (TICK(k) is due), and
//            atLimit = ∧_k [s_k ≥ c_k] over the nonzero digits of
//            stepLimit = c_1 + R1·c_2 + R1·R2·c_3
// and then the next token, as an emit field (emit.h), at every position where the trace's next
// token is one of these:
//   EX(b')   at a reset or terminator position (the scheduler's emit), unless TICK(1) or LIMIT;
//            at a TICK position, unless TICK(2) or LIMIT: b' from the EX latch
//   WM(w',m')  at the position after (the EX token)
//   CTA, END   at a terminator position where the CTA is done (END in the last CTA)
//   TICK(1)  at a reset or terminator position where EX would come, when due_1
//   TICK(2)  at a TICK(1) position when due_2
//   LIMIT    where EX would come (at a reset or terminator position, or a tick's) and no tick is
//            due, when atLimit (trace.md: "LIMIT instead of the next EX", never before CTA or END)
// Why atLimit is exact with ≥: a counter never passes its ratio (s_k = R_k only until the TICK
// that resets it, and then a tick is due, which comes first), so ∧_k [s_k ≥ c_k] first holds
// where s = stepLimit, and LIMIT ends the run there.
//   FAULT    where the supplied fault field is +1 (the faulting op's position: the memory stage's
//            decision), and at the WM position of a step that faults at a divergent barrier (the
//            scheduler's fault, computed at the EX position and latched to the WM position)
// At any other position (a record's tokens) the emit field is unspecified here: the record
// emitter's (circuit/record_emit.h) business.
//
// Why the kind and warp go through a latch. The scheduler computes the next EXEC twice: at the
// terminator position (EX(b')) and at the position after (WM(w', m')), and both must see the same
// inputs. At the position after, the EXEC latches already hold the new b' (the EX token) but the
// WM latch still the old warp, and the fetched TERM word is b''s, not the terminator's that ran;
// so the warp-choice inputs (kind: isBar; warp) are written into a latch at every reset or
// terminator position (reset: kind jmp, warp 0) and read after the write at every position. At a
// terminator position the latch reads what it just wrote; at the position after it, the same.
// The targets, mask and pred are read only where the PC table is written (reset ∨ term).
//
// Why the divergent-barrier fault is latched. The scheduler's fault is right at the EX(b')
// position (the fetched TERM word is b''s there, and the PC table is the one the step starts
// from), but its FAULT token comes after WM; when block b' has no ops, WM is itself b''s
// terminator position and rewrites the PC table. So the fault is latched at every EX token
// (layer E) and read at the WM position.
//
// Why a tick position takes b' from a latch. The scheduler's EX(b') is right at the reset or
// terminator position (the PC table it writes there, the kind/warp latch); a tick position is
// none of these, so the EX latch holds the scheduler's emit index at every reset or terminator
// position (enable `enable`) and the tick position reads it back. A TICK is inert elsewhere: no
// record end (the front end's isOp, isTerm, exec are −1), no latch's enable.
//
// Layers (L = the front end's layer0; S = L + 5 the scheduler's firstLayer; E = S + 8):
//   L    head fe.heads[0]: the CTA counter (events CTA, reset RUN), counter.h, on this stage's own
//        quiet dims. MLP: tickEvent_k = TICK ∧ (index = k − 1), counterReset_k = RUN ∨ TICK(k).
//   L+1  head fe.heads[1]: the PROG-tag latch (enable the prompt-tag detector, value the PROG bit);
//        +1..+3: the step counter s_1 (events EX, reset counterReset_1), s_2 (events TICK(1),
//        reset counterReset_2), s_3 (events TICK(2), reset RUN).
//        MLP (after the front end's): progEnable = −u + 2u·[T ∧ PROG-tag].
//   L+3  heads fe.heads[3], +1: the launch latches (gridX, blockX; enable progEnable).
//   L+4  MLP (after the front end's): the decode, every output an exclusive AND over sign dims
//        (a literal "bit set" of the TERM word is sign −1):
//          reset   = RUN ∨ CTA                        enable = reset ∨ isTerm
//          kindL_i = ¬reset ∧ kind bit i set          warpL_i = ¬reset ∧ warp_i
//          taken_i = taken bit i set                  next_i = next bit i set
//          pred_l  = (p_l ∧ ¬negate) ∨ (¬p_l ∧ negate)
//          nextBar = kind = bar (the fetched TERM word: b' at the EX and WM positions)
//   S    heads 0: the kind/warp latch (enable `enable`, values kindL, warpL); 1..15: [c ≥ 1..15];
//        16, 17: due_1, due_2; then [s_k ≥ c_k] for each nonzero digit. MLP: the scheduler's
//        layer L, then lastCta = OR over g = 1..16 of (gridX = g ∧ [c ≥ g − 1]) (exclusive ANDs;
//        [c ≥ 0] is true).
//   S+1 .. S+7   the scheduler (with its emit layer S+7: the scheduler's emit field and fault).
//   E    head 0: the fault latch (enable the EX bit, value the scheduler's fault); head 1: the EX
//        latch (enable `enable`, values the scheduler's emit index bits). MLP: the final emit
//        field = the scheduler's (a linear copy per dim) with, in each override case c, −copy +
//        the target token's sign, or the EX latch's bit for a latched case (two detectors per dim,
//        gated by c's conjunction); with X = the EX-would positions (reset ∧ ¬done; term ∧ ¬reset
//        ∧ ¬WM ∧ ¬done; term ∧ WM ∧ ¬latchedFault ∧ ¬done) and every case but the first ∧ ¬sf:
//          FAULT:    sf;   WM ∧ latchedFault
//          TICK(1):  X ∧ due_1
//          TICK(2):  TICK(1) ∧ due_2
//          LIMIT:    X ∧ ¬due_1 ∧ atLimit;   TICK(1) ∧ ¬due_2 ∧ atLimit;   TICK(2) ∧ atLimit
//          EX(b' latched):  TICK(1) ∧ ¬due_2 ∧ ¬atLimit;   TICK(2) ∧ ¬atLimit (one case per
//                    failing digit: the digits before it hold, it does not)
//        (sf = the supplied fault field; the cases are exclusive).
// Margins: every gate is λG·N with N an exact integer; the latches' and counters' are theirs
// (tap.h, counter.h). The tick ratio must lie in counter.h's thresholdRange (≤ 105 at u = 16);
// the step limit in 1..R1·R2·R3 = 10^6 (trace::kModelStepLimit).
//
// Budget (heads added per layer; units; dims): L +1, L+1 +4, L+3 +2, S +20 (3 for the limit's
// digits, reserved whether or not each is nonzero; the scheduler adds 16 at S+1), E +2; units:
// L +8, L+1 +4, L+4 +73, S +32 (+ the scheduler's 617 + 115), E 2·(F + I) per case + cancels
// (F = kNumFamilies, I = tokenIndexBits()); residual dims: Control's fields (≈ 120) plus the
// scheduler's (≈ 330). `controlHeads` has the per-layer head counts for a key head dim.
//
// The prompt carries no step limit (trace v5): the limit is the compiled circuit's, as trace.md
// says; a model leg builds R1·R2·R3 (trace::kModelStepLimit).
//
// Failing twin (`ControlTwin`): SwapTargets (taken and next read from each other's bits).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "circuit/emit.h"
#include "circuit/frontend.h"
#include "circuit/scheduler.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

enum class ControlTwin : uint8_t {
  None,         // the stage
  SwapTargets,  // twin: the branch's taken and next targets decoded from each other's bits
};

struct ControlSpec {
  TokenLayout tokens;  // the front end's
  int layer0 = 0;      // the front end's L: this stage uses layers L .. L + 13
  // Supplied by the caller (sign fields, +u = 1):
  Field pred;   // 4 dims: per lane, the TERM word's branch predicate p as the predicate file holds
                // it (before negate), read at the terminator position
  bool predInverted = false;  // pred holds −u = true at L+4's MLP input: the front end's port 0
                              // (frontend.h predPort[0]) before the predicate file's flip
  Field fault;  // 1 dim: +1 where the trace's next token is FAULT (the faulting op's position);
                // 0 dims: no op of this build faults (no memory stage), the FAULT cases of the
                // supplied fault are left out
  // Heads and MLP units another stage already took in L..L+4 after the front end's own (the
  // operand select's, circuit/pipeline.h): this stage's follow them.
  std::array<int, 5> hostHeads{}, hostUnits{};
  int stepLimit = 64;  // LIMIT after this many steps (1 .. trace::kModelStepLimit)
  float headGain = 128;
  float mlpGain = 128;
  ControlTwin twin = ControlTwin::None;
};

struct Control {
  Field quiet, heavy;  // 6 quiet dims (0) and two +2u pads (Σx² as the full layout), counters:
                       // s_1 quiet[0], the CTAs quiet[1], s_2 quiet[2], s_3 quiet[3] (4 and 5
                       // unused: a +2u pad balances three)
  Field tickEvent;     // L MLP: [TICK(1), TICK(2)]
  Field counterReset;  // L MLP: [RUN ∨ TICK(1), RUN ∨ TICK(2)]
  Field progTag;       // L+1: [isPROG, ballast ×7]
  Field progEnable;    // L+1 MLP
  Field launch;        // L+3: [gridX (5), ballast ×3, blockX (5), ballast ×3]
  Field gridX, blockX;
  Field reset;         // L+4 MLP: 1
  Field enable;        // L+4 MLP: 1, reset ∨ isTerm
  Field kindWarp;      // L+4 MLP: 4, [kindL (2), warpL (2)]
  Field taken, next;   // L+4 MLP: 6 each
  Field pred;          // L+4 MLP: 4, pred xor negate
  Field nextBar;       // L+4 MLP: 1
  Field latch;         // S: [kind (2), warp (2), ballast ×4]
  Field ctaAtLeast;    // S: [c ≥ 1..15]
  Field tickAtLeast;   // S: [due_1, due_2] = [s_1 ≥ R1], [s_2 ≥ R2]
  Field limitAtLeast;  // S: [s_k ≥ c_k] for each nonzero digit c_k of stepLimit, k = 1..3
  Field lastCta;       // S MLP: 1
  Scheduler sched;     // S .. S+7
  Field faultLatch;    // E: [fault, ballast ×7]
  Field exLatch;       // E: [the scheduler's emit index (I), ballast]: b' for a tick position
  EmitField emit;      // E MLP: the next token
  Field decides;       // E MLP: 1 dim, +1 where `emit` is the next token (the positions listed
                       // above: reset, terminator, EX, TICK, a supplied fault, WM of a faulting
                       // step); elsewhere the record emitter's (RecordEmitSpec::overrideFrom)
  int stepLimit = 0;
  std::vector<int> heads;  // this stage's heads per layer L .. L+13 (the scheduler's included)
  std::vector<int> units;  // this stage's units per layer L .. L+13 (the scheduler's included)
};

// The stage's layers: L .. L + kControlLayers − 1 (the front end's five included).
inline constexpr int kControlLayers = 14;

// Value heads per layer L .. L+13 of the front end (without payload banks) and this stage.
std::vector<int> controlHeads(int64_t keyHeadDim);

// Builds the stage on top of `fe` (built into the same weights, fields from `alloc`; the front end
// with or without its payload banks). Usage diag for a config without the layers or heads (the
// front end's, the host's and this stage's per layer), input fields of the wrong width, a step limit outside
// the counter's range; the gadgets' refusals pass through. Writes this stage's quiet dims and pad
// into the trace embedding rows (any other circuit row must hold them too).
Expected<Control> buildControl(CircuitWeights& weights, FieldAllocator& alloc, const FrontEnd& fe,
                               const ControlSpec& spec);

}  // namespace qgpu::circuit
