// qgpu/oracle/interpreter.cpp — the machine's reference semantics (docs/machine.md §4–§6).
//
// Layout of the hot loop: per step, the active lanes' registers are copied into a block-local
// array `lane[l][0..31]` (0..15 registers, 16..21 special registers), so an operand is one index;
// predicates are 4-bit lane masks; ops dispatch on a switch; nothing is allocated per op. At
// block end the registers named in `commit` are copied back and the trace tokens are written.
#include "oracle/interpreter.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <string>

namespace qgpu::oracle {

using namespace machine;
namespace tk = trace;

namespace {

constexpr int kSpecialBase = 16;  // lane[l][16 + special] holds the special registers
constexpr int kLaneSlots = 32;

// ---- Integer semantics (isa.def comments; PTX .u32/.s32 semantics) ----

uint32_t bfe(uint32_t a, uint32_t b, uint32_t c, bool isSigned) {
  const uint32_t pos = b & 0xff, len = c & 0xff;
  // PTX: bit i of d is a[pos+i] for i < len and pos+i <= 31, else the sign bit (0 for .u32).
  uint32_t sbit = 0;
  if (isSigned && len != 0) sbit = (a >> std::min<uint32_t>(pos + len - 1, 31)) & 1u;
  const uint32_t eff = pos >= 32 ? 0 : std::min<uint32_t>(len, 32 - pos);
  const uint32_t mask = eff >= 32 ? 0xffffffffu : ((1u << eff) - 1u);
  const uint32_t field = eff == 0 ? 0 : (a >> pos) & mask;
  return sbit ? (field | ~mask) : field;
}

uint32_t prmt(uint32_t a, uint32_t b, uint32_t c) {
  const uint64_t bytes = (static_cast<uint64_t>(b) << 32) | a;  // bytes 0..3 from a, 4..7 from b
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t sel = (c >> (4 * i)) & 0xf;
    uint32_t byte = static_cast<uint32_t>(bytes >> (8 * (sel & 7))) & 0xff;
    if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;  // sign-replicate mode of the selector
    d |= byte << (8 * i);
  }
  return d;
}

uint32_t alu(Op op, uint32_t a, uint32_t b, uint32_t c) {
  const auto sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
  switch (op) {
    case Op::Mov:
      return a;
    case Op::Add:
      return a + b;
    case Op::Sub:
      return a - b;
    case Op::Mul:
      return a * b;
    case Op::MulHiU:
      return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
    case Op::MulHiS:
      return static_cast<uint32_t>(static_cast<uint64_t>(static_cast<int64_t>(sa) * sb) >> 32);
    case Op::Mad:
      return a * b + c;
    case Op::DivU:
      return b == 0 ? 0xffffffffu : a / b;
    case Op::DivS:
      if (b == 0) return sa < 0 ? 1u : 0xffffffffu;
      if (sa == INT32_MIN && sb == -1) return a;
      return static_cast<uint32_t>(sa / sb);
    case Op::RemU:
      return b == 0 ? a : a % b;
    case Op::RemS:
      if (b == 0) return a;
      if (sa == INT32_MIN && sb == -1) return 0;
      return static_cast<uint32_t>(sa % sb);
    case Op::Neg:
      return 0u - a;
    case Op::Abs:
      return sa < 0 ? 0u - a : a;
    case Op::MinS:
      return sa < sb ? a : b;
    case Op::MinU:
      return a < b ? a : b;
    case Op::MaxS:
      return sa > sb ? a : b;
    case Op::MaxU:
      return a > b ? a : b;
    case Op::And:
      return a & b;
    case Op::Or:
      return a | b;
    case Op::Xor:
      return a ^ b;
    case Op::Not:
      return ~a;
    case Op::Shl:
      return b >= 32 ? 0 : a << b;
    case Op::ShrU:
      return b >= 32 ? 0 : a >> b;
    case Op::ShrS:
      return static_cast<uint32_t>(sa >> (b >= 32 ? 31 : b));
    case Op::Popc:
      return static_cast<uint32_t>(std::popcount(a));
    case Op::Clz:
      return static_cast<uint32_t>(std::countl_zero(a));
    case Op::Brev: {
      uint32_t r = 0;
      for (int i = 0; i < 32; ++i) r |= ((a >> i) & 1u) << (31 - i);
      return r;
    }
    case Op::Bfind:
      return a == 0 ? 0xffffffffu : 31u - static_cast<uint32_t>(std::countl_zero(a));
    case Op::BfeU:
      return bfe(a, b, c, false);
    case Op::BfeS:
      return bfe(a, b, c, true);
    case Op::Prmt:
      return prmt(a, b, c);
    case Op::ShfLW: {
      const uint32_t n = c & 31;
      return n == 0 ? b : (b << n) | (a >> (32 - n));
    }
    case Op::ShfRW: {
      const uint32_t n = c & 31;
      return n == 0 ? a : (a >> n) | (b << (32 - n));
    }
    default:
      return 0;  // not an ALU op: unreachable for verified programs
  }
}

bool compare(Op op, uint32_t a, uint32_t b) {
  const auto sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
  switch (op) {
    case Op::SetEq:
      return a == b;
    case Op::SetNe:
      return a != b;
    case Op::SetLtS:
      return sa < sb;
    case Op::SetLeS:
      return sa <= sb;
    case Op::SetGtS:
      return sa > sb;
    case Op::SetGeS:
      return sa >= sb;
    case Op::SetLtU:
      return a < b;
    case Op::SetLeU:
      return a <= b;
    case Op::SetGtU:
      return a > b;
    case Op::SetGeU:
      return a >= b;
    default:
      return false;
  }
}

// The new memory word of an atomic (the op returns the old one).
uint32_t atomic(Op op, uint32_t old, uint32_t b, uint32_t c) {
  switch (op) {
    case Op::AtomAdd:
      return old + b;
    case Op::AtomMinS:
      return static_cast<int32_t>(old) < static_cast<int32_t>(b) ? old : b;
    case Op::AtomMaxS:
      return static_cast<int32_t>(old) > static_cast<int32_t>(b) ? old : b;
    case Op::AtomMinU:
      return old < b ? old : b;
    case Op::AtomMaxU:
      return old > b ? old : b;
    case Op::AtomAnd:
      return old & b;
    case Op::AtomOr:
      return old | b;
    case Op::AtomXor:
      return old ^ b;
    case Op::AtomExch:
      return b;
    case Op::AtomInc:
      return old >= b ? 0 : old + 1;
    case Op::AtomDec:
      return (old == 0 || old > b) ? b : old - 1;
    case Op::AtomCas:
      return old == b ? c : old;
    default:
      return old;
  }
}

// The PTX shfl source lane (ptx-subset.md §7), or -1 when the caller keeps its own value.
int shuffleSource(Op op, int lane, uint32_t b, uint32_t c) {
  const int segmask = static_cast<int>((c >> 8) & 0x1f);
  const int clamp = static_cast<int>(c & 0x1f);
  const int maxLane = (lane & segmask) | (clamp & ~segmask);
  const int minLane = lane & segmask;
  b &= 0x1f;  // PTX: bval = b[4:0]
  int64_t j = 0;
  bool valid = false;
  switch (op) {
    case Op::ShflUp:
      j = static_cast<int64_t>(lane) - b;
      valid = j >= maxLane;
      break;
    case Op::ShflDown:
      j = static_cast<int64_t>(lane) + b;
      valid = j <= maxLane;
      break;
    case Op::ShflBfly:
      j = lane ^ static_cast<int64_t>(b);
      valid = j <= maxLane;
      break;
    case Op::ShflIdx:
      j = minLane | static_cast<int64_t>(b & ~static_cast<uint32_t>(segmask));
      valid = j <= maxLane;
      break;
    default:
      break;
  }
  if (!valid || j < 0 || j >= kLanes) return -1;
  return static_cast<int>(j);
}

const char* spaceName(Space s) {
  return s == Space::Global ? "global" : "shared";
}

std::string laneMask(uint32_t m) {
  std::string bits;
  for (int l = kLanes - 1; l >= 0; --l) bits += (m >> l & 1) ? '1' : '0';
  return bits;
}

// One run: the state of the machine and the trace being written.
class Machine {
 public:
  Machine(const Program& p, const Launch& launch, const RunOptions& options, RunResult& result)
      : p_(p), launch_(launch), opt_(options), res_(result) {
    res_.global = launch.global;
    nthreads_ = static_cast<int>(launch.blockX);
    nwarps_ = (nthreads_ + kLanes - 1) / kLanes;
    if (opt_.recordTrace) res_.trace.reserve(1024);
  }

