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
  return (bits + 4) / 5;
}

void appendValue(std::vector<Token>& out, uint32_t value) {
  const int k = valueLength(value);
  // 7 chunks cover 35 bits: sign-extend to 64 bits so the top chunk carries the sign.
  const uint64_t wide = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(value)));
  const size_t at = out.size();
  out.resize(at + static_cast<size_t>(k));
  Token* dst = out.data() + at;
  constexpr Token kC = familyBase(Family::C), kT = familyBase(Family::T);
  for (int i = k - 1; i > 0; --i) *dst++ = static_cast<Token>(kC + ((wide >> (5 * i)) & 31u));
  *dst = static_cast<Token>(kT + (wide & 31u));
}

std::vector<Token> encodeValue(uint32_t value) {
  std::vector<Token> out;
  appendValue(out, value);
  return out;
}

std::string tokenName(Token t) {
  if (t >= kVocabSize) return "?" + std::to_string(t);
  const Family f = familyOf(t);
  const int i = indexOf(t);
  const std::string name = kFamilies[static_cast<int>(f)].name;
  switch (f) {
    case Family::Ex:
      return name + "(" + std::to_string(i) + ")";
    case Family::Wm: {
      const int mask = i % 15 + 1;
      std::string bits;
      for (int l = 3; l >= 0; --l) bits += (mask >> l & 1) ? '1' : '0';
      return name + "(w" + std::to_string(i / 15) + "," + bits + ")";
    }
    case Family::Wr:
    case Family::Wu:
      return name + "(r" + std::to_string(i + 1) + ")";
    case Family::Stg:
    case Family::Sts:
      return name + "(" + std::to_string(i + 1) + ")";
    case Family::C:
    case Family::T:
      return name + "(" + std::to_string(i >= 16 ? i - 32 : i) + ")";
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

  // One value: C* T, at most 7 chunks, in its shortest form, inside int32.
  Expected<uint32_t> value(const char* what) {
    const size_t start = pos_;
    int64_t acc = 0;
    for (int k = 0; k < 7; ++k) {
      if (atEnd() || peek() >= kVocabSize ||
          (familyOf(peek()) != Family::C && familyOf(peek()) != Family::T)) {
        if (k == 0) return error(std::string("expected a value (") + what + ")");
        return errorAt(start, std::string("value (") + what + ") is unterminated");
      }
      const bool terminal = familyOf(peek()) == Family::T;
      const int chunk = indexOf(tokens_[pos_++]);
      acc = k == 0 ? (chunk >= 16 ? chunk - 32 : chunk) : acc * 32 + chunk;
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
    return errorAt(start, std::string("value (") + what + ") has more than 7 chunks");
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

  // A predicate field: -1 for kNoPred, else 0..254.
  Expected<uint8_t> predField(const char* what) {
    QGPU_TRY(v, ranged(what, -1, 254));
    return v < 0 ? machine::kNoPred : static_cast<uint8_t>(v);
  }

 private:
  std::span<const Token> tokens_;
  size_t firstIndex_ = 0;  // the index of tokens_[0] in the caller's sequence
  size_t pos_ = 0;
};

int32_t predValue(uint8_t p) {
  return p == machine::kNoPred ? -1 : p;
}

}  // namespace

// ---- Prompt ----
//
// PROG nblocks sharedWords spillSlots
//   { BLK nops commit { OPW op dst dstPred gpred gneg (kind payload){3} psrc0 psrc1 space offset }
//     TERM kind pred negate taken next }
// LAUNCH gridX blockX
// GMEM { addr n v1..vn }   (maximal runs of nonzero words, increasing addresses)
// RUN

std::vector<Token> encodePrompt(const machine::Program& program, const machine::Launch& launch) {
  std::vector<Token> out;
  auto v = [&out](int64_t x) { appendValue(out, static_cast<uint32_t>(x)); };
  out.push_back(single(Family::Prog));
  v(static_cast<int64_t>(program.blocks.size()));
  v(program.sharedWords);
  v(program.spillSlots);
  for (const machine::Block& block : program.blocks) {
    out.push_back(single(Family::Blk));
    v(static_cast<int64_t>(block.ops.size()));
    v(block.commit);
    for (const machine::Instr& in : block.ops) {
      out.push_back(single(Family::Opw));
      v(static_cast<int>(in.op));
      v(in.dst);
      v(predValue(in.dstPred));
      v(predValue(in.guard.pred));
      v(in.guard.negate);
      for (const machine::Operand& o : in.src) {
        v(static_cast<int>(o.kind));
        switch (o.kind) {
          case machine::OperandKind::None:
            v(0);
            break;
          case machine::OperandKind::Reg:
            v(o.reg);
            break;
          case machine::OperandKind::Imm:
            v(o.imm);
            break;
          case machine::OperandKind::Special:
            v(static_cast<int>(o.special));
            break;
        }
      }
      v(predValue(in.psrc[0]));
      v(predValue(in.psrc[1]));
      v(static_cast<int>(in.space));
      v(in.offset);
    }
    out.push_back(single(Family::Term));
    v(static_cast<int>(block.term.kind));
    v(predValue(block.term.pred));
    v(block.term.negate);
    v(block.term.taken);
    v(block.term.next);
  }
  out.push_back(single(Family::LaunchTok));
  v(launch.gridX);
  v(launch.blockX);
  out.push_back(single(Family::Gmem));
  for (int a = 0; a < machine::kGlobalWords;) {
    if (launch.global[a] == 0) {
      ++a;
      continue;
    }
    int end = a;
    while (end < machine::kGlobalWords && launch.global[end] != 0) ++end;
    v(a);
    v(end - a);
    for (int i = a; i < end; ++i) v(launch.global[i]);
    a = end;
  }
  out.push_back(single(Family::Run));
  return out;
}

Expected<Prompt> decodePrompt(std::span<const Token> tokens, size_t* consumed) {
  Reader in(tokens);
  Prompt prompt;
  machine::Program& program = prompt.program;
  QGPU_CHECK(in.expect(Family::Prog));
  QGPU_TRY(nblocks, in.ranged("block count", 1, machine::kMaxBlocks));
  QGPU_TRY(shared, in.ranged("sharedWords", 0, 255));
  QGPU_TRY(spill, in.ranged("spillSlots", 0, 255));
  program.sharedWords = static_cast<uint8_t>(shared);
  program.spillSlots = static_cast<uint8_t>(spill);
  program.blocks.resize(static_cast<size_t>(nblocks));
  for (machine::Block& block : program.blocks) {
    QGPU_CHECK(in.expect(Family::Blk));
    QGPU_TRY(nops, in.ranged("op count", 0, machine::kMaxOpsPerBlock));
    QGPU_TRY(commit, in.ranged("commit mask", 0, 0xffff));
    block.commit = static_cast<uint16_t>(commit);
    block.ops.resize(static_cast<size_t>(nops));
    for (machine::Instr& op : block.ops) {
      QGPU_CHECK(in.expect(Family::Opw));
      QGPU_TRY(code, in.ranged("opcode", 0, machine::kNumOps - 1));
      op.op = static_cast<machine::Op>(code);
      QGPU_TRY(dst, in.ranged("dst", 0, 255));
      op.dst = static_cast<uint8_t>(dst);
      QGPU_TRY(dstPred, in.predField("dstPred"));
      op.dstPred = dstPred;
      QGPU_TRY(gpred, in.predField("guard predicate"));
      op.guard.pred = gpred;
      QGPU_TRY(gneg, in.ranged("guard negate", 0, 1));
      op.guard.negate = gneg != 0;
      for (machine::Operand& o : op.src) {
        QGPU_TRY(kind, in.ranged("operand kind", 0, 3));
        o.kind = static_cast<machine::OperandKind>(kind);
        switch (o.kind) {
          case machine::OperandKind::None: {
            QGPU_CHECK(in.ranged("unused operand payload", 0, 0));
            break;
          }
          case machine::OperandKind::Reg: {
            QGPU_TRY(r, in.ranged("register", 0, 255));
            o.reg = static_cast<uint8_t>(r);
            break;
          }
          case machine::OperandKind::Imm: {
            QGPU_TRY(imm, in.value("immediate"));
            o.imm = imm;
            break;
          }
          case machine::OperandKind::Special: {
            QGPU_TRY(sp, in.ranged("special register", 0, machine::kNumSpecials - 1));
            o.special = static_cast<machine::Special>(sp);
            break;
          }
        }
      }
      QGPU_TRY(p0, in.predField("psrc0"));
      QGPU_TRY(p1, in.predField("psrc1"));
      op.psrc = {p0, p1};
      QGPU_TRY(space, in.ranged("space", 0, 1));
      op.space = static_cast<Space>(space);
      QGPU_TRY(offset, in.value("offset"));
      op.offset = static_cast<int32_t>(offset);
    }
    QGPU_CHECK(in.expect(Family::Term));
    QGPU_TRY(kind, in.ranged("terminator kind", 0, 3));
    block.term.kind = static_cast<machine::TermKind>(kind);
    QGPU_TRY(pred, in.predField("branch predicate"));
    block.term.pred = pred;
    QGPU_TRY(neg, in.ranged("branch negate", 0, 1));
    block.term.negate = neg != 0;
    QGPU_TRY(taken, in.ranged("taken target", 0, 255));
    block.term.taken = static_cast<uint8_t>(taken);
    QGPU_TRY(next, in.ranged("next target", 0, 255));
    block.term.next = static_cast<uint8_t>(next);
  }
  QGPU_CHECK(in.expect(Family::LaunchTok));
  QGPU_TRY(grid, in.ranged("gridX", 1, machine::kMaxGridBlocks));
  QGPU_TRY(threads, in.ranged("blockX", 1, machine::kMaxThreadsPerBlock));
  prompt.launch.gridX = static_cast<uint32_t>(grid);
  prompt.launch.blockX = static_cast<uint32_t>(threads);
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
  // Where we are inside one step: the order of its parts is fixed.
  enum class Phase { Between, Regs, Global, Shared } phase = Phase::Between;
  int activeLanes = 0;
  int lastReg = 0;
  int nextAddr = 0;  // the next run of this space must start above the previous one's end
  while (true) {
    if (in.atEnd()) return in.error("the run ends without END, FAULT or LIMIT");
    const Token t = in.peek();
    if (t >= kVocabSize)
      return in.error("not a qgpu token (vocabulary has " + std::to_string(kVocabSize) + ")");
    const Family f = familyOf(t);
    switch (f) {
      case Family::Ex: {
        const int block = indexOf(t);
        in.skip();
        QGPU_TRY(wmIndex, in.expect(Family::Wm));
        const int mask = wmIndex % 15 + 1;
        events.push_back(Exec{static_cast<uint8_t>(block), static_cast<uint8_t>(wmIndex / 15),
                              static_cast<uint8_t>(mask)});
        activeLanes = __builtin_popcount(static_cast<unsigned>(mask));
        phase = Phase::Regs;
        lastReg = 0;
        break;
      }
      case Family::Wr:
      case Family::Wu: {
        const size_t at = in.pos();
        if (phase != Phase::Regs)
          return in.error("a register write-back outside a step or after memory writes");
        const int reg = indexOf(t) + 1;
        if (reg <= lastReg) return in.error("registers must come in increasing order");
        in.skip();
        RegWrite w{static_cast<uint8_t>(reg), f == Family::Wu, {}};
        const int n = f == Family::Wu ? 1 : activeLanes;
        for (int i = 0; i < n; ++i) {
          QGPU_TRY(v, in.value("register value"));
          w.values.push_back(v);
        }
        if (f == Family::Wr && n > 1) {
          bool allSame = true;
          for (uint32_t x : w.values) allSame &= x == w.values[0];
          if (allSame) return in.errorAt(at, "WR with equal values must be written as WU");
        }
        if (f == Family::Wr && n == 1)
          return in.errorAt(at, "a one-lane write-back must be written as WU");
        lastReg = reg;
        events.push_back(std::move(w));
        break;
      }
      case Family::Stg:
      case Family::Sts: {
        const Phase want = f == Family::Stg ? Phase::Global : Phase::Shared;
        if (phase == Phase::Between) return in.error("a memory write outside a step");
        if (phase > want) return in.error("global writes must come before shared writes");
        if (phase < want) nextAddr = 0;
        phase = want;
        const int n = indexOf(t) + 1;
        in.skip();
        const int words = f == Family::Stg ? machine::kGlobalWords : machine::kSharedWords;
        QGPU_TRY(addr, in.ranged("word address", nextAddr, words - n));
        MemWrite w{
            f == Family::Stg ? Space::Global : Space::Shared, static_cast<uint8_t>(addr), {}};
        for (int i = 0; i < n; ++i) {
          QGPU_TRY(v, in.value("memory word"));
          w.values.push_back(v);
        }
        // A run is at most 4 words; a run shorter than 4 ends at a gap.
        nextAddr = static_cast<int>(addr) + n + (n < 4 ? 1 : 0);
        events.push_back(std::move(w));
        break;
      }
      case Family::Cta:
        in.skip();
        events.push_back(CtaStart{});
        phase = Phase::Between;
        break;
      case Family::End:
      case Family::FaultTok:
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
  struct Visitor {
    std::string operator()(const Exec& e) const {
      std::string lanes;
      for (int l = 0; l < machine::kLanes; ++l) {
        if (e.mask >> l & 1) lanes += (lanes.empty() ? "" : ",") + std::to_string(l);
      }
      return "exec B" + std::to_string(e.block) + " warp " + std::to_string(e.warp) + " lanes " +
             lanes;
    }
    std::string operator()(const RegWrite& w) const {
      std::string out = "  r" + std::to_string(w.reg) + " =";
      if (w.uniform)
        out += " " + std::to_string(static_cast<int32_t>(w.values[0])) + " (all lanes)";
      else {
        for (uint32_t v : w.values) out += " " + std::to_string(static_cast<int32_t>(v));
      }
      return out;
    }
    std::string operator()(const MemWrite& w) const {
      std::string out =
          std::string("  ") + (w.space == Space::Global ? "global" : "shared") + "[" +
          std::to_string(w.addr) +
          (w.values.size() > 1 ? ".." + std::to_string(w.addr + w.values.size() - 1) : "") + "] =";
      for (uint32_t v : w.values) out += " " + std::to_string(static_cast<int32_t>(v));
      return out;
    }
    std::string operator()(const CtaStart&) const { return "cta (next CTA starts)"; }
    std::string operator()(const Finished&) const { return "end"; }
    std::string operator()(const Faulted&) const { return "fault"; }
    std::string operator()(const LimitReached&) const { return "step limit"; }
  };
  return std::visit(Visitor{}, event);
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
  for (const TraceEvent& e : *events) out += describe(e) + "\n";
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
