// qgpu/circuit/scheduler.h — the scheduling stage (docs/machine.md §5) as gadgets: the PC table,
// the warp choice (barrier release included), the min-PC and the next active mask, computed at
// the position of a block's terminator and again at the next one (the two step-header tokens
// EX(b') and WM(w', m') are emitted from these two positions).
//
// ## The rule the circuit computes (and why it needs no waiting bits)
//
// The interpreter keeps a waiting bit per warp and releases them all when no warp is ready. Its
// update is self-referential (the release decision reads the bits it clears), and a circuit
// cannot write a memory at depth d from a decision made at depth > d at the same token (state
// climbs only through tokens, docs/circuit.md §5). So the stage computes an equivalent rule that
// needs only the PC table:
//
//   next(cur, bar, live) =  cur                          if ¬bar and warp cur has a live lane
//                           lowest live warp v > cur     else, if there is one
//                           lowest live warp v ≤ cur     else, if there is one (a release)
//                           CTA done                     else
//
// where `bar` = the terminator that just ran is a barrier, and live = exists ∧ not exited after
// the terminator. Why this is the interpreter's rule: at a CTA start warp 0 runs; a warp runs
// until it reaches a barrier or loses its last live lane; then the interpreter picks the lowest
// ready warp. Invariant (induction over switches): at a switch away from warp u, every live warp
// < u is waiting (it ran earlier in this barrier epoch and stopped at the barrier — a warp that
// lost all lanes is not live) and every live warp > u is ready (released, or not yet arrived).
// So the lowest ready warp is the lowest live warp > u; if there is none, no warp is ready, and
// either some wait (u itself or a warp < u: the release, after which all live warps are ready
// and the lowest live one runs) or none is live (the CTA is done). A release leaves every live
// warp ready and the lowest one runs, so the invariant holds again. `scheduler_spec_test` checks
// the rule against the interpreter's own scheduling on thousands of random programs with
// barriers, divergence, early exits, 1–16 threads and several CTAs.
//
// Then min-PC: b' = the lowest PC among the live lanes of w', m' = the live lanes of w' at b'.
//
// ## Inputs (sign fields, ±u in the residual, read from the pre-normed h at every layer)
//
//   reset    +1 at a CTA start (RUN, CTA): every PC row is rewritten with PC 0, not exited
//   term     +1 at a terminator position: the active lanes' PC rows are written
//   warp     2 bits, the current warp w; mask 4 bits, its active lanes m
//   kind     2 bits: 0 jmp, 1 br, 2 bar, 3 exit (the TERM word's encoding)
//   taken, next  6 bits each: block 0..31 in bits 0..4, bit 5 = exit (kExitTarget)
//   pred     4 bits: per lane, the branch predicate xor negate (br: lane l goes to taken iff set)
//   blockX   5 bits, the launch's threads per CTA (1..16): lanes 4w + l ≥ blockX never exist
// A reset position carries warp 0 and kind jmp; the position after a terminator repeats the
// terminator's inputs with term = −1 (it writes nothing and reads the same table, so it computes
// the same next EXEC).
//
// ## Layers (firstLayer = L; every MLP output is written with Prior::Replace, the full layout)
//
//   L   MLP  per lane l the PC row to write, t_l (6 bits: block, exited): reset → (0, 0); jmp,
//            bar → next; br → pred_l ? taken : next; exit → (0, 1). Per (w, l) the write enable
//            e_wl = reset ∨ (term ∧ warp = w ∧ m_l); per thread t = 4w + l exists_t = [t < blockX]
//            (a lookup over blockX); isBar. Selects gated by detectors: 5 + 1 units per bit.
//   L+1 GDN  16 latches (tap.h), head (w, l) = the PC row of lane l of warp w: written with t_l
//            where e_wl (one row, β = 1: the write replaces it — the reset is a rewrite of every
//            row, so no decay is needed), read after the write at every position.
//       MLP  live_t = exists_t ∧ ¬exited_t.
//   L+2 MLP  anyLive_w = [Σ_l live_wl ≥ 1] (a step pair).
//   L+3 MLP  the warp choice above as a lookup over (warp, isBar, anyLive): w' one-hot, w' bits,
//            done. When done, w' = 0 (so every later field still holds ±u).
//   L+4 MLP  the lanes of w': pcSel_l = pc_{w',l}, liveSel_l = live_{w',l} (one-hot muxes).
//   L+5 MLP  le_{l,l'} = [key_l ≤ key_l'] for the 12 ordered lane pairs, key = pc + 32·¬live
//            (|key_l' − key_l| ≤ 63: one step pair each).
//   L+6 MLP  m'_l = liveSel_l ∧ ⋀_{l'} le_{l,l'}; b' = pc of the first such lane (first_l =
//            liveSel_l ∧ ⋀_{l'<l} ¬le_{l',l} ∧ ⋀_{l'>l} le_{l,l'}, a detector gating 5 selects),
//            or 0 when w' has no live lane.
//   L+7 MLP  (with `emit`) the next token as an emit field (emit.h: family sign one-hot + index
//            bits): at a reset or terminator position EX(b') — or, when done, CTA, or END at
//            the last CTA (the `lastCta` input) — and at the position after them WM(w', m')
//            (index w'·15 + m' − 1 from oracle/trace.h's constructors: one 9-literal detector
//            per (w', m') pattern). The family dims are −u, +2u where a case's detector fires.
//            And `fault`: the step (b', w', m') faults at a divergent barrier, = nextBar ∧ a live
//            lane of w' is not in m' = [Σ_l (liveSel_l − m'_l) + 8·(nextBar − 1) ≥ 1] (m' ⊆
//            liveSel; one step pair). The FAULT token itself comes at the WM position (the
//            record stage's emit, not built): this field is what it reads.
// Margins: every gate is λG·N with N an exact integer (|N| ≤ 64), on ≥ λG, off ≤ −λG; the
// latches' margins are tap.h's.
//
// Budget (per stage, `units` counts the Replace cancels): 16 heads in L+1 (the whole of a `2b`
// layer: one head per (warp, lane), since a head answers one query per token and a row written
// by a terminator must not depend on a read of the same row), 617 MLP units over 7 layers
// (the widest, L, 244), ≈ 300 residual dims (field list in `Scheduler`); the emit layer L+7 adds
// 115 units (93 + one cancel per trace family) and 29 dims.
//
// Failing twins (`SchedulerTwin`): MaxPc (b' = the highest PC, le reversed) and NoRelease (the
// wrap-around of the warp choice writes "done": the barrier is never released).
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "circuit/emit.h"
#include "circuit/logic.h"
#include "circuit/tap.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

