// qgpu/oracle/interpreter.cpp — the machine's reference semantics (docs/machine.md §4–§6).
//
// Layout of the hot loop: per step, the active lanes' registers are copied into a working array
// `lane[l][0..31]` (0..15 registers, 16..21 special registers), so an operand is one index;
// predicates are 4-bit lane masks; ops dispatch on a switch; nothing is allocated per op. Every
// register write takes effect when its op executes (there are no block-local reverts): the
// working array is the register file of the running warp, copied back whole at step end (also
// at a fault). With the trace on, each op's effects are recorded as it completes (OpEffects).
//
// The machine is an `Execution` advanced one event at a time; `run` drives it to the end and is
// one consumer of its events (the token trace, appendTrace), the circuit's tests another.
#include "oracle/interpreter.h"

#include "oracle/semantics.h"

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

const char* spaceName(Space s) {
  return s == Space::Global ? "global" : "shared";
}

std::string laneMask(uint32_t m) {
  std::string bits;
  for (int l = kLanes - 1; l >= 0; --l) bits += (m >> l & 1) ? '1' : '0';
  return bits;
}

}  // namespace

// The state of one run.
class Execution::Machine {
 public:
  Machine(const Program& p, const Launch& launch, const RunOptions& options)
      : p_(p), launch_(launch), opt_(options) {
    global_ = launch.global;
    nthreads_ = static_cast<int>(launch.blockX);
    nwarps_ = (nthreads_ + kLanes - 1) / kLanes;
  }

  // The next event. With `limit`, the run ends as StepLimit before the next step, for that
  // reason (a consumer's bound, e.g. the trace's size); a CTA start or the end come first.
  const StepEvent& next(const std::string* limit = nullptr) {
    if (done_) return ev_;
    ev_.stepsBefore = blockExecs_;
    if (ctaPending_) {
      if (cta_ == launch_.gridX) return finish(EventKind::Finished);
      startCta();
      if (cta_ > 0) {
        ev_.kind = EventKind::CtaStart;
        ev_.step.cta = cta_;
        return ev_;
      }
    }
    if (!ready(cur_)) {
      cur_ = lowestReady();
      if (cur_ < 0) {
        // No warp can run: release the barrier if anyone waits, else the CTA is done.
        bool anyWaiting = false;
        for (int w = 0; w < nwarps_; ++w) {
          anyWaiting |= waiting_[w];
          waiting_[w] = false;
        }
        if (!anyWaiting) {
          ++cta_;
          ctaPending_ = true;
          return next(limit);
        }
        cur_ = lowestReady();
      }
    }
    // Min-PC: the warp runs the lowest block among its live lanes.
    int block = kMaxBlocks;
    for (int l = 0; l < kLanes; ++l) {
      if (live_[cur_] >> l & 1) block = std::min<int>(block, pc_[cur_ * kLanes + l]);
    }
    uint32_t mask = 0;
    for (int l = 0; l < kLanes; ++l) {
      if ((live_[cur_] >> l & 1) && pc_[cur_ * kLanes + l] == block) mask |= 1u << l;
    }
    if (limit != nullptr || blockExecs_ >= opt_.maxSteps) {
      const std::string why = limit != nullptr ? *limit
                                               : "it did not finish in " +
                                                     std::to_string(opt_.maxSteps) + " steps";
      ev_.fault = makeDiag(ErrorKind::StepLimit, "program '" + p_.name + "': " + why + " (CTA " +
                                                     std::to_string(cta_) + ", next: warp " +
                                                     std::to_string(cur_) + " block " +
                                                     std::to_string(block) + ")");
      return finish(EventKind::StepLimit);
    }
    ev_.kind = step(cur_, block, mask) ? EventKind::Step : EventKind::Fault;
    if (ev_.kind == EventKind::Fault) done_ = true;
    return ev_;
  }

  bool done() const { return done_; }
  const std::array<uint32_t, kGlobalWords>& global() const { return global_; }
  uint64_t blockExecs() const { return blockExecs_; }
  uint64_t laneInstrs() const { return laneInstrs_; }

