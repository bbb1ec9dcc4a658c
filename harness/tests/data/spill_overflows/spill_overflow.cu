// qgpu-kernel: spill_overflow
// summary: 14 values live at once (a spill slot per thread) next to a 112-word shared array
// launch: grid=1 block=16
// param: a in i32[14] = -17 -10 -3 4 11 18 25 -18 -11 -4 3 10 17 24
// param: out out i32[16]
// expect: out = 1919481687 -456003962 1463477717 -912007932 1007473747 -1368011902 551469777 -1824015872 95465855 2014947470 -360538115 1558943500 -816542085 1102939530 -1272546055 646935560

// Expected values worked out independently (Python, wrapping int32): f ^= a[k]; b *= a[13-k];
// f += b, from f = t, b = t + 1. With clang-14 the lowering needs 1 spill slot per thread:
// 112 + 1 x 16 = 128 words of shared memory (does not fit in 126).
__global__ void spill_overflow(const int* a, int* out) {
  __shared__ int s[112];
  int t = threadIdx.x;
  int x0 = a[0];
  int x1 = a[1];
  int x2 = a[2];
  int x3 = a[3];
  int x4 = a[4];
  int x5 = a[5];
  int x6 = a[6];
  int x7 = a[7];
  int x8 = a[8];
  int x9 = a[9];
  int x10 = a[10];
  int x11 = a[11];
  int x12 = a[12];
  int x13 = a[13];
  int f = t, b = t + 1;
  f ^= x0; b *= x13; f += b;
  f ^= x1; b *= x12; f += b;
  f ^= x2; b *= x11; f += b;
  f ^= x3; b *= x10; f += b;
  f ^= x4; b *= x9; f += b;
  f ^= x5; b *= x8; f += b;
  f ^= x6; b *= x7; f += b;
  f ^= x7; b *= x6; f += b;
  f ^= x8; b *= x5; f += b;
  f ^= x9; b *= x4; f += b;
  f ^= x10; b *= x3; f += b;
  f ^= x11; b *= x2; f += b;
  f ^= x12; b *= x1; f += b;
  f ^= x13; b *= x0; f += b;
  s[t * 7] = f;
  __syncthreads();
  out[t] = s[t * 7];
}