  void run() {
    for (uint32_t cta = 0; cta < launch_.gridX; ++cta) {
      if (cta > 0) emit(tk::single(tk::Family::Cta));
      if (!runCta(cta)) return;
    }
    emit(tk::single(tk::Family::End));
    res_.status = RunStatus::Finished;
  }

 private:
  // ---- CTA and warp scheduling (docs/machine.md §5) ----

  bool runCta(uint32_t cta) {
    cta_ = cta;
    for (auto& r : regs_) r.fill(0);
    shared_.fill(0);
    for (int t = 0; t < kMaxThreadsPerBlock; ++t) pc_[t] = 0;
    for (int w = 0; w < kMaxWarps; ++w) {
      const int first = w * kLanes;
      const int n = std::clamp(nthreads_ - first, 0, kLanes);
      live_[w] =
          static_cast<uint8_t>((1u << n) - 1u);  // lanes not exited (missing lanes never live)
      waiting_[w] = false;
    }
    int cur = 0;
    while (true) {
      if (!ready(cur)) {
        cur = lowestReady();
        if (cur < 0) {
          // No warp can run: release the barrier if anyone waits, else the CTA is done.
          bool anyWaiting = false;
          for (int w = 0; w < nwarps_; ++w) {
            anyWaiting |= waiting_[w];
            waiting_[w] = false;
          }
          if (!anyWaiting) return true;
          cur = lowestReady();
        }
      }
      // Min-PC: the warp runs the lowest block among its live lanes.
      int block = kMaxBlocks;
      for (int l = 0; l < kLanes; ++l) {
        if (live_[cur] >> l & 1) block = std::min<int>(block, pc_[cur * kLanes + l]);
      }
      uint32_t mask = 0;
      for (int l = 0; l < kLanes; ++l) {
        if ((live_[cur] >> l & 1) && pc_[cur * kLanes + l] == block) mask |= 1u << l;
      }
      const bool traceFull = opt_.recordTrace && res_.trace.size() >= opt_.maxTraceTokens;
      if (res_.blockExecs >= opt_.maxSteps || traceFull) {
        emit(tk::single(tk::Family::Limit));
        res_.status = RunStatus::StepLimit;
        const std::string limit =
            traceFull ? "its trace reached " + std::to_string(opt_.maxTraceTokens) +
                            " tokens (after " + std::to_string(res_.blockExecs) + " steps)"
                      : "it did not finish in " + std::to_string(opt_.maxSteps) + " steps";
        res_.fault = makeDiag(ErrorKind::StepLimit, "program '" + p_.name + "': " + limit +
                                                        " (CTA " + std::to_string(cta_) +
                                                        ", next: warp " + std::to_string(cur) +
                                                        " block " + std::to_string(block) + ")");
        return false;
      }
      if (!step(cur, block, mask)) return false;
    }
  }

