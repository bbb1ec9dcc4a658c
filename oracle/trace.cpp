// qgpu/oracle/trace.cpp — token vocabulary, value chunks, prompt encoding and the run decoder.
//
// Decoders are written for hostile input (the fuzzer feeds them random tokens): every count is
// range-checked before it sizes anything, every narrowing is checked, and every error names the
// token index.
#include "oracle/trace.h"

#include "common/digest.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstdlib>

namespace qgpu::trace {

using machine::Space;

Family familyOf(Token t) {
  for (int f = kNumFamilies - 1; f >= 0; --f) {
    if (t >= familyBase(static_cast<Family>(f))) return static_cast<Family>(f);
  }
  return Family::Prog;
}

int indexOf(Token t) {
  return t - familyBase(familyOf(t));
}

// ---- Values ----

int valueLength(uint32_t value) {
  // Signed width: flip the sign copies to zeros, count the remaining bits plus one sign bit.
  const uint32_t x = value ^ static_cast<uint32_t>(static_cast<int32_t>(value) >> 31);
  const int bits = 33 - std::countl_zero(x);
  return (bits + kChunkBits - 1) / kChunkBits;
}

void appendValue(std::vector<Token>& out, uint32_t value) {
  const int k = valueLength(value);
  // 7 chunks cover 35 bits: sign-extend to 64 bits so the top chunk carries the sign.
  const uint64_t wide = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(value)));
  const size_t at = out.size();
  out.resize(at + static_cast<size_t>(k));
  Token* dst = out.data() + at;
  constexpr Token kC = familyBase(Family::C), kT = familyBase(Family::T);
  constexpr uint64_t kChunkMask = kChunkValues - 1;
  for (int i = k - 1; i > 0; --i)
    *dst++ = static_cast<Token>(kC + ((wide >> (kChunkBits * i)) & kChunkMask));
  *dst = static_cast<Token>(kT + (wide & kChunkMask));
}

std::vector<Token> encodeValue(uint32_t value) {
  std::vector<Token> out;
  appendValue(out, value);
  return out;
}

void appendTicks(std::vector<Token>& out, uint64_t steps) {
  for (int k = 1; k <= ticksDue(steps); ++k) out.push_back(tick(k));
}

namespace {

// A lane mask as a binary number, lane 3 first: 0111 = lanes 0..2.
std::string maskBits(int mask) {
  std::string bits;
  for (int l = machine::kLanes - 1; l >= 0; --l) bits += (mask >> l & 1) ? '1' : '0';
  return bits;
}

}  // namespace

std::string tokenName(Token t) {
  if (t >= kVocabSize) return "?" + std::to_string(t);
  const Family f = familyOf(t);
  const int i = indexOf(t);
  const std::string name = kFamilies[static_cast<int>(f)].name;
  switch (f) {
    case Family::Ex:
      return name + "(" + std::to_string(i) + ")";
    case Family::Wm:
      return name + "(w" + std::to_string(i / kLaneMasks) + "," + maskBits(i % kLaneMasks + 1) +
             ")";
    case Family::Wr:
    case Family::Wu:
      return name + "(r" + std::to_string(i + 1) + ")";
    case Family::Wp:
      return name + "(p" + std::to_string(i) + ")";
    case Family::Mg:
    case Family::Ms:
      return name + "(" + maskBits(i + 1) + ")";
    case Family::C:
    case Family::T:
      return name + "(" + std::to_string(i >= kChunkValues / 2 ? i - kChunkValues : i) + ")";
    case Family::OpWord:
      return name + "(" + kRomSlotNames[i] + ")";
    case Family::Tick:
      return name + "(" + std::to_string(i + 1) + ")";
    default:
      return name;
  }
}

// ---- A cursor over untrusted tokens ----

namespace {

class Reader {
 public:
  explicit Reader(std::span<const Token> tokens, size_t firstIndex = 0)
      : tokens_(tokens), firstIndex_(firstIndex) {}

  bool atEnd() const { return pos_ >= tokens_.size(); }
  size_t pos() const { return pos_; }
  Token peek() const { return tokens_[pos_]; }

  Diag error(const std::string& what) const { return errorAt(pos_, what); }
  Diag errorAt(size_t pos, const std::string& what) const {
    std::string at = "token " + std::to_string(firstIndex_ + pos);
    if (pos < tokens_.size())
      at += " (" + tokenName(tokens_[pos]) + ")";
    else
      at += " (end of input)";
    Diag d = makeDiag(ErrorKind::TraceInvalid, at + ": " + what);
    d.index = firstIndex_ + pos;
    return d;
  }

  // Is the next token of family f? Also rejects ids outside the vocabulary.
  bool next(Family f) const { return !atEnd() && peek() < kVocabSize && familyOf(peek()) == f; }

  void skip() { ++pos_; }

  Expected<int> expect(Family f) {
    if (!next(f)) return error(std::string("expected ") + kFamilies[static_cast<int>(f)].name);
    return indexOf(tokens_[pos_++]);
  }