inline constexpr int kSchedLanes = 4;   // machine::kLanes
inline constexpr int kSchedWarps = 4;   // machine::kMaxWarps
inline constexpr int kSchedThreads = kSchedLanes * kSchedWarps;
inline constexpr int kSchedPcBits = 5;  // blocks 0..31 (machine::kMaxBlocks)
inline constexpr int kSchedTargetBits = kSchedPcBits + 1;  // + the exit bit
inline constexpr int kSchedRowBits = 8;  // a PC row: block 5, exited 1, 2 constant (dv/V = 16)

// Terminator kinds as the 2-bit `kind` field (the TERM word's encoding, docs/trace.md).
enum class SchedKind : uint8_t { Jump = 0, Branch = 1, Barrier = 2, Exit = 3 };

enum class SchedulerTwin : uint8_t {
  None,       // the gadget
  MaxPc,      // twin: the highest PC among the live lanes instead of the lowest
  NoRelease,  // twin: no barrier release (the wrap-around of the warp choice ends the CTA)
};

// The rule of the header as a pure function (what the circuit's lookup tables encode; the spec
// test compares it with the interpreter).
struct SchedView {
  std::array<uint8_t, kSchedThreads> pc{};   // thread t = 4w + l
  std::array<bool, kSchedThreads> live{};    // exists and not exited
  int warp = 0;                              // the warp that just ran
  bool barrier = false;                      // its terminator is bar
};
struct SchedChoice {
  bool done = false;  // no live lane in the CTA (then warp/block/mask are 0)
  int warp = 0;
  int block = 0;
  uint8_t mask = 0;
  bool operator==(const SchedChoice&) const = default;
};
SchedChoice scheduleNext(const SchedView& view, SchedulerTwin twin = SchedulerTwin::None);
// The divergent-barrier fault of the step `choice` names (machine.md §5: checked before its block
// runs): its block ends in bar (`nextBar`) and a live lane of its warp is not in its mask.
bool divergentBarrier(const SchedView& view, const SchedChoice& choice, bool nextBar);
// The warp part alone: the next warp, or −1 for "CTA done".
int chooseWarp(int warp, bool barrier, const std::array<bool, kSchedWarps>& anyLive,
               SchedulerTwin twin = SchedulerTwin::None);

