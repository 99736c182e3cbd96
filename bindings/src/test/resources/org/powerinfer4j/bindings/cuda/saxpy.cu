// Test kernel for the bindings' GPU test: y[i] = a * x[i] + y[i] over a grid-stride loop, plus a 64-bit flag argument
// written back so the test checks that every argument kind arrives intact.
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y, long long tag, long long* tag_out) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
    if (blockIdx.x == 0 && threadIdx.x == 0) *tag_out = tag;
}
