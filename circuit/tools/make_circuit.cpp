// qgpu_make_circuit — writes a named circuit checkpoint (circuit/tests/circuit_cases.h) with its
// prompts and the greedy tokens the trace encoder expects after each.
//
//   qgpu_make_circuit --list
//   qgpu_make_circuit CASE OUT_DIR
//
// OUT_DIR gets config.json + model.safetensors (a standard Hugging Face checkpoint, F32) and
// case.json: {"case", "what", "weights_fnv1a64" (of model.safetensors, 16 hex digits),
// "stated_logit_margin", "prompts": [{"prompt": [ids], "expected": [ids]}, ...]}.
// ci/hf_circuit_reference.py runs these checkpoints in transformers; circuit/tests/hf_circuit_test
// rebuilds them in process and checks the digest. Exit codes: 0 written, 2 bad arguments or an
// unknown case, 3 a build or I/O error.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "circuit/tests/circuit_cases.h"
#include "common/digest.h"

namespace {

std::string ids(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qgpu::circuit;
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (const std::string& n : cases::caseNames()) std::printf("%s\n", n.c_str());
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s --list | CASE OUT_DIR\n", argv[0]);
    return 2;
  }
  auto c = cases::buildCase(argv[1]);
  if (!c) {
    std::fprintf(stderr, "%s\n", c.error().str().c_str());
    return c.error().kind == qgpu::ErrorKind::Usage ? 2 : 3;
  }
  const std::string dir = argv[2];
  auto written = c->weights.write(dir);
  if (!written) {
    std::fprintf(stderr, "%s\n", written.error().str().c_str());
    return 3;
  }
  std::ifstream in(dir + "/model.safetensors", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    std::fprintf(stderr, "%s/model.safetensors: cannot read back\n", dir.c_str());
    return 3;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(qgpu::fnv1a64(bytes)));
  std::ofstream out(dir + "/case.json");
  out << "{\n  \"case\": \"" << c->name << "\",\n  \"what\": \"" << c->what
      << "\",\n  \"weights_fnv1a64\": \"" << hex << "\",\n  \"stated_logit_margin\": "
      << c->statedLogitMargin << ",\n  \"prompts\": [";
  for (size_t i = 0; i < c->prompts.size(); ++i)
    out << (i ? "," : "") << "\n    {\"prompt\": " << ids(c->prompts[i].prompt)
        << ", \"expected\": " << ids(c->prompts[i].expected) << "}";
  out << "\n  ]\n}\n";
  out.close();
  if (!out) {
    std::fprintf(stderr, "%s/case.json: cannot write\n", dir.c_str());
    return 3;
  }
  size_t tokens = 0;
  for (const auto& p : c->prompts) tokens += p.expected.size();
  std::printf("%s: %s, %zu prompts, %zu expected tokens, weights fnv1a64 %s\n", dir.c_str(),
              c->name.c_str(), c->prompts.size(), tokens, hex);
  return 0;
}
