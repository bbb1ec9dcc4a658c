// qgpu-kernel: atomic_inc_dec
// summary: wrapping counters: 16 x atomicInc(limit 5) and 16 x atomicDec(limit 5) from 3
// launch: grid=1 block=16
// param: counters inout u32[2] = 0 3
// expect: counters = 4 5
// tags: atomics

// The final values do not depend on the order of the lanes (each op is a step on a cycle of 6).
__global__ void atomic_inc_dec(unsigned* counters) {
  atomicInc(&counters[0], 5u);
  atomicDec(&counters[1], 5u);
}
