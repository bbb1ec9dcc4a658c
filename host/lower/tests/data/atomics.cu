// Atomics on global memory, including a CAS retry loop and an atomicInc.
__global__ void atomics(const int* in, int* acc) {
  int t = threadIdx.x;
  int v = in[t];
  atomicAdd(&acc[0], v);
  atomicMax(&acc[1], v);
  atomicMin(&acc[2], v);
  int old = acc[3], assumed;
  do {                              // acc[3] += v through a CAS retry loop
    assumed = old;
    old = atomicCAS(&acc[3], assumed, assumed + v);
  } while (old != assumed);
  atomicInc((unsigned*)&acc[4], 5u);
  atomicExch(&acc[5], 7);
}
