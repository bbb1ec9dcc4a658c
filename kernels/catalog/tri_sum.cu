// qgpu-kernel: tri_sum
// summary: sum of 0..n-1 by a loop (clang turns it into a 64-bit closed form)
// launch: grid=1 block=8
// param: n in i32[8] = 0 1 2 3 10 50 77 100
// param: out out i32[8]
// expect: out = 0 0 1 3 45 1225 2926 4950
// tags: loops

__global__ void tri_sum(const int* n, int* out) {
  int s = 0;
  for (int i = 0; i < n[threadIdx.x]; ++i) s += i;
  out[threadIdx.x] = s;
}
