// qgpu-kernel: bool_sieve
// summary: sieve of Eratosthenes over a __shared__ bool array (threads of two warps mark bytes of the same words), primes < 40 as a bool array
// launch: grid=1 block=8
// param: prime out u32[10]
// param: count out i32[1]
// expect: prime = 16842752 16777472 16777216 256 16777472 16777216 0 16777472 0 256
// expect: count = 12
// tags: subword bytes bool shared atomics cuda-idioms

// Thread t crosses out the multiples of t + 2 from (t + 2)^2; several threads may mark the same
// byte (with the same value), and neighbouring bytes of one word are marked by different lanes
// and warps: every byte store must leave the others alone.
__global__ void bool_sieve(bool* prime, int* count) {
  __shared__ bool composite[40];
  for (int i = threadIdx.x; i < 40; i += blockDim.x) composite[i] = i < 2;
  __syncthreads();
  int p = threadIdx.x + 2;
  for (int m = p * p; m < 40; m += p) composite[m] = true;
  __syncthreads();
  int c = 0;
  for (int i = threadIdx.x; i < 40; i += blockDim.x) {
    prime[i] = !composite[i];
    c += !composite[i];
  }
  atomicAdd(count, c);
}
