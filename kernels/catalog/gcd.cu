// qgpu-kernel: gcd
// summary: Euclid's gcd per thread: a loop with a data-dependent trip count and remainders
// launch: grid=1 block=8
// param: a in i32[8] = 48 17 100 81 7 1071 13 0
// param: b in i32[8] = 18 5 75 27 49 462 13 9
// param: out out i32[8]
// expect: out = 6 1 25 27 7 21 13 9
// tags: loops divergence division

__global__ void gcd(const int* a, const int* b, int* out) {
  int x = a[threadIdx.x];
  int y = b[threadIdx.x];
  while (y != 0) {
    int r = x % y;
    x = y;
    y = r;
  }
  out[threadIdx.x] = x;
}
