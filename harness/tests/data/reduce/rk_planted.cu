// qgpu-kernel: rk_planted
// summary: random CUDA kernel (gen/cuda_gen.h), expectations computed by the generator
// launch: grid=2 block=6
// param: in in u32[16] = 0 15 413960169 3667077251 8 1 0 2708417131 13 6 4 2494442191 1784274758 15 2 1
// param: out out u32[24]
// param: acc inout u32[8] = 14 0 13 2899047424 4061457090 331419710 15 10
// param: k scalar u32 = 15
// expect: out = 1073741824 4294967295 1073741824 4294967295 1073741824 4294967295 1073741824 4294967295 1073741824 4294967295 1073741824 4294967295 1 0 1 0 1 0 1 0 1 0 1 0
// expect: acc = 20 0 13 2899047424 4061457091 331419710 15 10
// tags: random
// note: qgpu-gen cuda v1 seed=71 policy: maxTopStmts=12 maxDepth=3 maxBlockStmts=3 maxExprDepth=3 maxVars=5 maxHelpers=2 noinlineProb=0.3 maxTrips=3 elseProb=0.5 wAssign=5 wStore=3 wAtomic=1 wIf=2 wLoop=1 wReturn=1 wShared=1 wSyncReduce=1 wWarp=1 wArith=4 wDiv=1 wShift=2 wCompare=2 wBuiltin=2 wCall=1 leafProb=0.3 smallConstProb=0.7 maxGrid=2 maxBlockX=8 warpBlockProb=0.4 maxSlots=2

__device__ unsigned rk_planted_h0(unsigned a, unsigned b) {
  if (a) return (b << ((~(unsigned)(b != a)) & 31u));
  return ((unsigned)((int)0xe2d6cd98u <= (int)5u) | b);
}

__device__ unsigned rk_planted_h1(unsigned a, unsigned b) {
  if ((0u - b)) return (rk_planted_h0((a + b), __byte_perm(a, b, b & 0x7777u)) | ((unsigned)((int)8u <= (int)0x21a6c00cu) - (a - a)));
  return (unsigned)(b == b);
}

