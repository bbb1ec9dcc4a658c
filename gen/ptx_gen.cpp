// qgpu/gen/ptx_gen.cpp — the random PTX generator and its property (contract: ptx_gen.h).
//
// Registers are named as the compilers name them (%r, %rd, %p, %rs, numbered from 1) and declared
// after the body is built. The pool of readable 32-bit values is a stack: entering an arm or a
// loop body remembers its size, leaving it drops what was defined inside (those values are not
// written on every path), so every read is of a register written on every path to it.
#include "gen/ptx_gen.h"

#include <algorithm>
#include <span>

#include "gen/policy_text.h"
#include "gen/rng.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "oracle/interpreter.h"
#include "oracle/machine.h"
#include "ptxeval/eval.h"

namespace qgpu::gen {
namespace {


constexpr uint32_t kInWords = 16, kAccWords = 8;  // acc: one word per atomic operation
constexpr uint32_t kInWord = 0, kAccWord = kInWords, kOutWord = kInWords + kAccWords;
constexpr uint32_t kPhaseWords = 16;  // shared words per exchange (blockX <= 16)
constexpr int kMaxPhases = 4;

enum class Region : uint8_t { Straight, If, IfElse, Loop, Shared, Warp, EarlyExit };
enum class Family : uint8_t { Arith, Logic, Shift, Div, Bits, Wide, Half, Select, Load, Store, Atomic };

struct Value {
  std::string reg;
  bool fixed = false;  // tid and the global id: read, never overwritten
};

class Generator {
 public:
  Generator(const PtxPolicy& p, uint64_t seed, PtxDialect d) : p_(p), rng_(seed), d_(d) {}

  PtxCase generate(std::string header) {
    PtxCase c;
    c.header = std::move(header);
    c.dialect = d_;
    c.gridX = static_cast<uint32_t>(rng_.range(1, static_cast<int>(p_.maxGrid)));
    c.blockX = static_cast<uint32_t>(rng_.range(1, static_cast<int>(p_.maxBlockX)));
    uint32_t threads = c.gridX * c.blockX;
    slots_ = std::min<uint32_t>(p_.maxSlots, (126 - kOutWord) / threads);
    blockX_ = c.blockX;
    c.slots = slots_;
    c.inWord = kInWord, c.outWord = kOutWord, c.accWord = kAccWord;
    for (uint32_t i = 0; i < kInWords; ++i) c.global[kInWord + i] = imm();
    for (uint32_t i = 0; i < kAccWords; ++i) c.global[kAccWord + i] = imm();
    uint32_t k = imm();
    c.params = {4 * kInWord, 4 * kOutWord, 4 * kAccWord, k};

    prologue();
    int regions = rng_.range(1, p_.maxRegions);
    for (int i = 0; i < regions; ++i) region(0, true);
    for (uint32_t j = 0; j < slots_; ++j) store(pick(), j);
    label(exitLabel_);
    ins("ret", "");
    c.ptx = assemble(c.header);
    return c;
  }

 private:
  const PtxPolicy& p_;
  Rng rng_;
  PtxDialect d_;
  uint32_t slots_ = 1, blockX_ = 1, nextSlot_ = 0;
  int nr_ = 0, nrd_ = 0, np_ = 0, nrs_ = 0, labels_ = 0, phases_ = 0;
  bool exited_ = false;
  std::vector<Value> pool_;
  std::vector<std::string> body_;
  std::string inPtr_, outPtr_, accPtr_, tid_, gid_, exitLabel_;

  bool nvcc() const { return d_ == PtxDialect::Nvcc; }
  std::string r() { return "%r" + std::to_string(++nr_); }
  std::string rd() { return "%rd" + std::to_string(++nrd_); }
  std::string pr() { return "%p" + std::to_string(++np_); }
  std::string rs() { return "%rs" + std::to_string(++nrs_); }
  std::string newLabel() {
    return (nvcc() ? "$L__BB0_" : "LBB0_") + std::to_string(++labels_);
  }
  uint32_t imm() {
    return rng_.chance(p_.smallImmProb) ? static_cast<uint32_t>(rng_.range(-16, 16)) : rng_.word();
  }
  static std::string dec(uint32_t v) { return std::to_string(static_cast<int32_t>(v)); }