  bool ready(int w) const { return w < nwarps_ && live_[w] != 0 && !waiting_[w]; }
  int lowestReady() const {
    for (int w = 0; w < nwarps_; ++w) {
      if (ready(w)) return w;
    }
    return -1;
  }

  // ---- One step: EXEC of block b for warp w with active mask m ----

  bool step(int w, int b, uint32_t m) {
    const Block& blk = p_.blocks[static_cast<size_t>(b)];
    ++res_.blockExecs;
    emit(tk::ex(b));
    emit(tk::wm(w, static_cast<int>(m)));
    if (blk.term.kind == TermKind::Barrier && m != live_[w]) {
      return fault(makeDiag(ErrorKind::MachineFault,
                            where(w, -1, b, -1) + ": divergent barrier: lanes " + laneMask(m) +
                                " reached the barrier while live lanes " + laneMask(live_[w] & ~m) +
                                " are at other blocks (undefined behaviour in CUDA)"));
    }
    // Block-local registers and specials for each lane.
    for (int l = 0; l < kLanes; ++l) {
      if (!(m >> l & 1)) continue;
      const int t = w * kLanes + l;
      std::copy(regs_[t].begin(), regs_[t].end(), lane_[l]);
      lane_[l][kSpecialBase + static_cast<int>(Special::TidX)] = static_cast<uint32_t>(t);
      lane_[l][kSpecialBase + static_cast<int>(Special::NtidX)] = launch_.blockX;
      lane_[l][kSpecialBase + static_cast<int>(Special::CtaidX)] = cta_;
      lane_[l][kSpecialBase + static_cast<int>(Special::NctaidX)] = launch_.gridX;
      lane_[l][kSpecialBase + static_cast<int>(Special::LaneId)] = static_cast<uint32_t>(l);
      lane_[l][kSpecialBase + static_cast<int>(Special::WarpId)] = static_cast<uint32_t>(w);
    }
    // Predicates start unset; an unset predicate reads false (verify() forbids reading one).
    uint8_t preds[kPreds] = {};
    ++epoch_;
    ntouched_ = 0;

    const int active = std::popcount(m);
    for (size_t i = 0; i < blk.ops.size(); ++i) {
      const Instr& in = blk.ops[i];
      res_.laneInstrs += static_cast<uint64_t>(active);
      uint32_t om = m;  // lanes this op acts in
      if (in.guard.pred != kNoPred) {
        const uint32_t g = preds[in.guard.pred];
        om &= in.guard.negate ? ~g : g;
      }
      if (om == 0) continue;
      if (!execOp(in, om, preds, w, b, static_cast<int>(i))) return false;
    }

    // Terminator: commit live-outs, move the lanes.
    if (opt_.recordTrace) emitWrites(blk.commit, m);
    for (int l = 0; l < kLanes; ++l) {
      if (!(m >> l & 1)) continue;
      const int t = w * kLanes + l;
      for (uint32_t c = blk.commit; c != 0; c &= c - 1) {
        const int r = std::countr_zero(c);
        regs_[t][r] = lane_[l][r];
      }
    }
    const Terminator& term = blk.term;
    for (int l = 0; l < kLanes; ++l) {
      if (!(m >> l & 1)) continue;
      uint8_t& pc = pc_[w * kLanes + l];
      switch (term.kind) {
        case TermKind::Jump:
        case TermKind::Barrier:
          pc = term.next;
          break;
        case TermKind::Branch: {
          const bool p = ((preds[term.pred] >> l) & 1) != (term.negate ? 1 : 0);
          pc = p ? term.taken : term.next;
          if (pc == kExitTarget) live_[w] = static_cast<uint8_t>(live_[w] & ~(1u << l));
          break;
        }
        case TermKind::Exit:
          live_[w] = static_cast<uint8_t>(live_[w] & ~(1u << l));
          break;
      }
    }
    if (term.kind == TermKind::Barrier) waiting_[w] = true;
    return true;
  }

