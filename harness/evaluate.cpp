// qgpu/harness/evaluate.cpp — expression evaluation through catalog kernels on the interpreter.
#include "harness/evaluate.h"

namespace qgpu::harness {

namespace {

std::vector<int64_t> widen(const std::vector<int32_t>& data) {
  return std::vector<int64_t>(data.begin(), data.end());
}

// A dot product of vectors that fit one CTA runs as `dot_atomic`, one thread per element (the
// seeds' demo kernel: no loop, so the shortest trace); longer ones as the block-strided `dot`.
const char* kernelName(const Expr& expr) {
  bool small = expr.kind == ExprKind::Dot &&
               expr.args[0]->cols <= static_cast<uint32_t>(machine::kMaxThreadsPerBlock);
  return small ? "dot_atomic" : kernelFor(expr.kind);
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

Value shapeOf(const Expr& expr) {
  Value v;
  v.rows = expr.rows;
  v.cols = expr.cols;
  return v;
}

Expected<Value> evaluateNode(const Expr& expr, const EvalOptions& options, Evaluation& out) {
  if (expr.kind == ExprKind::Literal) return expr.literal;
  std::vector<Value> args;
  for (const auto& arg : expr.args) {
    QGPU_TRY(value, evaluateNode(*arg, options, out));
    args.push_back(std::move(value));
  }
  const char* name = kernelName(expr);
  QGPU_TRY(spec, resolveKernel(name, options.catalogDir));
  QGPU_TRY(outputName, bindOperands(expr.kind, args, spec));
  QGPU_TRY(built, buildKernel(spec, options.compiler));

  machine::Launch launch = built.image.toMachineLaunch();
  oracle::RunOptions runOptions;
  runOptions.maxSteps = options.maxSteps;
  QGPU_TRY(run, oracle::run(built.program, launch, runOptions));
  if (run.status != oracle::RunStatus::Finished) {
    Diag fault = run.fault;
    fault.message = std::string(name) + " (column " + std::to_string(expr.column) +
                    "): " + fault.message;
    return fault;
  }

  Value result = shapeOf(expr);
  for (const kernels::ArrayRange& range : built.image.arrays) {
    if (spec.params[range.param].name != outputName) continue;
    for (uint32_t w = 0; w < range.words; ++w)
      result.data.push_back(static_cast<int32_t>(run.global[range.firstWord + w]));
  }
  Launched launched;
  launched.kernel = name;
  launched.result = result;
  launched.prompt = trace::encodePrompt(built.program, launch);
  launched.run = std::move(run.trace);
  launched.steps = run.blockExecs;
  out.launches.push_back(std::move(launched));
  return result;
}

uint32_t wrapMul(int32_t a, int32_t b) {
  return static_cast<uint32_t>(a) * static_cast<uint32_t>(b);
}

}  // namespace

Expected<Evaluation> evaluate(const Expr& expr, const EvalOptions& options) {
  Evaluation out;
  QGPU_TRY(value, evaluateNode(expr, options, out));
  out.value = std::move(value);
  return out;
}

Value hostValue(const Expr& expr) {
  if (expr.kind == ExprKind::Literal) return expr.literal;
  std::vector<Value> a;
  for (const auto& arg : expr.args) a.push_back(hostValue(*arg));
  Value r = shapeOf(expr);
  auto push = [&](uint32_t word) { r.data.push_back(static_cast<int32_t>(word)); };
  switch (expr.kind) {
    case ExprKind::Dot:
    case ExprKind::SqLen: {
      const Value& u = a[0];
      const Value& v = expr.kind == ExprKind::Dot ? a[1] : a[0];
      uint32_t sum = 0;
      for (size_t i = 0; i < u.data.size(); ++i) sum += wrapMul(u.data[i], v.data[i]);
      push(sum);
      break;
    }
    case ExprKind::Add:
    case ExprKind::Sub:
      for (size_t i = 0; i < a[0].data.size(); ++i) {
        uint32_t x = static_cast<uint32_t>(a[0].data[i]), y = static_cast<uint32_t>(a[1].data[i]);
        push(expr.kind == ExprKind::Add ? x + y : x - y);
      }
      break;
    case ExprKind::Scale:
      for (int32_t x : a[1].data) push(wrapMul(a[0].data[0], x));
      break;
    case ExprKind::MatMul:
    case ExprKind::MatVec: {
      uint32_t rows = a[0].rows, inner = a[0].cols;
      uint32_t cols = expr.kind == ExprKind::MatMul ? a[1].cols : 1;
      for (uint32_t i = 0; i < rows; ++i)
        for (uint32_t j = 0; j < cols; ++j) {
          uint32_t sum = 0;
          for (uint32_t k = 0; k < inner; ++k)
            sum += wrapMul(a[0].data[i * inner + k], a[1].data[k * cols + j]);
          push(sum);
        }
      break;
    }
    case ExprKind::Literal: break;
  }
  return r;
}

}  // namespace qgpu::harness