  // One value: C* T, at most kMaxValueChunks chunks, in its shortest form, inside int32.
  Expected<uint32_t> value(const char* what) {
    const size_t start = pos_;
    int64_t acc = 0;
    for (int k = 0; k < kMaxValueChunks; ++k) {
      if (atEnd() || peek() >= kVocabSize ||
          (familyOf(peek()) != Family::C && familyOf(peek()) != Family::T)) {
        if (k == 0) return error(std::string("expected a value (") + what + ")");
        return errorAt(start, std::string("value (") + what + ") is unterminated");
      }
      const bool terminal = familyOf(peek()) == Family::T;
      const int chunk = indexOf(tokens_[pos_++]);
      acc = k == 0 ? (chunk >= kChunkValues / 2 ? chunk - kChunkValues : chunk)
                   : acc * kChunkValues + chunk;
      if (terminal) {
        if (acc < INT32_MIN || acc > INT32_MAX) {
          pos_ = start;
          return error(std::string("value (") + what + ") does not fit in 32 bits");
        }
        const auto v = static_cast<uint32_t>(static_cast<int32_t>(acc));
        if (valueLength(v) != k + 1) {
          pos_ = start;
          return error(std::string("value (") + what + ") is not in its shortest form");
        }
        return v;
      }
    }
    return errorAt(start, std::string("value (") + what + ") has more than " +
                              std::to_string(kMaxValueChunks) + " chunks");
  }

  // A value that must lie in [lo, hi] (as a signed number).
  Expected<int64_t> ranged(const char* what, int64_t lo, int64_t hi) {
    const size_t start = pos_;
    QGPU_TRY(v, value(what));
    const int64_t s = static_cast<int32_t>(v);
    if (s < lo || s > hi) {
      pos_ = start;
      return error(std::string(what) + " = " + std::to_string(s) + " is outside " +
                   std::to_string(lo) + ".." + std::to_string(hi));
    }
    return s;
  }

 private:
  std::span<const Token> tokens_;
  size_t firstIndex_ = 0;  // the index of tokens_[0] in the caller's sequence
  size_t pos_ = 0;
};

}  // namespace

// ---- Prompt (trace v3) ----
//
// PROG v(program word)
//   { BLK v(b) { OP(a) v(head) [OP(b) v(sources)] [OP(i0) v] [OP(i1) v] [OP(i2) v] [OP(off) v] }
//     TERM v(terminator word) }
// { GMEM v(address) GW v(word) }   (each nonzero global word, increasing addresses)
// RUN
//
// Every value follows a tag that names its field, so the circuit finds a value's field, and a ROM
// word's (block, op, slot), from latched tags and values at the value's terminal token. The
// packed words are bit fields at fixed offsets, one table each below (field order = bit order
// from bit 0); the encoder and the decoder both walk them. Widths are derived from the machine's
// limits and the op table, never written as literals.

