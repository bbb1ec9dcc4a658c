// Twenty-two values live across a loop (20 loaded values, the running hash, the counter): more
// than the machine's 15 registers, so the lowering must spill and reload exactly.
__global__ void spill(const int* in, int* out, int n) {
  int t = threadIdx.x;
  int a0 = in[0] + t;
  int a1 = in[1] + t;
  int a2 = in[2] + t;
  int a3 = in[3] + t;
  int a4 = in[4] + t;
  int a5 = in[5] + t;
  int a6 = in[6] + t;
  int a7 = in[7] + t;
  int a8 = in[8] + t;
  int a9 = in[9] + t;
  int a10 = in[10] + t;
  int a11 = in[11] + t;
  int a12 = in[12] + t;
  int a13 = in[13] + t;
  int a14 = in[14] + t;
  int a15 = in[15] + t;
  int a16 = in[16] + t;
  int a17 = in[17] + t;
  int a18 = in[18] + t;
  int a19 = in[19] + t;
  int s = t;
#pragma unroll 1
  for (int i = 0; i < n; ++i) {
    s = (s ^ a0) * 3;
    s = (s ^ a1) * 5;
    s = (s ^ a2) * 7;
    s = (s ^ a3) * 9;
    s = (s ^ a4) * 11;
    s = (s ^ a5) * 13;
    s = (s ^ a6) * 15;
    s = (s ^ a7) * 17;
    s = (s ^ a8) * 19;
    s = (s ^ a9) * 21;
    s = (s ^ a10) * 23;
    s = (s ^ a11) * 25;
    s = (s ^ a12) * 27;
    s = (s ^ a13) * 29;
    s = (s ^ a14) * 31;
    s = (s ^ a15) * 33;
    s = (s ^ a16) * 35;
    s = (s ^ a17) * 37;
    s = (s ^ a18) * 39;
    s = (s ^ a19) * 41;
    s += i;
  }
  out[t] = s;
}