__global__ void rk_planted(const unsigned* in, unsigned* out, unsigned* acc, unsigned k) {
  __shared__ unsigned sh[6];
  unsigned o = (blockIdx.x * blockDim.x + threadIdx.x) * 2u;
  unsigned v0 = 0x67ad4b05u;
  unsigned v1 = rk_planted_h0(12u, v0);
  unsigned v2 = 7u;
  unsigned v3 = (~v1);
  unsigned v4 = v1;
  v2 = rk_planted_h0((__byte_perm(7u, v0, in[threadIdx.x & 15u] & 0x7777u) * (unsigned)__clz((int)2u)), ((v1 << (v4 & 31u)) >> ((unsigned)((int)v4 >> (in[v2 & 15u] & 31u)) & 31u)));
  out[o + 0u] = (unsigned)((~blockIdx.x) != (~(unsigned)((int)v2 > (int)v3)));
  if ((unsigned)(blockIdx.x <= v3)) {
    v4 = __sad((int)(~(unsigned)((int)1u % (int)((v1 & 255u) | 1u))), (int)(unsigned)(!rk_planted_h0(v0, 5u)), (unsigned)((int)v1 / (int)((in[v0 & 15u] & 255u) | 1u)));
    v0 = (__umul24((unsigned)((int)v3 >> (v3 & 31u)), (unsigned)((int)12u >> (in[gridDim.x & 15u] & 31u))) * (unsigned)((threadIdx.x - 0xf84c7f45u) == k));
  }
  for (unsigned i0 = 0; i0 < rk_planted_h1(((unsigned)min((int)v1, (int)gridDim.x) << (v4 & 31u)), v3) % 4u; ++i0) {
    out[o + 0u] = v1;
  }
  sh[threadIdx.x] = (unsigned)((int)((v4 & 0u) >> (in[k & 15u] & 31u)) <= (int)(gridDim.x & (6u % (v1 | 1u))));
  __syncthreads();
  v0 = sh[(threadIdx.x + 1u) % 6u];
  __syncthreads();
  v3 = (blockDim.x & rk_planted_h0((unsigned)((int)in[v0 & 15u] % (int)((v4 & 255u) | 1u)), (unsigned)__mulhi((int)k, (int)v4)));
  if (__usad(v1, (unsigned)((int)(unsigned)((int)0xcbd91d7cu >= (int)gridDim.x) <= (int)(unsigned)min((int)blockDim.x, (int)in[v0 & 15u])), ((unsigned)((int)v3 > (int)v3) ^ blockIdx.x))) {
    out[o + 1u] = 3u;
    if (1u) {
      for (unsigned i1 = 0; i1 < __byte_perm(blockDim.x, v0, (unsigned)((int)11u >> ((5u - 0x9b2cb41bu) & 31u)) & 0x7777u) % 4u; ++i1) {
        out[o + 1u] = (i1 << (threadIdx.x & 31u));
        atomicOr(&acc[4], (unsigned)((int)v2 < (int)3u));
        v2 = (unsigned)((int)i1 / (int)((8u & 255u) | 1u));
      }
      out[o + 1u] = (unsigned)((int)(unsigned)((int)14u > (int)v3) >> ((unsigned)((int)(0u - v0) <= (int)(v0 >> (blockIdx.x & 31u))) & 31u));
      out[o + 0u] = (unsigned)((v2 / ((6u * v3) | 1u)) != (rk_planted_h1(blockDim.x, in[v3 & 15u]) ? v0 : v4));
    } else {
      out[o + 0u] = min((unsigned)((int)rk_planted_h1(2u, threadIdx.x) >> ((~k) & 31u)), (unsigned)((int)(unsigned)((int)11u >> (blockDim.x & 31u)) % (int)((max(v1, v3) & 255u) | 1u)));
      out[o + (v4) % 2u] = rk_planted_h1((unsigned)abs((int)((v1 | k) | 1u)), v1);
    }
  } else {
    out[o + 0u] = (unsigned)((int)threadIdx.x >> ((unsigned)((int)(unsigned)(v1 || blockIdx.x) % (int)((rk_planted_h1(3u, gridDim.x) & 255u) | 1u)) & 31u));
    if ((unsigned)((int)(0u - (14u + gridDim.x)) / (int)(((unsigned)((0u - blockIdx.x) != (unsigned)(!0xe0fbf330u)) & 255u) | 1u))) return;
    v3 = (unsigned)((int)__brev(4u) >= (int)(~__brev(v3)));
  }
  if (blockIdx.x) {
    if ((((0u - in[blockIdx.x & 15u]) / ((v1 | 8u) | 1u)) & ((unsigned)((int)v1 >= (int)v2) - in[v4 & 15u]))) {
      if ((unsigned)((unsigned)max((int)(unsigned)__clz((int)7u), (int)(in[v2 & 15u] ^ in[v1 & 15u])) <= v3)) {
        v1 = 7u;
        out[o + 1u] = (v3 * (v0 << (gridDim.x & 31u)));
      }
      v2 = ((unsigned)((int)(unsigned)min((int)gridDim.x, (int)0x3592c46eu) <= (int)(unsigned)__mul24((int)7u, (int)in[v0 & 15u])) >> (rk_planted_h1(min(v3, blockDim.x), (v4 % (threadIdx.x | 1u))) & 31u));
      v0 = 0xd1af064du;
    }
    if (v1) return;
  } else {
    if (((in[gridDim.x & 15u] >> (0x98ed03a4u & 31u)) ^ (blockIdx.x + (unsigned)((int)k >> (in[v1 & 15u] & 31u))))) {
      if (blockIdx.x) {
        v0 = rk_planted_h0(((unsigned)((int)v1 % (int)((in[v3 & 15u] & 255u) | 1u)) << ((~v2) & 31u)), (unsigned)__popc((~v1)));
        v0 = in[v4 & 15u];
        v1 = (threadIdx.x + ((v1 ^ v3) ^ (unsigned)((int)16u >> (gridDim.x & 31u))));
      }
      out[o + 1u] = v3;
      v3 = (0u - (unsigned)(!(v4 / (v0 | 1u))));
    } else {
      if (rk_planted_h0(rk_planted_h0((unsigned)(5u <= blockIdx.x), (unsigned)((int)v0 >= (int)7u)), ((v4 - v4) + rk_planted_h1(k, v4)))) {
        v0 = 15u;
        v1 = gridDim.x;
        v2 = (v1 | __byte_perm((unsigned)((int)blockIdx.x >> (blockDim.x & 31u)), 14u, v1 & 0x7777u));
      }
      out[o + (v2) % 2u] = (v3 * in[threadIdx.x & 15u]);
      out[o + 1u] = (threadIdx.x | in[v0 & 15u]);
    }
  }
  atomicAdd(&acc[0], rk_planted_h0(((v2 >> (0xbb231c27u & 31u)) * (0x111192f2u ^ v0)), ((in[blockDim.x & 15u] & gridDim.x) >> (threadIdx.x & 31u))));
  out[o + 1u] = (~(unsigned)(blockDim.x == rk_planted_h0(v3, threadIdx.x)));
  out[o + 0u] = rk_planted_h0((unsigned)__popc((v0 * 7u)), (rk_planted_h1(v0, in[v2 & 15u]) >> ((0u - blockIdx.x) & 31u)));
  if (((unsigned)((unsigned)__mul24((int)v0, (int)v0) >= (in[gridDim.x & 15u] * in[v3 & 15u])) ? 15u : rk_planted_h1((v2 + in[blockIdx.x & 15u]), 1u))) return;
  out[o] ^= v0 + v1 + v2 + v3 + v4;
}
