// qgpu/ptxeval/eval.h — the second PTX oracle: executes a parsed PTX module (host/ptx/ir.h, after
// its verify()) directly, with PTX semantics, without lowering.
//
// It is written independently of oracle/ and host/lower/ (it includes neither): the differential
// tests compare it with lower + interpret, so a shared helper would hide a shared bug. What it
// defines (ptxeval/README.md has the full argument):
//
// - Registers have their declared PTX width (8..64 bits, .pred one bit); every integer op is
//   computed at the width of its instruction type (16/32/64; mul.wide/mad.wide at twice that).
// - Memory is byte-addressed and little-endian: global memory is the machine's 126 words
//   (504 bytes at byte addresses [0, 504)) with the kernel's arrays where the caller put them
//   (`Launch::global`, pointer parameters are byte addresses, as kernels::layout makes them).
//   Generic addresses (ld/st/atom without a state space) are PTX's: the shared window sits at
//   [kSharedGenericBase, kSharedGenericBase + kSharedGenericSpan) of the generic space and every
//   other generic address is a global one (the machine's convention for global memory: clang's
//   generic atom.inc on the pre-cvta pointer relies on it); `cvta.shared` adds the base to a
//   shared-window address, `cvta.to.shared` subtracts it (of an address outside the shared window
//   PTX leaves the result undefined: counted as unspecified), `cvta[.to].global` is the identity;
//   `[sym]` of a .shared variable is a shared address. Shared memory is one window per CTA: the entry's .shared variables in declaration order, each aligned to
//   max(.align, 4) bytes, filled with `EvalOptions::sharedFill` at CTA start. Local memory
//   (`.local` variables: the compilers' __local_depotN frames) is one window per thread, filled
//   with `sharedFill` at CTA start. Each activation of a function has a frame in it: the entry's
//   at 0, a called function's at its caller's frame end rounded up to its largest max(align, 4)
//   (a function without .local variables takes no bytes), its variables in declaration order,
//   each at a multiple of max(align, 4) — so sibling calls share bytes, and what a frame holds
//   before its function writes it is whatever the window held (unspecified in PTX). The window
//   is as long as the furthest chain of calls reaches, rounded up to a word (a recursive call
//   through a function with .local variables is refused: no bound). ld/st.local and
//   `[depot+off]` address the executing activation's frame, the local window
//   [kLocalGenericBase, + kLocalGenericSpan) of the generic space maps onto the window
//   (`cvta.local`, `cvta.to.local`), and an atomic on a local address is refused. An access outside
//   its window, or not aligned to its size, ends the run with status Fault (a MachineFault diag
//   naming CTA, thread, instruction, line, space, address and window size).
// - Scheduling (the order only matters for racy programs and for which value an order-dependent
//   atomic returns): CTAs one after another; in a CTA, the lowest-numbered warp that can run runs
//   until all its live threads wait at a barrier or have exited; inside a warp the live threads
//   step one PTX instruction each in lane order 0..3, round-robin. For threads on the same path
//   this is exactly the machine's "lanes in lane order within one op, warp by warp between
//   barriers" (docs/machine.md §4-5), so order-dependent atomics (exch, cas, inc/dec) agree with
//   the machine whenever the lanes of a warp execute them convergently. Atomics are serialised in
//   that order; each returns the value before its own update.
// - Warp operations (shfl, vote, bar.warp.sync) are collective: a thread that reaches one waits
//   until every live (not exited) thread of its warp waits at the SAME instruction, then all
//   execute it together. Block barriers (bar.sync / barrier.sync 0, bar.red.{popc,and,or}) wait
//   for every live thread of the CTA ("all non-exited threads", as the machine). Anything else —
//   lanes of one warp waiting at different warp ops, or at a warp op and a barrier; a barrier
//   reduction reached by some threads while others wait at another barrier instruction; guarded
//   barriers or warp ops; named barriers or thread counts; activemask; %clock and other specials
//   that have no value on the machine; ld/st.param through a register; cvta of .const;
//   calls nested deeper than kMaxCallDepth — is refused with PtxUnsupported, naming the
//   instruction and its line.
// - What PTX leaves unspecified gets the machine's documented value (so an unguarded speculative
//   division still compares) and is COUNTED in `EvalResult::unspecified` with the first
//   occurrence described: division or remainder by zero, signed division of the minimum by -1,
//   a barrier reduction (bar.red) reached after some threads of the CTA exited (the reduction
//   is over the live threads; lowering's bar.red.and compares with %ntid.x, so they differ).
//   A generator that claims to be UB-free checks that this count is 0.
// - `%laneid` = tid % 4, `%warpid` = tid / 4, `WARP_SZ` = 4 (the machine's warp), `.y/.z`
//   indices 0 and extents 1 (launches are 1-D). Shuffles follow the PTX formula on lanes 0..3; a
//   source lane that is not a live lane of the 4-lane warp (j >= 4 with width 32) reads the
//   caller's own value and sets the `|p` result false.
// - A run that executes more than `EvalOptions::maxInstructions` instructions (all threads
//   together) ends with status StepLimit.
// Never throws, never crashes on a module that passed ptx::verify().
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/diag.h"
#include "host/ptx/ir.h"

