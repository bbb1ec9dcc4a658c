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

  for (;; ++step) {
    const oracle::StepEvent& e = execution.next();
    switch (e.kind) {
      case oracle::EventKind::CtaStart:
        if (k >= events.size() || !std::holds_alternative<tk::CtaStart>(events[k]))
          return at("CTA");
        ++k;
        break;
      case oracle::EventKind::Step: {
        const oracle::StepEffects& fx = e.step;
        QGPU_CHECK(expectExec(fx));
        for (uint32_t m = fx.commit; m != 0; m &= m - 1) {
          const int r = std::countr_zero(m);
          const std::string name = "the write-back of r" + std::to_string(r);
          if (k >= events.size() || !std::holds_alternative<tk::RegWrite>(events[k]))
            return at(name);
          const tk::RegWrite& w = std::get<tk::RegWrite>(events[k]);
          if (w.reg != r) return at(name);
          size_t v = 0;
          for (int l = 0; l < kLanes; ++l) {
            if (!(fx.mask >> l & 1)) continue;
            const uint32_t want = fx.regs[static_cast<size_t>(r)][static_cast<size_t>(l)];
            const size_t idx = w.uniform ? 0 : v++;
            if (idx >= w.values.size() || w.values[idx] != want)
              return at(name + " = " + hex(want) + " in lane " + std::to_string(l));
          }
          if (!w.uniform && v != w.values.size())
            return at(name + " with one value per active lane");
          ++k;
        }
        int j = 0;  // next expected change
        while (k < events.size() && std::holds_alternative<tk::MemWrite>(events[k])) {
          const tk::MemWrite& w = std::get<tk::MemWrite>(events[k]);
          for (size_t i = 0; i < w.values.size(); ++i, ++j) {
            if (j >= fx.numChanges) return at("no further memory change");
            const oracle::WordChange& ch = fx.changes[static_cast<size_t>(j)];
            if (ch.space != w.space || ch.word != w.addr + i || ch.value != w.values[i])
              return at(std::string(ch.space == Space::Global ? "global" : "shared") + " word " +
                        std::to_string(ch.word) + " = " + hex(ch.value));
          }
          ++k;
        }
        if (j != fx.numChanges)
          return at(std::to_string(fx.numChanges - j) + " more memory changes");
        break;
      }
      case oracle::EventKind::Fault:
        QGPU_CHECK(expectExec(e.step));
        if (k >= events.size() || !std::holds_alternative<tk::Faulted>(events[k]))
          return at("FAULT");
        ++k;
        break;
      case oracle::EventKind::Finished:
        if (k >= events.size() || !std::holds_alternative<tk::Finished>(events[k]))
          return at("END");
        ++k;
        break;
      case oracle::EventKind::StepLimit:
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
    if (std::holds_alternative<tk::Faulted>(e)) return Ok{};
    const auto* w = std::get_if<tk::MemWrite>(&e);
    if (!w || w->space != Space::Global) continue;
    for (size_t i = 0; i < w->values.size(); ++i) {
      const size_t word = w->addr + i;
      if (word >= memory.size())
        return fail(kProp, c,
                    "the trace writes global word " + std::to_string(word) + ", past the end");
      memory[word] = w->values[i];
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

}  // namespace qgpu::gen