  void ins(const std::string& op, const std::string& operands, const std::string& guard = "") {
    body_.push_back("\t" + guard + op + " \t" + operands + ";");
  }
  void label(const std::string& l) {
    if (nvcc()) body_.push_back("");
    body_.push_back(l + ":");
  }

  // ---- Values ----
  std::string pick() { return pool_[rng_.below(static_cast<uint32_t>(pool_.size()))].reg; }
  std::string src() { return rng_.chance(p_.immProb) ? dec(imm()) : pick(); }
  // A destination: a fresh register (added to the pool by `define`) or an existing, writable one.
  struct Dest {
    std::string reg;
    bool fresh;
  };
  Dest dest() {
    std::vector<size_t> writable;
    for (size_t i = 0; i < pool_.size(); ++i)
      if (!pool_[i].fixed) writable.push_back(i);
    if (writable.empty() || rng_.chance(p_.freshProb)) return {r(), true};
    return {pool_[writable[rng_.below(static_cast<uint32_t>(writable.size()))]].reg, false};
  }
  void define(const Dest& d) {
    if (d.fresh) pool_.push_back({d.reg, false});
  }
  // The guard for an instruction that writes `d`: only an existing register may be written
  // conditionally (a fresh one would be unwritten on the other path).
  std::string guardFor(const Dest& d) {
    if (d.fresh || !rng_.chance(p_.guardProb)) return "";
    std::string p = pr();
    ins("setp.ne.s32", p + ", " + pick() + ", " + src());
    return "@" + std::string(rng_.chance(0.5) ? "!" : "") + p + " ";
  }

  void prologue() {
    std::string rin = rd(), rout = rd(), racc = rd(), k = r();
    ins("ld.param.u64", rin + ", [gen_param_0]");
    ins("ld.param.u64", rout + ", [gen_param_1]");
    ins("ld.param.u64", racc + ", [gen_param_2]");
    ins("ld.param.u32", k + ", [gen_param_3]");
    inPtr_ = rd(), outPtr_ = rd(), accPtr_ = rd();
    ins("cvta.to.global.u64", inPtr_ + ", " + rin);
    ins("cvta.to.global.u64", outPtr_ + ", " + rout);
    ins("cvta.to.global.u64", accPtr_ + ", " + racc);
    tid_ = r();
    std::string cta = r(), ntid = r();
    gid_ = r();
    ins("mov.u32", tid_ + ", %tid.x");
    ins("mov.u32", cta + ", %ctaid.x");
    ins("mov.u32", ntid + ", %ntid.x");
    ins("mad.lo.s32", gid_ + ", " + cta + ", " + ntid + ", " + tid_);
    pool_ = {{k, false}, {tid_, true}, {gid_, true}};
    exitLabel_ = newLabel();
    Dest d{r(), true};
    load(d);
  }

