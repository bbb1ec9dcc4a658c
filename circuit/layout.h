// qgpu/circuit/layout.h — the residual-dim allocator by liveness (docs/circuit.md §3.2, §7 pass 4).
//
// FieldAllocator (weights.h) in order hands out dims and never reuses one: one field per value.
// A `LayoutPlan` instead takes every field with its live range — the block that writes it and
// the last block that reads it — and lets fields whose ranges do not overlap share dims.
// planByLiveness (below) finds those ranges in a build's own weights, for a whole pipeline.
//
// Points. A decoder layer has two blocks, attention then MLP; each reads its whole input
// (the pre-norm of the residual) before it adds anything to the residual. A point is
// (layer, block), ordered by key = 2·layer + (block == Mlp); the embedding is layer −1's MLP
// point (key −1), before layer 0's attention.
//
// Live range [write, lastRead) in keys, lastRead > write. Two fields conflict iff their ranges
// intersect: A.write < B.lastRead and B.write < A.lastRead. So a field whose last reader is
// block p may give its dims to a field written by block p itself (the block reads the old value
// from its input and adds the new one after) or by any later block; a field written before the
// last read of another may not.
//
// The replace rule (why a reused dim needs nothing special): in the full layout (§3.2) every dim
// holds ±u at every layer input — a dim not yet used holds the +u pad — and every writer writes
// with Prior::Replace: one linear unit per dim cancels what the dim holds, exactly (λ is the
// layout's power of two), then the gadget writes ±u. A dead field's dim holds its last ±u word
// until the next writer cancels it, exactly as a pad does; Σx² never changes. So: a field placed
// on reused dims must be written with Prior::Replace — the same rule as for any dim of the full
// layout; Prior::Zero is wrong on a reused dim (and on a pad) and the layout cannot see it.
// `Placement::reused` tells the caller which fields landed on another field's dims.
//
// Exclusive kinds (Field::kinds): a field that holds a value only for some op kinds, its every
// writer guarded by them (units.h UnitGuard: silent, a cancel included, where none of them
// executes), may share dims with a live field of other kinds: at a token of one kind only that
// kind's writers touch the dims, so they hold its field's value where it is live and whatever
// they held before (±u) elsewhere; every reader of such a field must be one of its kinds' own or
// ANDed with them. planByLiveness keeps the kinds only of a field whose writers replace (no pad
// restore, no embedding value: a pad or an embedding write is not guarded).
//
// Algorithm: pinned fields first (at their offsets, refused when they conflict), then the rest
// in order of write, each at the lowest offset whose dims are free over its range (first fit).
// Per dim this is the greedy colouring of an interval graph by start, which is optimal for
// intervals; a field needs *consecutive* dims, so the span can exceed the peak: the difference is
// reported as fragmentation. Which of the fields written at one point goes first changes the
// fragmentation, so the placement is tried with three tie-breaks — larger first; longer-lived
// first, then larger; shorter-lived first, then larger (then request order) — each also with the
// fields of kinds after the others, and all of that again with the wide fields (≥ 256 dims)
// before the narrow ones (each group in order of write: a long-lived wide field needs a run of
// dims that narrow ones placed first leave only in pieces); the smallest span is kept (the first
// of equal ones). A field of kinds goes to the fit that shares the most dims with live fields of
// exclusive kinds (the lowest of equal ones), so that the kinds' fields stack.
//
// Report: peak live dims (the largest number of dims live at any point, those that fields of
// exclusive kinds share counted once; without such fields a lower bound for every layout), live
// dims per layer after its attention and after its MLP (the residual the next layer gets), the span
// (highest dim used + 1), fragmentation = span − peak.
//
// Errors: Usage for a bad request (no dims, lastRead ≤ write, a pinned offset outside the
// hidden size, a duplicate name, two pinned fields whose ranges overlap on shared dims — the
// message names both fields and the first shared dim); OverLimit when a field does not fit in
// the hidden size (the message names the field, its range and the hidden size).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

enum class Block : uint8_t {
  Attention,  // the layer's attention (DeltaNet) half
  Mlp,        // the layer's MLP half
};

struct Point {
  int layer = 0;
  Block block = Block::Mlp;
  int key() const { return 2 * layer + (block == Block::Mlp ? 1 : 0); }
};
inline constexpr Point kEmbedding{-1, Block::Mlp};
inline Point mlpAt(int layer) { return {layer, Block::Mlp}; }
inline Point attentionAt(int layer) { return {layer, Block::Attention}; }
std::string pointName(Point p);  // "embedding", "L3.mlp", "L0.attn"

struct LiveRange {
  Point write;     // the block that writes the field (kEmbedding for embedding fields)
  Point lastRead;  // the last block that reads it
};
// True iff the two ranges overlap (the fields may not share a dim).
bool conflicts(const LiveRange& a, const LiveRange& b);
// True iff the field holds its value after the block of this Point::key (write ≤ key < lastRead).
bool livesAt(const LiveRange& r, int key);
// Whether fields of these Field::kinds may share dims whatever their ranges: both a kind's alone,
// and no kind in common (at most one of them is written at any token, its writers guarded).
bool exclusiveKinds(uint32_t a, uint32_t b);

struct Placement {
  Field field;
  LiveRange range;
  bool reused = false;  // some dim of it held another field before: write it with Replace
};