 private:
  // ---- CTA and warp scheduling (docs/machine.md §5) ----

  const StepEvent& finish(EventKind kind) {
    ev_.kind = kind;
    done_ = true;
    return ev_;
  }

  void startCta() {
    ctaPending_ = false;
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
    cur_ = 0;
  }

  bool ready(int w) const { return w >= 0 && w < nwarps_ && live_[w] != 0 && !waiting_[w]; }
  int lowestReady() const {
    for (int w = 0; w < nwarps_; ++w) {
      if (ready(w)) return w;
    }
    return -1;
  }

  // ---- One step: EXEC of block b for warp w with active mask m ----

  bool step(int w, int b, uint32_t m) {
    const Block& blk = p_.blocks[static_cast<size_t>(b)];
    ++blockExecs_;
    StepEffects& fx = ev_.step;
    fx.cta = cta_;
    fx.warp = static_cast<uint8_t>(w);
    fx.block = static_cast<uint8_t>(b);
    fx.mask = static_cast<uint8_t>(m);
    fx.numOps = 0;
    fx.barrier = false;
    if (blk.term.kind == TermKind::Barrier && m != live_[w]) {
      return fault(makeDiag(ErrorKind::MachineFault,
                            where(w, -1, b, -1) + ": divergent barrier: lanes " + laneMask(m) +
                                " reached the barrier while live lanes " + laneMask(live_[w] & ~m) +
                                " are at other blocks (undefined behaviour in CUDA)"));
    }
    // The running warp's registers and specials for each lane.
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

    const int active = std::popcount(m);
    bool ok = true;
    for (size_t i = 0; i < blk.ops.size(); ++i) {
      const Instr& in = blk.ops[i];
      laneInstrs_ += static_cast<uint64_t>(active);
      uint32_t om = m;  // lanes this op acts in
      if (in.guard.pred != kNoPred) {
        const uint32_t g = preds[in.guard.pred];
        om &= in.guard.negate ? ~g : g;
      }
      rec_ = nullptr;
      if (opt_.recordTrace) {
        rec_ = &fx.ops[fx.numOps];
        *rec_ = OpEffects{};
        rec_->index = static_cast<uint8_t>(i);
        rec_->exec = static_cast<uint8_t>(om);
      }
      if (om != 0 && !execOp(in, om, preds, w, b, static_cast<int>(i))) {
        ok = false;  // the faulting op has no effects and no record
        break;
      }
      if (rec_ != nullptr) {
        recordOp(in, m, preds);
        ++fx.numOps;
      }
    }
    rec_ = nullptr;
    // Every write took effect: the working registers go back to the register file.
    for (int l = 0; l < kLanes; ++l) {
      if (m >> l & 1) std::copy(lane_[l], lane_[l] + kRegs, regs_[w * kLanes + l].begin());
    }
    if (!ok) return false;

    // Terminator: move the lanes.
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
          pc = kExitTarget;
          live_[w] = static_cast<uint8_t>(live_[w] & ~(1u << l));
          break;
      }
      fx.nextBlock[static_cast<size_t>(l)] = pc;
    }
    if (term.kind == TermKind::Barrier) {
      waiting_[w] = true;
      fx.barrier = true;
    }
    return true;
  }

  // The register and predicate parts of the record of the op that just ran (its memory accesses
  // were recorded as they happened).
  void recordOp(const Instr& in, uint32_t m, const uint8_t* preds) {
    OpEffects& rec = *rec_;
    const OpInfo& info = opInfo(in.op);
    rec.mem = info.mem;
    rec.space = info.cls == OpClass::Local ? Space::Shared : in.space;
    if (info.dst == DstKind::Reg && in.dst != 0) {
      rec.writesReg = true;
      rec.lateReg = recordsOf(in) == 2;
      rec.reg = in.dst;
      for (int l = 0; l < kLanes; ++l) {
        if (m >> l & 1) rec.regs[static_cast<size_t>(l)] = lane_[l][in.dst];
      }
    }
    if (info.dst == DstKind::Pred) {
      rec.writesPred = true;
      rec.pred = in.dstPred;
      rec.predBits = preds[in.dstPred];
    }
  }
  // One lane's memory access: the word and its value after the access.
  void recordAccess(int l, int word, uint32_t valueAfter) {
    if (rec_ == nullptr) return;
    rec_->words[static_cast<size_t>(l)] = static_cast<uint8_t>(word);
    rec_->values[static_cast<size_t>(l)] = valueAfter;
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
            setReg(l, in.dst,
                   evalAlu(in.op, src(in.src[0], l), src(in.src[1], l), src(in.src[2], l)).value_or(0));
        }
        return true;
      case OpClass::Cmp: {
        uint32_t bits = 0;
        for (int l = 0; l < kLanes; ++l) {
          if ((om >> l & 1) && evalCmp(in.op, src(in.src[0], l), src(in.src[1], l)).value_or(false))
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
        setPred(preds, in.dstPred, om, evalPred(in.op, a, c, in.src[0].imm).value_or(0));
        return true;
      }
      case OpClass::Mem:
        return execMem(in, om, w, b, i);
      case OpClass::Local:
        for (int l = 0; l < kLanes; ++l) {
          if (!(om >> l & 1)) continue;
          // verify(program, launch) keeps every slot inside shared memory: no fault here.
          const int word = p_.sharedWords + in.offset * nthreads_ + w * kLanes + l;
          if (in.op == Op::LdLocal)
            setReg(l, in.dst, shared_[word]);
          else
            shared_[word] = src(in.src[0], l);
          recordAccess(l, word, shared_[word]);
        }
        return true;
      case OpClass::Warp: {
        if (const auto vote = evalVote(in.op, preds[in.psrc[0]], om)) {
          if (writesReg(in.op)) {
            for (int l = 0; l < kLanes; ++l) {
              if (om >> l & 1) setReg(l, in.dst, *vote);
            }
          } else {
            setPred(preds, in.dstPred, om, *vote ? 0xfu : 0u);
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
          const int j = shuffleSource(in.op, l, src(in.src[1], l), src(in.src[2], l)).value_or(-1);
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
    uint32_t* mem = in.space == Space::Global ? global_.data() : shared_.data();
    const MemEffect effect = opInfo(in.op).mem;
    const uint32_t bytes = static_cast<uint32_t>(accessBytes(in.op));  // 4, or 1/2 (sub-word stores)
    // Op-level fault atomicity: every executing lane's address is checked before any lane acts,
    // so a faulting op changes nothing and the lowest faulting lane is named.
    uint32_t addr[kLanes] = {};
    for (int l = 0; l < kLanes; ++l) {
      if (!(om >> l & 1)) continue;
      addr[l] = src(in.src[0], l) + static_cast<uint32_t>(in.offset);
      if (addr[l] % bytes != 0 || addr[l] / 4 >= static_cast<uint32_t>(words)) {
        const char* access = effect == MemEffect::Read    ? "load"
                             : effect == MemEffect::Write ? "store"
                                                          : "atomic";
        std::string why = addr[l] % bytes != 0 ? "is not a multiple of " + std::to_string(bytes)
                                           : "is out of range: " + std::string(spaceName(in.space)) +
                                                 " memory has " + std::to_string(words) + " words (" +
                                                 std::to_string(4 * words) + " bytes)";
        return fault(makeDiag(ErrorKind::MachineFault,
                              where(w, l, b, i) + ": " + spaceName(in.space) + " " + access +
                                  " at byte address " + std::to_string(addr[l]) + " (" +
                                  std::to_string(static_cast<int32_t>(addr[l])) + ") " + why));
      }
    }
    // Lanes in order 0..3: stores to one address leave the highest lane's value; atomics and
    // sub-word stores are serialised and each sees the previous lane's result (a sub-word store
    // reads the word as the lanes before it left it, so their bytes survive).
    for (int l = 0; l < kLanes; ++l) {
      if (!(om >> l & 1)) continue;
      const int word = static_cast<int>(addr[l] / 4);
      if (effect == MemEffect::Read) {
        setReg(l, in.dst, mem[word]);
      } else if (effect == MemEffect::Write) {
        const uint32_t value = src(in.src[1], l);
        mem[word] = evalSubwordStore(in.op, mem[word], addr[l], value).value_or(value);
      } else {
        const uint32_t old = mem[word];
        mem[word] = evalAtomic(in.op, old, src(in.src[1], l), src(in.src[2], l)).value_or(old);
        setReg(l, in.dst, old);
      }
      recordAccess(l, word, mem[word]);
    }
    return true;
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
    ev_.fault = std::move(diag);
    return false;
  }

  const Program p_;
  const Launch launch_;
  const RunOptions opt_;
  StepEvent ev_;
  bool done_ = false;
  bool ctaPending_ = true;  // the next event starts CTA cta_ (or finishes the run)
  uint32_t cta_ = 0;
  int cur_ = 0;             // the warp that ran last: it runs on while it is ready
  uint64_t blockExecs_ = 0;
  uint64_t laneInstrs_ = 0;
  int nthreads_ = 0;
  int nwarps_ = 0;

  std::array<uint32_t, kGlobalWords> global_{};
  std::array<std::array<uint32_t, kRegs>, kMaxThreadsPerBlock> regs_{};
  std::array<uint32_t, kSharedWords> shared_{};
  uint8_t pc_[kMaxThreadsPerBlock] = {};
  uint8_t live_[kMaxWarps] = {};
  bool waiting_[kMaxWarps] = {};
  uint32_t lane_[kLanes][kLaneSlots] = {};

  OpEffects* rec_ = nullptr;  // the record of the running op (trace on), else null
};

Execution::Execution(std::unique_ptr<Machine> machine) : machine_(std::move(machine)) {}
Execution::Execution(Execution&&) noexcept = default;
Execution& Execution::operator=(Execution&&) noexcept = default;
Execution::~Execution() = default;

Expected<Execution> Execution::start(const Program& program, const Launch& launch,
                                     const RunOptions& options) {
  QGPU_CHECK(verify(program, launch));
  return Execution(std::make_unique<Machine>(program, launch, options));
}

const StepEvent& Execution::next() { return machine_->next(); }
const StepEvent& Execution::stopAtLimit(const std::string& reason) {
  return machine_->next(&reason);
}
bool Execution::done() const { return machine_->done(); }
const std::array<uint32_t, kGlobalWords>& Execution::global() const { return machine_->global(); }
uint64_t Execution::blockExecs() const { return machine_->blockExecs(); }
uint64_t Execution::laneInstrs() const { return machine_->laneInstrs(); }

// ---- The token trace of an event (docs/trace.md, "What one op writes") ----

namespace {

// The record of one op (docs/trace.md, "What one op writes"): a memrec iff it writes memory in
// some lane, a regrec iff it writes a register, a predrec iff it writes a predicate, else NOP. An
// op whose register write is late (an atomic or a multiply with a register destination) always
// writes two records (trace v5, v6): NOP stands for the first when it has no memrec (an atomic
// with no executing lane, a multiply), so an op's records (machine::recordsOf) do not depend on
// the run and the prompt can key the ROM by record index.
void appendOpRecord(const OpEffects& op, uint32_t mask, std::vector<tk::Token>& out) {
  bool wrote = false;
  const bool memWrite = op.mem == MemEffect::Write || op.mem == MemEffect::ReadWrite;
  if (op.lateReg && op.writesReg && !(memWrite && op.exec != 0))
    out.push_back(tk::single(tk::Family::Nop));
  if (memWrite && op.exec != 0) {
    out.push_back(op.space == Space::Global ? tk::mg(op.exec) : tk::ms(op.exec));
    for (int l = 0; l < kLanes; ++l) {
      if (!(op.exec >> l & 1)) continue;
      tk::appendValue(out, op.words[static_cast<size_t>(l)]);
      tk::appendValue(out, op.values[static_cast<size_t>(l)]);
    }
    wrote = true;
  }
  if (op.writesReg) {
    uint32_t first = 0;
    bool uniform = true, seen = false;
    for (int l = 0; l < kLanes; ++l) {
      if (!(mask >> l & 1)) continue;
      if (!seen) first = op.regs[static_cast<size_t>(l)];
      uniform &= op.regs[static_cast<size_t>(l)] == first;
      seen = true;
    }
    if (uniform) {
      out.push_back(tk::wu(op.reg));
      tk::appendValue(out, first);
    } else {
      out.push_back(tk::wr(op.reg));
      for (int l = 0; l < kLanes; ++l) {
        if (mask >> l & 1) tk::appendValue(out, op.regs[static_cast<size_t>(l)]);
      }
    }
    wrote = true;
  }
  if (op.writesPred) {
    out.push_back(tk::wp(op.pred));
    tk::appendValue(out, op.predBits);
    wrote = true;
  }
  if (!wrote) out.push_back(tk::single(tk::Family::Nop));
}

void appendStepTrace(const StepEffects& fx, std::vector<tk::Token>& out) {
  out.push_back(tk::ex(fx.block));
  out.push_back(tk::wm(fx.warp, fx.mask));
  for (int i = 0; i < fx.numOps; ++i) appendOpRecord(fx.ops[static_cast<size_t>(i)], fx.mask, out);
}

}  // namespace

void appendTrace(const StepEvent& event, std::vector<tk::Token>& out) {
  switch (event.kind) {
    case EventKind::CtaStart:
      out.push_back(tk::single(tk::Family::Cta));
      return;
    case EventKind::Step:
      tk::appendTicks(out, event.stepsBefore);  // trace v4: the step ticks before its EX
      appendStepTrace(event.step, out);
      return;
    case EventKind::Finished:
      out.push_back(tk::single(tk::Family::End));
      return;
    case EventKind::Fault:
      tk::appendTicks(out, event.stepsBefore);
      appendStepTrace(event.step, out);  // the ops before the faulting one
      out.push_back(tk::single(tk::Family::FaultTok));
      return;
    case EventKind::StepLimit:
      tk::appendTicks(out, event.stepsBefore);  // the ticks due come before LIMIT too
      out.push_back(tk::single(tk::Family::Limit));
      return;
  }
}

Expected<RunResult> run(const Program& program, const Launch& launch, const RunOptions& options) {
  QGPU_TRY(execution, Execution::start(program, launch, options));
  RunResult result;
  if (options.recordTrace) result.trace.reserve(1024);
  for (;;) {
    // The trace's bound (RunOptions::maxTraceTokens): checked before each step.
    const bool traceFull = options.recordTrace && result.trace.size() >= options.maxTraceTokens;
    const StepEvent& event =
        traceFull ? execution.stopAtLimit("its trace reached " +
                                          std::to_string(options.maxTraceTokens) +
                                          " tokens (after " +
                                          std::to_string(execution.blockExecs()) + " steps)")
                  : execution.next();
    if (options.recordTrace) appendTrace(event, result.trace);
    if (event.kind == EventKind::Finished) result.status = RunStatus::Finished;
    if (event.kind == EventKind::Fault) result.status = RunStatus::Fault;
    if (event.kind == EventKind::StepLimit) result.status = RunStatus::StepLimit;
    if (event.kind == EventKind::Fault || event.kind == EventKind::StepLimit) result.fault = event.fault;
    if (execution.done()) break;
  }
  result.global = execution.global();
  result.blockExecs = execution.blockExecs();
  result.laneInstrs = execution.laneInstrs();
  return result;
}

}  // namespace qgpu::oracle
