// qgpu/host/lower/translate.h — the pieces of pass 2 (translate), internal to host/lower/.
//
// translate() (translate.cpp) lays out shared memory, forms the basic blocks and hands every
// other instruction to its family; each piece has its own file:
//   translate.cpp          block formation (labels, bra, ret/exit, block barriers) and dispatch
//   translate_shared.cpp   shared-memory layout (user variables, the hidden bar.red counter)
//   translate_values.cpp   value bounds, demanded high halves, the ValueMap (PTX register ->
//                          vregs) and operand reading
//   translate_emit.cpp     the Emitter: VIR ops into the current block, with guard and location
//   translate_convert.cpp  predicate logic, setp, cvt, cvta, mov, selp
//   translate_64.cpp       64-bit arithmetic (both halves where the high half is demanded)
//   translate_32.cpp       16- and 32-bit arithmetic; one-to-one opcodes come from a table
//   translate_memory.cpp   ld, st, atom, ld.param, the 64-bit address check, local memory
//   translate_generic.cpp  where generic addresses can point (static or dynamic space choice),
//                          and which registers hold known local-frame addresses
//   translate_warp.cpp     shfl, vote, bar.red, bar.warp
//
// Value representation (docs/lowering.md §2):
//   * a .b32 register is one vreg; a .b16 register is one vreg holding the value zero-extended
//     to 32 bits (every 16-bit op re-normalises; signed reads sign-extend with bfe.s);
//   * a .b64 register is one vreg for its low half, plus a second vreg for its high half only if
//     an instruction reads the high half (demandedHigh) and the value is not provably below 2^32
//     (valueBounds). Every definition of such a register must then write its high half exactly:
//     ValueMap hands out the high vreg through a Dest handle and refuses an instruction that
//     left a demanded high half unwritten ("64-bit value whose upper half is used");
//   * a .pred register is one predicate vreg.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/lower/vir.h"