struct SchedulerInputs {
  Field ballast;  // dims[0] +u on every token; ≥ 2 dims for split constants
  Field reset;    // 1
  Field term;     // 1
  Field warp;     // 2
  Field mask;     // 4
  Field kind;     // 2
  Field taken;    // 6
  Field next;     // 6
  Field pred;     // 4
  Field blockX;   // 5
  Field lastCta;  // 1, only with SchedulerSpec::emit: +1 while the launch's last CTA runs
  Field nextBar;  // 1, only with SchedulerSpec::emit: +1 when block b' ends in bar (the ROM's
                  // terminator bank read at the EX(b') token)
};

struct SchedulerSpec {
  int firstLayer = 0;  // layers firstLayer .. firstLayer + 6
  int firstHead = 0;   // value heads firstHead .. firstHead + 15 of layer firstLayer + 1
  SchedulerInputs in;
  double lambda = 1;   // λ of every layer input (the full layout: 1)
  float gain = 128;    // G of the MLPs and heads: λG ≥ 89
  float unit = 16;     // u
  SchedulerTwin twin = SchedulerTwin::None;
  bool emit = false;   // one more layer, firstLayer + 7: the next token's emit field
};

struct Scheduler {
  // L
  std::array<Field, kSchedLanes> target;  // 6 dims each: the row lane l's terminator writes
  Field enable;                           // 16: e_wl at dim 4w + l
  Field exists;                           // 16
  Field isBar;                            // 1
  // L+1
  std::array<Field, kSchedThreads> pc;    // 8 dims each: the latch read of thread t's PC row
  Field live;                             // 16
  // L+2 .. L+6
  Field anyLive;                          // 4
  Field nextWarpOneHot;                   // 4 (w' = 0 when done)
  Field nextWarp;                         // 2 bits of w'
  Field done;                             // 1
  std::array<Field, kSchedLanes> pcSel;   // 5 each
  Field liveSel;                          // 4
  Field le;                               // 12: pair index of (l, l') in `lePairs` order
  Field nextMask;                         // 4: m'
  Field nextBlock;                        // 5: b'
  EmitField emit;                         // L+7 (with SchedulerSpec::emit)
  Field fault;                            // L+7: the next step faults (divergent barrier)
  // Cost and margins.
  std::array<int, 8> units{};             // MLP units per layer L .. L+7 (with the cancels)
  int heads = 0;
  HeadMargins latch;
  GadgetReport mlp;                       // the margins over every MLP unit
};

// The ordered lane pairs (l, l'), l ≠ l', in the order of `Scheduler::le`.
std::array<std::pair<int, int>, 12> lePairs();

// Allocates the scheduler's fields from `alloc` and writes its weights. Usage diag for input
// fields of the wrong width, a config without the layers or 16 value heads (Hv = Hk), an MLP too
// small; OverLimit for λG < 89 (the gadgets' own checks).
Expected<Scheduler> buildScheduler(CircuitWeights& weights, FieldAllocator& alloc,
                                   const SchedulerSpec& spec);

}  // namespace qgpu::circuit
