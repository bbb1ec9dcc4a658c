// qgpu/oracle/trace.cpp — token vocabulary, value chunks, prompt encoding and the run decoder.
//
// Decoders are written for hostile input (the fuzzer feeds them random tokens): every count is
// range-checked before it sizes anything, every narrowing is checked, and every error names the
// token index.
#include "oracle/trace.h"

#include "common/digest.h"

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

// ---- Prompt ----
//
// PROG {program fields}
//   { BLK {block fields} { OPW {op fields} } TERM {terminator fields} }
// LAUNCH {launch fields}
// GMEM { addr n v1..vn }   (maximal runs of nonzero words, increasing addresses)
// RUN
//
// Each {... fields} is one table below: a field's name (for messages), its range and where it
// lives. The encoder and the decoder both walk these tables, so the prompt's layout is defined
// once; a revision of the prompt for the circuit edits a table.

namespace {

enum class FieldKind : uint8_t {
  Ranged,  // an integer in [lo, hi]
  Pred,    // a predicate index, or -1 for kNoPred
  Word,    // any 32-bit value
};

template <typename T>
struct Field {
  const char* name;
  FieldKind kind;
  int64_t lo, hi;                   // Ranged only
  int64_t (*get)(const T&);         // the field's value, as encoded
  void (*set)(T&, int64_t);         // stores a decoded value
};

template <typename T>
constexpr Field<T> ranged(const char* name, int64_t lo, int64_t hi, int64_t (*get)(const T&),
                          void (*set)(T&, int64_t)) {
  return {name, FieldKind::Ranged, lo, hi, get, set};
}
template <typename T>
constexpr Field<T> pred(const char* name, int64_t (*get)(const T&), void (*set)(T&, int64_t)) {
  return {name, FieldKind::Pred, -1, 254, get, set};
}
template <typename T>
constexpr Field<T> word(const char* name, int64_t (*get)(const T&), void (*set)(T&, int64_t)) {
  return {name, FieldKind::Word, INT32_MIN, INT32_MAX, get, set};
}

int64_t predValue(uint8_t p) { return p == machine::kNoPred ? -1 : p; }
uint8_t predIndex(int64_t v) { return v < 0 ? machine::kNoPred : static_cast<uint8_t>(v); }
template <typename E>
int64_t code(E e) { return static_cast<int64_t>(e); }

using machine::Block;
using machine::Instr;
using machine::Launch;
using machine::Operand;
using machine::Program;
using machine::Terminator;

// PROG: the block count is structural (the decoder sizes `blocks` from it).
const Field<Program> kProgramFields[] = {
    ranged<Program>("block count", 1, machine::kMaxBlocks,
                    [](const Program& p) { return static_cast<int64_t>(p.blocks.size()); },
                    [](Program& p, int64_t v) { p.blocks.resize(static_cast<size_t>(v)); }),
    ranged<Program>("sharedWords", 0, 255, [](const Program& p) { return int64_t{p.sharedWords}; },
                    [](Program& p, int64_t v) { p.sharedWords = static_cast<uint8_t>(v); }),
    ranged<Program>("spillSlots", 0, 255, [](const Program& p) { return int64_t{p.spillSlots}; },
                    [](Program& p, int64_t v) { p.spillSlots = static_cast<uint8_t>(v); }),
};

// BLK: the op count is structural.
const Field<Block> kBlockFields[] = {
    ranged<Block>("op count", 0, machine::kMaxOpsPerBlock,
                  [](const Block& b) { return static_cast<int64_t>(b.ops.size()); },
                  [](Block& b, int64_t v) { b.ops.resize(static_cast<size_t>(v)); }),
};

// OPW: the fields before the three operands, then (after them) the ones that follow.
const Field<Instr> kOpHeadFields[] = {
    ranged<Instr>("opcode", 0, machine::kNumOps - 1, [](const Instr& i) { return code(i.op); },
                  [](Instr& i, int64_t v) { i.op = static_cast<machine::Op>(v); }),
    ranged<Instr>("dst", 0, 255, [](const Instr& i) { return int64_t{i.dst}; },
                  [](Instr& i, int64_t v) { i.dst = static_cast<uint8_t>(v); }),
    pred<Instr>("dstPred", [](const Instr& i) { return predValue(i.dstPred); },
                [](Instr& i, int64_t v) { i.dstPred = predIndex(v); }),
    pred<Instr>("guard predicate", [](const Instr& i) { return predValue(i.guard.pred); },
                [](Instr& i, int64_t v) { i.guard.pred = predIndex(v); }),
    ranged<Instr>("guard negate", 0, 1, [](const Instr& i) { return int64_t{i.guard.negate}; },
                  [](Instr& i, int64_t v) { i.guard.negate = v != 0; }),
};
const Field<Instr> kOpTailFields[] = {
    pred<Instr>("psrc0", [](const Instr& i) { return predValue(i.psrc[0]); },
                [](Instr& i, int64_t v) { i.psrc[0] = predIndex(v); }),
    pred<Instr>("psrc1", [](const Instr& i) { return predValue(i.psrc[1]); },
                [](Instr& i, int64_t v) { i.psrc[1] = predIndex(v); }),
    ranged<Instr>("space", 0, 1, [](const Instr& i) { return code(i.space); },
                  [](Instr& i, int64_t v) { i.space = static_cast<Space>(v); }),
    word<Instr>("offset", [](const Instr& i) { return int64_t{i.offset}; },
                [](Instr& i, int64_t v) { i.offset = static_cast<int32_t>(v); }),
};

// Each operand: its kind, then a payload whose field depends on the kind (one row per kind).
const Field<Operand> kOperandKindField = ranged<Operand>(
    "operand kind", 0, 3, [](const Operand& o) { return code(o.kind); },
    [](Operand& o, int64_t v) { o.kind = static_cast<machine::OperandKind>(v); });
const Field<Operand> kOperandPayload[] = {
    ranged<Operand>("unused operand payload", 0, 0, [](const Operand&) { return int64_t{0}; },
                    [](Operand&, int64_t) {}),  // OperandKind::None
    ranged<Operand>("register", 0, 255, [](const Operand& o) { return int64_t{o.reg}; },
                    [](Operand& o, int64_t v) { o.reg = static_cast<uint8_t>(v); }),  // Reg
    word<Operand>("immediate", [](const Operand& o) { return int64_t{static_cast<int32_t>(o.imm)}; },
                  [](Operand& o, int64_t v) { o.imm = static_cast<uint32_t>(v); }),  // Imm
    ranged<Operand>("special register", 0, machine::kNumSpecials - 1,
                    [](const Operand& o) { return code(o.special); },
                    [](Operand& o, int64_t v) { o.special = static_cast<machine::Special>(v); }),
};

// TERM.
const Field<Terminator> kTermFields[] = {
    ranged<Terminator>("terminator kind", 0, 3, [](const Terminator& t) { return code(t.kind); },
                       [](Terminator& t, int64_t v) { t.kind = static_cast<machine::TermKind>(v); }),
    pred<Terminator>("branch predicate", [](const Terminator& t) { return predValue(t.pred); },
                     [](Terminator& t, int64_t v) { t.pred = predIndex(v); }),
    ranged<Terminator>("branch negate", 0, 1, [](const Terminator& t) { return int64_t{t.negate}; },
                       [](Terminator& t, int64_t v) { t.negate = v != 0; }),
    ranged<Terminator>("taken target", 0, 255, [](const Terminator& t) { return int64_t{t.taken}; },
                       [](Terminator& t, int64_t v) { t.taken = static_cast<uint8_t>(v); }),
    ranged<Terminator>("next target", 0, 255, [](const Terminator& t) { return int64_t{t.next}; },
                       [](Terminator& t, int64_t v) { t.next = static_cast<uint8_t>(v); }),
};

// LAUNCH.
const Field<Launch> kLaunchFields[] = {
    ranged<Launch>("gridX", 1, machine::kMaxGridBlocks, [](const Launch& l) { return int64_t{l.gridX}; },
                   [](Launch& l, int64_t v) { l.gridX = static_cast<uint32_t>(v); }),
    ranged<Launch>("blockX", 1, machine::kMaxThreadsPerBlock,
                   [](const Launch& l) { return int64_t{l.blockX}; },
                   [](Launch& l, int64_t v) { l.blockX = static_cast<uint32_t>(v); }),
};

template <typename T, size_t N>
void encodeFields(const Field<T> (&fields)[N], const T& object, std::vector<Token>& out) {
  for (const Field<T>& f : fields) appendValue(out, static_cast<uint32_t>(f.get(object)));
}

void encodeOperand(const Operand& o, std::vector<Token>& out) {
  appendValue(out, static_cast<uint32_t>(kOperandKindField.get(o)));
  appendValue(out, static_cast<uint32_t>(kOperandPayload[static_cast<size_t>(o.kind)].get(o)));
}

}  // namespace