struct LayoutReport {
  int peak = 0;                // most dims live at one point (block output)
  Point peakAt;                // where
  int span = 0;                // highest dim used + 1
  int fragmentation = 0;       // span − peak
  int oneFieldPerValue = 0;    // Σ dims: FieldAllocator's span for the same fields
  int firstLayer = 0;          // index i below is layer firstLayer + i (−1: the embedding)
  std::vector<int> liveAfterAttention;  // write ≤ key(i, attn) < lastRead
  std::vector<int> liveAfterMlp;        // write ≤ key(i, mlp) < lastRead
};

class LayoutPlan {
 public:
  // A field placed by the allocator; returns its index for `field(i)` after solve(). `kinds` as
  // Field::kinds: fields of exclusive kinds may share dims while both are live.
  int add(const std::string& name, int dims, LiveRange range, uint32_t kinds = 0);
  // A field at a fixed offset (a field placed before, or the failing twins' forced overlap).
  int pin(const std::string& name, int dims, LiveRange range, int offset);

  // Places every field in `hidden` dims; refusals as in the header.
  Status solve(int hidden);

  // After solve(): placements in request order, by index or by name.
  const std::vector<Placement>& placements() const { return placed_; }
  const Field& field(int index) const { return placed_[static_cast<size_t>(index)].field; }
  Expected<Field> field(const std::string& name) const;
  LayoutReport report() const;

  // One add or pin (offset set).
  struct Request {
    std::string name;
    int dims = 0;
    LiveRange range;
    std::optional<int> offset;
    uint32_t kinds = 0;
  };

 private:
  int request(Request r);
  std::vector<Request> requests_;
  std::vector<Placement> placed_;
  std::optional<Diag> badRequest_;  // the first bad add/pin, reported by solve()
};

// ---- A build's layout by liveness ----
//
// planByLiveness: the live range of each field a build took (FieldAllocator::taken of a build in
// order over a scratch hidden size) from the weights that build wrote (CircuitWeights::
// recordTouches), then a LayoutPlan of them — so that a stage states no live ranges: its weights
// do. Per dim d of a field:
//   - its writers are the blocks whose output rows touch d, its readers the blocks whose input
//     columns touch d, and lm_head;
//   - d starts at its first block writer w if that writer replaces (an MLP that also reads d at
//     w: Prior::Replace's cancel, circuit/logic.h) and nothing reads d before w;
//   - a first writer that needs the +u pad — an attention writer (tap.h HeadPrior::Pad) or an
//     MLP writer that adds onto what d holds — can have the pad back: d starts at the MLP before
//     the head's layer, or at the adding MLP itself, and there, if the plan put d where another
//     field lived before, a pad restore writes +u over it (`pads`, logic.h buildPad: its unit
//     reads d from the same input the adder reads, so the two add up to pad + the adder's word).
//     Given `unitsPerLayer` (the build's units by layer), such a field starts up to three layers
//     earlier, at the latest MLP with room for all its pads under the widest layer, and each pad
//     goes to the latest MLP back to the last read of d's earlier fields with room for it (else
//     the one with the fewest units); without it (empty), the field and its pads start at the MLP
//     right before its writer;
//   - otherwise — an embedding value, a read before any write, an attention writer at layer 0
//     (no MLP before it) — d starts at the embedding, so that it holds the embedding's pad or
//     value until its writer;
//   - d ends at its last reader, or one point after its last writer if that is later; a dim off
//     the norm (ResidualTouches: the embedding sets it to neither ±u, e.g. a counter's quiet 0
//     and heavy 2u) lives to the end, since a field on it would write ±u and change Σx².
// A field lives from its dims' earliest start to their latest end (an MLP point, or the
// embedding); only its dims that need the pad get one, never a dim a Replace writer cancels in
// the same MLP. A field nothing touches lives
// at lm_head's point alone (it may share any dim). Fields within the first `pinnedDims` dims keep
// their offsets (the token layout: writeTokenEmbeddings pads every dim after it).
//
// The plan is sound for a build whose every writer replaces or starts at the embedding (the
// rule above decides which, from the weights), and whose second build takes the same fields in
// the same order (FieldAllocator's planned mode checks it). Internal diags: a touched dim that no
// field holds, two taken fields on one dim, a field outside the touches' hidden size.
struct LivenessPlan {
  std::vector<Field> fields;       // the takes at their planned offsets
  std::vector<LiveRange> ranges;   // per take
  std::vector<bool> fromEmbedding; // per take: starts at the embedding by the rule above
  std::vector<PadRestore> pads;    // the dims that get the pad back before their writer
  int hidden = 0;                  // the span of the plan: the hidden size it needs
  LayoutReport report;
  // The allocator a build on this plan takes its fields from (and its pads: weights.h).
  FieldAllocator allocator() const { return FieldAllocator(hidden, fields, pads); }
};
Expected<LivenessPlan> planByLiveness(const std::vector<Field>& taken,
                                      const ResidualTouches& touches, int pinnedDims,
                                      const std::vector<int>& unitsPerLayer = {});

// The point of a key (−1 the embedding, 2i layer i's attention, 2i + 1 its MLP).
Point pointOfKey(int key);

}  // namespace qgpu::circuit
