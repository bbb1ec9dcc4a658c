// qgpu-kernel: atomic_cas_mul
// summary: atomic multiply built from an atomicCAS retry loop (lanes leave the loop one by one)
// launch: grid=1 block=8
// param: in in u32[8] = 3 5 7 2 1 11 65537 4
// param: prod out u32[1] = 1
// expect: prod = 605561880
// tags: atomics loops divergence

__global__ void atomic_cas_mul(const unsigned* in, unsigned* prod) {
  unsigned v = in[threadIdx.x];
  unsigned old = *prod;
  unsigned assumed;
  do {
    assumed = old;
    old = atomicCAS(prod, assumed, assumed * v);
  } while (old != assumed);
}
