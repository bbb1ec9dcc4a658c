// qgpu/harness/evaluate.cpp — expression evaluation through catalog kernels on the interpreter.
#include "harness/evaluate.h"

#include <limits>
#include <map>
#include <utility>

namespace qgpu::harness {

namespace {

std::vector<int64_t> widen(const std::vector<int32_t>& data) {
  return std::vector<int64_t>(data.begin(), data.end());
}

// A dot product of vectors that fit one CTA runs as `dot_atomic`, one thread per element (the
// seeds' demo kernel: no loop, so the shortest trace); longer ones as the block-strided `dot`.
const char* kernelName(ExprKind kind, const std::vector<Value>& args) {
  bool small =
      kind == ExprKind::Dot && args[0].cols <= static_cast<uint32_t>(machine::kMaxThreadsPerBlock);
  return small ? "dot_atomic" : kernelFor(kind);
}

// Sets the catalog kernel's inputs for one operation; returns the name of its output array.
Expected<std::string> bindOperands(ExprKind kind, const std::vector<Value>& args,
                                   kernels::KernelSpec& spec) {
  auto set = [&](const char* param, const std::vector<int64_t>& values) {
    return kernels::setInput(spec, param, values);
  };
  auto n = [](const Value& v) { return std::vector<int64_t>{v.cols}; };
  switch (kind) {
    case ExprKind::Dot:
      if (spec.name == "dot_atomic") {
        QGPU_CHECK(set("a", widen(args[0].data)));
        QGPU_CHECK(set("b", widen(args[1].data)));
        QGPU_CHECK(set("n", n(args[0])));
        QGPU_CHECK(kernels::setOutputSize(spec, "out", 1));
        spec.blockX = args[0].cols;
        return std::string("out");
      }
      [[fallthrough]];
    case ExprKind::Add:
    case ExprKind::Sub: {
      QGPU_CHECK(set("u", widen(args[0].data)));
      QGPU_CHECK(set("v", widen(args[1].data)));
      QGPU_CHECK(set("n", n(args[0])));
      bool reduces = kind == ExprKind::Dot;
      QGPU_CHECK(kernels::setOutputSize(spec, "out", reduces ? 1 : args[0].cols));
      return std::string("out");
    }
    case ExprKind::Scale:
      QGPU_CHECK(set("k", widen(args[0].data)));
      QGPU_CHECK(set("v", widen(args[1].data)));
      QGPU_CHECK(set("n", n(args[1])));
      QGPU_CHECK(kernels::setOutputSize(spec, "out", args[1].cols));
      return std::string("out");
    case ExprKind::SqLen:
      QGPU_CHECK(set("v", widen(args[0].data)));
      QGPU_CHECK(set("n", n(args[0])));
      QGPU_CHECK(kernels::setOutputSize(spec, "out", 1));
      return std::string("out");
    case ExprKind::MatMul:
      QGPU_CHECK(set("a", widen(args[0].data)));
      QGPU_CHECK(set("b", widen(args[1].data)));
      QGPU_CHECK(set("n", {args[0].rows}));
      QGPU_CHECK(kernels::setOutputSize(spec, "c", args[0].rows * args[0].rows));
      return std::string("c");
    case ExprKind::MatVec:
      QGPU_CHECK(set("a", widen(args[0].data)));
      QGPU_CHECK(set("x", widen(args[1].data)));
      QGPU_CHECK(set("m", {args[0].rows}));
      QGPU_CHECK(set("n", {args[0].cols}));
      QGPU_CHECK(kernels::setOutputSize(spec, "y", args[0].rows));
      return std::string("y");
    case ExprKind::Literal: break;
  }
  return makeDiag(ErrorKind::Internal, "no kernel binding for a literal");
}

Value shapeOf(const ExprNode& node) {
  Value v;
  v.rows = node.rows;
  v.cols = node.cols;
  return v;
}

// The catalog kernels one evaluation uses, each read and compiled once: the CUDA source does not
// depend on the operands (setInput changes values, not the text), so its PTX is reused for every
// launch of that kernel. The machine program depends on the parameter values (lower() folds them
// in: array addresses, n, vscale's k), so it is lowered once per distinct parameter list.
class KernelCache {
 public:
  explicit KernelCache(const EvalOptions& options) : options_(options) {}

  Expected<kernels::KernelSpec> spec(const std::string& name) {
    auto it = specs_.find(name);
    if (it == specs_.end()) {
      QGPU_TRY(spec, resolveKernel(name, options_.catalogDir));
      it = specs_.emplace(name, std::move(spec)).first;
    }
    return it->second;
  }

