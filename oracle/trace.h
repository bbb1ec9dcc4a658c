// qgpu/oracle/trace.h — the token trace: the contract between the reference interpreter and the
// circuit inside the model (docs/trace.md is the prose version of this header).
//
// A full trace is a prompt (the program, the launch and the initial global memory, written by the
// host) followed by the run (written by the interpreter, or token by token by the model). The
// whole format lives in this header and trace.cpp so that a revision is one change: the
// vocabulary is one X-macro table of token families, ids are family base + index, and every
// encoder has its decoder next to it.
//
// Contract:
//   - Token ids are local ids 0..kVocabSize-1; the model places them at kQwenFirstId + id.
//   - Values are self-delimiting 5-bit chunks (two's complement, most significant first, fewest
//     chunks that sign-extend back to the 32-bit value): C(d)* T(d), 1..7 tokens.
//   - decodePrompt / decodeRun accept any token sequence and never crash: malformed input gives
//     ErrorKind::TraceInvalid naming the token index.
//   - The run carries step ticks (trace v4): TICK(1) after every 100 steps, TICK(2) after every
//     10,000, right before the next EX or LIMIT, so that a model can count to its limit of 10^6.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/diag.h"
#include "oracle/machine.h"

namespace qgpu::trace {

using Token = uint16_t;

// The version of the token format (prompt and run, docs/trace.md). Every file that stores tokens
// records it, and readers refuse another version (a revision changes what the ids mean). Bump it
// with every change to the vocabulary, the prompt or the run grammar.
// v5: the ROM is keyed by record index (an atomic with a register destination gets a
// continuation row) and such an atomic with no executing lane writes NOP before its regrec.
// v6: a multiply (mul, mad, mulhi) with a register destination writes two records too, NOP then
// its regrec, at a continuation row: the circuit computes products in its late layers.
inline constexpr int kTraceVersion = 6;

// The sizes the vocabulary is derived from: the machine's limits (oracle/machine.h) and the
// chunk width of the trace itself. Revising the trace for the circuit changes these, not literals.
inline constexpr int kChunkBits = 5;                       // bits per value chunk (C, T)
inline constexpr int kChunkValues = 1 << kChunkBits;       // tokens per chunk family
// Chunks of the longest value: 32 bits plus the sign bit the top chunk carries (7 for 5 bits).
inline constexpr int kMaxValueChunks = (32 + 1 + kChunkBits - 1) / kChunkBits;
inline constexpr int kLaneMasks = (1 << machine::kLanes) - 1;  // non-empty active-lane masks
inline constexpr int kWritableRegs = machine::kRegs - 1;       // r1..r15 (r0 is never written)

// The prompt's ROM words (trace v3): every 32-bit word of an op that the circuit's ROM holds,
// X(Slot, "name"), in the order an op's words appear. The op's row in each slot's ROM bank is
// keyed by (block, row), row = the index of the op's first trace record in its block (v5: op j's
// row is j + the two-record ops before it: atomics and, v6, multiplies with a register
// destination, machine::recordsOf); docs/trace.md "Prompt" gives
// every word's bit layout.
#define QGPU_ROM_SLOTS(X)                                                                         \
  X(Head, "a")    /* always: row, opcode, dst, dstPred, guard, space, continuation */           \
  X(Sources, "b") /* iff nonzero: the operands' kinds and register/special indices, psrc */       \
  X(Imm0, "i0")   /* iff src0 is an immediate other than 0: its value */                          \
  X(Imm1, "i1")   /* iff src1 is an immediate other than 0 */                                     \
  X(Imm2, "i2")   /* iff src2 is an immediate other than 0 */                                     \
  X(Offset, "off") /* iff offset != 0: the byte offset (Mem) or slot index (Local) */

enum class RomSlot : uint8_t {
#define QGPU_ROM_SLOT_ENUM(name, text) name,
  QGPU_ROM_SLOTS(QGPU_ROM_SLOT_ENUM)
#undef QGPU_ROM_SLOT_ENUM
};
inline constexpr const char* kRomSlotNames[] = {
#define QGPU_ROM_SLOT_NAME(name, text) text,
    QGPU_ROM_SLOTS(QGPU_ROM_SLOT_NAME)
#undef QGPU_ROM_SLOT_NAME
};
inline constexpr int kRomSlots = sizeof(kRomSlotNames) / sizeof(kRomSlotNames[0]);
// The slot of an immediate source operand k (0..2).
constexpr RomSlot immSlot(int k) {
  return static_cast<RomSlot>(static_cast<int>(RomSlot::Imm0) + k);
}

// Step ticks (trace v4, docs/trace.md "Step ticks"): the step limit as model tokens. With s the
// steps executed so far (EX tokens since RUN, across CTAs), the run writes, right before the EX of
// step s + 1 or the LIMIT that comes instead (never before CTA or END), TICK(k) for each level
// k = 1..kTickLevels in order whose period R1···Rk divides s (s > 0); LIMIT comes at s = maxSteps.
// The periods are fixed (a decoder knows them without a header); the circuit counts them with
// three chained counters (each exact to 105 events), so its limit is R1·R2·R3.
inline constexpr int kTickLevels = 2;                        // TICK(1), TICK(2)
inline constexpr uint64_t kTickRatios[kTickLevels + 1] = {100, 100, 100};  // R1, R2, R3
// The steps between two TICK(k): R1···Rk.
constexpr uint64_t tickPeriod(int level) {
  uint64_t p = 1;
  for (int k = 0; k < level; ++k) p *= kTickRatios[k];
  return p;
}
// The step limit a compiled model writes LIMIT at (R1·R2·R3 = 10^6): the interpreter's maxSteps
// must be this when its trace is compared with a model's (docs/trace.md "Step ticks").
inline constexpr uint64_t kModelStepLimit = tickPeriod(kTickLevels + 1);
// How many ticks come before the EX (or LIMIT) that follows s executed steps: TICK(1)..TICK(n).
// The levels due form a prefix (R1···Rk | s implies R1···Rj | s for j < k).
constexpr int ticksDue(uint64_t steps) {
  int n = 0;
  while (steps > 0 && n < kTickLevels && steps % tickPeriod(n + 1) == 0) ++n;
  return n;
}

// The vocabulary: X(Family, "NAME", count), one row per token family. Ids are assigned in this
// order: a family's base is the sum of the counts above it. Trace v4 removed v3's LAUNCH (id 4:
// the launch fields joined the program word) and appended TICK, so v3's ids 5..241 are v4's
// 4..240 and TICK(1), TICK(2) are 241, 242: 243 ids, every one of Qwen3.5's 243 unused rows.
#define QGPU_TOKEN_FAMILIES(X)                                                                    \
  X(Prog, "PROG", 1)                          /* prompt: the program word follows */              \
  X(Blk, "BLK", 1)                            /* prompt: a block starts; its index follows */     \
  X(Gw, "GW", 1)                              /* prompt: a global memory word's value follows */  \
  X(Term, "TERM", 1)                          /* prompt: the block's terminator word follows */   \
  X(Gmem, "GMEM", 1)                          /* prompt: a global memory word's address follows */\
  X(Run, "RUN", 1)                            /* end of the prompt, start of the run */           \
  X(Ex, "EX", machine::kMaxBlocks)            /* run: EX(b) executes block b */                   \
  X(Wm, "WM", machine::kMaxWarps * kLaneMasks)/* run: WM(w,m) warp w, active lane mask m != 0 */  \
  X(Wr, "WR", kWritableRegs)                  /* run: WR(r) the op wrote r, one value per active lane */\
  X(Wu, "WU", kWritableRegs)                  /* run: WU(r) the op wrote r, one value for all lanes */\
  X(Wp, "WP", machine::kPreds)                /* run: WP(p) the op wrote predicate p, its lane bits */\
  X(Mg, "MG", kLaneMasks)                     /* run: MG(e) the op wrote global words in lanes e */\
  X(Ms, "MS", kLaneMasks)                     /* run: MS(e) the op wrote shared words in lanes e */\
  X(Nop, "NOP", 1)                            /* run: the op has nothing to show */               \
  X(Cta, "CTA", 1)                            /* run: the next CTA starts */                      \
  X(End, "END", 1)                            /* run: finished */                                 \
  X(FaultTok, "FAULT", 1)                     /* run: the machine trapped */                      \
  X(Limit, "LIMIT", 1)                        /* run: the step limit was reached */               \
  X(C, "C", kChunkValues)                     /* value: a continuation chunk */                   \
  X(T, "T", kChunkValues)                     /* value: the terminal chunk */                     \
  X(OpWord, "OP", kRomSlots)                  /* prompt: OP(s) the op's ROM word of slot s follows */\
  X(Tick, "TICK", kTickLevels)                /* run: TICK(k) R1···Rk more steps were executed */

enum class Family : uint8_t {
#define QGPU_FAMILY_ENUM(name, text, count) name,
  QGPU_TOKEN_FAMILIES(QGPU_FAMILY_ENUM)
#undef QGPU_FAMILY_ENUM
};

struct FamilyInfo {
  const char* name;
  uint16_t count;
  uint16_t base;  // id of index 0
};

inline constexpr FamilyInfo kFamilies[] = {
#define QGPU_FAMILY_INFO(name, text, count) {text, count, 0},
    QGPU_TOKEN_FAMILIES(QGPU_FAMILY_INFO)
#undef QGPU_FAMILY_INFO
};
inline constexpr int kNumFamilies = sizeof(kFamilies) / sizeof(kFamilies[0]);

constexpr uint16_t familyBase(Family f) {
  uint16_t base = 0;
  for (int i = 0; i < static_cast<int>(f); ++i)
    base = static_cast<uint16_t>(base + kFamilies[i].count);
  return base;
}
inline constexpr uint16_t kVocabSize =
    familyBase(static_cast<Family>(kNumFamilies - 1)) + kFamilies[kNumFamilies - 1].count;
// The 243 unused rows of Qwen3.5's embedding (248077..248319) hold the vocabulary.
inline constexpr uint32_t kQwenFirstId = 248077;
inline constexpr uint32_t kQwenRows = 243;
static_assert(kVocabSize <= kQwenRows, "the vocabulary must fit Qwen3.5's unused embedding rows");

constexpr Token tok(Family f, int index) {
  return static_cast<Token>(familyBase(f) + index);
}
Family familyOf(Token t);  // t < kVocabSize
int indexOf(Token t);      // index within its family

// Constructors for the run tokens.
constexpr Token ex(int block) {
  return tok(Family::Ex, block);
}
constexpr Token wm(int warp, int mask) {
  return tok(Family::Wm, warp * kLaneMasks + mask - 1);
}
constexpr Token wr(int reg) {
  return tok(Family::Wr, reg - 1);
}
constexpr Token wu(int reg) {
  return tok(Family::Wu, reg - 1);
}
constexpr Token wp(int pred) {
  return tok(Family::Wp, pred);
}
constexpr Token mg(int lanes) {  // lanes: the executing-lane mask, 1..15
  return tok(Family::Mg, lanes - 1);
}
constexpr Token ms(int lanes) {
  return tok(Family::Ms, lanes - 1);
}
constexpr Token single(Family f) {
  return tok(f, 0);
}
constexpr Token opWord(RomSlot slot) {  // prompt: OP(a), OP(b), OP(i0), ...
  return tok(Family::OpWord, static_cast<int>(slot));
}
constexpr Token tick(int level) {  // run: TICK(1), TICK(2)
  return tok(Family::Tick, level - 1);
}
// Appends the ticks due after `steps` executed steps (ticksDue): TICK(1) .. TICK(n).
void appendTicks(std::vector<Token>& out, uint64_t steps);

// Values.
int valueLength(uint32_t value);  // 1..7 tokens
void appendValue(std::vector<Token>& out, uint32_t value);
std::vector<Token> encodeValue(uint32_t value);

// "EX(3)", "WM(w0,0111)" (mask as a binary number, lane 3 first), "WR(r5)", "WP(p2)", "MG(0111)",
// "NOP", "T(-3)", "C(7)", "TICK(2)".
std::string tokenName(Token t);

// ---- Prompt ----
//
// Trace v3 (docs/trace.md "Prompt"): every value of the prompt follows a tag that names its field,
// and the host packs an op's fields into 32-bit words laid out for the circuit's ROM (v4: the
// launch shape is in the program word, v3's LAUNCH v(launch word) is gone):
//   PROG v(program word)
//   { BLK v(b) { OP(a) v(head word) [OP(b) v(sources word)] [OP(i0) v] [OP(i1) v] [OP(i2) v]
//                [OP(off) v] [OP(a) v(continuation word)] } TERM v(terminator word) }
// (v5: the head word's op index is the op's first record's index in its block; an atomic or (v6) a
// multiply with a register destination writes two records, and its second one's row is a
// continuation row: an OP(a) whose word holds that row and the continuation bit only. decodePrompt
// drops it.)
//   { GMEM v(address) GW v(word) }   (each nonzero global word, increasing addresses)
//   RUN
// The packed words: bit fields at fixed offsets (one table in trace.cpp that the encoder and the
// decoder walk; widths derived from oracle/machine.h and oracle/isa.def). packedLayout() lists
// them.
enum class PackedWord : uint8_t {
  Program,  // PROG: gridX, blockX, block count, sharedWords, spillSlots (v3: two words)
  OpHead,   // OP(a): op index (the row), opcode, dst, dstPred, guard, guard negate, space,
            // continuation
  OpSources,// OP(b): per source its kind and register/special index, psrc0, psrc1
  Term,     // TERM: kind, next, taken, predicate, negate
};
struct PackedField {
  const char* name;
  int offset;  // lowest bit
  int width;   // bits
};
std::vector<PackedField> packedLayout(PackedWord word);
// The head word OP(a) of `in` at ROM row `row` (its first record's index in its block), as the
// prompt carries it; `continuation`: the row of a two-record op's second record (the row and the
// flag, `in` ignored). The one packing of the head word (trace.cpp's table): the encoder calls it.
uint32_t packOpHead(const machine::Instr& in, uint32_t row, bool continuation = false);

struct Prompt {
  machine::Program program;  // name is not encoded: it comes back empty
  machine::Launch launch;
};
// Precondition: machine::verify(program, launch) holds (a field outside the machine's limits has
// no bits in its packed word and is cut to its width).
std::vector<Token> encodePrompt(const machine::Program& program, const machine::Launch& launch);
// Decodes a prompt that ends with RUN. With `consumed`, tokens may continue after RUN and the
// prompt's length is stored there; without it the sequence must end at RUN. The decoded program
// and launch must pass machine::verify().
Expected<Prompt> decodePrompt(std::span<const Token> tokens, size_t* consumed = nullptr);

// ---- Run ----
struct Exec {
  uint8_t block = 0;
  uint8_t warp = 0;
  uint8_t mask = 0;  // bit l = lane l active
  bool operator==(const Exec&) const = default;
};
// One op's register write: the values of all active lanes after the op, in lane order.
struct RegWrite {
  uint8_t reg = 0;
  bool uniform = false;
  uint8_t lanes = 0;             // the step's active lanes (from WM), whose values these are
  std::vector<uint32_t> values;  // one per active lane in lane order (uniform: one)
  bool operator==(const RegWrite&) const = default;
};
// One op's predicate write.
struct PredWrite {
  uint8_t pred = 0;
  uint8_t bits = 0;  // bit l: predicate `pred` is true in lane l after the op
  bool operator==(const PredWrite&) const = default;
};
// One word access of one lane of a memory-writing op.
struct WordValue {
  uint8_t word = 0;    // word index (global 0..125; shared, spill slots included, 0..125)
  uint32_t value = 0;  // the word's value after this lane's access
  bool operator==(const WordValue&) const = default;
};
// One op's memory write (store, atomic, spill store): per executing lane in lane order.
struct MemWrite {
  machine::Space space = machine::Space::Global;
  uint8_t lanes = 0;  // executing lanes, 1..15
  std::vector<WordValue> accesses;  // popcount(lanes) of them
  bool operator==(const MemWrite&) const = default;
};
// An op with nothing to show (NOP).
struct NoEffect {
  bool operator==(const NoEffect&) const = default;
};
struct CtaStart {
  bool operator==(const CtaStart&) const = default;
};
struct Finished {
  bool operator==(const Finished&) const = default;
};
struct Faulted {
  bool operator==(const Faulted&) const = default;
};
struct LimitReached {
  bool operator==(const LimitReached&) const = default;
};
// TICK(level): the run has executed a multiple of tickPeriod(level) steps (trace v4).
struct Tick {
  uint8_t level = 1;  // 1..kTickLevels
  bool operator==(const Tick&) const = default;
};
using TraceEvent = std::variant<Exec, RegWrite, PredWrite, MemWrite, NoEffect, CtaStart, Finished,
                                Faulted, LimitReached, Tick>;

// Decodes the run part (the tokens after RUN). Checks the grammar of docs/trace.md: records only
// inside a step, value counts from WM's and MG/MS's masks, MG/MS lanes within the active lanes,
// word indices inside memory, WP bits within the active lanes, WU exactly for equal values,
// FAULT only inside a step, exactly one final END/FAULT/LIMIT, and before every EX and LIMIT
// exactly the ticks the rule puts there (ticksDue of the EX tokens before it), TICK nowhere else.
// (How many records a step has is the program's business: decodeRun does not see the prompt; nor
// does it see maxSteps, so a LIMIT is accepted after any number of steps.) `firstIndex` is the index of tokens[0] in the
// caller's whole sequence (the prompt's length, when the run follows a prompt): an error names
// and carries (Diag::index) the token's index in that sequence.
Expected<std::vector<TraceEvent>> decodeRun(std::span<const Token> tokens, size_t firstIndex = 0);

// One line per event with its decoded meaning. Accepts a run, or a full trace starting with PROG
// (then the program listing comes first). Malformed input is printed up to the error, then the
// error.
std::string pretty(std::span<const Token> tokens);
std::string describe(const TraceEvent& event);

// 64-bit FNV-1a over the token ids, each as two little-endian bytes.
uint64_t digest(std::span<const Token> tokens);

}  // namespace qgpu::trace
