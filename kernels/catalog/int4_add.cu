// qgpu-kernel: int4_add
// summary: int4 arrays as parameters (16-byte ld.v4/st.v4), laid out 16-byte aligned after a one-word array
// launch: grid=1 block=4
// param: bias in i32[1] = 1000
// param: a in i32[16] = 1 2 3 4 -5 6 -7 8 9 10 11 12 100 -200 300 -400
// param: b in i32[16] = 10 20 30 40 50 60 70 80 -1 -2 -3 -4 0 7 -1 255
// param: c out i32[16]
// expect: c = 1011 -18 90 44 1045 -54 -490 88 1008 12 -33 -16 1100 -207 -300 -369
// tags: vector cuda-idioms

// One int4 per thread; the four components get four different operations.
__global__ void int4_add(const int* bias, const int4* a, const int4* b, int4* c) {
  int i = threadIdx.x;
  int4 x = a[i], y = b[i];
  c[i] = make_int4(x.x + y.x + bias[0], x.y - y.y, x.z * y.z, x.w ^ y.w);
}