namespace {

using machine::Block;
using machine::Instr;
using machine::Operand;
using machine::OperandKind;
using machine::Program;
using machine::Terminator;

// Bits that hold 0..maxValue.
constexpr int bitsFor(uint32_t maxValue) {
  int b = 0;
  while (b < 32 && (maxValue >> b) != 0) ++b;
  return b;
}

constexpr int kOperandKinds = static_cast<int>(OperandKind::Special) + 1;
constexpr int kOpIndexBits = bitsFor(machine::kMaxOpsPerBlock - 1);
constexpr int kOpcodeBits = bitsFor(machine::kNumOps - 1);
constexpr int kRegBits = bitsFor(machine::kRegs - 1);
constexpr int kPredBits = bitsFor(machine::kPreds);  // p + 1; 0 = no predicate
constexpr int kKindBits = bitsFor(kOperandKinds - 1);
constexpr int kOperandIndexBits =
    bitsFor(static_cast<uint32_t>(std::max(machine::kRegs, machine::kNumSpecials) - 1));
constexpr int kSpaceBits = bitsFor(static_cast<uint32_t>(Space::Shared));
constexpr int kTermKindBits = bitsFor(static_cast<uint32_t>(machine::TermKind::Exit));
constexpr uint32_t kExitCode = machine::kMaxBlocks;  // a branch target that exits
constexpr int kTargetBits = bitsFor(kExitCode);
constexpr int kBlockCountBits = bitsFor(machine::kMaxBlocks);
constexpr int kSharedBits = bitsFor(machine::kSharedWords);
constexpr int kGridBits = bitsFor(machine::kMaxGridBlocks);
constexpr int kBlockXBits = bitsFor(machine::kMaxThreadsPerBlock);

// One bit field of a packed word: its width, the range its stored value must lie in, and where
// it lives in the object.
template <typename T>
struct Bits {
  const char* name;
  int width;
  uint32_t lo, hi;
  uint32_t (*get)(const T&);
  void (*set)(T&, uint32_t);
};

uint32_t predCode(uint8_t p) { return p == machine::kNoPred ? 0 : uint32_t{p} + 1u; }
uint8_t predFromCode(uint32_t v) {
  return v == 0 ? machine::kNoPred : static_cast<uint8_t>(v - 1);
}
uint32_t targetCode(uint8_t t) { return t == machine::kExitTarget ? kExitCode : t; }
uint8_t targetFromCode(uint32_t v) {
  return v == kExitCode ? machine::kExitTarget : static_cast<uint8_t>(v);
}
template <typename E>
constexpr uint32_t code(E e) {
  return static_cast<uint32_t>(e);
}

// An op as the prompt carries it: the instruction, its ROM row in the block (the index of its
// first trace record: trace v5), and the operands' register/special indices of the sources word
// (kept apart until the kinds are known). A continuation row (continuation = 1) is the row of a
// two-record op's second record: its index and the flag, every other field 0.
struct RomOp {
  Instr in;
  uint32_t index = 0;
  std::array<uint32_t, 3> operandIndex{};
  uint32_t continuation = 0;
};

uint32_t operandIndex(const Operand& o) {
  if (o.kind == OperandKind::Reg) return o.reg;
  if (o.kind == OperandKind::Special) return code(o.special);
  return 0;
}

// The program word's fields: the launch shape and the program's sizes (v3 wrote the launch shape
// in a word of its own after LAUNCH; v4 freed that tag's vocabulary row for TICK).
struct ProgramHeader {
  uint32_t gridX = 0, blockX = 0, blocks = 0, sharedWords = 0, spillSlots = 0;
};

// PROG. The launch shape first: gridX and blockX are never 0, so they set low bits anyway, and
// sharedWords and spillSlots, most often 0, come last (a value's token count grows with its
// highest set bit: 5 blocks of 16 threads are PROG C(5) C(16) T(1), where v3's two words cost
// PROG T(5) LAUNCH C(0) C(16) T(1)).
constexpr Bits<ProgramHeader> kProgramWord[] = {
    {"gridX", kGridBits, 1, machine::kMaxGridBlocks, [](const ProgramHeader& h) { return h.gridX; },
     [](ProgramHeader& h, uint32_t v) { h.gridX = v; }},
    {"blockX", kBlockXBits, 1, machine::kMaxThreadsPerBlock,
     [](const ProgramHeader& h) { return h.blockX; },
     [](ProgramHeader& h, uint32_t v) { h.blockX = v; }},
    {"block count", kBlockCountBits, 1, machine::kMaxBlocks,
     [](const ProgramHeader& h) { return h.blocks; },
     [](ProgramHeader& h, uint32_t v) { h.blocks = v; }},
    {"sharedWords", kSharedBits, 0, (1u << kSharedBits) - 1,
     [](const ProgramHeader& h) { return h.sharedWords; },
     [](ProgramHeader& h, uint32_t v) { h.sharedWords = v; }},
    {"spillSlots", kSharedBits, 0, (1u << kSharedBits) - 1,
     [](const ProgramHeader& h) { return h.spillSlots; },
     [](ProgramHeader& h, uint32_t v) { h.spillSlots = v; }},
};

// OP(a), the head word: what every op has, the most frequent fields in the low bits (a value's
// token count grows with its highest set bit). "op index" is the ROM row: the index of the op's
// first record in its block (trace v5; an atomic or (v6) a multiply with a register destination
// writes two, so later ops' rows run ahead of their op index). "continuation" (the top bit: set
// only in the rare continuation rows, so no other word grows) marks the row of a two-record op's
// second record.
constexpr Bits<RomOp> kOpHeadWord[] = {
    {"op index", kOpIndexBits, 0, machine::kMaxOpsPerBlock - 1,
     [](const RomOp& r) { return r.index; }, [](RomOp& r, uint32_t v) { r.index = v; }},
    {"opcode", kOpcodeBits, 0, machine::kNumOps - 1, [](const RomOp& r) { return code(r.in.op); },
     [](RomOp& r, uint32_t v) { r.in.op = static_cast<machine::Op>(v); }},
    {"dst", kRegBits, 0, machine::kRegs - 1, [](const RomOp& r) { return uint32_t{r.in.dst}; },
     [](RomOp& r, uint32_t v) { r.in.dst = static_cast<uint8_t>(v); }},
    {"dstPred", kPredBits, 0, machine::kPreds, [](const RomOp& r) { return predCode(r.in.dstPred); },
     [](RomOp& r, uint32_t v) { r.in.dstPred = predFromCode(v); }},
    {"guard predicate", kPredBits, 0, machine::kPreds,
     [](const RomOp& r) { return predCode(r.in.guard.pred); },
     [](RomOp& r, uint32_t v) { r.in.guard.pred = predFromCode(v); }},
    {"guard negate", 1, 0, 1, [](const RomOp& r) { return uint32_t{r.in.guard.negate}; },
     [](RomOp& r, uint32_t v) { r.in.guard.negate = v != 0; }},
    {"space", kSpaceBits, 0, code(Space::Shared), [](const RomOp& r) { return code(r.in.space); },
     [](RomOp& r, uint32_t v) { r.in.space = static_cast<Space>(v); }},
    {"continuation", 1, 0, 1, [](const RomOp& r) { return r.continuation; },
     [](RomOp& r, uint32_t v) { r.continuation = v; }},
};

// OP(b), the sources word: per source its kind and index, then the predicate sources.
template <int K>
constexpr Bits<RomOp> operandKind(const char* name) {
  return {name, kKindBits, 0, kOperandKinds - 1, [](const RomOp& r) { return code(r.in.src[K].kind); },
          [](RomOp& r, uint32_t v) { r.in.src[K].kind = static_cast<OperandKind>(v); }};
}
template <int K>
constexpr Bits<RomOp> operandIndexField(const char* name) {
  return {name, kOperandIndexBits, 0, (1u << kOperandIndexBits) - 1,
          [](const RomOp& r) { return operandIndex(r.in.src[K]); },
          [](RomOp& r, uint32_t v) { r.operandIndex[K] = v; }};
}
template <int K>
constexpr Bits<RomOp> psrcField(const char* name) {
  return {name, kPredBits, 0, machine::kPreds, [](const RomOp& r) { return predCode(r.in.psrc[K]); },
          [](RomOp& r, uint32_t v) { r.in.psrc[K] = predFromCode(v); }};
}
constexpr Bits<RomOp> kOpSourcesWord[] = {
    operandKind<0>("src0 kind"), operandIndexField<0>("src0 index"),
    operandKind<1>("src1 kind"), operandIndexField<1>("src1 index"),
    operandKind<2>("src2 kind"), operandIndexField<2>("src2 index"),
    psrcField<0>("psrc0"),       psrcField<1>("psrc1"),
};

// TERM.
constexpr Bits<Terminator> kTermWord[] = {
    {"terminator kind", kTermKindBits, 0, code(machine::TermKind::Exit),
     [](const Terminator& t) { return code(t.kind); },
     [](Terminator& t, uint32_t v) { t.kind = static_cast<machine::TermKind>(v); }},
    {"next target", kTargetBits, 0, kExitCode, [](const Terminator& t) { return targetCode(t.next); },
     [](Terminator& t, uint32_t v) { t.next = targetFromCode(v); }},
    {"taken target", kTargetBits, 0, kExitCode,
     [](const Terminator& t) { return targetCode(t.taken); },
     [](Terminator& t, uint32_t v) { t.taken = targetFromCode(v); }},
    {"branch predicate", kPredBits, 0, machine::kPreds,
     [](const Terminator& t) { return predCode(t.pred); },
     [](Terminator& t, uint32_t v) { t.pred = predFromCode(v); }},
    {"branch negate", 1, 0, 1, [](const Terminator& t) { return uint32_t{t.negate}; },
     [](Terminator& t, uint32_t v) { t.negate = v != 0; }},
};

template <typename T, size_t N>
constexpr int usedBits(const Bits<T> (&fields)[N]) {
  int total = 0;
  for (const Bits<T>& f : fields) total += f.width;
  return total;
}
static_assert(usedBits(kProgramWord) <= 32 && usedBits(kOpHeadWord) <= 32 &&
                  usedBits(kOpSourcesWord) <= 32 && usedBits(kTermWord) <= 32,
              "every packed prompt word must fit 32 bits");

template <typename T, size_t N>
uint32_t pack(const Bits<T> (&fields)[N], const T& object) {
  uint32_t word = 0;
  int at = 0;
  for (const Bits<T>& f : fields) {
    const uint32_t mask = f.width >= 32 ? ~0u : (1u << f.width) - 1;
    word |= (f.get(object) & mask) << at;
    at += f.width;
  }
  return word;
}

template <typename T, size_t N>
std::vector<PackedField> layoutOf(const Bits<T> (&fields)[N]) {
  std::vector<PackedField> out;
  int at = 0;
  for (const Bits<T>& f : fields) {
    out.push_back({f.name, at, f.width});
    at += f.width;
  }
  return out;
}

}  // namespace

