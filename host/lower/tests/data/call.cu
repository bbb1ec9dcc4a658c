// A __noinline__ device function, called twice.
__device__ __noinline__ int mix(int a, int b) { return a * 3 + (b ^ 5); }
__global__ void call(const int* in, int* out) {
  int t = threadIdx.x;
  out[t] = mix(in[t], t) + mix(t, 1);
}
