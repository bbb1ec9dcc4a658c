// qgpu-kernel: rk_planted
// summary: random CUDA kernel (gen/cuda_gen.h), expectations computed by the generator
// launch: grid=2 block=3
// param: in in u32[16] = 2 14 14 9 2798678302 1 9 6 11 0 11 10 12 14 3391048206 2
// param: out out u32[6]
// param: acc inout u32[8] = 8 5 1 462033620 2991263028 1 3103464654 4090121818
// param: k scalar u32 = 2
// expect: out = 0 1 2 0 1 2
// expect: acc = 8 5 1 462033620 2991263028 1 3103464654 4090121818
// tags: random
// note: qgpu-gen cuda v1 seed=12303 policy: maxTopStmts=12 maxDepth=3 maxBlockStmts=3 maxExprDepth=3 maxVars=5 maxHelpers=2 noinlineProb=0.3 maxTrips=3 elseProb=0.5 wAssign=5 wStore=3 wAtomic=1 wIf=2 wLoop=1 wReturn=1 wShared=1 wSyncReduce=1 wWarp=1 wArith=4 wDiv=1 wShift=2 wCompare=2 wBuiltin=2 wCall=1 leafProb=0.3 smallConstProb=0.7 maxGrid=2 maxBlockX=8 warpBlockProb=0.4 maxSlots=2

__device__ unsigned rk_planted_h0(unsigned a, unsigned b) {
  return min(((~b) + __byte_perm(0x146a2b88u, 0xa8728e91u, 10u & 0x7777u)), ((unsigned)(b > b) * 13u));
}

__device__ unsigned rk_planted_h1(unsigned a, unsigned b) {
  return (~8u);
}