std::vector<Token> encodePrompt(const machine::Program& program, const machine::Launch& launch) {
  std::vector<Token> out;
  out.push_back(single(Family::Prog));
  encodeFields(kProgramFields, program, out);
  for (const machine::Block& block : program.blocks) {
    out.push_back(single(Family::Blk));
    encodeFields(kBlockFields, block, out);
    for (const machine::Instr& in : block.ops) {
      out.push_back(single(Family::Opw));
      encodeFields(kOpHeadFields, in, out);
      for (const machine::Operand& o : in.src) encodeOperand(o, out);
      encodeFields(kOpTailFields, in, out);
    }
    out.push_back(single(Family::Term));
    encodeFields(kTermFields, block.term, out);
  }
  out.push_back(single(Family::LaunchTok));
  encodeFields(kLaunchFields, launch, out);
  out.push_back(single(Family::Gmem));
  for (int a = 0; a < machine::kGlobalWords;) {
    if (launch.global[a] == 0) {
      ++a;
      continue;
    }
    int end = a;
    while (end < machine::kGlobalWords && launch.global[end] != 0) ++end;
    appendValue(out, static_cast<uint32_t>(a));
    appendValue(out, static_cast<uint32_t>(end - a));
    for (int i = a; i < end; ++i) appendValue(out, launch.global[i]);
    a = end;
  }
  out.push_back(single(Family::Run));
  return out;
}