namespace qgpu::lower::tr {

int typeBits(ptx::Type t);  // 1 for .pred, 0 for none
bool typeSigned(ptx::Type t);

// A 64-bit address whose high word is not zero is replaced by this one: word-aligned and above
// every memory of the machine (global and shared have 126 words), so the access faults.
inline constexpr uint32_t kFaultAddress = 0xfffffffcu;

// ---- Generic addresses (translate_generic.cpp; docs/lowering.md, "Generic addresses") ----
// The shared window of the generic space, ptxeval's (ptxeval/eval.h kSharedGenericBase/Span): a
// generic address g with g - kSharedWindow < kSharedWindowSpan is shared byte g - kSharedWindow;
// every other generic address is global. cvta.shared adds kSharedWindow, cvta.to.shared subtracts it.
inline constexpr uint32_t kSharedWindow = 0x80000000u;
inline constexpr uint32_t kSharedWindowSpan = 1u << 20;
// What a register's value may be as a generic address: a bit set.
inline constexpr uint8_t kGenShared = 1;   // may be a shared-window pointer (cvta.shared of something, plus offsets)
inline constexpr uint8_t kGenOther = 2;    // may be another pointer (cvta.global, cvta.to.*, a .shared symbol's own address)
inline constexpr uint8_t kGenInteger = 4;  // may be an integer with no pointer in it (a raw parameter, an index): global
inline constexpr uint8_t kGenLocal = 8;    // may be a local-window pointer (cvta.local of something, plus offsets)
// kind[r] for every register: the union over its definitions, to a fixed point.
std::vector<uint8_t> genericSpaces(const FlatFunction& f);
// For a register that is only ever a shared-window pointer (kind == kGenShared): k such that
// every value it holds lies in [kSharedWindow, kSharedWindow + 2^k); 64 when not known (and for
// every other register). `bound` is valueBounds.
std::vector<int> windowBounds(const FlatFunction& f, const std::vector<int>& bound, const std::vector<uint8_t>& kind);
// exact[i]: instruction i is a generic ld/st/atom through a 64-bit shared-window-only register
// whose window bound is <= 30, so its 32-bit low word gives the access exactly and the
// address needs no high-half check (docs/lowering.md, "Generic addresses").
std::vector<bool> windowExactAddresses(const FlatFunction& f, const std::vector<int>& window,
                                       const std::vector<uint8_t>& kind);

// ---- Entry parameters (translate_values.cpp) ----
// The value `ld.param.T d, [p+off]` of an entry parameter puts into a 64-bit register: the
// parameter's |T| bits from byte off (little-endian) extended per T (a register narrower than 64
// bits holds its low bits). nullopt when p is no entry parameter or the bytes lie outside it.
std::optional<uint64_t> paramValue(const FlatFunction& f, const ptx::Instruction& in);

// ---- Value bounds and demanded high halves (translate_values.cpp) ----
// bound[r] = k: every value register r ever holds is < 2^k (docs/lowering.md, "Sound narrowing").
std::vector<int> valueBounds(const FlatFunction& f);
// reader[r] = index of an instruction that reads the high half of 64-bit register r, or -1.
// Addresses of instructions with exactAddress[i] (windowExactAddresses) read no high half.
std::vector<int> demandedHigh(const FlatFunction& f, const std::vector<int>& bound,
                              const std::vector<bool>& exactAddress = {});

// ---- Shared memory (translate_shared.cpp) ----
struct SharedLayout {
  std::map<std::string, uint32_t> offset;  // .shared symbol -> byte offset
  int hiddenCounter = -1;                  // byte offset of the bar.red counter word, -1: none
  uint32_t words = 0;                      // user words plus the counter
  // The kernel's .local frame (docs/lowering.md, "Local memory"): each thread's own, frame byte
  // offsets from 0 in declaration order, each variable aligned to max(.align, 4); word w of thread
  // t's frame is spill slot w, shared word words + w * blockX + t.
  std::map<std::string, uint32_t> localOffset;  // .local symbol -> frame byte offset
  uint32_t localWords = 0;                      // frame size in words
};
// Declaration order from word 0, each variable aligned (at least to a word); OverLimit past 126,
// counting the local frame's words (one thread's).
Expected<SharedLayout> layoutShared(const FlatFunction& f);

// ---- Local memory (translate_memory.cpp; docs/lowering.md, "Local memory") ----
// The generic window of the local space, ptxeval's (ptxeval/eval.h kLocalGenericBase/Span):
// cvta.local adds kLocalWindow to a frame offset, cvta.to.local subtracts it.
inline constexpr uint32_t kLocalWindow = 0xc0000000u;
inline constexpr uint32_t kLocalWindowSpan = 1u << 20;
// frame[r]: the value of register r when it is a known local address — defined exactly once,
// unguarded, by `mov` of a .local symbol (its frame offset) or of such a register, `add`/`sub`
// of such a register and an immediate, `cvta.local` (+kLocalWindow) or `cvta.to.local`
// (-kLocalWindow) of one — and the value is below 2^32. So the depots' `add.u64 %rd6, %SPL, 0`
// and `[%rd6+4]` are constant frame offsets, one ldl/stl each (translate_memory.cpp).
std::vector<std::optional<uint64_t>> frameConstants(const FlatFunction& f, const std::map<std::string, uint32_t>& localOffset);

// ---- Emitter (translate_emit.cpp) ----
// Appends VIR ops to the current block; every op carries the guard and source location of the
// PTX instruction being translated (setContext).
class Emitter {
 public:
  explicit Emitter(VFunc& out) : out_(out) {}
  VFunc& func() { return out_; }
  int current() const { return cur_; }
  void setCurrent(int block) { cur_ = block; }
  bool isOpen(int block) const { return open_[static_cast<size_t>(block)]; }
  int newBlock();
  void terminate(VTerm t) { terminateBlock(cur_, t); }
  void terminateBlock(int block, VTerm t);
  void setContext(int guard, bool guardNeg, SourceLoc loc);

  void emit(VInstr v);
  // v under the given guard instead of the instruction's (kNone: unguarded), with its location.
  void emitGuarded(VInstr v, int guard, bool guardNeg);
  int guard() const { return guard_; }
  bool guardNeg() const { return guardNeg_; }
  void alu(machine::Op op, int dst, VOperand a, VOperand b = {}, VOperand c = {});
  void cmp(machine::Op op, int dstPred, VOperand a, VOperand b);
  void selp(int dst, VOperand a, VOperand b, int p);
  void pop(machine::Op op, int dstPred, int a, int b = kNone);
  // op into a temporary, then mask to 16 bits into dst.
  void alu16(machine::Op op, int dst, VOperand a, VOperand b = {}, VOperand c = {});
  VOperand sext16(VOperand a);  // a 16-bit value sign-extended to 32 bits
  int tmp() { return out_.newReg(); }
  int newPred() { return out_.newPred(); }

 private:
  VFunc& out_;
  std::vector<bool> open_;  // per block: no terminator yet
  int cur_ = 0;
  int guard_ = kNone;
  bool guardNeg_ = false;
  SourceLoc loc_;
};

// ---- Value map (translate_values.cpp) ----
class ValueMap;

// The destination of one definition by the instruction being translated. For a 64-bit register
// whose high half is demanded, hi() hands out the high-half vreg: taking it is what completes
// the definition, and ValueMap::finish refuses an instruction whose definitions left a demanded
// high half untaken. wantsHi() is false when nobody reads the high half or it is provably zero.
class Dest {
 public:
  int lo = kNone;
  bool wantsHi() const { return hi_ != kNone; }
  int hi();

