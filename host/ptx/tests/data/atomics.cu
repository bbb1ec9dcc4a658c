// A spread of atomics, including an atomicCAS retry loop (atomic multiply).
__global__ void atomics(int* a, unsigned* u, const int* in) {
  int v = in[threadIdx.x];
  atomicAdd(&a[0], v);
  atomicMax(&a[1], v);
  atomicMin(&a[2], v);
  atomicExch(&a[3], v);
  atomicInc(&u[0], 7u);
  int old = a[4], assumed;
  do {
    assumed = old;
    old = atomicCAS(&a[4], assumed, assumed * v);
  } while (old != assumed);
}
