// qgpu-kernel: stray_write
// summary: writes its output and nothing else (the in-bounds twin of stray_write)
// launch: grid=1 block=4
// param: u in i32[4] = 1 2 3 4
// param: out out i32[4]
// expect: out = 2 3 4 5
__global__ void stray_write(const int* u, int* out) {
  out[threadIdx.x] = u[threadIdx.x] + 1;
}