  uint32_t src(const Operand& o, int l) const {
    switch (o.kind) {
      case OperandKind::Imm:
        return o.imm;
      case OperandKind::Reg:
        return lane_[l][o.reg];
      case OperandKind::Special:
        return lane_[l][kSpecialBase + static_cast<int>(o.special)];
      case OperandKind::None:
        break;
    }
    return 0;
  }
  void setReg(int l, uint8_t r, uint32_t v) {
    lane_[l][r] = v;
    lane_[l][0] = 0;  // r0 discards writes
  }
  static void setPred(uint8_t* preds, uint8_t p, uint32_t om, uint32_t bits) {
    preds[p] = static_cast<uint8_t>((preds[p] & ~om) | (bits & om));
  }

  bool execOp(const Instr& in, uint32_t om, uint8_t* preds, int w, int b, int i) {
    const OpClass cls = opInfo(in.op).cls;
    switch (cls) {
      case OpClass::Alu:
        for (int l = 0; l < kLanes; ++l) {
          if (om >> l & 1)
            setReg(l, in.dst, alu(in.op, src(in.src[0], l), src(in.src[1], l), src(in.src[2], l)));
        }
        return true;
      case OpClass::Cmp: {
        uint32_t bits = 0;
        for (int l = 0; l < kLanes; ++l) {
          if ((om >> l & 1) && compare(in.op, src(in.src[0], l), src(in.src[1], l)))
            bits |= 1u << l;
        }
        setPred(preds, in.dstPred, om, bits);
        return true;
      }
      case OpClass::Sel: {
        const uint32_t p = preds[in.psrc[0]];
        for (int l = 0; l < kLanes; ++l) {
          if (om >> l & 1) setReg(l, in.dst, (p >> l & 1) ? src(in.src[0], l) : src(in.src[1], l));
        }
        return true;
      }
      case OpClass::Pred: {
        const uint32_t a = in.psrc[0] != kNoPred ? preds[in.psrc[0]] : 0;
        const uint32_t c = in.psrc[1] != kNoPred ? preds[in.psrc[1]] : 0;
        uint32_t bits = 0;
        switch (in.op) {
          case Op::PAnd:
            bits = a & c;
            break;
          case Op::POr:
            bits = a | c;
            break;
          case Op::PXor:
            bits = a ^ c;
            break;
          case Op::PNot:
            bits = ~a;
            break;
          case Op::PMov:
            bits = a;
            break;
          case Op::PConst:
            bits = in.src[0].imm ? 0xfu : 0u;
            break;
          default:
            break;
        }
        setPred(preds, in.dstPred, om, bits);
        return true;
      }
      case OpClass::Mem:
        return execMem(in, om, w, b, i);
      case OpClass::Local:
        for (int l = 0; l < kLanes; ++l) {
          if (!(om >> l & 1)) continue;
          const int word = p_.sharedWords + in.offset * nthreads_ + w * kLanes + l;
          if (in.op == Op::LdLocal)
            setReg(l, in.dst, shared_[word]);
          else
            store(Space::Shared, word, src(in.src[0], l));
        }
        return true;
      case OpClass::Warp: {
        if (in.op == Op::Ballot || in.op == Op::VoteAny || in.op == Op::VoteAll) {
          const uint32_t votes = preds[in.psrc[0]] & om;
          if (in.op == Op::Ballot) {
            for (int l = 0; l < kLanes; ++l) {
              if (om >> l & 1) setReg(l, in.dst, votes);
            }
          } else {
            const bool r = in.op == Op::VoteAny ? votes != 0 : votes == om;
            setPred(preds, in.dstPred, om, r ? 0xfu : 0u);
          }
          return true;
        }
        // Shuffle: every lane reads its source before any lane writes.
        uint32_t val[kLanes] = {};
        for (int l = 0; l < kLanes; ++l) {
          if (om >> l & 1) val[l] = src(in.src[0], l);
        }
        uint32_t out[kLanes] = {};
        for (int l = 0; l < kLanes; ++l) {
          if (!(om >> l & 1)) continue;
          const int j = shuffleSource(in.op, l, src(in.src[1], l), src(in.src[2], l));
          out[l] = (j >= 0 && (om >> j & 1)) ? val[j] : val[l];
        }
        for (int l = 0; l < kLanes; ++l) {
          if (om >> l & 1) setReg(l, in.dst, out[l]);
        }
        return true;
      }
    }
    return true;
  }

