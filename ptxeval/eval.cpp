// qgpu/ptxeval/eval.cpp — the PTX evaluator (eval.h). Includes nothing from oracle/ or host/lower/:
// the integer semantics below are written from the PTX ISA, not shared with the machine.
#include "ptxeval/eval.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

namespace qgpu::ptxeval {
namespace {

using ptx::Instruction;
using ptx::Opcode;
using ptx::Operand;
using ptx::OperandKind;
using ptx::StateSpace;
using ptx::Type;

uint64_t mask(int w) { return w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1; }
uint64_t trunc(uint64_t v, int w) { return v & mask(w); }
int64_t sext(uint64_t v, int w) {
  if (w >= 64) return static_cast<int64_t>(v);
  uint64_t m = uint64_t{1} << (w - 1);
  v = trunc(v, w);
  return static_cast<int64_t>((v ^ m) - m);
}
// The value of a w-bit field extended to 64 bits as the type says.
uint64_t extend(uint64_t v, Type t) {
  int w = ptx::bits(t);
  return ptx::isSigned(t) ? static_cast<uint64_t>(sext(v, w)) : trunc(v, w);
}

// The local window's bound (eval.h): every activation's frame together.
constexpr uint64_t kMaxLocalBytes = uint64_t{1} << 20;

// Where a name used by an instruction lives.
struct SymRef {
  enum Kind : uint8_t { None, Param, Return, CallParam, Shared, Local } kind = None;
  uint32_t index = 0;
};

struct FuncInfo {
  const ptx::Function* fn = nullptr;
  std::vector<std::vector<SymRef>> srcSyms;  // per instruction, per source operand
  std::vector<std::vector<SymRef>> callRets, callArgs;  // call: result / argument lists
  std::vector<const FuncInfo*> callee;       // call: the callee
  std::vector<uint32_t> target;              // bra: the instruction index of its label
  // The function's .local frame (eval.h): its variables' offsets from the frame's base, the base's
  // alignment (the largest max(.align, 4)) and the bytes from the base to the last one's end.
  std::vector<uint64_t> localOffset;
  uint64_t localAlign = 4, localBytes = 0;
};

struct Frame {
  const FuncInfo* fi = nullptr;
  uint64_t localBase = 0, localEnd = 0;  // this activation's frame in the thread's local window
  uint32_t pc = 0;
  std::vector<uint64_t> regs;
  std::vector<std::vector<uint8_t>> params, rets, callParams;
};

enum class ThreadState : uint8_t { Running, AtWarpOp, AtBarrier, Exited };

struct Thread {
  uint32_t tid = 0;
  ThreadState state = ThreadState::Running;
  std::vector<uint8_t> local;  // the local window: every activation's frame (eval.h)
  std::vector<Frame> stack;
  Frame& top() { return stack.back(); }
};

bool isWarpOp(const Instruction& in) {
  return in.op == Opcode::Shfl || in.op == Opcode::Vote ||
         ((in.op == Opcode::Bar) && in.mods.barrier == ptx::BarrierKind::Warp);
}
bool isBarrier(const Instruction& in) {
  return (in.op == Opcode::Bar || in.op == Opcode::Barrier) &&
         in.mods.barrier != ptx::BarrierKind::Warp;
}

std::string where(const Instruction& in) {
  return "'" + in.text + "' (line " + std::to_string(in.loc.line) + ")";
}

Diag unsupported(const Instruction& in, const std::string& what) {
  return makeDiag(ErrorKind::PtxUnsupported, "PTX evaluator: " + where(in) + ": " + what, in.loc);
}

// What one step of a thread did.
enum class Step : uint8_t { Next, Blocked, Exited };

class Evaluator {
 public:
  Evaluator(const ptx::Module& m, const Launch& l, const EvalOptions& o) : m_(m), l_(l), o_(o) {}

  Expected<EvalResult> run() {
    if (l_.gridX < 1 || l_.gridX > kMaxGrid || l_.blockX < 1 || l_.blockX > kMaxThreads)
      return makeDiag(ErrorKind::Usage, "PTX evaluator: launch " + std::to_string(l_.gridX) + " x " +
                                            std::to_string(l_.blockX) + " is outside 1..16 x 1..16");
    QGPU_TRY(entry, ptx::findEntry(m_, o_.entry));
    if (entry->params.size() != l_.params.size())
      return makeDiag(ErrorKind::Usage, "PTX evaluator: '" + entry->name + "' takes " +
                                            std::to_string(entry->params.size()) + " parameter(s), the launch has " +
                                            std::to_string(l_.params.size()));
    entryShared_ = static_cast<uint32_t>(entry->shared.size());
    for (const ptx::Function& f : m_.functions) infos_[f.name] = std::make_unique<FuncInfo>();
    for (const ptx::Function& f : m_.functions) QGPU_CHECK(prepare(f, *infos_[f.name]));
    entry_ = infos_[entry->name].get();
    // The shared window: the entry's .shared, then the module's, in declaration order, each
    // aligned to max(align, 4); then the `.extern .shared` arrays, which all start at one address
    // and hold the launch's dynamic bytes. Only global memory is compared, so the layout needs
    // only to be consistent and in bounds, not the lowering's.
    uint32_t at = 0;
    auto place = [&](const ptx::Variable& v, uint32_t bytes) -> Status {
      uint32_t a = std::max<uint32_t>(v.align, 4);
      at = (at + a - 1) / a * a;
      sharedOffset_.push_back(at);
      at += bytes;
      if (at > (1u << 20))
        return makeDiag(ErrorKind::PtxUnsupported, "PTX evaluator: shared memory over 1 MiB", v.loc);
      return Ok{};
    };
    for (const ptx::Variable& v : entry->shared) QGPU_CHECK(place(v, v.bytes));
    uint32_t externAt = UINT32_MAX;
    for (const ptx::Variable& v : m_.shared) {
      if (!v.external) {
        QGPU_CHECK(place(v, v.bytes));
        continue;
      }
      if (externAt == UINT32_MAX) {  // the first extern array takes the dynamic bytes
        QGPU_CHECK(place(v, l_.dynamicSharedBytes));
        externAt = sharedOffset_.back();
      } else {
        sharedOffset_.push_back(externAt);
      }
    }
    sharedBytes_ = at;
    // The local window: as far as the deepest chain of calls' frames reaches (eval.h).
    std::vector<const FuncInfo*> chain;
    std::map<std::pair<const FuncInfo*, uint64_t>, uint64_t> reached;
    QGPU_TRY(reach, localReach(entry_, 0, chain, reached));
    localBytes_ = static_cast<uint32_t>((reach + 3) / 4 * 4);
    for (uint32_t i = 0; i < kGlobalWords; ++i)
      for (int b = 0; b < 4; ++b) global_[4 * i + b] = static_cast<uint8_t>(l_.global[i] >> (8 * b));

    for (uint32_t cta = 0; cta < l_.gridX && result_.status == EvalStatus::Finished; ++cta) {
      auto st = runCta(cta);
      if (!st) return st.error();
    }
    for (uint32_t i = 0; i < kGlobalWords; ++i) {
      uint32_t w = 0;
      for (int b = 0; b < 4; ++b) w |= uint32_t{global_[4 * i + b]} << (8 * b);
      result_.global[i] = w;
    }
    result_.instructions = executed_;
    return result_;
  }

