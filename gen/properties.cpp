// qgpu/gen/properties.cpp — the properties of generated cases (contract: properties.h).
#include "gen/properties.h"

#include <bit>
#include <string>
#include <variant>
#include <vector>

namespace qgpu::gen {

using namespace machine;
namespace tk = trace;

namespace {

Diag fail(const char* property, const Case& c, const std::string& what) {
  return makeDiag(ErrorKind::Internal, std::string(property) + ": " + what + " [" + c.header + "]");
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

}  // namespace

oracle::RunOptions runOptions(const Case& c) {
  oracle::RunOptions o;
  o.maxSteps = c.stepBound;
  o.recordTrace = true;
  return o;
}

Status checkVerifies(const Case& c) {
  const Status ok = verify(c.program, c.launch);
  if (!ok.ok()) return fail("verifies", c, ok.error().message);
  return Ok{};
}

Status checkSameRun(const Case& c, const oracle::RunResult& a, const oracle::RunResult& b) {
  const char* kProp = "deterministic";
  if (a.status != b.status)
    return fail(kProp, c,
                std::string("status ") + statusName(a.status) + " then " + statusName(b.status));
  if (a.status != oracle::RunStatus::Finished &&
      (a.fault.kind != b.fault.kind || a.fault.message != b.fault.message))
    return fail(kProp, c, "fault '" + a.fault.message + "' then '" + b.fault.message + "'");
  const size_t n = std::min(a.trace.size(), b.trace.size());
  for (size_t i = 0; i < n; ++i) {
    if (a.trace[i] != b.trace[i])
      return fail(kProp, c,
                  "trace token " + std::to_string(i) + " is " + tk::tokenName(a.trace[i]) +
                      " then " + tk::tokenName(b.trace[i]));
  }
  if (a.trace.size() != b.trace.size())
    return fail(kProp, c,
                "trace of " + std::to_string(a.trace.size()) + " tokens then " +
                    std::to_string(b.trace.size()));
  for (int w = 0; w < kGlobalWords; ++w) {
    if (a.global[static_cast<size_t>(w)] != b.global[static_cast<size_t>(w)])
      return fail(kProp, c,
                  "final global word " + std::to_string(w) + " is " +
                      hex(a.global[static_cast<size_t>(w)]) + " then " +
                      hex(b.global[static_cast<size_t>(w)]));
  }
  if (a.blockExecs != b.blockExecs || a.laneInstrs != b.laneInstrs)
    return fail(kProp, c, "step or lane-instruction counts differ");
  return Ok{};
}

Status checkTerminates(const Case& c, const oracle::RunResult& r) {
  if (r.status == oracle::RunStatus::StepLimit)
    return fail(
        "terminates", c,
        "the run reached the step bound " + std::to_string(c.stepBound) + ": " + r.fault.message);
  return Ok{};
}

Status checkPromptDecodes(const Case& c, std::span<const tk::Token> prompt) {
  const char* kProp = "prompt-round-trip";
  auto back = tk::decodePrompt(prompt);
  if (!back.ok()) return fail(kProp, c, "the prompt does not decode: " + back.error().message);
  Program program = back->program;
  program.name = c.program.name;  // the prompt does not encode the name
  if (!(program == c.program))
    return fail(
        kProp, c,
        "the decoded program differs:\n" + print(program) + "instead of\n" + print(c.program));
  if (back->launch.gridX != c.launch.gridX || back->launch.blockX != c.launch.blockX)
    return fail(kProp, c, "the decoded launch shape differs");
  for (int w = 0; w < kGlobalWords; ++w) {
    if (back->launch.global[static_cast<size_t>(w)] != c.launch.global[static_cast<size_t>(w)])
      return fail(kProp, c, "decoded initial global word " + std::to_string(w) + " differs");
  }
  return Ok{};
}

Status checkTraceMatchesSteps(const Case& c, std::span<const tk::Token> run) {
  const char* kProp = "trace-matches-steps";
  auto decoded = tk::decodeRun(run);
  if (!decoded.ok()) return fail(kProp, c, "the run does not decode: " + decoded.error().message);
  const std::vector<tk::TraceEvent>& events = *decoded;
  auto started = oracle::Execution::start(c.program, c.launch, runOptions(c));
  if (!started.ok()) return fail(kProp, c, "the case does not start: " + started.error().message);
  oracle::Execution& execution = *started;

  size_t k = 0;       // next decoded event
  uint64_t step = 0;  // Execution events so far
  auto at = [&](const std::string& what) {
    const std::string have = k < events.size() ? tk::describe(events[k]) : std::string("the end");
    return fail(kProp, c,
                "event " + std::to_string(k) + " (interpreter event " + std::to_string(step) +
                    "): expected " + what + ", the trace has " + have);
  };
  auto expectExec = [&](const oracle::StepEffects& fx) -> Status {
    const tk::Exec want{fx.block, fx.warp, fx.mask};
    const std::string name = "EX(" + std::to_string(fx.block) + ") warp " +
                             std::to_string(fx.warp) + " mask " + std::to_string(fx.mask);
    if (k >= events.size() || !std::holds_alternative<tk::Exec>(events[k]) ||
        !(std::get<tk::Exec>(events[k]) == want))
      return at(name);
    ++k;
    return Ok{};
  };

  // The step ticks due before a step's EX or the LIMIT (trace v4): TICK(1) .. TICK(n).
  auto expectTicks = [&](uint64_t stepsBefore) -> Status {
    for (int level = 1; level <= tk::ticksDue(stepsBefore); ++level) {
      const tk::Tick want{static_cast<uint8_t>(level)};
      if (k >= events.size() || !std::holds_alternative<tk::Tick>(events[k]) ||
          !(std::get<tk::Tick>(events[k]) == want))
        return at("TICK(" + std::to_string(level) + ") after " + std::to_string(stepsBefore) +
                  " steps");
      ++k;
    }
    return Ok{};
  };

  // One op's records: its memrec (a memory-writing op with executing lanes), its regrec, its
  // predrec, or NOP when it has none of these (docs/trace.md, "What one op writes").
  auto expectOp = [&](const oracle::StepEffects& fx, const oracle::OpEffects& op) -> Status {
    const std::string name = "op " + std::to_string(op.index) + " of B" + std::to_string(fx.block);
    bool any = false;
    const bool memWrite = op.mem == MemEffect::Write || op.mem == MemEffect::ReadWrite;
    // From the program, not the interpreter's flag: its register write is a second record.
    const bool lateReg = machine::recordsOf(c.program.blocks[fx.block].ops[op.index]) == 2;
    if (memWrite && op.exec != 0) {
      any = true;
      const std::string what = name + "'s memory write in lanes " + std::to_string(op.exec);
      if (k >= events.size() || !std::holds_alternative<tk::MemWrite>(events[k])) return at(what);
      const tk::MemWrite& w = std::get<tk::MemWrite>(events[k]);
      if (w.space != op.space || w.lanes != op.exec) return at(what);
      size_t j = 0;
      for (int l = 0; l < kLanes; ++l) {
        if (!(op.exec >> l & 1)) continue;
        const tk::WordValue want{op.words[static_cast<size_t>(l)], op.values[static_cast<size_t>(l)]};
        if (j >= w.accesses.size() || !(w.accesses[j] == want))
          return at(what + ": lane " + std::to_string(l) + " word " + std::to_string(want.word) +
                    " = " + hex(want.value));
        ++j;
      }
      ++k;
    } else if (lateReg) {
      // An atomic with a register destination and no executing lane (trace v5), or a multiply
      // (v6): NOP, then its regrec — two records, as an atomic with lanes writes.
      if (k >= events.size() || !std::holds_alternative<tk::NoEffect>(events[k]))
        return at(name +
                  "'s NOP before its regrec (an atomic with no executing lane, or a "
                  "multiply)");
      ++k;
    }
    if (op.writesReg) {
      any = true;
      const std::string what = name + "'s write of r" + std::to_string(op.reg);
      if (k >= events.size() || !std::holds_alternative<tk::RegWrite>(events[k])) return at(what);
      const tk::RegWrite& w = std::get<tk::RegWrite>(events[k]);
      if (w.reg != op.reg) return at(what);
      size_t v = 0;
      for (int l = 0; l < kLanes; ++l) {
        if (!(fx.mask >> l & 1)) continue;
        const uint32_t want = op.regs[static_cast<size_t>(l)];
        const size_t idx = w.uniform ? 0 : v++;
        if (idx >= w.values.size() || w.values[idx] != want)
          return at(what + " = " + hex(want) + " in lane " + std::to_string(l));
      }
      if (!w.uniform && v != w.values.size()) return at(what + " with one value per active lane");
      ++k;
    }
    if (op.writesPred) {
      any = true;
      const tk::PredWrite want{op.pred, op.predBits};
      if (k >= events.size() || !std::holds_alternative<tk::PredWrite>(events[k]) ||
          !(std::get<tk::PredWrite>(events[k]) == want))
        return at(name + "'s write of p" + std::to_string(op.pred) + " = bits " +
                  std::to_string(op.predBits));
      ++k;
    }
    if (!any) {
      if (k >= events.size() || !std::holds_alternative<tk::NoEffect>(events[k]))
        return at(name + "'s NOP");
      ++k;
    }
    return Ok{};
  };

  for (;; ++step) {
    const oracle::StepEvent& e = execution.next();
    switch (e.kind) {
      case oracle::EventKind::CtaStart:
        if (k >= events.size() || !std::holds_alternative<tk::CtaStart>(events[k]))
          return at("CTA");
        ++k;
        break;
      case oracle::EventKind::Step:
      case oracle::EventKind::Fault: {
        const oracle::StepEffects& fx = e.step;
        QGPU_CHECK(expectTicks(e.stepsBefore));
        QGPU_CHECK(expectExec(fx));
        for (int i = 0; i < fx.numOps; ++i) QGPU_CHECK(expectOp(fx, fx.ops[static_cast<size_t>(i)]));
        if (e.kind == oracle::EventKind::Fault) {
          if (k >= events.size() || !std::holds_alternative<tk::Faulted>(events[k]))
            return at("FAULT");
          ++k;
        }
        break;
      }
      case oracle::EventKind::Finished:
        if (k >= events.size() || !std::holds_alternative<tk::Finished>(events[k]))
          return at("END");
        ++k;
        break;
      case oracle::EventKind::StepLimit:
        QGPU_CHECK(expectTicks(e.stepsBefore));
        if (k >= events.size() || !std::holds_alternative<tk::LimitReached>(events[k]))
          return at("LIMIT");
        ++k;
        break;
    }
    if (execution.done()) break;
  }
  if (k != events.size()) return at("nothing after the final event");
  return Ok{};
}

Status checkTraceComplete(const Case& c, std::span<const tk::Token> run,
                          const std::array<uint32_t, kGlobalWords>& finalGlobal) {
  const char* kProp = "trace-complete";
  auto decoded = tk::decodeRun(run);
  if (!decoded.ok()) return fail(kProp, c, "the run does not decode: " + decoded.error().message);
  std::array<uint32_t, kGlobalWords> memory = c.launch.global;
  for (const tk::TraceEvent& e : *decoded) {
    const auto* w = std::get_if<tk::MemWrite>(&e);
    if (!w || w->space != Space::Global) continue;
    for (const tk::WordValue& a : w->accesses) {
      if (a.word >= memory.size())
        return fail(kProp, c,
                    "the trace writes global word " + std::to_string(a.word) + ", past the end");
      memory[a.word] = a.value;
    }
  }
  for (int w = 0; w < kGlobalWords; ++w) {
    const auto i = static_cast<size_t>(w);
    if (memory[i] != finalGlobal[i])
      return fail(kProp, c,
                  "global word " + std::to_string(w) + " is " + hex(finalGlobal[i]) +
                      " after the run but " + hex(memory[i]) + " by the trace");
  }
  return Ok{};
}

Expected<oracle::RunResult> checkCase(const Case& c) {
  QGPU_CHECK(checkVerifies(c));
  const oracle::RunOptions options = runOptions(c);
  auto first = oracle::run(c.program, c.launch, options);
  if (!first.ok()) return fail("runs", c, first.error().message);
  auto second = oracle::run(c.program, c.launch, options);
  if (!second.ok()) return fail("runs", c, second.error().message);
  QGPU_CHECK(checkSameRun(c, *first, *second));
  QGPU_CHECK(checkTerminates(c, *first));
  QGPU_CHECK(checkPromptDecodes(c, tk::encodePrompt(c.program, c.launch)));
  QGPU_CHECK(checkTraceMatchesSteps(c, first->trace));
  QGPU_CHECK(checkTraceComplete(c, first->trace, first->global));
  return first;
}

const char* statusName(oracle::RunStatus s) {
  switch (s) {
    case oracle::RunStatus::Finished:
      return "Finished";
    case oracle::RunStatus::Fault:
      return "Fault";
    case oracle::RunStatus::StepLimit:
      return "StepLimit";
  }
  return "?";
}

}  // namespace qgpu::gen