  // ---- Regions ----
  void region(int depth, bool top) {
    std::array<uint32_t, 7> w = {p_.wStraight,
                                 depth < p_.maxDepth ? p_.wIf : 0,
                                 depth < p_.maxDepth ? p_.wIfElse : 0,
                                 depth < p_.maxDepth ? p_.wLoop : 0,
                                 top && !exited_ && phases_ < kMaxPhases ? p_.wShared : 0,
                                 top && !exited_ && blockX_ % 4 == 0 ? p_.wWarp : 0,
                                 top ? p_.wEarlyExit : 0};
    int k = rng_.weighted(w);
    switch (k < 0 ? Region::Straight : static_cast<Region>(k)) {
      case Region::Straight: {
        int n = rng_.range(p_.minOps, p_.maxOps);
        for (int i = 0; i < n; ++i) instruction();
        break;
      }
      case Region::If: {
        std::string p = condition(), skip = newLabel();
        ins("bra", skip, "@" + p + " ");
        arm(depth);
        label(skip);
        break;
      }
      case Region::IfElse: {
        std::string p = condition(), other = newLabel(), join = newLabel();
        ins("bra", other, "@" + p + " ");
        arm(depth);
        ins("bra.uni", join);
        label(other);
        arm(depth);
        label(join);
        break;
      }
      case Region::Loop: {
        std::string cnt = r(), head = newLabel(), end = newLabel(), q = pr();
        ins("rem.u32", cnt + ", " + pick() + ", " + std::to_string(p_.maxTrips + 1));
        label(head);
        ins("setp.eq.s32", q + ", " + cnt + ", 0");
        ins("bra", end, "@" + q + " ");
        arm(depth);
        ins("add.s32", cnt + ", " + cnt + ", -1");
        ins("bra.uni", head);
        label(end);
        break;
      }
      case Region::Shared:
        if (rng_.chance(p_.barRedProb)) {
          barrierReduction();
        } else {
          sharedExchange();
        }
        break;
      case Region::Warp: warpOp(); break;
      case Region::EarlyExit: {
        std::string p = condition();
        ins("bra", exitLabel_, "@" + p + " ");
        exited_ = true;
        break;
      }
    }
  }

  void arm(int depth) {
    size_t mark = pool_.size();
    int n = rng_.range(1, p_.maxArmRegions);
    for (int i = 0; i < n; ++i) region(depth + 1, false);
    pool_.resize(mark);
  }