 private:
  const ptx::Module& m_;
  const Launch& l_;
  const EvalOptions& o_;
  std::map<std::string, std::unique_ptr<FuncInfo>> infos_;
  const FuncInfo* entry_ = nullptr;
  std::vector<uint32_t> sharedOffset_;  // the entry's .shared, then the module's
  uint32_t entryShared_ = 0;            // how many of sharedOffset_ are the entry's
  uint32_t sharedBytes_ = 0;
  uint32_t localBytes_ = 0;  // the local window: the furthest frame's end, rounded up to a word
  std::array<uint8_t, kGlobalBytes> global_{};
  std::vector<uint8_t> shared_;
  EvalResult result_;
  uint64_t executed_ = 0;
  uint32_t cta_ = 0;

  // ---- Static preparation: names resolved once per instruction ----
  SymRef resolve(const ptx::Function& f, uint32_t at, const std::string& name) const {
    // The innermost call-sequence .param whose scope holds the instruction shadows the rest.
    int best = -1;
    uint32_t bestDepth = 0;
    for (size_t i = 0; i < f.callParams.size(); ++i) {
      const ptx::Variable& v = f.callParams[i];
      if (v.name != name || v.scope >= f.scopes.size()) continue;
      const ptx::Scope& s = f.scopes[v.scope];
      if (at < s.begin || at >= s.end) continue;
      if (best < 0 || s.depth >= bestDepth) best = static_cast<int>(i), bestDepth = s.depth;
    }
    if (best >= 0) return {SymRef::CallParam, static_cast<uint32_t>(best)};
    for (size_t i = 0; i < f.params.size(); ++i)
      if (f.params[i].name == name) return {SymRef::Param, static_cast<uint32_t>(i)};
    for (size_t i = 0; i < f.returns.size(); ++i)
      if (f.returns[i].name == name) return {SymRef::Return, static_cast<uint32_t>(i)};
    for (size_t i = 0; i < f.shared.size(); ++i)
      if (f.shared[i].name == name) return {SymRef::Shared, static_cast<uint32_t>(i)};
    for (size_t i = 0; i < f.locals.size(); ++i)
      if (f.locals[i].name == name) return {SymRef::Local, static_cast<uint32_t>(i)};
    for (size_t i = 0; i < m_.shared.size(); ++i)  // module scope, after the entry's
      if (m_.shared[i].name == name) return {SymRef::Shared, entryShared_ + static_cast<uint32_t>(i)};
    return {};
  }

  Status prepare(const ptx::Function& f, FuncInfo& fi) {
    fi.fn = &f;
    size_t n = f.body.size();
    fi.srcSyms.resize(n);
    fi.callRets.resize(n);
    fi.callArgs.resize(n);
    fi.callee.assign(n, nullptr);
    fi.target.assign(n, 0);
    for (uint32_t i = 0; i < n; ++i) {
      const Instruction& in = f.body[i];
      for (const Operand& o : in.srcs) {
        SymRef r;
        if ((o.kind == OperandKind::Address && !o.addrIsReg) ||
            (o.kind == OperandKind::Symbol && in.op != Opcode::Bra && in.op != Opcode::Call))
          r = resolve(f, i, o.name);
        fi.srcSyms[i].push_back(r);
      }
      if (in.op == Opcode::Bra) {
        auto it = f.labels.find(in.srcs[0].name);
        if (it == f.labels.end()) return unsupported(in, "unknown label");
        fi.target[i] = it->second;
      }
      if (in.op == Opcode::Call) {
        auto it = infos_.find(in.srcs[0].name);
        if (it == infos_.end()) return unsupported(in, "unknown callee");
        fi.callee[i] = it->second.get();
        if (!in.dsts.empty())
          for (const Operand& o : in.dsts[0].items) fi.callRets[i].push_back(resolve(f, i, o.name));
        for (const Operand& o : in.srcs[1].items)
          fi.callArgs[i].push_back(o.kind == OperandKind::Symbol ? resolve(f, i, o.name) : SymRef{});
      }
    }
    if (!f.isEntry && !f.shared.empty())
      return makeDiag(ErrorKind::PtxUnsupported,
                      "PTX evaluator: .shared declared in .func '" + f.name + "'", f.loc);
    // The .local frame from its base: declaration order, each at a multiple of max(align, 4).
    for (const ptx::Variable& v : f.locals)
      fi.localAlign = std::max<uint64_t>(fi.localAlign, std::max<uint32_t>(v.align, 4));
    for (const ptx::Variable& v : f.locals) {
      const uint64_t a = std::max<uint32_t>(v.align, 4);
      fi.localBytes = (fi.localBytes + a - 1) / a * a;
      fi.localOffset.push_back(fi.localBytes);
      fi.localBytes += v.bytes;  // 64-bit: a declared size near 2^32 must not wrap
      if (fi.localBytes > kMaxLocalBytes)
        return makeDiag(ErrorKind::PtxUnsupported, "PTX evaluator: local memory over 1 MiB", v.loc);
    }
    return Ok{};
  }

