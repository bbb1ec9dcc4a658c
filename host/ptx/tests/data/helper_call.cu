// A __noinline__ helper: a .func with a return value and a callseq scope in the caller.
__device__ __noinline__ int helper(int x) { return x * x + 3; }
__global__ void helper_call(const int* in, int* out) {
  out[threadIdx.x] = helper(in[threadIdx.x]) + helper(threadIdx.x);
}