  // The program for `spec` (inputs already bound) laid out as `image`.
  Expected<const machine::Program*> program(const kernels::KernelSpec& spec,
                                            const kernels::LaunchImage& image) {
    auto key = std::make_pair(spec.name, image.params);
    if (auto found = programs_.find(key); found != programs_.end()) return &found->second;
    auto compiled = compiled_.find(spec.name);
    if (compiled == compiled_.end()) {
      QGPU_TRY(built, compileKernel(spec, options_.compiler));
      compiled = compiled_.emplace(spec.name, std::move(built)).first;
    }
    lower::LowerOptions lowerOptions;
    lowerOptions.entry = compiled->second.entry;
    lowerOptions.params = image.params;
    lowerOptions.dynamicSharedWords = image.dynamicSharedWords;
    QGPU_TRY(program, lower::lower(compiled->second.module, lowerOptions));
    return &programs_.emplace(std::move(key), std::move(program)).first->second;
  }

 private:
  const EvalOptions& options_;
  std::map<std::string, kernels::KernelSpec> specs_;
  std::map<std::string, BuiltKernel> compiled_;  // PTX module and entry; program left empty
  std::map<std::pair<std::string, std::vector<uint32_t>>, machine::Program> programs_;
};

// Names the operation in a diag about it: "vadd (column 7): ...".
Diag atOperation(Diag diag, const char* kernel, const ExprNode& node) {
  diag.message = std::string(kernel) + " (column " + std::to_string(node.column) + "): " +
                 diag.message;
  return diag;
}

Expected<Value> launch(const ExprNode& node, const std::vector<Value>& args,
                       const EvalOptions& options, KernelCache& cache, Evaluation& out) {
  const char* name = kernelName(node.kind, args);
  QGPU_TRY(spec, cache.spec(name));
  QGPU_TRY(outputName, bindOperands(node.kind, args, spec));
  auto image = kernels::layout(spec);
  if (!image.ok()) return atOperation(image.error(), name, node);
  auto program = cache.program(spec, *image);
  if (!program.ok()) return atOperation(program.error(), name, node);

  machine::Launch machineLaunch = image->toMachineLaunch();
  oracle::RunOptions runOptions;
  runOptions.maxSteps = options.maxSteps;
  QGPU_TRY(run, oracle::run(**program, machineLaunch, runOptions));
  if (run.status != oracle::RunStatus::Finished) return atOperation(run.fault, name, node);

  Value result = shapeOf(node);
  for (const kernels::ArrayRange& range : image->arrays) {
    if (spec.params[range.param].name != outputName) continue;
    for (uint32_t w = 0; w < range.words; ++w)
      result.data.push_back(static_cast<int32_t>(run.global[range.firstWord + w]));
  }
  Launched launched;
  launched.kernel = name;
  launched.result = result;
  launched.prompt = trace::encodePrompt(**program, machineLaunch);
  launched.run = std::move(run.trace);
  launched.steps = run.blockExecs;
  out.launches.push_back(std::move(launched));
  return result;
}

// The operands of `node`, moved out of `values` (each node is the operand of one operation).
std::vector<Value> takeArgs(const ExprNode& node, std::vector<Value>& values) {
  std::vector<Value> args;
  for (uint32_t a : node.args) args.push_back(std::move(values[a]));
  return args;
}

using Int128 = __int128;

std::string int128String(Int128 v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  std::string digits;
  while (v != 0) {
    int digit = static_cast<int>(v % 10);  // in -9..9, the sign of v
    digits += static_cast<char>('0' + (digit < 0 ? -digit : digit));
    v /= 10;
  }
  if (negative) digits += '-';
  return std::string(digits.rbegin(), digits.rend());
}

struct Exact {
  uint32_t rows = 0, cols = 0;
  std::vector<Int128> data;
};

// The two host arithmetics the operations below run in: int32 with wrap-around (what the
// machine computes) and overflow-checked 128-bit integers (the exact value). `add`/`mul` return
// false when the result does not fit (never, for the wrapping one).
struct Wrap32 {
  using T = int32_t;
  static bool add(T a, T b, T& out) {
    out = static_cast<T>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
    return true;
  }
  static bool sub(T a, T b, T& out) {
    out = static_cast<T>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
    return true;
  }
  static bool mul(T a, T b, T& out) {
    out = static_cast<T>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
    return true;
  }
};
struct Checked128 {
  using T = Int128;
  static bool add(T a, T b, T& out) { return !__builtin_add_overflow(a, b, &out); }
  static bool sub(T a, T b, T& out) { return !__builtin_sub_overflow(a, b, &out); }
  static bool mul(T a, T b, T& out) { return !__builtin_mul_overflow(a, b, &out); }
};

template <typename Arith>
bool mulAdd(typename Arith::T& sum, typename Arith::T a, typename Arith::T b) {
  typename Arith::T product;
  return Arith::mul(a, b, product) && Arith::add(sum, product, sum);
}

// One operation of the expression language in arithmetic `Arith` over matrices `M` (Value or
// Exact: rows, cols, data); false when a result does not fit.
template <typename Arith, typename M>
bool operate(const ExprNode& node, const std::vector<M>& a, M& r) {
  using T = typename Arith::T;
  switch (node.kind) {
    case ExprKind::Dot:
    case ExprKind::SqLen: {
      const M& u = a[0];
      const M& v = node.kind == ExprKind::Dot ? a[1] : a[0];
      T sum = 0;
      for (size_t i = 0; i < u.data.size(); ++i)
        if (!mulAdd<Arith>(sum, u.data[i], v.data[i])) return false;
      r.data.push_back(sum);
      return true;
    }
    case ExprKind::Add:
    case ExprKind::Sub:
      for (size_t i = 0; i < a[0].data.size(); ++i) {
        T out;
        const bool fits = node.kind == ExprKind::Add ? Arith::add(a[0].data[i], a[1].data[i], out)
                                                     : Arith::sub(a[0].data[i], a[1].data[i], out);
        if (!fits) return false;
        r.data.push_back(out);
      }
      return true;
    case ExprKind::Scale:
      for (T x : a[1].data) {
        T out;
        if (!Arith::mul(a[0].data[0], x, out)) return false;
        r.data.push_back(out);
      }
      return true;
    case ExprKind::MatMul:
    case ExprKind::MatVec: {
      uint32_t rows = a[0].rows, inner = a[0].cols;
      uint32_t cols = node.kind == ExprKind::MatMul ? a[1].cols : 1;
      for (uint32_t i = 0; i < rows; ++i)
        for (uint32_t j = 0; j < cols; ++j) {
          T sum = 0;
          for (uint32_t k = 0; k < inner; ++k)
            if (!mulAdd<Arith>(sum, a[0].data[i * inner + k], a[1].data[k * cols + j])) return false;
          r.data.push_back(sum);
        }
      return true;
    }
    case ExprKind::Literal: break;
  }
  return false;
}

}  // namespace

Expected<Evaluation> evaluate(const ExprTree& expr, const EvalOptions& options) {
  Evaluation out;
  KernelCache cache(options);
  std::vector<Value> values(expr.nodes.size());
  for (size_t i = 0; i < expr.nodes.size(); ++i) {
    const ExprNode& node = expr.nodes[i];
    if (node.kind == ExprKind::Literal) {
      values[i] = node.literal;
      continue;
    }
    QGPU_TRY(value, launch(node, takeArgs(node, values), options, cache, out));
    values[i] = std::move(value);
  }
  out.value = std::move(values.back());
  return out;
}

Value hostValue(const ExprTree& expr) {
  std::vector<Value> values(expr.nodes.size());
  for (size_t n = 0; n < expr.nodes.size(); ++n) {
    const ExprNode& node = expr.nodes[n];
    if (node.kind == ExprKind::Literal) {
      values[n] = node.literal;
      continue;
    }
    std::vector<Value> a = takeArgs(node, values);
    values[n] = shapeOf(node);
    operate<Wrap32>(node, a, values[n]);  // wrap-around arithmetic always fits
  }
  return std::move(values.back());
}

ExactValue exactValue(const ExprTree& expr) {
  std::vector<Exact> values(expr.nodes.size());
  for (size_t n = 0; n < expr.nodes.size(); ++n) {
    const ExprNode& node = expr.nodes[n];
    Exact& r = values[n];
    r.rows = node.rows;
    r.cols = node.cols;
    if (node.kind == ExprKind::Literal) {
      r.data.assign(node.literal.data.begin(), node.literal.data.end());
      continue;
    }
    std::vector<Exact> a;
    for (uint32_t i : node.args) a.push_back(std::move(values[i]));
    if (!operate<Checked128>(node, a, r)) {
      ExactValue unknown;
      unknown.rows = expr.root().rows;
      unknown.cols = expr.root().cols;
      unknown.representable = false;
      return unknown;
    }
  }
  ExactValue result;
  result.rows = values.back().rows;
  result.cols = values.back().cols;
  result.data = std::move(values.back().data);
  return result;
}

bool ExactValue::wrapped() const {
  if (!representable) return true;
  for (Int128 v : data)
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      return true;
  return false;
}

std::string ExactValue::str() const {
  if (!representable) return "?";
  auto list = [&](size_t from, size_t count) {
    std::string out = "[";
    for (size_t i = 0; i < count; ++i) out += (i ? ", " : "") + int128String(data[from + i]);
    return out + "]";
  };
  if (rows == 0 && cols == 0) return data.empty() ? "" : int128String(data[0]);
  if (rows == 0) return list(0, cols);
  std::string out = "[";
  for (uint32_t r = 0; r < rows; ++r) out += (r ? ", " : "") + list(size_t{r} * cols, cols);
  return out + "]";
}

}  // namespace qgpu::harness