  bool execMem(const Instr& in, uint32_t om, int w, int b, int i) {
    const int words = in.space == Space::Global ? kGlobalWords : p_.sharedWords;
    uint32_t* mem = in.space == Space::Global ? res_.global.data() : shared_.data();
    // Lanes in order 0..3: stores to one address leave the highest lane's value; atomics are
    // serialised and each sees the previous lane's result.
    for (int l = 0; l < kLanes; ++l) {
      if (!(om >> l & 1)) continue;
      const uint32_t addr = src(in.src[0], l) + static_cast<uint32_t>(in.offset);
      if (addr % 4 != 0 || addr / 4 >= static_cast<uint32_t>(words)) {
        const char* access = in.op == Op::Ld ? "load" : in.op == Op::St ? "store" : "atomic";
        std::string why = addr % 4 != 0 ? "is not a multiple of 4"
                                        : "is out of range: " + std::string(spaceName(in.space)) +
                                              " memory has " + std::to_string(words) + " words (" +
                                              std::to_string(4 * words) + " bytes)";
        return fault(makeDiag(ErrorKind::MachineFault,
                              where(w, l, b, i) + ": " + spaceName(in.space) + " " + access +
                                  " at byte address " + std::to_string(addr) + " (" +
                                  std::to_string(static_cast<int32_t>(addr)) + ") " + why));
      }
      const int word = static_cast<int>(addr / 4);
      if (in.op == Op::Ld) {
        setReg(l, in.dst, mem[word]);
      } else if (in.op == Op::St) {
        store(in.space, word, src(in.src[1], l));
      } else {
        const uint32_t old = mem[word];
        store(in.space, word, atomic(in.op, old, src(in.src[1], l), src(in.src[2], l)));
        setReg(l, in.dst, old);
      }
    }
    return true;
  }

  // Writes a word, remembering its value at block start for the trace's net memory changes.
  void store(Space space, int word, uint32_t value) {
    const int s = space == Space::Global ? 0 : 1;
    uint32_t* mem = s == 0 ? res_.global.data() : shared_.data();
    if (opt_.recordTrace && stamp_[s][word] != epoch_) {
      stamp_[s][word] = epoch_;
      before_[s][word] = mem[word];
      touched_[ntouched_++] = static_cast<uint16_t>(s * 256 + word);
    }
    mem[word] = value;
  }