  std::string condition() {
    static const char* kCmp[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    std::string p = pr();
    std::string cmp = kCmp[rng_.below(6)];
    std::string ty = (cmp == "eq" || cmp == "ne") ? "s32" : (rng_.chance(0.5) ? "s32" : "u32");
    ins("setp." + cmp + "." + ty, p + ", " + pick() + ", " + src());
    return (rng_.chance(0.3) ? "!" : "") + p;
  }

  // ---- Instructions ----
  void instruction() {
    std::array<uint32_t, 11> w = {p_.wArith, p_.wLogic, p_.wShift, p_.wDiv, p_.wBits, p_.wWide,
                                  p_.wHalf, p_.wSelect, p_.wLoad, p_.wStore, p_.wAtomic};
    int k = rng_.weighted(w);
    switch (k < 0 ? Family::Arith : static_cast<Family>(k)) {
      case Family::Arith: {
        static const char* kOps[] = {"add.s32", "sub.s32", "mul.lo.s32", "mad.lo.s32", "neg.s32",
                                     "abs.s32", "min.s32", "max.s32", "min.u32", "max.u32"};
        std::string op = kOps[rng_.below(10)];
        std::string a = pick();
        std::string ops = op == "neg.s32" || op == "abs.s32" ? a
                          : op == "mad.lo.s32"               ? a + ", " + src() + ", " + src()
                                                             : a + ", " + src();
        emit(op, ops);
        break;
      }
      case Family::Logic: {
        static const char* kOps[] = {"and.b32", "or.b32", "xor.b32", "not.b32"};
        std::string op = kOps[rng_.below(4)];
        emit(op, op == "not.b32" ? pick() : pick() + ", " + src());
        break;
      }
      case Family::Shift: {
        static const char* kOps[] = {"shl.b32", "shr.u32", "shr.s32"};
        std::string amount = rng_.chance(0.6) ? std::to_string(rng_.below(32)) : pick();
        emit(kOps[rng_.below(3)], pick() + ", " + amount);
        break;
      }
      case Family::Div: {
        static const char* kOps[] = {"div.u32", "rem.u32", "div.s32", "rem.s32"};
        int i = static_cast<int>(rng_.below(4));
        std::string t = r();
        if (i < 2) {
          ins("or.b32", t + ", " + pick() + ", 1");  // never 0
        } else {
          ins("and.b32", t + ", " + pick() + ", 255");
          ins("or.b32", t + ", " + t + ", 1");  // 1..255: never 0 or -1
        }
        emit(kOps[i], src() + ", " + t);
        break;
      }
      case Family::Bits: {
        int i = static_cast<int>(rng_.below(10));
        switch (i) {
          case 0: emit("popc.b32", pick()); break;
          case 1: emit("clz.b32", pick()); break;
          case 2: emit("brev.b32", pick()); break;
          case 3: emit("bfe.u32", pick() + ", " + std::to_string(rng_.below(32)) + ", " + std::to_string(rng_.below(33))); break;
          case 4: emit("bfe.s32", pick() + ", " + std::to_string(rng_.below(32)) + ", " + std::to_string(rng_.below(33))); break;
          case 5: emit("prmt.b32", pick() + ", " + pick() + ", " + std::to_string(rng_.below(0x10000))); break;
          case 6: emit("shf.l.wrap.b32", pick() + ", " + pick() + ", " + std::to_string(rng_.below(32))); break;
          case 7: emit("shf.r.wrap.b32", pick() + ", " + pick() + ", " + std::to_string(rng_.below(32))); break;
          case 8: emit("mul.hi.u32", pick() + ", " + src()); break;
          default: emit("mul.hi.s32", pick() + ", " + src()); break;
        }
        break;
      }
      case Family::Wide: wide(); break;
      case Family::Half: half(); break;
      case Family::Select: {
        std::string p = condition();
        if (p[0] == '!') {  // selp takes a plain predicate
          std::string q = pr();
          ins("not.pred", q + ", " + p.substr(1));
          p = q;
        }
        emit("selp.b32", src() + ", " + src() + ", " + p);
        break;
      }
      case Family::Load: {
        Dest d = dest();
        load(d);
        break;
      }
      case Family::Store: store(pick(), nextSlot_++ % slots_); break;
      case Family::Atomic: {
        // One acc word per operation: atomics of one kind commute, two kinds on one word would not.
        static const char* kOps[] = {"add.u32", "and.b32", "or.b32", "xor.b32",
                                     "min.s32", "max.s32", "min.u32", "max.u32"};
        uint32_t k = rng_.below(kAccWords);
        std::string junk = r();
        ins(std::string("atom.global.") + kOps[k],
            junk + ", [" + accPtr_ + (k ? "+" + std::to_string(4 * k) : "") + "], " + src());
        break;
      }
    }
  }

  // One instruction writing a 32-bit destination from `operands`.
  void emit(const std::string& op, const std::string& operands) {
    Dest d = dest();
    std::string g = guardFor(d);
    ins(op, d.reg + ", " + operands, g);
    define(d);
  }

  void load(const Dest& d) {
    std::string t = r(), a = rd(), b = rd();
    uint32_t off = rng_.below(2) ? rng_.below(8) : 0;  // [b + 4 off] with index & 7: < 16
    ins("and.b32", t + ", " + pick() + ", " + std::to_string(off ? 7 : kInWords - 1));
    ins("mul.wide.u32", a + ", " + t + ", 4");
    ins("add.s64", b + ", " + inPtr_ + ", " + a);
    std::string addr = "[" + b + (off ? "+" + std::to_string(4 * off) : "") + "]";
    std::string ld = rng_.chance(p_.ncProb) ? "ld.global.nc" : "ld.global";
    if (rng_.chance(p_.subWordProb)) {
      // A byte or half-word of the word, at an offset inside it: aligned, still inside `in`.
      static const char* kTypes[] = {"u8", "s8", "u16", "s16"};
      uint32_t k = rng_.below(4), within = k < 2 ? rng_.below(4) : 2 * rng_.below(2);
      addr = "[" + b + "+" + std::to_string(4 * off + within) + "]";
      ins(ld + "." + kTypes[k], d.reg + ", " + addr);
    } else {
      ins(ld + ".u32", d.reg + ", " + addr);
    }
    define(d);
  }

  void store(const std::string& v, uint32_t slot) {
    std::string t = r(), a = rd(), b = rd();
    ins("mad.lo.s32", t + ", " + gid_ + ", " + std::to_string(slots_) + ", " + std::to_string(slot));
    ins("mul.wide.u32", a + ", " + t + ", 4");
    ins("add.s64", b + ", " + outPtr_ + ", " + a);
    ins("st.global.u32", "[" + b + "], " + v);
  }

  void wide() {
    std::string a = rd();
    switch (rng_.below(4)) {
      case 0: ins("mul.wide.u32", a + ", " + pick() + ", " + src()); break;
      case 1: ins("mul.wide.s32", a + ", " + pick() + ", " + src()); break;
      case 2: ins("cvt.u64.u32", a + ", " + pick()); break;
      default: ins("cvt.s64.s32", a + ", " + pick()); break;
    }
    std::string b = a;
    switch (rng_.below(4)) {
      case 0: {
        std::string c = rd();
        ins("cvt.u64.u32", c + ", " + pick());
        b = rd();
        ins(rng_.chance(0.5) ? "add.s64" : "sub.s64", b + ", " + a + ", " + c);
        break;
      }
      case 1:
        b = rd();
        ins("shl.b64", b + ", " + a + ", " + std::to_string(rng_.below(32)));
        break;
      case 2: {
        std::string c = rd();
        ins("cvt.u64.u32", c + ", " + pick());
        b = rd();
        ins("mul.lo.s64", b + ", " + a + ", " + c);
        break;
      }
      default: break;
    }
    if (rng_.chance(0.25)) {  // a 64-bit equality reads both halves
      std::string p = pr(), c = rd();
      ins("cvt.u64.u32", c + ", " + pick());
      ins(rng_.chance(0.5) ? "setp.eq.s64" : "setp.ne.s64", p + ", " + b + ", " + c);
      emit("selp.b32", src() + ", " + src() + ", " + p);
      return;
    }
    std::string e = rd();
    ins("shr.u64", e + ", " + b + ", " + std::to_string(p_.minWideShift + rng_.below(64 - p_.minWideShift)));
    emit("cvt.u32.u64", e);
  }

  void half() {
    static const char* kOps[] = {"add.s16", "sub.s16", "mul.lo.s16", "and.b16", "or.b16", "xor.b16"};
    std::string a = rs(), b = rs(), c = rs();
    ins("cvt.u16.u32", a + ", " + pick());
    ins("cvt.u16.u32", b + ", " + pick());
    ins(kOps[rng_.below(6)], c + ", " + a + ", " + b);
    emit(rng_.chance(0.5) ? "cvt.u32.u16" : "cvt.s32.s16", c);
  }

  // s[tid] = v; barrier; d = s[(tid + k) % blockX], in this exchange's own 16 shared words.
  void sharedExchange() {
    int phase = phases_++;
    std::string v = pick();
    uint32_t k = rng_.below(16);
    std::string off = phase ? "+" + std::to_string(4 * kPhaseWords * phase) : "";
    std::string idx = r();
    auto addressOf = [&](const std::string& index) {
      if (nvcc()) {
        std::string base = r(), scaled = r(), addr = r();
        ins("mov.u32", base + ", _ZZ3genE2sh");
        ins("shl.b32", scaled + ", " + index + ", 2");
        ins("add.s32", addr + ", " + base + ", " + scaled);
        return addr;
      }
      std::string base = rd(), scaled = rd(), addr = rd();
      ins("mov.u64", base + ", _ZZ3genE2sh");
      ins("mul.wide.u32", scaled + ", " + index + ", 4");
      ins("add.s64", addr + ", " + base + ", " + scaled);
      return addr;
    };
    std::string mine = addressOf(tid_);
    ins("st.shared.u32", "[" + mine + off + "], " + v);
    ins(nvcc() ? "bar.sync" : "barrier.sync", "0");
    ins("add.s32", idx + ", " + tid_ + ", " + std::to_string(k));
    ins("rem.u32", idx + ", " + idx + ", " + std::to_string(blockX_));
    std::string theirs = addressOf(idx);
    Dest d = dest();
    ins("ld.shared.u32", d.reg + ", [" + theirs + off + "]");
    define(d);
  }

  // __syncthreads_count / _and / _or: every thread live (no early exit before), uniform flow.
  void barrierReduction() {
    std::string p = condition();
    if (p[0] == '!') {
      std::string q = pr();
      ins("not.pred", q + ", " + p.substr(1));
      p = q;
    }
    const std::string bar = "bar.red";  // both compilers spell __syncthreads_count/and/or so
    switch (rng_.below(3)) {
      case 0: {  // never guarded: a barrier must be reached by every thread
        Dest d = dest();
        ins(bar + ".popc.u32", d.reg + ", 0, " + p);
        define(d);
        break;
      }
      case 1: {
        std::string q = pr();
        ins(bar + ".and.pred", q + ", 0, " + p);
        emit("selp.u32", "1, 0, " + q);
        break;
      }
      default: {
        std::string q = pr();
        ins(bar + ".or.pred", q + ", 0, " + p);
        emit("selp.u32", "1, 0, " + q);
        break;
      }
    }
  }

  void warpOp() {
    if (rng_.chance(0.6)) {
      static const char* kModes[] = {"up", "down", "bfly", "idx"};
      std::string mode = kModes[rng_.below(4)];
      uint32_t b = rng_.below(4), c = mode == "up" ? 0x1c00 : 0x1c1f;
      std::string a = pick();
      Dest d = dest();
      if (nvcc()) {
        std::string rb = r(), rc = r(), rm = r(), p = pr();
        ins("mov.u32", rb + ", " + std::to_string(b));
        ins("mov.u32", rc + ", " + std::to_string(c));
        ins("mov.u32", rm + ", -1");
        ins("shfl.sync." + mode + ".b32", d.reg + "|" + p + ", " + a + ", " + rb + ", " + rc + ", " + rm);
      } else {
        ins("shfl.sync." + mode + ".b32", d.reg + ", " + a + ", " + std::to_string(b) + ", " +
                                              std::to_string(c) + ", -1");
      }
      define(d);
      return;
    }
    std::string p = condition();
    if (p[0] == '!') {
      std::string q = pr();
      ins("not.pred", q + ", " + p.substr(1));
      p = q;
    }
    std::string mask = "-1";
    if (nvcc()) {
      mask = r();
      ins("mov.u32", mask + ", -1");
    }
    uint32_t kind = rng_.below(3);
    if (kind == 0) {
      Dest d = dest();
      ins("vote.sync.ballot.b32", d.reg + ", " + p + ", " + mask);
      define(d);
      return;
    }
    std::string q = pr();
    ins(kind == 1 ? "vote.sync.any.pred" : "vote.sync.all.pred", q + ", " + p + ", " + mask);
    emit("selp.u32", "1, 0, " + q);
  }

  std::string assemble(const std::string& header) {
    std::string out = "// " + header + "\n";
    if (nvcc())
      out += "//\n// Generated by NVIDIA NVVM Compiler\n//\n// Compiler Build ID: CL-36424714\n"
             "// Cuda compilation tools, release 13.0, V13.0.88\n// Based on NVVM 7.0.1\n//\n\n"
             ".version 9.0\n.target sm_75\n.address_size 64\n\n\t// .globl\tgen\n";
    else
      out += "//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 6.4\n.target sm_75\n"
             ".address_size 64\n\n\t// .globl\tgen\n";
    out += ".visible .entry gen(\n\t.param .u64 gen_param_0,\n\t.param .u64 gen_param_1,\n"
           "\t.param .u64 gen_param_2,\n\t.param .u32 gen_param_3\n)\n{\n";
    if (np_) out += "\t.reg .pred \t%p<" + std::to_string(np_ + 1) + ">;\n";
    if (nrs_) out += "\t.reg .b16 \t%rs<" + std::to_string(nrs_ + 1) + ">;\n";
    out += "\t.reg .b32 \t%r<" + std::to_string(nr_ + 1) + ">;\n";
    out += "\t.reg .b64 \t%rd<" + std::to_string(nrd_ + 1) + ">;\n";
    if (phases_)
      out += "\t// demoted variable\n\t.shared .align 4 .b8 _ZZ3genE2sh[" +
             std::to_string(4 * kPhaseWords * phases_) + "];\n";
    if (nvcc()) out += "\n";
    for (const std::string& line : body_) out += line + "\n";
    out += "\n}\n";
    return out;
  }
};

}  // namespace

const char* dialectName(PtxDialect d) { return d == PtxDialect::Clang ? "clang" : "nvcc"; }

Status validate(const PtxPolicy& p) {
  auto bad = [](const std::string& what) -> Status {
    return makeDiag(ErrorKind::Usage, "PTX generator policy: " + what);
  };
  auto prob = [](double x) { return x >= 0.0 && x <= 1.0; };
  if (p.maxRegions < 1 || p.maxRegions > 64) return bad("maxRegions must be 1..64");
  if (p.maxDepth < 0 || p.maxDepth > 4) return bad("maxDepth must be 0..4");
  if (p.maxArmRegions < 1 || p.maxArmRegions > 8) return bad("maxArmRegions must be 1..8");
  if (p.minOps < 0 || p.maxOps < p.minOps || p.maxOps > 64) return bad("need 0 <= minOps <= maxOps <= 64");
  if (p.maxTrips < 1 || p.maxTrips > 16) return bad("maxTrips must be 1..16");
  if (p.maxGrid < 1 || p.maxGrid > 16) return bad("maxGrid must be 1..16");
  if (p.maxBlockX < 1 || p.maxBlockX > 16) return bad("maxBlockX must be 1..16");
  if (p.maxGrid * p.maxBlockX > 126 - kOutWord) return bad("maxGrid * maxBlockX must leave out one word per thread (<= 102)");
  if (p.maxSlots < 1 || p.maxSlots > 8) return bad("maxSlots must be 1..8");
  if (p.minWideShift > 63) return bad("minWideShift must be 0..63");
  for (double x : {p.immProb, p.smallImmProb, p.freshProb, p.guardProb, p.ncProb, p.subWordProb, p.barRedProb})
    if (!prob(x)) return bad("probabilities must be in [0, 1]");
  if (p.wStraight + p.wIf + p.wIfElse + p.wLoop + p.wShared + p.wWarp + p.wEarlyExit == 0)
    return bad("every region weight is 0");
  if (p.wArith + p.wLogic + p.wShift + p.wDiv + p.wBits + p.wWide + p.wHalf + p.wSelect + p.wLoad +
          p.wStore + p.wAtomic == 0)
    return bad("every instruction weight is 0");
  return Ok{};
}

std::string describePtx(const PtxPolicy& policy, uint64_t seed) {
  std::string out = "qgpu-gen ptx v" + std::to_string(kPtxGeneratorVersion) + " seed=" + std::to_string(seed) +
                    " policy:";
#define QGPU_PTXGEN_DESCRIBE(type, name, def, doc) out += " " #name "=" + formatPolicyValue(policy.name);
  QGPU_PTXGEN_POLICY_FIELDS(QGPU_PTXGEN_DESCRIBE)
#undef QGPU_PTXGEN_DESCRIBE
  return out;
}

Expected<PtxPolicy> parsePtxPolicy(std::string_view text) {
  PtxPolicy policy;
  auto set = [&](std::string_view name, std::string_view value) -> std::optional<bool> {
#define QGPU_PTXGEN_PARSE(type, field, def, doc) \
  if (name == #field) return parsePolicyValue(value, policy.field);
    QGPU_PTXGEN_POLICY_FIELDS(QGPU_PTXGEN_PARSE)
#undef QGPU_PTXGEN_PARSE
    return std::nullopt;
  };
  QGPU_CHECK(readPolicyItems(text, "PTX generator policy", set));
  QGPU_CHECK(validate(policy));
  return policy;
}

Expected<PtxCase> generatePtx(const PtxPolicy& policy, uint64_t seed, PtxDialect dialect) {
  QGPU_CHECK(validate(policy));
  std::string header = describePtx(policy, seed) + " dialect=" + dialectName(dialect);
  return Generator(policy, seed, dialect).generate(std::move(header));
}

Expected<PtxCheck> checkPtxCase(const PtxCase& c) {
  auto fail = [&](ErrorKind kind, const std::string& what) -> Diag {
    return makeDiag(kind, what + "\n  case: " + c.header);
  };
  auto module = ptx::parse(c.ptx, "gen.ptx");
  if (!module) return fail(ErrorKind::Internal, "generated PTX does not parse: " + module.error().str());
  ptxeval::Launch el;
  el.gridX = c.gridX;
  el.blockX = c.blockX;
  std::copy(c.global.begin(), c.global.end(), el.global.begin());
  el.params.assign(c.params.begin(), c.params.end());
  auto ev = ptxeval::evaluate(*module, el);
  if (!ev) return fail(ErrorKind::Internal, "the PTX evaluator refused a generated case: " + ev.error().str());
  if (ev->status != ptxeval::EvalStatus::Finished)
    return fail(ErrorKind::Internal, std::string("the PTX evaluator: ") + ptxeval::statusName(ev->status) + ": " +
                                         ev->fault.str());
  if (ev->unspecified) return fail(ErrorKind::Internal, "a generated case is not UB-free: " + ev->firstUnspecified);

  PtxCheck out;
  lower::LowerOptions lo;
  lo.params = c.params;
  lo.verifyPasses = true;  // name the pass when VIR breaks (host/lower/verify_vfunc.h)
  auto program = lower::lower(*module, lo);
  machine::Launch ml;
  ml.gridX = c.gridX;
  ml.blockX = c.blockX;
  ml.global = c.global;
  auto refused = [](const Diag& d) {
    return d.kind == ErrorKind::PtxUnsupported || d.kind == ErrorKind::OverLimit;
  };
  if (!program) {
    if (!refused(program.error()))
      return fail(program.error().kind, "lowering failed (not a typed refusal): " + program.error().str());
    out.verdict = PtxVerdict::Refused;
    out.refusal = program.error();
    return out;
  }
  if (auto v = machine::verify(*program, ml); !v) {
    if (!refused(v.error())) return fail(v.error().kind, "verify with the launch: " + v.error().str());
    out.verdict = PtxVerdict::Refused;
    out.refusal = v.error();
    return out;
  }
  oracle::RunOptions ro;
  ro.recordTrace = false;
  ro.maxSteps = 10'000'000;
  auto run = oracle::run(*program, ml, ro);
  if (!run) return fail(run.error().kind, "interpreter: " + run.error().str());
  if (run->status != oracle::RunStatus::Finished)
    return fail(ErrorKind::Internal, "the interpreter did not finish: " + run->fault.str());
  for (uint32_t i = 0; i < machine::kGlobalWords; ++i)
    if (run->global[i] != ev->global[i])
      return fail(ErrorKind::Internal, "word " + std::to_string(i) + ": interpreter " + std::to_string(run->global[i]) +
                                           ", PTX evaluator " + std::to_string(ev->global[i]));
  return out;
}

}  // namespace qgpu::gen