__global__ void rk_planted(const unsigned* in, unsigned* out, unsigned* acc, unsigned k) {
  unsigned o = (blockIdx.x * blockDim.x + threadIdx.x) * 1u;
  unsigned v0 = 0xa0455784u;
  unsigned v1 = (unsigned)((int)threadIdx.x >> (v0 & 31u));
  unsigned v2 = (v0 / (v0 | 1u));
  unsigned v3 = blockDim.x;
  out[o + 0u] = min((v1 ^ __usad(11u, v2, 10u)), threadIdx.x);
  v1 = threadIdx.x;
  for (unsigned i0 = 0; i0 < gridDim.x % 4u; ++i0) {
    if ((unsigned)__clz((int)(unsigned)((int)in[v0 & 15u] > (int)v3))) {
      if ((i0 + ((i0 * i0) | v1))) {
        v1 = ((unsigned)__mulhi((int)7u, (int)threadIdx.x) - rk_planted_h1((in[threadIdx.x & 15u] << (in[threadIdx.x & 15u] & 31u)), (in[v2 & 15u] << (0x388eb75cu & 31u))));
      } else {
        if (blockDim.x) return;
        v1 = v2;
      }
      for (unsigned i1 = 0; i1 < __umul24((unsigned)((int)(v1 ^ i0) % (int)((blockIdx.x & 255u) | 1u)), (i0 % ((unsigned)__mul24((int)v0, (int)v2) | 1u))) % 4u; ++i1) {
        v1 = (unsigned)((unsigned)__popc(v2) < (~(unsigned)((int)11u >> (i1 & 31u))));
      }
      v2 = (unsigned)((__usad(5u, blockDim.x, 14u) * 0x545b94f7u) && (unsigned)((int)(unsigned)((int)v1 >> (13u & 31u)) >> ((~0x824bf1b7u) & 31u)));
    }
    if (((v1 + k) | min((threadIdx.x - i0), (unsigned)(v2 || gridDim.x)))) {
      if (rk_planted_h0(blockDim.x, (unsigned)(blockDim.x && 1u))) {
        out[o + 0u] = (rk_planted_h1((i0 >> (v2 & 31u)), blockIdx.x) ? (0u - rk_planted_h1(7u, in[v2 & 15u])) : (unsigned)(rk_planted_h0(v1, gridDim.x) <= (unsigned)(16u && i0)));
        v0 = (unsigned)((int)(unsigned)((int)(threadIdx.x * gridDim.x) >> (7u & 31u)) % (int)((rk_planted_h1(i0, (unsigned)(i0 || k)) & 255u) | 1u));
      }
      if (((unsigned)(rk_planted_h0(threadIdx.x, in[v1 & 15u]) && (i0 + v2)) | (unsigned)((int)rk_planted_h1(in[v3 & 15u], in[threadIdx.x & 15u]) >> (v0 & 31u)))) return;
      atomicAnd(&acc[1], rk_planted_h1(14u, 0x5042acb6u));
    } else {
      if (((~(unsigned)(i0 >= 0xd6783fadu)) / ((unsigned)((unsigned)min((int)v3, (int)v2) != (unsigned)(in[k & 15u] < v0)) | 1u))) {
        v3 = (unsigned)((int)((in[v0 & 15u] + i0) * (0u - k)) / (int)((((blockIdx.x | in[v0 & 15u]) - (0u - 13u)) & 255u) | 1u));
        v0 = (((blockIdx.x & v1) | rk_planted_h1(blockIdx.x, blockDim.x)) ^ threadIdx.x);
      }
      v3 = (0u ^ threadIdx.x);
    }
    atomicMax(&acc[6], rk_planted_h1(v2, __sad((int)(~v1), (int)(unsigned)((int)0xbd69a34au % (int)((12u & 255u) | 1u)), 0x1f5ee8a6u)));
  }
  for (unsigned i2 = 0; i2 < (~(rk_planted_h1(in[gridDim.x & 15u], v0) << (blockIdx.x & 31u))) % 4u; ++i2) {
    v3 = __umul24(((unsigned)(16u <= v3) - (threadIdx.x ^ i2)), rk_planted_h1(i2, (~4u)));
  }
  for (unsigned i3 = 0; i3 < (unsigned)((int)__byte_perm((16u >> (v1 & 31u)), (v2 - gridDim.x), (in[v1 & 15u] << (blockDim.x & 31u)) & 0x7777u) <= (int)((v2 & v1) << ((in[blockIdx.x & 15u] * in[blockIdx.x & 15u]) & 31u))) % 4u; ++i3) {
    atomicMax(&acc[6], in[v0 & 15u]);
    if ((unsigned)((unsigned)(i3 >= v0) >= in[threadIdx.x & 15u])) {
      if (((in[blockIdx.x & 15u] >> (rk_planted_h0(gridDim.x, blockDim.x) & 31u)) ? v0 : (unsigned)((v3 >> (threadIdx.x & 31u)) <= (unsigned)(v0 != v1)))) {
        if (__sad((int)(unsigned)((int)(k - v2) >> ((unsigned)(threadIdx.x == blockIdx.x) & 31u)), (int)(unsigned)((k >> (gridDim.x & 31u)) >= (unsigned)(!v0)), (blockIdx.x / ((v1 & v0) | 1u)))) return;
        out[o + 0u] = (0u - (__umulhi(0x0341fd77u, v0) + (unsigned)__ffs((int)gridDim.x)));
      } else {
        v2 = (unsigned)((int)v3 / (int)((rk_planted_h1((v1 << (in[blockDim.x & 15u] & 31u)), (i3 & v1)) & 255u) | 1u));
      }
      out[o + 0u] = (unsigned)(!v3);
      v3 = (blockDim.x >> (((threadIdx.x >> (in[gridDim.x & 15u] & 31u)) - rk_planted_h0(blockDim.x, v3)) & 31u));
    } else {
      if (((unsigned)(rk_planted_h1(in[v0 & 15u], v2) > (unsigned)max((int)0x91c77536u, (int)in[threadIdx.x & 15u])) * v2)) return;
      out[o + 0u] = 0x23cc016du;
    }
    for (unsigned i4 = 0; i4 < v1 % 4u; ++i4) {
      atomicAnd(&acc[1], ((i3 | (unsigned)__popc(v2)) & 11u));
      if (k) {
        out[o + 0u] = (0u - 0u);
        v3 = rk_planted_h0(((0u - v0) % ((unsigned)(threadIdx.x == i3) | 1u)), ((unsigned)(!v0) << ((unsigned)(v0 == blockDim.x) & 31u)));
        out[o + 0u] = (0u - (unsigned)((int)0x7e2e8122u >> ((unsigned)((int)v1 >> (gridDim.x & 31u)) & 31u)));
      } else {
        v2 = __usad((0x5d5aa57cu % ((unsigned)((int)i3 / (int)((v0 & 255u) | 1u)) | 1u)), (v0 >> (v1 & 31u)), gridDim.x);
        v0 = min((unsigned)((v0 >> (k & 31u)) < (i3 >> (threadIdx.x & 31u))), (unsigned)((unsigned)((int)0x17a259cau >> (threadIdx.x & 31u)) || (v2 ^ threadIdx.x)));
        out[o + 0u] = (~i3);
      }
      out[o + 0u] = (0u - max(in[v0 & 15u], (11u / (k | 1u))));
    }
  }
  v3 = (unsigned)(__usad(0x04c6ca93u, v2, (unsigned)(blockIdx.x <= v1)) <= min(11u, (~0xe3aafe21u)));
  v3 = (unsigned)(__usad((gridDim.x | v0), (v3 >> (5u & 31u)), (unsigned)__mulhi((int)in[blockIdx.x & 15u], (int)16u)) >= v1);
  v2 = (unsigned)__clz((int)(~(~v3)));
  for (unsigned i5 = 0; i5 < k % 4u; ++i5) {
    v3 = ((v3 / (rk_planted_h1(v3, 0x3cdaf01fu) | 1u)) >> (__sad((int)(unsigned)((int)v3 >> (4u & 31u)), (int)rk_planted_h0(v3, blockIdx.x), i5) & 31u));
    v0 = (((v3 ? v2 : v3) - (unsigned)((int)i5 <= (int)8u)) * (unsigned)((v2 - k) >= v2));
    for (unsigned i6 = 0; i6 < v2 % 4u; ++i6) {
      v0 = (((12u ^ v3) * (0u & v2)) >> (gridDim.x & 31u));
      v2 = (unsigned)((int)(unsigned)(v0 == (v2 * v0)) >> (((unsigned)max((int)14u, (int)v2) << (in[k & 15u] & 31u)) & 31u));
    }
  }
  v1 = (unsigned)(((0u - v0) ^ (unsigned)(3u < v2)) < (0u - (unsigned)__mul24((int)v0, (int)6u)));
  out[o] ^= v0 + v1 + v2 + v3;
}
