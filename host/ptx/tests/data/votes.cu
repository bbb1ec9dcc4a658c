// Warp votes: ballot, any, all of a data-dependent predicate.
__global__ void votes(const int* in, int* out) {
  int p = in[threadIdx.x] > 3;
  unsigned b = __ballot_sync(0xffffffffu, p);
  int any = __any_sync(0xffffffffu, p);
  int all = __all_sync(0xffffffffu, p);
  out[threadIdx.x] = (int)b + any * 16 + all * 32;
}
