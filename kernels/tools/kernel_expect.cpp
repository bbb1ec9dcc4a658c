// qgpu/kernels/tools/kernel_expect.cpp — (re)generates the `// expect:` lines of catalog kernels
// from the plain C++ references in kernels/reference/.
//
// Usage: qgpu_kernel_expect [--write] FILE.cu...
//   without --write: prints each file's expect lines (review them);
//   with --write: replaces the file's expect lines (after its last `// param:` line).
// Exit codes: 0 success, 1 a file failed to parse or has no reference, 2 usage.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/catalog.h"
#include "kernels/reference/reference.h"

namespace {

using namespace qgpu::kernels;

std::vector<std::string> expectLines(const KernelSpec& spec) {
  std::vector<std::string> lines;
  for (const ParamSpec& p : spec.params) {
    if (p.isOutput()) lines.push_back("// expect: " + p.name + " = " + formatValues(p.expect, p.type));
  }
  return lines;
}

std::string rewrite(const std::string& text, const std::vector<std::string>& expects) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  size_t headerEnd = 0;
  while (headerEnd < lines.size() && lines[headerEnd].rfind("//", 0) == 0) ++headerEnd;
  std::vector<std::string> out;
  size_t lastParam = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i < headerEnd && lines[i].rfind("// expect:", 0) == 0) continue;
    out.push_back(lines[i]);
    if (i < headerEnd && lines[i].rfind("// param:", 0) == 0) lastParam = out.size();
  }
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(lastParam), expects.begin(), expects.end());
  std::string result;
  for (const std::string& l : out) result += l + "\n";
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  bool write = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--write") {
      write = true;
    } else if (!arg.empty() && arg[0] == '-') {
      std::cerr << "usage: qgpu_kernel_expect [--write] FILE.cu...\n";
      return 2;
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) {
    std::cerr << "usage: qgpu_kernel_expect [--write] FILE.cu...\n";
    return 2;
  }
  int rc = 0;
  for (const std::string& path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto spec = parseKernelTextWithoutExpect(text.str(), path);
    if (!spec) {
      std::cerr << spec.error().str() << "\n";
      rc = 1;
      continue;
    }
    if (auto status = fillExpectations(*spec); !status) {
      std::cerr << status.error().str() << "\n";
      rc = 1;
      continue;
    }
    std::vector<std::string> expects = expectLines(*spec);
    if (!write) {
      std::cout << path << ":\n";
      for (const std::string& l : expects) std::cout << l << "\n";
      continue;
    }
    std::string updated = rewrite(text.str(), expects);
    if (updated != text.str()) {
      std::ofstream(path) << updated;
      std::cout << "updated " << path << "\n";
    }
  }
  return rc;
}