uint32_t packOpHead(const machine::Instr& in, uint32_t row, bool continuation) {
  RomOp op;
  if (!continuation) op.in = in;
  op.index = row;
  op.continuation = continuation ? 1 : 0;
  return pack(kOpHeadWord, op);
}

std::vector<PackedField> packedLayout(PackedWord word) {
  switch (word) {
    case PackedWord::Program:
      return layoutOf(kProgramWord);
    case PackedWord::OpHead:
      return layoutOf(kOpHeadWord);
    case PackedWord::OpSources:
      return layoutOf(kOpSourcesWord);
    case PackedWord::Term:
      return layoutOf(kTermWord);
  }
  return {};
}

std::vector<Token> encodePrompt(const machine::Program& program, const machine::Launch& launch) {
  std::vector<Token> out;
  const ProgramHeader header{launch.gridX, launch.blockX,
                             static_cast<uint32_t>(program.blocks.size()), program.sharedWords,
                             program.spillSlots};
  out.push_back(single(Family::Prog));
  appendValue(out, pack(kProgramWord, header));
  for (size_t b = 0; b < program.blocks.size(); ++b) {
    const machine::Block& block = program.blocks[b];
    out.push_back(single(Family::Blk));
    appendValue(out, static_cast<uint32_t>(b));
    uint32_t row = 0;  // the record index of op j's first record (trace v5)
    for (size_t j = 0; j < block.ops.size(); ++j) {
      const RomOp op{block.ops[j], row, {}, 0};
      out.push_back(opWord(RomSlot::Head));
      appendValue(out, packOpHead(op.in, row));
      // The other words are written only when nonzero: an absent word reads as 0 from the ROM.
      auto optional = [&](RomSlot slot, uint32_t word) {
        if (word == 0) return;
        out.push_back(opWord(slot));
        appendValue(out, word);
      };
      optional(RomSlot::Sources, pack(kOpSourcesWord, op));
      for (int k = 0; k < 3; ++k) {
        const Operand& o = op.in.src[static_cast<size_t>(k)];
        if (o.kind == OperandKind::Imm) optional(immSlot(k), o.imm);
      }
      optional(RomSlot::Offset, static_cast<uint32_t>(op.in.offset));
      // A two-record op's second record gets a row of its own: its head word names the row and the
      // flag, nothing else (docs/trace.md "Prompt").
      if (machine::recordsOf(op.in) == 2) {
        out.push_back(opWord(RomSlot::Head));
        appendValue(out, packOpHead(machine::Instr{}, row + 1, true));
      }
      row += static_cast<uint32_t>(machine::recordsOf(op.in));
    }
    out.push_back(single(Family::Term));
    appendValue(out, pack(kTermWord, block.term));
  }
  for (int a = 0; a < machine::kGlobalWords; ++a) {
    if (launch.global[static_cast<size_t>(a)] == 0) continue;
    out.push_back(single(Family::Gmem));
    appendValue(out, static_cast<uint32_t>(a));
    out.push_back(single(Family::Gw));
    appendValue(out, launch.global[static_cast<size_t>(a)]);
  }
  out.push_back(single(Family::Run));
  return out;
}