 private:
  friend class ValueMap;
  ValueMap* map_ = nullptr;
  int hi_ = kNone;
  size_t pending_ = 0;
};

class ValueMap {
 public:
  void init(const FlatFunction& f, VFunc& out);
  int regBits(uint32_t reg) const;
  int bound(uint32_t reg) const { return bound_[reg]; }
  int srcLo(uint32_t reg) const { return lo_[reg]; }   // reading; definitions go through define
  int srcHi(uint32_t reg) const { return hi_[reg]; }   // kNone: not kept
  int pred(uint32_t reg) const { return pr_[reg]; }
  uint8_t generic(uint32_t reg) const { return generic_[reg]; }  // genericSpaces
  // windowExactAddresses for the instruction at index i of the body.
  bool windowExact(size_t i) const { return i < windowExact_.size() && windowExact_[i]; }
  // The value of a register defined exactly once, unguarded, by ld.param, a mov of an immediate
  // or a cvta (.global, or .shared: +/- kSharedWindow) of such a register (the same rule as
  // cleanup's constant propagation: a read that no definition reaches is undefined in PTX).
  std::optional<uint64_t> constant(uint32_t reg) const { return constant_[reg]; }
  Dest define(uint32_t reg);  // a general (non-predicate) register
  // After each instruction: PtxUnsupported naming the register, this instruction and the reader
  // of the high half, if a demanded high half of a destination was not written.
  Status finish(const ptx::Instruction& in, const FlatFunction& f);

 private:
  friend class Dest;
  struct Pending {
    uint32_t reg;
    bool done;
  };
  std::vector<int> lo_, hi_, pr_, bound_, hiReader_, regBits_;
  std::vector<uint8_t> generic_;
  std::vector<bool> windowExact_;
  std::vector<std::optional<uint64_t>> constant_;
  std::vector<Pending> pending_;  // the current instruction's definitions with a wanted high half
};

// ---- The state every family works on ----
struct Ctx {
  const FlatFunction& f;
  Emitter& em;
  ValueMap& vals;
  const SharedLayout& shared;
  std::set<uint32_t> usedPreds;  // predicate registers read anywhere (sources, guards)
  const ptx::Instruction* in = nullptr;
  std::vector<std::optional<uint64_t>> frame;  // frameConstants, for local accesses

  Diag unsupported(const std::string& why) const;
  Diag invalid(const std::string& why) const;
  int regBits(const ptx::Operand& o) const { return vals.regBits(o.reg); }
  Expected<VOperand> special(const std::string& name) const;
  Expected<VOperand> laneMask(const std::string& name);  // %lanemask_*, computed from %laneid
  // The low 32 bits (or the normalised 16-bit value, for width 16) of a source operand.
  Expected<VOperand> val(const ptx::Operand& o, int width);
  // The high 32 bits of a 64-bit source (register, address base or immediate); 0 when provably so.
  Expected<VOperand> valHi(const ptx::Operand& o) const;
  Expected<int> predOf(const ptx::Operand& o) const;
  Expected<Dest> dest(const ptx::Operand& o);  // a general register destination
  void writeHi(Dest& d, VOperand value);       // mov of the high half, if it is wanted
  // The 64-bit value of an immediate or of a constant register (ValueMap::constant).
  std::optional<uint64_t> constant(const ptx::Operand& o) const;
};

// ---- Instruction families; each translates c.in ----
Status translateMemory(Ctx& c);   // ld (ld.param included), st, atom  (translate_memory.cpp)
Status translateWarp(Ctx& c);     // shfl, vote, bar.red, bar.warp     (translate_warp.cpp)
// Predicate logic, setp, cvt, cvta, mov, selp: true if c.in was one of them (translate_convert.cpp).
Expected<bool> translateConvert(Ctx& c);
// Arithmetic on general registers; d is the destination, s the sources read per their widths.
Status translate64(Ctx& c, Dest& d, const std::vector<VOperand>& s);  // translate_64.cpp
Status translate32(Ctx& c, Dest& d, const std::vector<VOperand>& s);  // translate_32.cpp
// d = (xh:xl) + k (mod 2^64): the carry out of the low word is one compare against k's low word;
// the high half only where d wants it (translate_64.cpp).
void addConstant64(Ctx& c, Dest& d, VOperand xl, VOperand xh, uint64_t k);
// dstPred = (ah:al) OP (bh:bl) for an ordered 32-bit compare op OP, whose signedness is the
// 64-bit compare's: the high words compared strictly, ties decided by the low words unsigned
// (translate_64.cpp).
void compare64(Ctx& c, machine::Op op, int dstPred, VOperand al, VOperand ah, VOperand bl, VOperand bh);

}  // namespace qgpu::lower::tr