  // Where a called function's frame starts: its caller's end, rounded up to its alignment; a
  // function without .local variables takes none (its callees start at its caller's end).
  static void placeFrame(Frame& callee, uint64_t callerEnd) {
    const FuncInfo& fi = *callee.fi;
    callee.localBase = (callerEnd + fi.localAlign - 1) / fi.localAlign * fi.localAlign;
    callee.localEnd = fi.fn->locals.empty() ? callerEnd : callee.localBase + fi.localBytes;
  }

  // The furthest byte any chain of calls from `fi`, its frame placed after `callerEnd`, reaches
  // (`reached` remembers each (function, callerEnd) once). A recursive call through a function
  // with .local variables has no bound: refused.
  Expected<uint64_t> localReach(const FuncInfo* fi, uint64_t callerEnd,
                                std::vector<const FuncInfo*>& chain,
                                std::map<std::pair<const FuncInfo*, uint64_t>, uint64_t>& reached) {
    if (auto it = reached.find({fi, callerEnd}); it != reached.end()) return it->second;
    Frame fr;
    fr.fi = fi;
    placeFrame(fr, callerEnd);
    if (fr.localEnd > kMaxLocalBytes)
      return makeDiag(ErrorKind::PtxUnsupported, "PTX evaluator: local memory over 1 MiB",
                      fi->fn->loc);
    if (std::find(chain.begin(), chain.end(), fi) != chain.end()) {
      for (const FuncInfo* c : chain)
        if (!c->fn->locals.empty())
          return makeDiag(
              ErrorKind::PtxUnsupported,
              "PTX evaluator: recursion through '" + c->fn->name + "', which has .local variables",
              c->fn->loc);
      return fr.localEnd;
    }
    chain.push_back(fi);
    uint64_t reach = fr.localEnd;
    for (const FuncInfo* callee : fi->callee)  // a callee called again is in `reached`
      if (callee) {
        QGPU_TRY(r, localReach(callee, fr.localEnd, chain, reached));
        reach = std::max(reach, r);
      }
    chain.pop_back();
    reached[{fi, callerEnd}] = reach;
    return reach;
  }

  static Frame newFrame(const FuncInfo* fi) {
    Frame fr;
    fr.fi = fi;
    fr.regs.assign(fi->fn->regs.size(), 0);
    for (const auto& v : fi->fn->params) fr.params.emplace_back(v.bytes, 0);
    for (const auto& v : fi->fn->returns) fr.rets.emplace_back(v.bytes, 0);
    for (const auto& v : fi->fn->callParams) fr.callParams.emplace_back(v.bytes, 0);
    return fr;
  }

  static std::vector<uint8_t>* paramStore(Frame& fr, SymRef r) {
    switch (r.kind) {
      case SymRef::Param: return &fr.params[r.index];
      case SymRef::Return: return &fr.rets[r.index];
      case SymRef::CallParam: return &fr.callParams[r.index];
      default: return nullptr;
    }
  }

  // ---- The CTA scheduler (eval.h: "Scheduling") ----
  Status runCta(uint32_t cta) {
    cta_ = cta;
    shared_.assign(sharedBytes_, o_.sharedFill);
    std::vector<Thread> threads(l_.blockX);
    for (uint32_t t = 0; t < l_.blockX; ++t) {
      threads[t].tid = t;
      threads[t].local.assign(localBytes_, o_.sharedFill);
      threads[t].stack.push_back(newFrame(entry_));
      placeFrame(threads[t].stack.back(), 0);
      Frame& fr = threads[t].stack.back();
      for (size_t p = 0; p < fr.params.size(); ++p)
        for (size_t b = 0; b < fr.params[p].size() && b < 8; ++b)
          fr.params[p][b] = static_cast<uint8_t>(l_.params[p] >> (8 * b));
    }
    uint32_t warps = (l_.blockX + kWarpSize - 1) / kWarpSize;
    for (;;) {
      int ready = -1;
      for (uint32_t w = 0; w < warps && ready < 0; ++w)
        for (uint32_t t = w * kWarpSize; t < std::min(l_.blockX, (w + 1) * kWarpSize); ++t)
          if (threads[t].state == ThreadState::Running || threads[t].state == ThreadState::AtWarpOp) {
            ready = static_cast<int>(w);
            break;
          }
      if (ready >= 0) {
        QGPU_TRY(more, runWarp(threads, static_cast<uint32_t>(ready)));
        if (!more) return Ok{};  // a fault or the step limit ended the run
        continue;
      }
      bool waiting = std::any_of(threads.begin(), threads.end(),
                                 [](const Thread& t) { return t.state == ThreadState::AtBarrier; });
      if (!waiting) return Ok{};
      QGPU_CHECK(releaseBarrier(threads));
    }
  }

  // Runs warp w until its live threads all wait at a barrier or have exited. false: the run ended.
  Expected<bool> runWarp(std::vector<Thread>& threads, uint32_t w) {
    uint32_t lo = w * kWarpSize, hi = std::min(l_.blockX, lo + kWarpSize);
    for (;;) {
      bool any = false;
      for (uint32_t t = lo; t < hi; ++t) {
        if (threads[t].state != ThreadState::Running) continue;
        any = true;
        if (++executed_ > o_.maxInstructions) {
          Frame& fr = threads[t].top();
          const Instruction& in = fr.fi->fn->body[fr.pc];
          result_.status = EvalStatus::StepLimit;
          result_.fault = makeDiag(ErrorKind::StepLimit,
                                   "PTX evaluator: did not finish in " + std::to_string(o_.maxInstructions) +
                                       " instructions (CTA " + std::to_string(cta_) + " thread " +
                                       std::to_string(t) + " at " + where(in) + ")",
                                   in.loc);
          return false;
        }
        auto s = step(threads[t]);
        if (!s) return s.error();
        if (result_.status != EvalStatus::Finished) return false;
      }
      if (any) continue;
      // No thread runs: a warp op every live lane waits at, or the warp is blocked / done.
      std::vector<uint32_t> at, live;
      for (uint32_t t = lo; t < hi; ++t) {
        if (threads[t].state == ThreadState::Exited) continue;
        live.push_back(t);
        if (threads[t].state == ThreadState::AtWarpOp) at.push_back(t);
      }
      if (at.empty()) return true;
      const Frame& f0 = threads[at[0]].top();
      const Instruction& in = f0.fi->fn->body[f0.pc];
      if (at.size() != live.size())
        return unsupported(in, "warp operation reached by some lanes of warp " + std::to_string(w) +
                                   " while others wait at a block barrier");
      for (uint32_t t : at)
        if (threads[t].top().fi != f0.fi || threads[t].top().pc != f0.pc) {
          const Frame& ft = threads[t].top();
          return unsupported(in, "lanes of warp " + std::to_string(w) + " wait at different warp operations (" +
                                     where(ft.fi->fn->body[ft.pc]) + ")");
        }
      QGPU_CHECK(warpOp(threads, at, in));
      for (uint32_t t : at) {
        threads[t].state = ThreadState::Running;
        threads[t].top().pc++;
      }
    }
  }