namespace qgpu::ptxeval {

inline constexpr uint32_t kGlobalWords = 126;  // the machine's global memory (docs/machine.md §1)
inline constexpr uint32_t kGlobalBytes = 4 * kGlobalWords;
inline constexpr uint32_t kWarpSize = 4;
inline constexpr uint32_t kMaxThreads = 16;  // per CTA
inline constexpr uint32_t kMaxGrid = 16;     // CTAs
inline constexpr uint32_t kMaxCallDepth = 64;
// Where the shared window lies in the generic address space (above global memory, below 2^32 so
// that 32-bit generic addresses hold it too), and how much of the generic space is shared's: a
// generic address in [base, base + span) is shared address (address - base), bounds-checked
// against the CTA's window; any other generic address is a global address.
inline constexpr uint64_t kSharedGenericBase = 0x80000000u;
inline constexpr uint64_t kSharedGenericSpan = uint64_t{1} << 20;  // the largest shared window
// The local window of the generic space, likewise: a generic address in [base, base + span) is
// the executing thread's local address (address - base); cvta.local adds the base.
inline constexpr uint64_t kLocalGenericBase = 0xc0000000u;
inline constexpr uint64_t kLocalGenericSpan = uint64_t{1} << 20;

struct Launch {
  uint32_t gridX = 1;                            // CTAs, 1..kMaxGrid
  uint32_t blockX = 1;                           // threads per CTA, 1..kMaxThreads
  std::array<uint32_t, kGlobalWords> global{};   // initial global memory
  std::vector<uint64_t> params;                  // one value per entry .param, in order
  uint32_t dynamicSharedBytes = 0;               // size of the module's `.extern .shared` arrays
};

struct EvalOptions {
  std::string entry;                  // kernel name (ptx::findEntry); empty = the only .entry
  uint64_t maxInstructions = 1u << 24;  // instructions executed, all threads, before StepLimit
  uint8_t sharedFill = 0;             // every shared byte at CTA start
};

enum class EvalStatus : uint8_t {
  Finished,   // every thread of every CTA returned or exited
  Fault,      // an out-of-range or misaligned access (EvalResult::fault says where)
  StepLimit,  // maxInstructions executed without finishing
};
const char* statusName(EvalStatus status);  // "finished" / "fault" / "step-limit"

struct EvalResult {
  EvalStatus status = EvalStatus::Finished;
  Diag fault;                                   // MachineFault / StepLimit when not Finished
  std::array<uint32_t, kGlobalWords> global{};  // final global memory (at the fault, if any)
  uint64_t instructions = 0;                    // PTX instructions executed, all threads
  uint64_t unspecified = 0;                     // executions of PTX-unspecified operations
  std::string firstUnspecified;                 // the first of them: instruction, line, values
};

// Runs `module`'s entry on `launch`. A Diag for what is refused (PtxUnsupported, above) or for a
// launch that does not fit (Usage: grid/block out of range, parameter count != the entry's).
Expected<EvalResult> evaluate(const ptx::Module& module, const Launch& launch,
                              const EvalOptions& options = {});

}  // namespace qgpu::ptxeval
