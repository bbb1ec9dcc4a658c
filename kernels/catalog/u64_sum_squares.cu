// qgpu-kernel: u64_sum_squares
// summary: 64-bit accumulation as public code writes it: long long arrays read and written, one unsigned long long atomicAdd per thread into a total, and 64-bit atomicOr of a bit chosen per thread
// launch: grid=2 block=4
// param: x in i32[8] = 1048575 -1048576 3 0 -7 65536 -1 1000000
// param: bias in u32[16] = 0x00000000 0x00000000 0xffffffff 0x00000000 0x12345678 0x80000000 0x12345678 0x9abcdef0 0xffffffff 0xffffffff 0x00000001 0x00000001 0x80000000 0x7fffffff 0x00000005 0x00000000
// param: partial out u32[16]
// param: total out u32[2]
// param: bits out u32[2]
// param: n scalar u32 = 8
// expect: partial = 1214299580 4038967016 4293918719 4038966528 296419872 2147483648 305419896 2596069104 4245967141 4294967295 65537 4293967294 2146483644 2147483647 3669758533 4062135953
// expect: total = 3766925236 745832392
// expect: bits = 134480385 2151686160
// tags: int64 atomics cuda-idioms

// Element i of a long long array is two words, low first (kernels/README.md). v * v * 1000003 is
// at most 2^40 * 2^20 = 2^60 here: no signed overflow, and the eight of them fit the unsigned total.
// The atomics commute, so the totals do not depend on the order of the threads.
__global__ void u64_sum_squares(const int* x, const long long* bias, long long* partial,
                                unsigned long long* total, unsigned long long* bits, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    long long v = x[i];
    long long sq = v * v * 1000003LL;
    partial[i] = bias[i] - sq + v;
    atomicAdd(total, (unsigned long long)sq);
    atomicOr(bits, 1ull << ((i * 9) % 64));
  }
}