namespace {

// Reads one packed word (a value of any 32 bits) and unpacks it into `object`: every field's
// stored value must lie in its range and the bits above the used ones must be 0, so every word
// has one encoding.
template <typename T, size_t N>
Status unpackWord(const Reader& in, size_t at, const char* what, uint32_t word,
                  const Bits<T> (&fields)[N], T& object) {
  int bit = 0;
  for (const Bits<T>& f : fields) {
    const uint32_t v = (word >> bit) & ((1u << f.width) - 1);
    if (v < f.lo || v > f.hi) {
      return in.errorAt(at, std::string(what) + ": field '" + f.name + "' (bits " +
                                std::to_string(bit) + ".." + std::to_string(bit + f.width - 1) +
                                ") = " + std::to_string(v) + " is outside " +
                                std::to_string(f.lo) + ".." + std::to_string(f.hi));
    }
    f.set(object, v);
    bit += f.width;
  }
  if (bit < 32 && (word >> bit) != 0)
    return in.errorAt(at, std::string(what) + " sets bits above its " + std::to_string(bit) +
                              " used bits");
  return Ok{};
}

template <typename T, size_t N>
Status unpack(Reader& in, const char* what, const Bits<T> (&fields)[N], T& object) {
  const size_t at = in.pos();
  QGPU_TRY(word, in.value(what));
  return unpackWord(in, at, what, word, fields, object);
}

// The sources word's indices, once the kinds are known: a register 0..15, a special 0..5, or 0
// for an immediate or unused operand.
Status resolveOperands(Reader& in, size_t at, RomOp& op) {
  for (size_t k = 0; k < 3; ++k) {
    Operand& o = op.in.src[k];
    const uint32_t index = op.operandIndex[k];
    const std::string slot = "src" + std::to_string(k);
    switch (o.kind) {
      case OperandKind::Reg:
        o.reg = static_cast<uint8_t>(index);
        break;
      case OperandKind::Special:
        if (index >= static_cast<uint32_t>(machine::kNumSpecials))
          return in.errorAt(at, "sources word: " + slot + " names special register " +
                                    std::to_string(index) + " (there are " +
                                    std::to_string(machine::kNumSpecials) + ")");
        o.special = static_cast<machine::Special>(index);
        break;
      case OperandKind::None:
      case OperandKind::Imm:
        if (index != 0)
          return in.errorAt(at, "sources word: " + slot +
                                    " is no register or special but its index is " +
                                    std::to_string(index));
        break;
    }
  }
  return Ok{};
}

// The head word of a continuation row at `row`: the row and the flag, every other field 0.
uint32_t continuationWord(uint32_t row) { return packOpHead(machine::Instr{}, row, true); }

// One op: OP(a) v(head), then its optional words in slot order, each at most once and nonzero.
// `row` = the index of the op's first record in its block (the head word's op index, trace v5).
Status decodeOp(Reader& in, uint32_t row, Instr& out) {
  QGPU_CHECK(in.expect(Family::OpWord));  // the caller saw OP(a)
  RomOp op;
  const size_t headAt = in.pos();
  QGPU_CHECK(unpack(in, "head word", kOpHeadWord, op));
  if (op.continuation != 0)
    return in.errorAt(headAt, "head word: a continuation row at row " + std::to_string(row) +
                                  ", where an op starts (only the row after an atomic or a "
                                  "multiply with a register destination is one)");
  if (op.index != row)
    return in.errorAt(headAt, "head word: op index " + std::to_string(op.index) +
                                  ", but this op's first record is record " + std::to_string(row) +
                                  " of its block");
  int last = static_cast<int>(RomSlot::Head);
  size_t sourcesAt = headAt;
  while (in.next(Family::OpWord) && indexOf(in.peek()) != static_cast<int>(RomSlot::Head)) {
    const int slot = indexOf(in.peek());
    if (slot <= last)
      return in.error(std::string("OP(") + kRomSlotNames[slot] + ") after OP(" +
                      kRomSlotNames[last] + "): an op's words come once each, in slot order");
    last = slot;
    in.skip();
    const size_t at = in.pos();
    QGPU_TRY(word, in.value(kRomSlotNames[slot]));
    // A word is written only when nonzero: the ROM reads an absent word as 0.
    if (word == 0)
      return in.errorAt(at, std::string("OP(") + kRomSlotNames[slot] +
                                ") carries 0 (a zero word is left out)");
    const auto s = static_cast<RomSlot>(slot);
    if (s == RomSlot::Sources) {
      sourcesAt = at;
      QGPU_CHECK(unpackWord(in, at, "sources word", word, kOpSourcesWord, op));
    } else if (s == RomSlot::Offset) {
      op.in.offset = static_cast<int32_t>(word);
    } else {
      const auto k = static_cast<size_t>(slot - static_cast<int>(RomSlot::Imm0));
      if (op.in.src[k].kind != OperandKind::Imm)
        return in.errorAt(at, std::string("OP(") + kRomSlotNames[slot] + ") for src" +
                                  std::to_string(k) + ", which is not an immediate");
      op.in.src[k].imm = word;
    }
  }
  QGPU_CHECK(resolveOperands(in, sourcesAt, op));
  out = op.in;
  return Ok{};
}

}  // namespace

