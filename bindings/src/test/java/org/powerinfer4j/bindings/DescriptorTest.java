package org.powerinfer4j.bindings;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.bindings.cublas.cublas_h;
import org.powerinfer4j.bindings.cuda.cuda_h;

/** The descriptors must match the C prototypes; none of this needs the libraries. */
class DescriptorTest {
    private static final MemoryLayout P = ADDRESS, I = JAVA_INT, L = JAVA_LONG;

    /** Descriptor with layouts stripped of names/targets, so only carrier kind and size are compared. */
    private static List<String> shape(FunctionDescriptor d) {
        List<String> s = new ArrayList<>();
        s.add(d.returnLayout().map(DescriptorTest::kind).orElse("void"));
        d.argumentLayouts().forEach(l -> s.add(kind(l)));
        return s;
    }

    private static String kind(MemoryLayout l) {
        if (l instanceof AddressLayout) return "ptr";
        if (l.equals(JAVA_INT)) return "i32";
        if (l.equals(JAVA_LONG)) return "i64";
        if (l.equals(JAVA_FLOAT)) return "f32";
        if (l.equals(JAVA_BYTE)) return "i8";
        return l.toString();
    }

    private static List<String> k(MemoryLayout ret, MemoryLayout... args) {
        return shape(FunctionDescriptor.of(ret, args));
    }

    private static FunctionDescriptor cuda(String fn) throws Exception {
        return (FunctionDescriptor) cuda_h.class.getMethod(fn + "$descriptor").invoke(null);
    }

    @SuppressWarnings("unchecked")
    private static List<String> symbols(Class<?> h, String fn) throws Exception {
        return (List<String>) h.getMethod(fn + "$symbols").invoke(null);
    }

    @Test
    void cudaDescriptorsMatchPrototypes() throws Exception {
        Map<String, List<String>> expected = new TreeMap<>();
        expected.put("cuInit", k(I, I));
        expected.put("cuDriverGetVersion", k(I, P));
        expected.put("cuDeviceGet", k(I, P, I));
        expected.put("cuDeviceGetCount", k(I, P));
        expected.put("cuDeviceGetName", k(I, P, I, I));
        expected.put("cuDeviceTotalMem", k(I, P, I));                 // size_t*, CUdevice
        expected.put("cuDeviceGetAttribute", k(I, P, I, I));
        expected.put("cuDevicePrimaryCtxRetain", k(I, P, I));
        expected.put("cuDevicePrimaryCtxRelease", k(I, I));
        expected.put("cuCtxSetCurrent", k(I, P));
        expected.put("cuCtxGetCurrent", k(I, P));
        expected.put("cuCtxSynchronize", k(I));
        expected.put("cuStreamCreate", k(I, P, I));
        expected.put("cuStreamDestroy", k(I, P));
        expected.put("cuStreamSynchronize", k(I, P));
        expected.put("cuStreamWaitEvent", k(I, P, P, I));
        expected.put("cuEventCreate", k(I, P, I));
        expected.put("cuEventRecord", k(I, P, P));
        expected.put("cuEventSynchronize", k(I, P));
        expected.put("cuEventQuery", k(I, P));
        expected.put("cuEventElapsedTime", k(I, P, P, P));
        expected.put("cuEventDestroy", k(I, P));
        expected.put("cuMemAlloc", k(I, P, L));                        // CUdeviceptr*, size_t
        expected.put("cuMemFree", k(I, L));                            // CUdeviceptr is 64-bit
        expected.put("cuMemGetInfo", k(I, P, P));
        expected.put("cuMemcpyHtoD", k(I, L, P, L));
        expected.put("cuMemcpyDtoH", k(I, P, L, L));
        expected.put("cuMemcpyHtoDAsync", k(I, L, P, L, P));
        expected.put("cuMemcpyDtoHAsync", k(I, P, L, L, P));
        expected.put("cuMemcpyDtoDAsync", k(I, L, L, L, P));
        expected.put("cuMemsetD8", k(I, L, JAVA_BYTE, L));
        expected.put("cuMemsetD32", k(I, L, I, L));
        expected.put("cuMemsetD8Async", k(I, L, JAVA_BYTE, L, P));
        expected.put("cuMemsetD32Async", k(I, L, I, L, P));
        expected.put("cuMemHostAlloc", k(I, P, L, I));
        expected.put("cuMemFreeHost", k(I, P));
        expected.put("cuMemHostGetDevicePointer", k(I, P, P, I));
        expected.put("cuMemHostRegister", k(I, P, L, I));
        expected.put("cuMemHostUnregister", k(I, P));
        expected.put("cuModuleLoadData", k(I, P, P));
        expected.put("cuModuleUnload", k(I, P));
        expected.put("cuModuleGetFunction", k(I, P, P, P));
        expected.put("cuLaunchKernel", k(I, P, I, I, I, I, I, I, I, P, P, P));
        expected.put("cuGetErrorName", k(I, I, P));
        expected.put("cuGetErrorString", k(I, I, P));
        Map<String, List<String>> actual = new TreeMap<>();
        for (String fn : expected.keySet()) actual.put(fn, shape(cuda(fn)));
        assertThat(actual).isEqualTo(expected);
        assertThat(functions(cuda_h.class)).containsExactlyInAnyOrderElementsOf(expected.keySet());
    }