  Status releaseBarrier(std::vector<Thread>& threads) {
    std::vector<uint32_t> at;
    for (Thread& t : threads)
      if (t.state == ThreadState::AtBarrier) at.push_back(t.tid);
    const Frame& f0 = threads[at[0]].top();
    const Instruction& in = f0.fi->fn->body[f0.pc];
    bool reduction = in.mods.barrier != ptx::BarrierKind::Sync;
    for (uint32_t t : at) {
      const Frame& ft = threads[t].top();
      const Instruction& it = ft.fi->fn->body[ft.pc];
      bool same = ft.fi == f0.fi && ft.pc == f0.pc;
      if ((reduction || it.mods.barrier != ptx::BarrierKind::Sync) && !same)
        return unsupported(in, "a barrier reduction while other threads wait at " + where(it));
    }
    if (reduction) {
      // PTX does not say what an exited thread contributes to bar.red (CUDA requires every thread
      // to reach __syncthreads_and/or/count); the lowering counts %ntid.x, this reduces over the
      // live threads: with exited threads the .and result may differ, so it is unspecified.
      if (at.size() != threads.size()) noteUnspecified(in, "a barrier reduction after some threads exited");
      uint32_t count = 0;
      for (uint32_t t : at) {
        Frame& ft = threads[t].top();
        count += readValue(ft, in, in.srcs.back(), 1) & 1;
      }
      for (uint32_t t : at) {
        Frame& ft = threads[t].top();
        uint64_t v = 0;
        switch (in.mods.barrier) {
          case ptx::BarrierKind::RedPopc: v = count; break;
          case ptx::BarrierKind::RedAnd: v = count == at.size(); break;
          case ptx::BarrierKind::RedOr: v = count != 0; break;
          default: break;
        }
        writeReg(ft, in.dsts[0].reg, v);
      }
    }
    for (uint32_t t : at) {
      threads[t].state = ThreadState::Running;
      threads[t].top().pc++;
    }
    return Ok{};
  }

  // ---- Collective warp operations ----
  Status warpOp(std::vector<Thread>& threads, const std::vector<uint32_t>& at, const Instruction& in) {
    std::array<bool, kWarpSize> part{};
    std::array<uint64_t, kWarpSize> a{}, b{}, c{};
    for (uint32_t t : at) part[t % kWarpSize] = true;
    if (in.op == Opcode::Bar) return Ok{};  // bar.warp.sync: the lanes are together; nothing else
    for (uint32_t t : at) {
      Frame& fr = threads[t].top();
      uint32_t l = t % kWarpSize;
      if (in.op == Opcode::Shfl) {
        a[l] = readValue(fr, in, in.srcs[0], 32);
        b[l] = readValue(fr, in, in.srcs[1], 32);
        c[l] = readValue(fr, in, in.srcs[2], 32);
      } else {
        a[l] = readValue(fr, in, in.srcs[0], 1) & 1;
      }
    }
    if (in.op == Opcode::Shfl) {
      for (uint32_t t : at) {
        uint32_t l = t % kWarpSize;
        int64_t lane = l, bv = b[l] & 0x1f, seg = (c[l] >> 8) & 0x1f, clamp = c[l] & 0x1f;
        int64_t maxLane = (lane & seg) | (clamp & ~seg), minLane = lane & seg, j = lane;
        bool valid = false;
        switch (in.mods.shfl) {
          case ptx::ShflMode::Up: j = lane - bv; valid = j >= maxLane; break;
          case ptx::ShflMode::Down: j = lane + bv; valid = j <= maxLane; break;
          case ptx::ShflMode::Bfly: j = lane ^ bv; valid = j <= maxLane; break;
          case ptx::ShflMode::Idx: j = minLane | (bv & ~seg); valid = j <= maxLane; break;
          default: return unsupported(in, "shuffle mode");
        }
        if (!valid) j = lane;
        bool present = j >= 0 && j < static_cast<int64_t>(kWarpSize) && part[j];
        Frame& fr = threads[t].top();
        writeReg(fr, in.dsts[0].reg, present ? a[j] : a[l]);
        if (in.dsts.size() > 1) writeReg(fr, in.dsts[1].reg, valid && present);
      }
      return Ok{};
    }
    // vote
    uint64_t ballot = 0;
    size_t trues = 0;
    for (uint32_t t : at)
      if (a[t % kWarpSize]) ballot |= uint64_t{1} << (t % kWarpSize), ++trues;
    for (uint32_t t : at) {
      Frame& fr = threads[t].top();
      uint64_t v = 0;
      switch (in.mods.vote) {
        case ptx::VoteMode::Ballot: v = ballot; break;
        case ptx::VoteMode::Any: v = trues != 0; break;
        case ptx::VoteMode::All: v = trues == at.size(); break;
        case ptx::VoteMode::Uni: v = trues == 0 || trues == at.size(); break;
        default: return unsupported(in, "vote mode");
      }
      writeReg(fr, in.dsts[0].reg, v);
    }
    return Ok{};
  }

