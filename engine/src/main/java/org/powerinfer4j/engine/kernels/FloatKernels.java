package org.powerinfer4j.engine.kernels;

import java.lang.foreign.MemorySegment;

public final class FloatKernels {
    private FloatKernels() {}
    public static float dot(float[] a, int aOff, float[] b, int bOff, int n) { float s = 0; for (int i = 0; i < n; i++) s += a[aOff + i] * b[bOff + i]; return s; }
    public static void axpy(float alpha, float[] x, int xOff, float[] y, int yOff, int n) { for (int i = 0; i < n; i++) y[yOff + i] += alpha * x[xOff + i]; }
    public static float sumOfSquares(float[] x, int off, int n) { float s = 0; for (int i = 0; i < n; i++) s += x[off + i] * x[off + i]; return s; }
    public static float dot(float[] q, int qOff, MemorySegment k, long kOff, int n) { float s = 0; for (int i = 0; i < n; i++) s += q[qOff + i] * k.get(Kernels.F, kOff + 4L * i); return s; }
    public static void axpy(float alpha, MemorySegment v, long vOff, float[] y, int yOff, int n) { for (int i = 0; i < n; i++) y[yOff + i] += alpha * v.get(Kernels.F, vOff + 4L * i); }
    public static float dotF16(float[] q, int qOff, MemorySegment k, long kOff, int n) { float s = 0; for (int i = 0; i < n; i++) s += q[qOff + i] * Float.float16ToFloat(k.get(Kernels.S, kOff + 2L * i)); return s; }
    public static void axpyF16(float alpha, MemorySegment v, long vOff, float[] y, int yOff, int n) { for (int i = 0; i < n; i++) y[yOff + i] += alpha * Float.float16ToFloat(v.get(Kernels.S, vOff + 2L * i)); }
}