Expected<Prompt> decodePrompt(std::span<const Token> tokens, size_t* consumed) {
  Reader in(tokens);
  Prompt prompt;
  machine::Program& program = prompt.program;
  QGPU_CHECK(in.expect(Family::Prog));
  ProgramHeader header;
  QGPU_CHECK(unpack(in, "program word", kProgramWord, header));
  prompt.launch.gridX = header.gridX;
  prompt.launch.blockX = header.blockX;
  program.blocks.resize(header.blocks);
  program.sharedWords = static_cast<uint8_t>(header.sharedWords);
  program.spillSlots = static_cast<uint8_t>(header.spillSlots);
  for (size_t b = 0; b < program.blocks.size(); ++b) {
    machine::Block& block = program.blocks[b];
    QGPU_CHECK(in.expect(Family::Blk));
    QGPU_CHECK(in.ranged("block index", static_cast<int64_t>(b), static_cast<int64_t>(b)));
    uint32_t row = 0;  // the next op's first record index (trace v5)
    auto tooMany = [&] {
      return in.error("block " + std::to_string(b) + " has more than " +
                      std::to_string(machine::kMaxOpsPerBlock) +
                      " records (ops, and a second one for each atomic or multiply with a "
                      "register destination)");
    };
    while (in.next(Family::OpWord)) {
      if (indexOf(in.peek()) != static_cast<int>(RomSlot::Head))
        return in.error("an op starts with OP(a), its head word");
      if (row == static_cast<uint32_t>(machine::kMaxOpsPerBlock)) return tooMany();
      machine::Instr op;
      QGPU_CHECK(decodeOp(in, row, op));
      block.ops.push_back(op);
      ++row;
      if (machine::recordsOf(op) == 1) continue;
      // Its second record's row: OP(a) v(continuation word of this row), no other word.
      const std::string which = "op " + std::to_string(block.ops.size() - 1) + " of block " +
                                std::to_string(b) + " (" + machine::opInfo(op.op).mnemonic +
                                " into r" + std::to_string(op.dst) + ")";
      if (!in.next(Family::OpWord) || indexOf(in.peek()) != static_cast<int>(RomSlot::Head))
        return in.error(which + " writes two records: its continuation row OP(a) must follow");
      if (row == static_cast<uint32_t>(machine::kMaxOpsPerBlock)) return tooMany();
      in.skip();
      const size_t at = in.pos();
      QGPU_TRY(word, in.value("continuation row"));
      if (word != continuationWord(row))
        return in.errorAt(at, "continuation row of " + which + ": the head word must be " +
                                  std::to_string(continuationWord(row)) + " (op index " +
                                  std::to_string(row) + " and the continuation bit, nothing "
                                  "else), not " + std::to_string(word));
      if (in.next(Family::OpWord) && indexOf(in.peek()) != static_cast<int>(RomSlot::Head))
        return in.error("a continuation row has no words but its head word");
      ++row;
    }
    QGPU_CHECK(in.expect(Family::Term));
    QGPU_CHECK(unpack(in, "terminator word", kTermWord, block.term));
  }
  // Each nonzero word once, in increasing address order, so each memory image has one encoding.
  int64_t nextFree = 0;
  while (in.next(Family::Gmem)) {
    in.skip();
    QGPU_TRY(addr, in.ranged("global word address", nextFree, machine::kGlobalWords - 1));
    QGPU_CHECK(in.expect(Family::Gw));
    const size_t at = in.pos();
    QGPU_TRY(word, in.value("global word"));
    if (word == 0) return in.errorAt(at, "a zero global word (only nonzero words are written)");
    prompt.launch.global[static_cast<size_t>(addr)] = word;
    nextFree = addr + 1;
  }
  QGPU_CHECK(in.expect(Family::Run));
  if (consumed != nullptr)
    *consumed = in.pos();
  else if (!in.atEnd())
    return in.error("tokens after RUN (decodePrompt takes the prompt alone)");
  Status ok = machine::verify(program, prompt.launch);
  if (!ok) {
    return makeDiag(ErrorKind::TraceInvalid,
                    "the prompt decodes to an invalid program: " + ok.error().message);
  }
  return prompt;
}