  // ---- Operands ----
  uint64_t special(const Thread& th, const std::string& name, bool& ok) const {
    ok = true;
    uint32_t t = th.tid;
    if (name == "%tid.x") return t;
    if (name == "%ntid.x") return l_.blockX;
    if (name == "%ctaid.x") return cta_;
    if (name == "%nctaid.x") return l_.gridX;
    if (name == "%tid.y" || name == "%tid.z" || name == "%ctaid.y" || name == "%ctaid.z") return 0;
    if (name == "%ntid.y" || name == "%ntid.z" || name == "%nctaid.y" || name == "%nctaid.z") return 1;
    if (name == "%laneid") return t % kWarpSize;
    if (name == "%warpid") return t / kWarpSize;
    if (name == "WARP_SZ") return kWarpSize;
    uint64_t lane = t % kWarpSize;
    if (name == "%lanemask_eq") return uint64_t{1} << lane;
    if (name == "%lanemask_lt") return (uint64_t{1} << lane) - 1;
    if (name == "%lanemask_le") return (uint64_t{2} << lane) - 1;
    if (name == "%lanemask_gt") return trunc(~((uint64_t{2} << lane) - 1), 32);
    if (name == "%lanemask_ge") return trunc(~((uint64_t{1} << lane) - 1), 32);
    ok = false;
    return 0;
  }

  Thread* current_ = nullptr;  // the thread being stepped (for specials and its local frame)
  bool specialOk_ = true;
  std::string badSpecial_;

  // A source operand's value, truncated to w bits.
  uint64_t readValue(Frame& fr, const Instruction& in, const Operand& o, int w) {
    switch (o.kind) {
      case OperandKind::Reg: return trunc(fr.regs[o.reg], w);
      case OperandKind::Imm: return trunc(static_cast<uint64_t>(o.imm), w);
      case OperandKind::Special: {
        bool ok = true;
        uint64_t v = current_ ? special(*current_, o.name, ok) : 0;
        if (!ok) specialOk_ = false, badSpecial_ = o.name;
        return trunc(v, w);
      }
      case OperandKind::Symbol: {
        size_t idx = static_cast<size_t>(&o - in.srcs.data());
        SymRef r = idx < in.srcs.size() ? symOf(fr, in, idx) : SymRef{};
        if (r.kind == SymRef::Shared) return trunc(sharedOffset_[r.index], w);
        if (r.kind == SymRef::Local) return trunc(fr.localBase + fr.fi->localOffset[r.index], w);
        specialOk_ = false, badSpecial_ = o.name;
        return 0;
      }
      default: return 0;
    }
  }

  static SymRef symOf(const Frame& fr, const Instruction& in, size_t src) {
    size_t i = static_cast<size_t>(&in - fr.fi->fn->body.data());
    return fr.fi->srcSyms[i][src];
  }

  void writeReg(Frame& fr, uint32_t reg, uint64_t v) {
    Type t = fr.fi->fn->regs[reg].type;
    fr.regs[reg] = t == Type::Pred ? (v & 1) : trunc(v, ptx::bits(t));
  }

  void noteUnspecified(const Instruction& in, const std::string& what) {
    if (result_.unspecified++ == 0)
      result_.firstUnspecified = where(in) + ": " + what + " (CTA " + std::to_string(cta_) + " thread " +
                                 std::to_string(current_ ? current_->tid : 0) + ")";
  }

  // ---- Memory ----
  struct Place {
    std::vector<uint8_t>* bytes = nullptr;  // null: global_/shared_ by `space`
    StateSpace space = StateSpace::Global;
    uint64_t address = 0;
  };

  Expected<Place> placeOf(Frame& fr, const Instruction& in) {
    const Operand& a = in.srcs[0];
    Place p;
    StateSpace sp = in.mods.space;
    if (sp != StateSpace::None && sp != StateSpace::Global && sp != StateSpace::Shared &&
        sp != StateSpace::Param && sp != StateSpace::Local)
      return unsupported(in, "the .const state space");
    if (a.addrIsReg) {
      if (sp == StateSpace::Param) return unsupported(in, "a .param access through a register");
      int w = ptx::bits(fr.fi->fn->regs[a.reg].type);
      p.address = trunc(fr.regs[a.reg] + static_cast<uint64_t>(a.imm), w);
      p.space = sp == StateSpace::Shared || sp == StateSpace::Local ? sp : StateSpace::Global;
      // A generic address in the shared (local) window is a shared (local) address (eval.h).
      if (sp == StateSpace::None && p.address >= kSharedGenericBase &&
          p.address - kSharedGenericBase < kSharedGenericSpan) {
        p.space = StateSpace::Shared;
        p.address -= kSharedGenericBase;
      } else if (sp == StateSpace::None && p.address >= kLocalGenericBase &&
                 p.address - kLocalGenericBase < kLocalGenericSpan) {
        p.space = StateSpace::Local;
        p.address -= kLocalGenericBase;
      }
      if (p.space == StateSpace::Local && in.op == Opcode::Atom)
        return unsupported(in, "an atomic on a .local address");
      return p;
    }
    SymRef r = symOf(fr, in, 0);
    if (r.kind == SymRef::Shared) {
      p.space = StateSpace::Shared;
      p.address = sharedOffset_[r.index] + static_cast<uint64_t>(a.imm);
      return p;
    }
    if (r.kind == SymRef::Local) {
      p.space = StateSpace::Local;
      p.address =
          trunc(fr.localBase + fr.fi->localOffset[r.index] + static_cast<uint64_t>(a.imm), 32);
      return p;
    }
    std::vector<uint8_t>* store = paramStore(fr, r);
    if (!store) return unsupported(in, "address of '" + a.name + "'");
    p.space = StateSpace::Param;
    p.bytes = store;
    p.address = static_cast<uint64_t>(a.imm);
    return p;
  }

  // The bytes [address, address + n) of a place, or null after recording a fault.
  uint8_t* bytesAt(const Place& p, const Instruction& in, uint32_t n, const char* access) {
    uint8_t* base = nullptr;
    uint64_t size = 0;
    const char* name = "global";
    if (p.space == StateSpace::Param) base = p.bytes->data(), size = p.bytes->size(), name = "param";
    else if (p.space == StateSpace::Shared) base = shared_.data(), size = shared_.size(), name = "shared";
    else if (p.space == StateSpace::Local) base = current_->local.data(), size = current_->local.size(), name = "local";
    else base = global_.data(), size = global_.size();
    bool inside = p.address < size && n <= size - p.address;
    // The first element of a split ld/st.v2/.v4 also checks the vector's alignment (mods.vecBytes).
    bool aligned = p.address % n == 0 && (in.mods.vecBytes == 0 || p.address % in.mods.vecBytes == 0);
    if (inside && aligned) return base + p.address;
    result_.status = EvalStatus::Fault;
    result_.fault = makeDiag(
        ErrorKind::MachineFault,
        "PTX evaluator: CTA " + std::to_string(cta_) + " thread " + std::to_string(current_ ? current_->tid : 0) +
            ", " + where(in) + ": " + name + " " + access + " of " + std::to_string(n) + " byte(s) at address " +
            std::to_string(p.address) + (inside ? " is not aligned" : " is out of range") + ": the " + name +
            " window has " + std::to_string(size) + " bytes",
        in.loc);
    return nullptr;
  }

