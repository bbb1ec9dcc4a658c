// qgpu/fuzz/fuzz_trace.cpp — libFuzzer target for the token-trace decoders (oracle/trace.cpp).
//
// Input: little-endian uint16 tokens, reduced modulo kVocabSize + 3 so most are real tokens and
// a few are out of the vocabulary. Properties checked (a violation aborts):
//   - decodeRun, decodePrompt and pretty never crash on any input;
//   - a prompt that decodes re-encodes to exactly the same tokens (one encoding per program);
//   - the interpreter, run on a decoded prompt, writes a run that decodeRun accepts, with one
//     EX per step it counted (a faulting step included).
#include <cstdint>
#include <cstdlib>
#include <variant>
#include <vector>

#include "oracle/interpreter.h"
#include "oracle/trace.h"

using namespace qgpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<trace::Token> tokens(size / 2);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const unsigned raw = data[2 * i] | (static_cast<unsigned>(data[2 * i + 1]) << 8);
    tokens[i] = static_cast<trace::Token>(raw % (trace::kVocabSize + 3));
  }
  (void)trace::decodeRun(tokens);
  (void)trace::pretty(tokens);

  size_t used = 0;
  auto prompt = trace::decodePrompt(tokens, &used);
  if (!prompt.ok()) return 0;
  const std::vector<trace::Token> again = trace::encodePrompt(prompt->program, prompt->launch);
  if (again.size() != used || !std::equal(again.begin(), again.end(), tokens.begin())) abort();

  oracle::RunOptions options;
  options.maxSteps = 2000;
  auto result = oracle::run(prompt->program, prompt->launch, options);
  if (!result.ok()) abort();  // decodePrompt verified the program
  auto events = trace::decodeRun(result->trace);
  if (!events.ok()) abort();
  uint64_t execs = 0;
  for (const trace::TraceEvent& e : *events) execs += std::holds_alternative<trace::Exec>(e) ? 1 : 0;
  if (execs != result->blockExecs) abort();
  return 0;
}