namespace {

// Reads one field's value from `in` into `object`.
template <typename T>
Status decodeField(Reader& in, const Field<T>& f, T& object) {
  int64_t v = 0;
  switch (f.kind) {
    case FieldKind::Ranged:
    case FieldKind::Pred: {
      QGPU_TRY(x, in.ranged(f.name, f.lo, f.hi));
      v = x;
      break;
    }
    case FieldKind::Word: {
      QGPU_TRY(x, in.value(f.name));
      v = static_cast<int32_t>(x);
      break;
    }
  }
  f.set(object, v);
  return Ok{};
}

template <typename T, size_t N>
Status decodeFields(Reader& in, const Field<T> (&fields)[N], T& object) {
  for (const Field<T>& f : fields) QGPU_CHECK(decodeField(in, f, object));
  return Ok{};
}

Status decodeOperand(Reader& in, Operand& o) {
  QGPU_CHECK(decodeField(in, kOperandKindField, o));
  return decodeField(in, kOperandPayload[static_cast<size_t>(o.kind)], o);
}

}  // namespace

Expected<Prompt> decodePrompt(std::span<const Token> tokens, size_t* consumed) {
  Reader in(tokens);
  Prompt prompt;
  machine::Program& program = prompt.program;
  QGPU_CHECK(in.expect(Family::Prog));
  QGPU_CHECK(decodeFields(in, kProgramFields, program));
  for (machine::Block& block : program.blocks) {
    QGPU_CHECK(in.expect(Family::Blk));
    QGPU_CHECK(decodeFields(in, kBlockFields, block));
    for (machine::Instr& op : block.ops) {
      QGPU_CHECK(in.expect(Family::Opw));
      QGPU_CHECK(decodeFields(in, kOpHeadFields, op));
      for (machine::Operand& o : op.src) QGPU_CHECK(decodeOperand(in, o));
      QGPU_CHECK(decodeFields(in, kOpTailFields, op));
    }
    QGPU_CHECK(in.expect(Family::Term));
    QGPU_CHECK(decodeFields(in, kTermFields, block.term));
  }
  QGPU_CHECK(in.expect(Family::LaunchTok));
  QGPU_CHECK(decodeFields(in, kLaunchFields, prompt.launch));
  QGPU_CHECK(in.expect(Family::Gmem));
  // Runs are maximal runs of nonzero words in increasing order, so each memory image has one
  // encoding: a run holds no zero word and the next run starts after a gap.
  int64_t nextFree = 0;
  while (!in.next(Family::Run)) {
    QGPU_TRY(addr, in.ranged("memory run address", nextFree, machine::kGlobalWords - 1));
    QGPU_TRY(n, in.ranged("memory run length", 1, machine::kGlobalWords - addr));
    for (int64_t i = 0; i < n; ++i) {
      const size_t at = in.pos();
      QGPU_TRY(word, in.value("memory word"));
      if (word == 0) return in.errorAt(at, "a zero word inside a run of nonzero words");
      prompt.launch.global[static_cast<size_t>(addr + i)] = word;
    }
    nextFree = addr + n + 1;
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
  bool inStep = false;  // after EX WM, until the next EX, CTA or the end: records may follow
  int mask = 0;         // the step's active lanes (WM)
  while (true) {
    if (in.atEnd()) return in.error("the run ends without END, FAULT or LIMIT");
    const Token t = in.peek();
    if (t >= kVocabSize)
      return in.error("not a qgpu token (vocabulary has " + std::to_string(kVocabSize) + ")");
    const Family f = familyOf(t);
    const size_t at = in.pos();
    const bool record = f == Family::Wr || f == Family::Wu || f == Family::Wp ||
                        f == Family::Mg || f == Family::Ms || f == Family::Nop;
    if (record && !inStep) return in.error("an op's record outside a step (records follow EX WM)");
    switch (f) {
      case Family::Ex: {
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