  static uint64_t loadBytes(const uint8_t* b, uint32_t n) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; ++i) v |= uint64_t{b[i]} << (8 * i);
    return v;
  }
  static void storeBytes(uint8_t* b, uint32_t n, uint64_t v) {
    for (uint32_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  }

  // ---- One instruction of one thread ----
  Expected<Step> step(Thread& th) {
    current_ = &th;
    Frame& fr = th.top();
    const ptx::Function& f = *fr.fi->fn;
    if (fr.pc >= f.body.size()) {  // fell off the end: as ret
      return doReturn(th);
    }
    const Instruction& in = f.body[fr.pc];
    if (in.guarded) {
      bool g = (fr.regs[in.guardReg] & 1) != 0;
      if (in.guardNegated) g = !g;
      if (isWarpOp(in) || isBarrier(in) || in.op == Opcode::Call)
        return unsupported(in, "a guarded barrier, warp operation or call");
      if (!g) {
        fr.pc++;
        return Step::Next;
      }
    }
    if (isWarpOp(in)) {
      th.state = ThreadState::AtWarpOp;
      return Step::Blocked;
    }
    if (isBarrier(in)) {
      QGPU_CHECK(checkBarrier(fr, in));
      th.state = ThreadState::AtBarrier;
      return Step::Blocked;
    }
    specialOk_ = true;
    QGPU_TRY(s, execute(th, fr, in));
    if (!specialOk_) return unsupported(in, "'" + badSpecial_ + "' has no value here");
    return s;
  }

  Status checkBarrier(Frame& fr, const Instruction& in) {
    size_t idOperands = in.mods.barrier == ptx::BarrierKind::Sync ? in.srcs.size() : in.srcs.size() - 1;
    if (idOperands != 1) return unsupported(in, "a barrier thread count");
    if (readValue(fr, in, in.srcs[0], 32) != 0) return unsupported(in, "a named barrier (id != 0)");
    return Ok{};
  }

  Expected<Step> doReturn(Thread& th) {
    if (th.stack.size() == 1) {
      th.state = ThreadState::Exited;
      return Step::Exited;
    }
    Frame callee = std::move(th.stack.back());
    th.stack.pop_back();
    Frame& caller = th.top();
    const std::vector<SymRef>& rets = caller.fi->callRets[caller.pc];
    for (size_t i = 0; i < rets.size() && i < callee.rets.size(); ++i)
      if (std::vector<uint8_t>* dst = paramStore(caller, rets[i])) {
        std::fill(dst->begin(), dst->end(), 0);
        std::copy_n(callee.rets[i].begin(), std::min(dst->size(), callee.rets[i].size()), dst->begin());
      }
    caller.pc++;
    return Step::Next;
  }

  Expected<Step> doCall(Thread& th, Frame& fr, const Instruction& in) {
    if (th.stack.size() >= kMaxCallDepth)
      return unsupported(in, "calls nested deeper than " + std::to_string(kMaxCallDepth));
    uint32_t at = fr.pc;
    const FuncInfo* callee = fr.fi->callee[at];
    Frame nf = newFrame(callee);
    placeFrame(nf, fr.localEnd);
    const auto& items = in.srcs[1].items;
    for (size_t i = 0; i < items.size() && i < nf.params.size(); ++i) {
      std::vector<uint8_t>& dst = nf.params[i];
      if (items[i].kind == OperandKind::Symbol) {
        std::vector<uint8_t>* src = paramStore(fr, fr.fi->callArgs[at][i]);
        if (!src) return unsupported(in, "argument '" + items[i].name + "'");
        std::copy_n(src->begin(), std::min(dst.size(), src->size()), dst.begin());
      } else {
        uint64_t v = items[i].kind == OperandKind::Reg ? fr.regs[items[i].reg] : static_cast<uint64_t>(items[i].imm);
        storeBytes(dst.data(), static_cast<uint32_t>(dst.size() < 8 ? dst.size() : 8), v);
      }
    }
    th.stack.push_back(std::move(nf));  // invalidates `fr`
    return Step::Next;
  }

  Expected<Step> execute(Thread& th, Frame& fr, const Instruction& in) {
    Type t = in.types.empty() ? Type::None : in.types[0];
    int w = ptx::bits(t);
    bool sg = ptx::isSigned(t);
    auto src = [&](size_t i, int width) { return readValue(fr, in, in.srcs[i], width); };
    auto dst = [&](uint64_t v, size_t i = 0) { writeReg(fr, in.dsts[i].reg, v); };
    auto s64 = [&](uint64_t v) { return sext(v, w); };
    switch (in.op) {
      case Opcode::Bra:
        fr.pc = fr.fi->target[fr.pc];
        return Step::Next;
      case Opcode::Ret:
        return doReturn(th);
      case Opcode::Exit:
        th.state = ThreadState::Exited;
        return Step::Exited;
      case Opcode::Call:
        return doCall(th, fr, in);
      case Opcode::Membar: case Opcode::Fence:
        break;  // one thread at a time over one memory: every access is already ordered
      case Opcode::Mul24: {
        if (in.mods.hi) return unsupported(in, "mul24.hi");
        uint64_t a = src(0, 24), b = src(1, 24);  // the low 24 bits, extended by the type
        int64_t x = sg ? sext(a, 24) : static_cast<int64_t>(a), y = sg ? sext(b, 24) : static_cast<int64_t>(b);
        dst(static_cast<uint64_t>(x * y));
        break;
      }
      case Opcode::Sad: {
        uint64_t a = src(0, w), b = src(1, w);
        bool less = sg ? s64(a) < s64(b) : a < b;
        dst((less ? b - a : a - b) + src(2, w));
        break;
      }
      case Opcode::Activemask:
        return unsupported(in, "activemask (which lanes run together is not PTX semantics)");
      case Opcode::Ld: case Opcode::St: case Opcode::Atom: {
        QGPU_CHECK(memory(fr, in));
        break;
      }
      case Opcode::Cvta: {
        // PTX: cvta.space converts a space address to a generic one, cvta.to.space the reverse.
        // Global addresses are generic addresses here; the shared window is at kSharedGenericBase,
        // the thread's local window at kLocalGenericBase.
        uint64_t a = src(0, w);
        if (in.mods.space == StateSpace::Global || in.mods.space == StateSpace::None) {
          dst(a);
        } else if (in.mods.space == StateSpace::Shared || in.mods.space == StateSpace::Local) {
          const bool shared = in.mods.space == StateSpace::Shared;
          const uint64_t base = shared ? kSharedGenericBase : kLocalGenericBase;
          const uint64_t span = shared ? kSharedGenericSpan : kLocalGenericSpan;
          const char* name = shared ? "shared" : "local";
          if (!in.mods.toSpace) {
            dst(a + base);
          } else {
            if (a < base || a - base >= span)
              noteUnspecified(in, std::string("cvta.to.") + name + " of generic address " + std::to_string(a) +
                                      ", which is not in the " + name + " window");
            dst(a - base);
          }
        } else {
          return unsupported(in, "cvta of the .const state space");
        }
        break;
      }
      case Opcode::Mov: dst(src(0, t == Type::Pred ? 1 : w)); break;
      case Opcode::Cvt: {
        Type from = in.types[1];
        uint64_t v = extend(src(0, ptx::bits(from)), from);  // the source value, exactly
        dst(extend(v, t));  // truncated to the destination type, extended into its register
        break;
      }
      case Opcode::Add: dst(src(0, w) + src(1, w)); break;
      case Opcode::Sub: dst(src(0, w) - src(1, w)); break;
      case Opcode::Mul: case Opcode::Mad: {
        uint64_t a = src(0, w), b = src(1, w);
        unsigned __int128 p = sg ? static_cast<unsigned __int128>(static_cast<__int128>(s64(a)) * s64(b))
                                 : static_cast<unsigned __int128>(a) * b;
        uint64_t r;
        int rw = w;
        if (in.mods.wide) {
          rw = 2 * w;
          r = static_cast<uint64_t>(p);  // w <= 32: the 2w-bit product fits
        } else if (in.mods.hi) {
          r = static_cast<uint64_t>(p >> w);
        } else {
          r = static_cast<uint64_t>(p);
        }
        if (in.op == Opcode::Mad) r += src(2, rw);
        dst(trunc(r, rw));
        break;
      }
      case Opcode::Div: case Opcode::Rem: {
        uint64_t a = src(0, w), b = src(1, w);
        bool div = in.op == Opcode::Div;
        if (b == 0) {
          noteUnspecified(in, std::string(div ? "division" : "remainder") + " by zero");
          // The machine's documented values (docs/machine.md "Integer semantics").
          dst(div ? (sg ? (s64(a) < 0 ? 1 : mask(w)) : mask(w)) : a);
        } else if (sg) {
          int64_t x = s64(a), y = s64(b);
          int64_t minv = sext(uint64_t{1} << (w - 1), w);
          if (x == minv && y == -1) {
            noteUnspecified(in, "signed minimum divided by -1");
            dst(div ? a : 0);
          } else {
            dst(static_cast<uint64_t>(div ? x / y : x % y));
          }
        } else {
          dst(div ? a / b : a % b);
        }
        break;
      }
      case Opcode::Min: case Opcode::Max: {
        uint64_t a = src(0, w), b = src(1, w);
        bool less = sg ? s64(a) < s64(b) : a < b;
        dst(in.op == Opcode::Min ? (less ? a : b) : (less ? b : a));
        break;
      }
      case Opcode::Abs: { int64_t a = s64(src(0, w)); dst(static_cast<uint64_t>(a < 0 ? -static_cast<__int128>(a) : a)); break; }
      case Opcode::Neg: dst(uint64_t{0} - src(0, w)); break;
      case Opcode::And: dst(src(0, w) & src(1, w)); break;
      case Opcode::Or: dst(src(0, w) | src(1, w)); break;
      case Opcode::Xor: dst(src(0, w) ^ src(1, w)); break;
      case Opcode::Not: dst(~src(0, w)); break;
      case Opcode::Shl: {
        uint64_t a = src(0, w), n = src(1, 32);
        dst(n >= static_cast<uint64_t>(w) ? 0 : a << n);
        break;
      }
      case Opcode::Shr: {
        uint64_t a = src(0, w), n = src(1, 32);
        if (sg) {
          int64_t x = s64(a);
          dst(static_cast<uint64_t>(n >= static_cast<uint64_t>(w) ? (x < 0 ? -1 : 0) : x >> n));
        } else {
          dst(n >= static_cast<uint64_t>(w) ? 0 : a >> n);
        }
        break;
      }
      case Opcode::Popc: dst(static_cast<uint64_t>(__builtin_popcountll(src(0, w)))); break;
      case Opcode::Clz: {
        uint64_t a = src(0, w);
        dst(a == 0 ? static_cast<uint64_t>(w) : static_cast<uint64_t>(__builtin_clzll(a) - (64 - w)));
        break;
      }
      case Opcode::Brev: {
        uint64_t a = src(0, w), r = 0;
        for (int i = 0; i < w; ++i) r |= ((a >> i) & 1) << (w - 1 - i);
        dst(r);
        break;
      }
      case Opcode::Bfind: {
        uint64_t a = src(0, w);
        if (sg && s64(a) < 0) a = trunc(~a, w);  // signed: the highest bit unlike the sign
        uint64_t r = a == 0 ? 0xffffffffu : static_cast<uint64_t>(63 - __builtin_clzll(a));
        if (in.mods.shiftamt && a != 0) r = static_cast<uint64_t>(w - 1) - r;
        dst(r);
        break;
      }
      case Opcode::Bfe: {
        uint64_t a = src(0, w);
        uint64_t pos = src(1, 32) & 0xff, len = src(2, 32) & 0xff;
        uint64_t msb = static_cast<uint64_t>(w - 1);
        uint64_t sbit = 0;
        if (sg && len != 0) sbit = (a >> std::min(pos + len - 1, msb)) & 1;
        uint64_t r = 0;
        for (uint64_t i = 0; i <= msb; ++i) {
          uint64_t bit = (i < len && pos + i <= msb) ? (a >> (pos + i)) & 1 : sbit;
          r |= bit << i;
        }
        dst(r);
        break;
      }
      case Opcode::Bfi: {
        // bfi.b32/.b64 d, f, b, pos, len: b with bits pos.. pos+len-1 (those <= msb) from f's
        // low bits; pos = c & 0xff, len = d & 0xff.
        uint64_t f = src(0, w), r = src(1, w);
        uint64_t pos = src(2, 32) & 0xff, len = src(3, 32) & 0xff;
        for (uint64_t i = 0; i < len && pos + i < static_cast<uint64_t>(w); ++i)
          r = (r & ~(uint64_t{1} << (pos + i))) | (((f >> i) & 1) << (pos + i));
        dst(r);
        break;
      }
      case Opcode::Prmt: {
        uint64_t a = src(0, 32), b = src(1, 32), c = src(2, 32);
        uint64_t both = (b << 32) | a, r = 0;
        for (int i = 0; i < 4; ++i) {
          uint64_t sel = (c >> (4 * i)) & 0xf;
          uint64_t byte = (both >> (8 * (sel & 7))) & 0xff;
          if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
          r |= byte << (8 * i);
        }
        dst(r);
        break;
      }
      case Opcode::Shf: {
        uint64_t a = src(0, 32), b = src(1, 32), c = src(2, 32);
        uint64_t n = in.mods.clamp ? std::min<uint64_t>(c, 32) : (c & 31);
        uint64_t pair = (b << 32) | a;  // b:a
        dst(in.mods.left ? (pair << n) >> 32 : pair >> n);
        break;
      }
      case Opcode::Selp: dst((src(2, 1) & 1) ? src(0, w) : src(1, w)); break;
      case Opcode::Setp: {
        uint64_t a = src(0, w), b = src(1, w);
        int64_t x = s64(a), y = s64(b);
        bool r = false;
        switch (in.mods.cmp) {
          case ptx::CmpOp::Eq: r = a == b; break;
          case ptx::CmpOp::Ne: r = a != b; break;
          case ptx::CmpOp::Lt: r = sg ? x < y : a < b; break;
          case ptx::CmpOp::Le: r = sg ? x <= y : a <= b; break;
          case ptx::CmpOp::Gt: r = sg ? x > y : a > b; break;
          case ptx::CmpOp::Ge: r = sg ? x >= y : a >= b; break;
          case ptx::CmpOp::Lo: r = a < b; break;
          case ptx::CmpOp::Ls: r = a <= b; break;
          case ptx::CmpOp::Hi: r = a > b; break;
          case ptx::CmpOp::Hs: r = a >= b; break;
          case ptx::CmpOp::None: return unsupported(in, "setp without a comparison");
        }
        dst(r);
        if (in.dsts.size() > 1) dst(!r, 1);
        break;
      }
      default:
        return unsupported(in, std::string("opcode '") + ptx::spelling(in.op) + "'");
    }
    if (result_.status != EvalStatus::Finished) return Step::Next;  // faulted: stays where it is
    fr.pc++;
    return Step::Next;
  }

  Status memory(Frame& fr, const Instruction& in) {
    Type t = in.types[0];
    int w = ptx::bits(t);
    uint32_t n = static_cast<uint32_t>(w / 8);
    QGPU_TRY(p, placeOf(fr, in));
    if (in.op == Opcode::Ld) {
      uint8_t* b = bytesAt(p, in, n, "load");
      if (!b) return Ok{};
      writeReg(fr, in.dsts[0].reg, extend(loadBytes(b, n), t));
      return Ok{};
    }
    if (in.op == Opcode::St) {
      uint64_t v = readValue(fr, in, in.srcs[1], w);
      uint8_t* b = bytesAt(p, in, n, "store");
      if (b) storeBytes(b, n, v);
      return Ok{};
    }
    if (p.space == StateSpace::Param) return unsupported(in, "an atomic on .param");
    uint64_t b = readValue(fr, in, in.srcs[1], w);
    uint64_t c = in.srcs.size() > 2 ? readValue(fr, in, in.srcs[2], w) : 0;
    uint8_t* at = bytesAt(p, in, n, "atomic");
    if (!at) return Ok{};
    uint64_t old = loadBytes(at, n), r = old;
    bool sg = ptx::isSigned(t);
    switch (in.mods.atom) {
      case ptx::AtomOp::Add: r = old + b; break;
      case ptx::AtomOp::Min: r = (sg ? sext(old, w) <= sext(b, w) : old <= b) ? old : b; break;
      case ptx::AtomOp::Max: r = (sg ? sext(old, w) >= sext(b, w) : old >= b) ? old : b; break;
      case ptx::AtomOp::And: r = old & b; break;
      case ptx::AtomOp::Or: r = old | b; break;
      case ptx::AtomOp::Xor: r = old ^ b; break;
      case ptx::AtomOp::Exch: r = b; break;
      case ptx::AtomOp::Cas: r = old == b ? c : old; break;
      case ptx::AtomOp::Inc: r = old >= b ? 0 : old + 1; break;
      case ptx::AtomOp::Dec: r = (old == 0 || old > b) ? b : old - 1; break;
      case ptx::AtomOp::None: return unsupported(in, "atom without an operation");
    }
    storeBytes(at, n, trunc(r, w));
    writeReg(fr, in.dsts[0].reg, old);
    return Ok{};
  }
};

}  // namespace

const char* statusName(EvalStatus status) {
  switch (status) {
    case EvalStatus::Finished: return "finished";
    case EvalStatus::Fault: return "fault";
    case EvalStatus::StepLimit: return "step-limit";
  }
  return "?";
}

Expected<EvalResult> evaluate(const ptx::Module& module, const Launch& launch, const EvalOptions& options) {
  return Evaluator(module, launch, options).run();
}

}  // namespace qgpu::ptxeval
