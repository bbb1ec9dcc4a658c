// qgpu-kernel: binary_search
// summary: each thread binary-searches a sorted array for its key (index or -1)
// launch: grid=1 block=8
// param: sorted in i32[16] = -20 -5 0 3 7 9 14 21 30 42 55 61 70 88 90 101
// param: keys in i32[8] = 7 -20 101 8 50 0 90 -100
// param: out out i32[8]
// expect: out = 4 0 15 -1 -1 2 14 -1
// tags: loops divergence

__global__ void binary_search(const int* sorted, const int* keys, int* out) {
  int key = keys[threadIdx.x];
  int lo = 0;
  int hi = 15;
  int found = -1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int v = sorted[mid];
    if (v == key) {
      found = mid;
      break;
    }
    if (v < key) {
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  out[threadIdx.x] = found;
}