// ---- Run ----

Expected<std::vector<TraceEvent>> decodeRun(std::span<const Token> tokens, size_t firstIndex) {
  Reader in(tokens, firstIndex);
  std::vector<TraceEvent> events;
  bool inStep = false;  // after EX WM, until the next EX, CTA, TICK or the end: records may follow
  int mask = 0;         // the step's active lanes (WM)
  uint64_t steps = 0;   // EX tokens so far: the steps executed before the next EX
  int ticks = 0;        // TICK tokens right before this token: TICK(1) .. TICK(ticks)
  // Before an EX or LIMIT, exactly the ticks due after `steps` steps must have come.
  auto checkTicks = [&](const char* what) -> Status {
    const int due = ticksDue(steps);
    if (ticks == due) return Ok{};
    return in.error("TICK(" + std::to_string(ticks + 1) + ") missing before " + what + " after " +
                    std::to_string(steps) + " steps (the rule writes " + std::to_string(due) +
                    " tick" + (due == 1 ? "" : "s") + " there)");
  };
  while (true) {
    if (in.atEnd()) return in.error("the run ends without END, FAULT or LIMIT");
    const Token t = in.peek();
    if (t >= kVocabSize)
      return in.error("not a qgpu token (vocabulary has " + std::to_string(kVocabSize) + ")");
    const Family f = familyOf(t);
    const size_t at = in.pos();
    const bool record = f == Family::Wr || f == Family::Wu || f == Family::Wp ||
                        f == Family::Mg || f == Family::Ms || f == Family::Nop;
    // After a TICK only the next TICK, EX or LIMIT may come (ticks are never before CTA or END).
    if (ticks > 0 && f != Family::Tick && f != Family::Ex && f != Family::Limit)
      return in.error("after TICK(" + std::to_string(ticks) + ") comes EX or LIMIT");
    if (record && !inStep) return in.error("an op's record outside a step (records follow EX WM)");
    switch (f) {
      case Family::Tick: {
        const int level = indexOf(t) + 1;
        if (level != ticks + 1 || level > ticksDue(steps))
          return in.error("TICK(" + std::to_string(level) + ") misplaced: after " +
                          std::to_string(steps) + " steps the rule writes " +
                          std::to_string(ticksDue(steps)) + " tick" +
                          (ticksDue(steps) == 1 ? "" : "s") + " before the next EX or LIMIT" +
                          (ticks > 0 ? ", and this follows TICK(" + std::to_string(ticks) + ")"
                                     : std::string()));
        in.skip();
        events.push_back(Tick{static_cast<uint8_t>(level)});
        ticks = level;
        inStep = false;
        break;
      }
      case Family::Ex: {
        QGPU_CHECK(checkTicks("this EX"));
        ticks = 0;
        ++steps;
        const int block = indexOf(t);
        in.skip();
        QGPU_TRY(wmIndex, in.expect(Family::Wm));
        mask = wmIndex % kLaneMasks + 1;
        events.push_back(Exec{static_cast<uint8_t>(block), static_cast<uint8_t>(wmIndex / kLaneMasks),
                              static_cast<uint8_t>(mask)});
        inStep = true;
        break;
      }
      case Family::Wr:
      case Family::Wu: {
        const int reg = indexOf(t) + 1;
        in.skip();
        RegWrite w{static_cast<uint8_t>(reg), f == Family::Wu, static_cast<uint8_t>(mask), {}};
        const int n = f == Family::Wu ? 1 : std::popcount(static_cast<unsigned>(mask));
        for (int i = 0; i < n; ++i) {
          QGPU_TRY(v, in.value("register value"));
          w.values.push_back(v);
        }
        if (f == Family::Wr && n == 1)
          return in.errorAt(at, "a one-lane register write must be written as WU");
        if (f == Family::Wr) {
          bool allSame = true;
          for (uint32_t x : w.values) allSame &= x == w.values[0];
          if (allSame) return in.errorAt(at, "WR with equal values must be written as WU");
        }
        events.push_back(std::move(w));
        break;
      }
      case Family::Wp: {
        const int pred = indexOf(t);
        in.skip();
        const size_t bitsAt = in.pos();
        QGPU_TRY(bits, in.ranged("predicate bits", 0, kLaneMasks));
        if ((bits & ~mask) != 0)
          return in.errorAt(bitsAt, "predicate bits " + maskBits(static_cast<int>(bits)) +
                                        " name lanes outside the active lanes " + maskBits(mask));
        events.push_back(PredWrite{static_cast<uint8_t>(pred), static_cast<uint8_t>(bits)});
        break;
      }
      case Family::Mg:
      case Family::Ms: {
        const int lanes = indexOf(t) + 1;
        if ((lanes & ~mask) != 0)
          return in.error("memory write lanes " + maskBits(lanes) +
                          " outside the active lanes " + maskBits(mask));
        in.skip();
        const bool global = f == Family::Mg;
        const int words = global ? machine::kGlobalWords : machine::kSharedWords;
        MemWrite w{global ? Space::Global : Space::Shared, static_cast<uint8_t>(lanes), {}};
        for (int i = 0; i < std::popcount(static_cast<unsigned>(lanes)); ++i) {
          QGPU_TRY(word, in.ranged(global ? "global word index" : "shared word index", 0, words - 1));
          QGPU_TRY(v, in.value("memory value"));
          w.accesses.push_back(WordValue{static_cast<uint8_t>(word), v});
        }
        events.push_back(std::move(w));
        break;
      }
      case Family::Nop:
        in.skip();
        events.push_back(NoEffect{});
        break;
      case Family::Cta:
        in.skip();
        events.push_back(CtaStart{});
        inStep = false;
        break;
      case Family::FaultTok:
        if (!inStep) return in.error("FAULT outside a step (a fault happens at an op)");
        [[fallthrough]];
      case Family::End:
      case Family::Limit: {
        if (f == Family::Limit) QGPU_CHECK(checkTicks("LIMIT"));
        in.skip();
        if (f == Family::End) events.push_back(Finished{});
        if (f == Family::FaultTok) events.push_back(Faulted{});
        if (f == Family::Limit) events.push_back(LimitReached{});
        if (!in.atEnd()) return in.error("tokens after the end of the run");
        return events;
      }
      default:
        return in.error("not a run token here");
    }
  }
}