  // ---- Trace ----

  void emit(tk::Token t) {
    if (opt_.recordTrace) res_.trace.push_back(t);
  }

  void emitWrites(uint16_t commit, uint32_t m) {
    for (uint32_t c = commit; c != 0; c &= c - 1) {
      const int r = std::countr_zero(c);
      uint32_t first = 0;
      bool uniform = true, seen = false;
      for (int l = 0; l < kLanes; ++l) {
        if (!(m >> l & 1)) continue;
        if (!seen) first = lane_[l][r];
        uniform &= lane_[l][r] == first;
        seen = true;
      }
      if (uniform) {
        emit(tk::wu(r));
        tk::appendValue(res_.trace, first);
      } else {
        emit(tk::wr(r));
        for (int l = 0; l < kLanes; ++l) {
          if (m >> l & 1) tk::appendValue(res_.trace, lane_[l][r]);
        }
      }
    }
    // Net memory changes: words that differ from their value at block start, sorted, in runs.
    std::sort(touched_, touched_ + ntouched_);
    uint16_t changed[2 * 128];
    int n = 0;
    for (int k = 0; k < ntouched_; ++k) {
      const int s = touched_[k] / 256, word = touched_[k] % 256;
      const uint32_t now = s == 0 ? res_.global[word] : shared_[word];
      if (now != before_[s][word]) changed[n++] = touched_[k];
    }
    for (int k = 0; k < n;) {
      int len = 1;
      while (k + len < n && len < 4 && changed[k + len] == changed[k] + len) ++len;
      const int s = changed[k] / 256, word = changed[k] % 256;
      emit(s == 0 ? tk::stg(len) : tk::sts(len));
      tk::appendValue(res_.trace, static_cast<uint32_t>(word));
      for (int j = 0; j < len; ++j) {
        tk::appendValue(res_.trace, s == 0 ? res_.global[word + j] : shared_[word + j]);
      }
      k += len;
    }
  }

  std::string where(int w, int l, int b, int i) const {
    std::string out = "CTA " + std::to_string(cta_) + " warp " + std::to_string(w);
    if (l >= 0)
      out += " lane " + std::to_string(l) + " (thread " + std::to_string(w * kLanes + l) + ")";
    out += ", block " + std::to_string(b);
    if (i >= 0) {
      out += " op " + std::to_string(i) + " (" +
             print(p_.blocks[static_cast<size_t>(b)].ops[static_cast<size_t>(i)]) + ")";
    }
    return out;
  }

  bool fault(Diag diag) {
    diag.message = "program '" + p_.name + "': " + diag.message;
    emit(tk::single(tk::Family::FaultTok));
    res_.status = RunStatus::Fault;
    res_.fault = std::move(diag);
    return false;
  }

  const Program& p_;
  const Launch& launch_;
  const RunOptions& opt_;
  RunResult& res_;
  int nthreads_ = 0;
  int nwarps_ = 0;
  uint32_t cta_ = 0;

  std::array<std::array<uint32_t, kRegs>, kMaxThreadsPerBlock> regs_{};
  std::array<uint32_t, kSharedWords> shared_{};
  uint8_t pc_[kMaxThreadsPerBlock] = {};
  uint8_t live_[kMaxWarps] = {};
  bool waiting_[kMaxWarps] = {};
  uint32_t lane_[kLanes][kLaneSlots] = {};

  // Net-change tracking for the trace: at most 16 ops x 4 lanes stores per step.
  uint32_t epoch_ = 0;
  uint32_t stamp_[2][kSharedWords > kGlobalWords ? kSharedWords : kGlobalWords] = {};
  uint32_t before_[2][kSharedWords > kGlobalWords ? kSharedWords : kGlobalWords] = {};
  uint16_t touched_[kMaxOpsPerBlock * kLanes] = {};
  int ntouched_ = 0;
};

}  // namespace

Expected<RunResult> run(const Program& program, const Launch& launch, const RunOptions& options) {
  QGPU_CHECK(verify(program, launch));
  RunResult result;
  Machine machine_(program, launch, options, result);
  machine_.run();
  return result;
}

}  // namespace qgpu::oracle