    @Test
    void cudaSymbolsFollowTheHeadersVersionedNames() throws Exception {
        Map<String, String> v2 = Map.ofEntries(
                Map.entry("cuDeviceTotalMem", "cuDeviceTotalMem_v2"), Map.entry("cuMemAlloc", "cuMemAlloc_v2"),
                Map.entry("cuMemFree", "cuMemFree_v2"), Map.entry("cuMemGetInfo", "cuMemGetInfo_v2"),
                Map.entry("cuMemcpyHtoD", "cuMemcpyHtoD_v2"), Map.entry("cuMemcpyDtoH", "cuMemcpyDtoH_v2"),
                Map.entry("cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2"), Map.entry("cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2"),
                Map.entry("cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2"), Map.entry("cuMemsetD8", "cuMemsetD8_v2"),
                Map.entry("cuMemsetD32", "cuMemsetD32_v2"), Map.entry("cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer_v2"),
                Map.entry("cuMemHostRegister", "cuMemHostRegister_v2"), Map.entry("cuStreamDestroy", "cuStreamDestroy_v2"),
                Map.entry("cuEventDestroy", "cuEventDestroy_v2"), Map.entry("cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2"),
                Map.entry("cuEventElapsedTime", "cuEventElapsedTime_v2"));
        for (var e : v2.entrySet()) assertThat(symbols(cuda_h.class, e.getKey()).getFirst()).as(e.getKey()).isEqualTo(e.getValue());
        // the unversioned 32-bit-pointer ABI must never be a fallback for CUdeviceptr functions
        for (String fn : List.of("cuMemAlloc", "cuMemFree", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync",
                "cuMemsetD8", "cuMemsetD32", "cuMemGetInfo", "cuDeviceTotalMem", "cuMemHostGetDevicePointer"))
            assertThat(symbols(cuda_h.class, fn)).as(fn).hasSize(1);
        for (String fn : List.of("cuInit", "cuLaunchKernel", "cuModuleLoadData", "cuMemsetD8Async", "cuMemsetD32Async", "cuMemHostAlloc"))
            assertThat(symbols(cuda_h.class, fn)).containsExactly(fn);
    }

    @Test
    void cublasDescriptorsMatchPrototypes() throws Exception {
        Map<String, List<String>> expected = new TreeMap<>();
        expected.put("cublasCreate_v2", k(I, P));
        expected.put("cublasDestroy_v2", k(I, P));
        expected.put("cublasSetStream_v2", k(I, P, P));
        expected.put("cublasSetMathMode", k(I, P, I));
        expected.put("cublasGetVersion_v2", k(I, P, P));
        // handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo
        expected.put("cublasGemmEx", k(I, P, I, I, I, I, I, P, P, I, I, P, I, I, P, P, I, I, I, I));
        // ... lda, strideA(long long), ..., ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo
        expected.put("cublasGemmStridedBatchedEx", k(I, P, I, I, I, I, I, P, P, I, I, L, P, I, I, L, P, P, I, I, L, I, I, I));
        Map<String, List<String>> actual = new TreeMap<>();
        for (String fn : expected.keySet())
            actual.put(fn, shape((FunctionDescriptor) cublas_h.class.getMethod(fn + "$descriptor").invoke(null)));
        assertThat(actual).isEqualTo(expected);
        assertThat(functions(cublas_h.class)).containsExactlyInAnyOrderElementsOf(expected.keySet());
    }

    /** Each wrapper method's Java signature is exactly the descriptor's method type (what invokeExact relies on). */
    @Test
    void wrapperSignaturesMatchDescriptors() throws Exception {
        for (Class<?> h : List.of(cuda_h.class, cublas_h.class)) {
            for (String fn : functions(h)) {
                FunctionDescriptor d = (FunctionDescriptor) h.getMethod(fn + "$descriptor").invoke(null);
                Method m = Arrays.stream(h.getMethods()).filter(x -> x.getName().equals(fn)).findFirst().orElseThrow();
                assertThat(MethodType.methodType(m.getReturnType(), m.getParameterTypes())).as(fn).isEqualTo(d.toMethodType());
            }
        }
    }

    @Test
    void handleTypesArePointersAndSizesAreLongs() {
        assertThat(cuda_h.CUcontext).isInstanceOf(AddressLayout.class);
        assertThat(cuda_h.CUstream).isInstanceOf(AddressLayout.class);
        assertThat(cuda_h.CUevent).isInstanceOf(AddressLayout.class);
        assertThat(cuda_h.CUmodule).isInstanceOf(AddressLayout.class);
        assertThat(cuda_h.CUfunction).isInstanceOf(AddressLayout.class);
        assertThat(cublas_h.cublasHandle_t).isInstanceOf(AddressLayout.class);
        assertThat(cuda_h.size_t.byteSize()).isEqualTo(8);
        assertThat(cuda_h.CUdeviceptr.byteSize()).isEqualTo(8);
        assertThat(cuda_h.CUdevice.byteSize()).isEqualTo(4);
        assertThat(cublas_h.long_long.byteSize()).isEqualTo(8);
    }

    private static List<String> functions(Class<?> h) {
        List<String> fns = new ArrayList<>();
        for (Method m : h.getMethods())
            if (Modifier.isStatic(m.getModifiers()) && m.getName().endsWith("$descriptor")) fns.add(m.getName().replace("$descriptor", ""));
        return fns;
    }
}