std::string describe(const TraceEvent& event) {
  auto signedText = [](uint32_t v) { return std::to_string(static_cast<int32_t>(v)); };
  struct Visitor {
    decltype(signedText)& num;
    std::string operator()(const Exec& e) const {
      std::string lanes;
      for (int l = 0; l < machine::kLanes; ++l) {
        if (e.mask >> l & 1) lanes += (lanes.empty() ? "" : ",") + std::to_string(l);
      }
      return "exec B" + std::to_string(e.block) + " warp " + std::to_string(e.warp) + " lanes " +
             lanes;
    }
    std::string operator()(const RegWrite& w) const {
      std::string out = tokenName(w.uniform ? wu(w.reg) : wr(w.reg));
      if (w.uniform) return out + " all=" + (w.values.empty() ? "?" : num(w.values[0]));
      size_t k = 0;
      for (int l = 0; l < machine::kLanes && k < w.values.size(); ++l) {
        if (w.lanes >> l & 1) out += " lane" + std::to_string(l) + "=" + num(w.values[k++]);
      }
      return out;
    }
    std::string operator()(const PredWrite& w) const {
      return tokenName(wp(w.pred)) + " " + maskBits(w.bits);
    }
    std::string operator()(const MemWrite& w) const {
      std::string out = w.lanes >= 1 && w.lanes <= kLaneMasks
                            ? tokenName(w.space == Space::Global ? mg(w.lanes) : ms(w.lanes))
                            : std::string(w.space == Space::Global ? "MG" : "MS");
      for (const WordValue& a : w.accesses)
        out += " [" + std::to_string(a.word) + "]=" + num(a.value);
      return out;
    }
    std::string operator()(const NoEffect&) const { return "NOP"; }
    std::string operator()(const CtaStart&) const { return "cta (next CTA starts)"; }
    std::string operator()(const Finished&) const { return "end"; }
    std::string operator()(const Faulted&) const { return "fault"; }
    std::string operator()(const LimitReached&) const { return "step limit"; }
    std::string operator()(const Tick& t) const {
      return "tick " + std::to_string(t.level) + " (a multiple of " +
             std::to_string(tickPeriod(t.level)) + " steps)";
    }
  };
  return std::visit(Visitor{signedText}, event);
}

std::string pretty(std::span<const Token> tokens) {
  std::string out;
  std::span<const Token> run = tokens;
  size_t used = 0;  // tokens of the prompt: the run's first token is token `used`
  if (!tokens.empty() && tokens[0] == single(Family::Prog)) {
    auto prompt = decodePrompt(tokens, &used);
    if (!prompt) return "prompt: " + prompt.error().message + "\n";
    out += machine::print(prompt->program);
    out += "launch grid " + std::to_string(prompt->launch.gridX) + " block " +
           std::to_string(prompt->launch.blockX) + "\n";
    run = tokens.subspan(used);
  }
  auto events = decodeRun(run, used);
  if (!events) {
    // Decode the well-formed prefix, so the reader sees where it went wrong.
    const std::string& msg = events.error().message;
    size_t bad = static_cast<size_t>(events.error().index.value_or(used) - used);
    for (size_t i = 0; i < bad && i < run.size(); ++i) out += tokenName(run[i]) + " ";
    return out + "\nerror: " + msg + "\n";
  }
  // Records are indented under their step's exec line.
  for (const TraceEvent& e : *events) {
    const bool record = std::holds_alternative<RegWrite>(e) || std::holds_alternative<PredWrite>(e) ||
                        std::holds_alternative<MemWrite>(e) || std::holds_alternative<NoEffect>(e);
    out += (record ? "  " : "") + describe(e) + "\n";
  }
  return out;
}

uint64_t digest(std::span<const Token> tokens) {
  uint64_t h = kFnvOffset;
  for (Token t : tokens) {
    const char bytes[2] = {static_cast<char>(t & 0xff), static_cast<char>(t >> 8)};
    h = fnv1a64(std::string_view(bytes, 2), h);
  }
  return h;
}

}  // namespace qgpu::trace
