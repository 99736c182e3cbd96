package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Blocks.FLOAT_LE;
import static org.powerinfer4j.engine.kernels.Blocks.SHORT_LE;
import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;
import static org.powerinfer4j.engine.kernels.Simd.I;
import static org.powerinfer4j.engine.kernels.Simd.LE;
import static org.powerinfer4j.engine.kernels.Simd.S;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;

/**
 * Vectorized float loops for the model's other hot spots (norms, attention over the KV cache), each with the
 * scalar reference in {@link Scalar}. The public methods use the vector path unless {@code powerinfer4j.vector=false}.
 * KV-cache variants read little-endian F32 or F16 elements from native memory at a byte offset.
 */
public final class FloatKernels {
    private FloatKernels() {}

    /** Σ a[aOff+i]·b[bOff+i] for i &lt; n. */
    public static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        return Simd.ENABLED ? Vector.dot(a, aOff, b, bOff, n) : Scalar.dot(a, aOff, b, bOff, n);
    }

    /** y[yOff+i] += alpha·x[xOff+i] for i &lt; n. */
    public static void axpy(float alpha, float[] x, int xOff, float[] y, int yOff, int n) {
        if (Simd.ENABLED) Vector.axpy(alpha, x, xOff, y, yOff, n);
        else Scalar.axpy(alpha, x, xOff, y, yOff, n);
    }

    /** Σ x[off+i]² for i &lt; n. */
    public static float sumOfSquares(float[] x, int off, int n) {
        return Simd.ENABLED ? Vector.sumOfSquares(x, off, n) : Scalar.sumOfSquares(x, off, n);
    }

    /**
     * Attention's score pass: x[i] *= scale over [from, to), returning the largest (NaN ignored, as {@code d > max}
     * does; −∞ for an empty range). A maximum is exact in any order, so the vector path gives the scalar's result.
     */
    public static float scaleMax(float[] x, int from, int to, float scale) {
        float max = Float.NEGATIVE_INFINITY;
        int i = from;
        if (Simd.ENABLED && to - from >= FL) {
            FloatVector m = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY);
            for (int end = to - FL; i <= end; i += FL) {
                FloatVector v = FloatVector.fromArray(F, x, i).mul(scale);
                v.intoArray(x, i);
                m = m.blend(v, v.compare(VectorOperators.GT, m));
            }
            float[] lanes = Simd.lanes();
            m.intoArray(lanes, 0);
            for (int l = 0; l < FL; l++) if (lanes[l] > max) max = lanes[l];
        }
        for (; i < to; i++) {
            float d = x[i] * scale;
            x[i] = d;
            if (d > max) max = d;
        }
        return max;
    }

    /**
     * Softmax's numerators: x[i] = e^(x[i] − max) over [from, to) with {@link FixedMath#exp} (the same bits on every
     * path), returning their sum, added in a fixed order (lane partial sums, then the tail).
     */
    public static float expSum(float[] x, int from, int to, float max) {
        int i = from;
        float sum = 0f;
        if (Simd.ENABLED && to - from >= FL) {
            FloatVector acc = FloatVector.zero(F);
            for (int end = to - FL; i <= end; i += FL) {
                FloatVector e = FixedMath.exp(FloatVector.fromArray(F, x, i).sub(max));
                e.intoArray(x, i);
                acc = acc.add(e);
            }
            sum = Simd.sum(acc);
        }
        for (; i < to; i++) {
            float e = FixedMath.exp(x[i] - max);
            x[i] = e;
            sum += e;
        }
        return sum;
    }

    /**
     * SwiGLU in place: g[i] = silu(g[i])·u[i] = g/(1+e^(−g))·u for i &lt; n (ggml's silu, in float). The exponential is
     * {@link FixedMath#exp}, so the vector and scalar paths, compiled or not, give the same bits.
     */
    public static void siluMul(float[] g, float[] u, int n) {
        if (Simd.ENABLED) Vector.siluMul(g, u, n);
        else Scalar.siluMul(g, u, n);
    }

    /**
     * GELU, tanh form, in place: x[off+i] = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) for i &lt; n, computed as the
     * identical x / (1 + e^(−2·√(2/π)·(x + 0.044715·x³))) (no cancellation in 1 + tanh for negative x) with
     * {@link FixedMath#exp}: the same bits on every path.
     */
    public static void gelu(float[] x, int off, int n) {
        if (Simd.ENABLED) Vector.gelu(x, off, n);
        else Scalar.gelu(x, off, n);
    }

    /** GELU, erf form, in place: x[off+i] = 0.5·x·(1 + erf(x/√2)) = 0.5·x·erfc(−x/√2), with {@link FixedMath#erfc}: the same bits on every path. */
    public static void geluErf(float[] x, int off, int n) {
        if (Simd.ENABLED) Vector.geluErf(x, off, n);
        else Scalar.geluErf(x, off, n);
    }

    /** −2·√(2/π) and GELU's cubic coefficient. */
    private static final float GELU_K = -1.5957691216057308f, GELU_C = 0.044715f, INV_SQRT2 = 0.70710678118654752f;

    /** Σ q[qOff+i]·k[i] over n F32 elements of {@code k} starting at {@code kByteOff}. */
    public static float dot(float[] q, int qOff, MemorySegment k, long kByteOff, int n) {
        return Simd.ENABLED ? Vector.dot(q, qOff, k, kByteOff, n) : Scalar.dot(q, qOff, k, kByteOff, n);
    }

    /** y[yOff+i] += alpha·v[i] over n F32 elements of {@code v} starting at {@code vByteOff}. */
    public static void axpy(float alpha, MemorySegment v, long vByteOff, float[] y, int yOff, int n) {
        if (Simd.ENABLED) Vector.axpy(alpha, v, vByteOff, y, yOff, n);
        else Scalar.axpy(alpha, v, vByteOff, y, yOff, n);
    }

    /** Σ q[qOff+i]·k[i] over n F16 elements of {@code k} starting at {@code kByteOff}. */
    public static float dotF16(float[] q, int qOff, MemorySegment k, long kByteOff, int n) {
        return Simd.ENABLED ? Vector.dotF16(q, qOff, k, kByteOff, n) : Scalar.dotF16(q, qOff, k, kByteOff, n);
    }

    /**
     * Four attention scores at once: {@code out[outOff + r] = Σ q[qOff+i]·k[i]} over n F16 elements of the rows at
     * {@code kByteOff + r·strideBytes}, r &lt; 4. One lane-sum tree for the four (and q loaded once), where four
     * {@link #dotF16} calls would pay four reductions; the sums are the same up to float rounding. The halves must
     * be finite (no Inf/NaN — {@code KVCache.hasNonFinite()} tells): the vector path converts them without the
     * Inf/NaN patch-up.
     */
    public static void dotF16x4(float[] q, int qOff, MemorySegment k, long kByteOff, long strideBytes, int n, float[] out, int outOff) {
        if (Simd.ENABLED && n % FL == 0 && FL >= 4) Vector.dotF16x4(q, qOff, k, kByteOff, strideBytes, n, out, outOff);
        else for (int r = 0; r < 4; r++) out[outOff + r] = dotF16(q, qOff, k, kByteOff + r * strideBytes, n);
    }

    /**
     * {@link #dotF16x4} for four query vectors at once: {@code out[outOff + j·outStride + r]} = query j (at
     * {@code qOff + j·qStride}) · key row r, for j, r &lt; 4, each bit-identical to {@code dotF16x4}'s — the same
     * FMA chain and lane-sum tree per pair —, with each key vector converted once for the four queries.
     */
    public static void dotF16x4q4(float[] q, int qOff, int qStride, MemorySegment k, long kByteOff, long strideBytes, int n,
                                  float[] out, int outOff, int outStride) {
        if (Simd.ENABLED && n % FL == 0 && FL >= 4) Vector.dotF16x4q4(q, qOff, qStride, k, kByteOff, strideBytes, n, out, outOff, outStride);
        else for (int j = 0; j < 4; j++) dotF16x4(q, qOff + j * qStride, k, kByteOff, strideBytes, n, out, outOff + j * outStride);
    }

    /**
     * Four {@link #axpyF16} steps at once, rows at {@code vByteOff + r·strideBytes} with weights {@code a0..a3}:
     * y is loaded and stored once instead of four times; each element gets the same FMAs in the same order, so the
     * result is bit-identical to the four calls. Finite halves only, as {@link #dotF16x4}.
     */
    public static void axpyF16x4(float a0, float a1, float a2, float a3, MemorySegment v, long vByteOff, long strideBytes,
                                 float[] y, int yOff, int n) {
        if (Simd.ENABLED && n % FL == 0 && FL >= 4) {
            Vector.axpyF16x4(a0, a1, a2, a3, v, vByteOff, strideBytes, y, yOff, n);
            return;
        }
        axpyF16(a0, v, vByteOff, y, yOff, n);
        axpyF16(a1, v, vByteOff + strideBytes, y, yOff, n);
        axpyF16(a2, v, vByteOff + 2 * strideBytes, y, yOff, n);
        axpyF16(a3, v, vByteOff + 3 * strideBytes, y, yOff, n);
    }

    /** y[yOff+i] += alpha·v[i] over n F16 elements of {@code v} starting at {@code vByteOff}. */
    public static void axpyF16(float alpha, MemorySegment v, long vByteOff, float[] y, int yOff, int n) {
        if (Simd.ENABLED) Vector.axpyF16(alpha, v, vByteOff, y, yOff, n);
        else Scalar.axpyF16(alpha, v, vByteOff, y, yOff, n);
    }

    /** Plain loops: the reference the vector versions are tested against. */
    public static final class Scalar {
        private Scalar() {}

        public static void siluMul(float[] g, float[] u, int n) {
            for (int i = 0; i < n; i++) g[i] = g[i] / (1.0f + FixedMath.exp(-g[i])) * u[i];
        }

        public static void gelu(float[] x, int off, int n) {
            for (int i = off; i < off + n; i++) x[i] = gelu(x[i]);
        }

        static float gelu(float v) {
            float inner = Math.fma(GELU_C * v * v, v, v);   // x + c·x³
            return v / (1.0f + FixedMath.exp(GELU_K * inner));
        }

        public static void geluErf(float[] x, int off, int n) {
            for (int i = off; i < off + n; i++) x[i] = geluErf(x[i]);
        }

        static float geluErf(float v) {
            return 0.5f * v * FixedMath.erfc(-v * INV_SQRT2);
        }

        public static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
            float s = 0f;
            for (int i = 0; i < n; i++) s += a[aOff + i] * b[bOff + i];
            return s;
        }

        public static void axpy(float alpha, float[] x, int xOff, float[] y, int yOff, int n) {
            for (int i = 0; i < n; i++) y[yOff + i] += alpha * x[xOff + i];
        }

        public static float sumOfSquares(float[] x, int off, int n) {
            float s = 0f;
            for (int i = 0; i < n; i++) s += x[off + i] * x[off + i];
            return s;
        }

        public static float dot(float[] q, int qOff, MemorySegment k, long kOff, int n) {
            float s = 0f;
            for (int i = 0; i < n; i++) s += q[qOff + i] * k.get(FLOAT_LE, kOff + 4L * i);
            return s;
        }

        public static void axpy(float alpha, MemorySegment v, long vOff, float[] y, int yOff, int n) {
            for (int i = 0; i < n; i++) y[yOff + i] += alpha * v.get(FLOAT_LE, vOff + 4L * i);
        }

        public static float dotF16(float[] q, int qOff, MemorySegment k, long kOff, int n) {
            float s = 0f;
            for (int i = 0; i < n; i++) s += q[qOff + i] * Float.float16ToFloat(k.get(SHORT_LE, kOff + 2L * i));
            return s;
        }

        public static void axpyF16(float alpha, MemorySegment v, long vOff, float[] y, int yOff, int n) {
            for (int i = 0; i < n; i++) y[yOff + i] += alpha * Float.float16ToFloat(v.get(SHORT_LE, vOff + 2L * i));
        }
    }

    /**
     * Vector API versions. Reductions keep two accumulators (attention head dims are short, 64..128, so more would
     * only add reduction cost); the axpy results are the same as the scalar ones except for FMA rounding.
     */
    static final class Vector {
        private Vector() {}

        static void siluMul(float[] g, float[] u, int n) {
            int i = 0;
            for (int end = n - FL; i <= end; i += FL) {
                FloatVector x = FloatVector.fromArray(F, g, i);
                FloatVector e = FixedMath.exp(x.neg());   // not lanewise(EXP): its bits depend on the compiler
                x.div(e.add(1f)).mul(FloatVector.fromArray(F, u, i)).intoArray(g, i);
            }
            for (; i < n; i++) g[i] = g[i] / (1.0f + FixedMath.exp(-g[i])) * u[i];
        }

        static void gelu(float[] x, int off, int n) {
            int i = off, end = off + n;
            for (; i <= end - FL; i += FL) {
                FloatVector v = FloatVector.fromArray(F, x, i);
                FloatVector inner = v.mul(GELU_C).mul(v).fma(v, v);   // (c·x·x)·x + x, as Math.fma(c·x·x, x, x)
                v.div(FixedMath.exp(inner.mul(GELU_K)).add(1f)).intoArray(x, i);
            }
            for (; i < end; i++) x[i] = Scalar.gelu(x[i]);
        }

        static void geluErf(float[] x, int off, int n) {
            int i = off, end = off + n;
            for (; i <= end - FL; i += FL) {
                FloatVector v = FloatVector.fromArray(F, x, i);
                FloatVector e = FixedMath.erfc(v.neg().mul(INV_SQRT2));
                v.mul(0.5f).mul(e).intoArray(x, i);
            }
            for (; i < end; i++) x[i] = Scalar.geluErf(x[i]);
        }

        static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
            FloatVector s0 = FloatVector.zero(F), s1 = s0;
            int i = 0;
            for (int end = n - 2 * FL; i <= end; i += 2 * FL) {
                s0 = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), s0);
                s1 = FloatVector.fromArray(F, a, aOff + i + FL).fma(FloatVector.fromArray(F, b, bOff + i + FL), s1);
            }
            if (i <= n - FL) {
                s0 = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), s0);
                i += FL;
            }
            float s = Simd.sum(s0.add(s1));
            for (; i < n; i++) s += a[aOff + i] * b[bOff + i];
            return s;
        }

        static void axpy(float alpha, float[] x, int xOff, float[] y, int yOff, int n) {
            FloatVector a = FloatVector.broadcast(F, alpha);
            int i = 0;
            for (int end = n - FL; i <= end; i += FL) {
                FloatVector.fromArray(F, x, xOff + i).fma(a, FloatVector.fromArray(F, y, yOff + i)).intoArray(y, yOff + i);
            }
            for (; i < n; i++) y[yOff + i] += alpha * x[xOff + i];
        }

        static float sumOfSquares(float[] x, int off, int n) {
            FloatVector s0 = FloatVector.zero(F), s1 = s0;
            int i = 0;
            for (int end = n - 2 * FL; i <= end; i += 2 * FL) {
                FloatVector v0 = FloatVector.fromArray(F, x, off + i), v1 = FloatVector.fromArray(F, x, off + i + FL);
                s0 = v0.fma(v0, s0);
                s1 = v1.fma(v1, s1);
            }
            if (i <= n - FL) {
                FloatVector v = FloatVector.fromArray(F, x, off + i);
                s0 = v.fma(v, s0);
                i += FL;
            }
            float s = Simd.sum(s0.add(s1));
            for (; i < n; i++) s += x[off + i] * x[off + i];
            return s;
        }

        static float dot(float[] q, int qOff, MemorySegment k, long kOff, int n) {
            FloatVector s0 = FloatVector.zero(F), s1 = s0;
            int i = 0;
            for (int end = n - 2 * FL; i <= end; i += 2 * FL) {
                s0 = FloatVector.fromMemorySegment(F, k, kOff + 4L * i, LE).fma(FloatVector.fromArray(F, q, qOff + i), s0);
                s1 = FloatVector.fromMemorySegment(F, k, kOff + 4L * (i + FL), LE).fma(FloatVector.fromArray(F, q, qOff + i + FL), s1);
            }
            if (i <= n - FL) {
                s0 = FloatVector.fromMemorySegment(F, k, kOff + 4L * i, LE).fma(FloatVector.fromArray(F, q, qOff + i), s0);
                i += FL;
            }
            float s = Simd.sum(s0.add(s1));
            for (; i < n; i++) s += q[qOff + i] * k.get(FLOAT_LE, kOff + 4L * i);
            return s;
        }

        static void axpy(float alpha, MemorySegment v, long vOff, float[] y, int yOff, int n) {
            FloatVector a = FloatVector.broadcast(F, alpha);
            int i = 0;
            for (int end = n - FL; i <= end; i += FL) {
                FloatVector.fromMemorySegment(F, v, vOff + 4L * i, LE).fma(a, FloatVector.fromArray(F, y, yOff + i)).intoArray(y, yOff + i);
            }
            for (; i < n; i++) y[yOff + i] += alpha * v.get(FLOAT_LE, vOff + 4L * i);
        }

        static float dotF16(float[] q, int qOff, MemorySegment k, long kOff, int n) {
            FloatVector s0 = FloatVector.zero(F), s1 = s0;
            int i = 0;
            for (int end = n - 2 * FL; i <= end; i += 2 * FL) {
                s0 = half(k, kOff + 2L * i).fma(FloatVector.fromArray(F, q, qOff + i), s0);
                s1 = half(k, kOff + 2L * (i + FL)).fma(FloatVector.fromArray(F, q, qOff + i + FL), s1);
            }
            if (i <= n - FL) {
                s0 = half(k, kOff + 2L * i).fma(FloatVector.fromArray(F, q, qOff + i), s0);
                i += FL;
            }
            float s = Simd.sum(s0.add(s1));
            for (; i < n; i++) s += q[qOff + i] * Float.float16ToFloat(k.get(SHORT_LE, kOff + 2L * i));
            return s;
        }

        static void dotF16x4(float[] q, int qOff, MemorySegment k, long kOff, long stride, int n, float[] out, int outOff) {
            // finite halves only (see the public method): the 4-op conversion; the full one (Inf/NaN patching),
            // four times over, overruns C2's inlining budget and the lane sums get left out of line
            FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
            for (int i = 0; i < n; i += FL) {
                FloatVector qv = FloatVector.fromArray(F, q, qOff + i);
                long o = kOff + 2L * i;
                a0 = Blocks.finiteHalfToFloat(halfBits(k, o)).fma(qv, a0);
                a1 = Blocks.finiteHalfToFloat(halfBits(k, o + stride)).fma(qv, a1);
                a2 = Blocks.finiteHalfToFloat(halfBits(k, o + 2 * stride)).fma(qv, a2);
                a3 = Blocks.finiteHalfToFloat(halfBits(k, o + 3 * stride)).fma(qv, a3);
            }
            float[] lanes = Simd.lanes();
            Simd.sum4(a0, a1, a2, a3, lanes);
            out[outOff] = lanes[0];
            out[outOff + 1] = lanes[Simd.SUM4_STRIDE];
            out[outOff + 2] = lanes[2 * Simd.SUM4_STRIDE];
            out[outOff + 3] = lanes[3 * Simd.SUM4_STRIDE];
        }

        static void dotF16x4q4(float[] q, int qOff, int qStride, MemorySegment k, long kOff, long stride, int n, float[] out, int outOff, int outStride) {
            FloatVector a00 = FloatVector.zero(F), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00;
            FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;
            for (int i = 0; i < n; i += FL) {
                FloatVector q0 = FloatVector.fromArray(F, q, qOff + i), q1 = FloatVector.fromArray(F, q, qOff + qStride + i);
                FloatVector q2 = FloatVector.fromArray(F, q, qOff + 2 * qStride + i), q3 = FloatVector.fromArray(F, q, qOff + 3 * qStride + i);
                long o = kOff + 2L * i;
                FloatVector kv = Blocks.finiteHalfToFloat(halfBits(k, o));
                a00 = kv.fma(q0, a00); a10 = kv.fma(q1, a10); a20 = kv.fma(q2, a20); a30 = kv.fma(q3, a30);
                kv = Blocks.finiteHalfToFloat(halfBits(k, o + stride));
                a01 = kv.fma(q0, a01); a11 = kv.fma(q1, a11); a21 = kv.fma(q2, a21); a31 = kv.fma(q3, a31);
                kv = Blocks.finiteHalfToFloat(halfBits(k, o + 2 * stride));
                a02 = kv.fma(q0, a02); a12 = kv.fma(q1, a12); a22 = kv.fma(q2, a22); a32 = kv.fma(q3, a32);
                kv = Blocks.finiteHalfToFloat(halfBits(k, o + 3 * stride));
                a03 = kv.fma(q0, a03); a13 = kv.fma(q1, a13); a23 = kv.fma(q2, a23); a33 = kv.fma(q3, a33);
            }
            // the 16 sums parked in a scratch array and reduced out of line: four more inlined lane-sum trees push
            // this method past C2's inlining budget, and its vectors then get boxed (5× slower)
            float[] acc = Q4_ACC.get();
            a00.intoArray(acc, 0); a01.intoArray(acc, FL); a02.intoArray(acc, 2 * FL); a03.intoArray(acc, 3 * FL);
            a10.intoArray(acc, 4 * FL); a11.intoArray(acc, 5 * FL); a12.intoArray(acc, 6 * FL); a13.intoArray(acc, 7 * FL);
            a20.intoArray(acc, 8 * FL); a21.intoArray(acc, 9 * FL); a22.intoArray(acc, 10 * FL); a23.intoArray(acc, 11 * FL);
            a30.intoArray(acc, 12 * FL); a31.intoArray(acc, 13 * FL); a32.intoArray(acc, 14 * FL); a33.intoArray(acc, 15 * FL);
            reduceQuads(acc, out, outOff, outStride);
        }

        private static final ThreadLocal<float[]> Q4_ACC = ThreadLocal.withInitial(() -> new float[16 * FL]);

        /** dotF16x4's ending for each of the four queries: its four sums by one lane-sum tree (the same bits). */
        private static void reduceQuads(float[] acc, float[] out, int outOff, int outStride) {
            float[] lanes = Simd.lanes();
            int st = Simd.SUM4_STRIDE;
            for (int j = 0, o = outOff; j < 4; j++, o += outStride) {
                int a = 4 * j * FL;
                Simd.sum4(FloatVector.fromArray(F, acc, a), FloatVector.fromArray(F, acc, a + FL), FloatVector.fromArray(F, acc, a + 2 * FL),
                        FloatVector.fromArray(F, acc, a + 3 * FL), lanes);
                out[o] = lanes[0];
                out[o + 1] = lanes[st];
                out[o + 2] = lanes[2 * st];
                out[o + 3] = lanes[3 * st];
            }
        }

        static void axpyF16x4(float a0, float a1, float a2, float a3, MemorySegment v, long vOff, long stride, float[] y, int yOff, int n) {
            FloatVector b0 = FloatVector.broadcast(F, a0), b1 = FloatVector.broadcast(F, a1);
            FloatVector b2 = FloatVector.broadcast(F, a2), b3 = FloatVector.broadcast(F, a3);
            for (int i = 0; i < n; i += FL) {
                long o = vOff + 2L * i;
                FloatVector acc = FloatVector.fromArray(F, y, yOff + i);
                acc = Blocks.finiteHalfToFloat(halfBits(v, o)).fma(b0, acc);
                acc = Blocks.finiteHalfToFloat(halfBits(v, o + stride)).fma(b1, acc);
                acc = Blocks.finiteHalfToFloat(halfBits(v, o + 2 * stride)).fma(b2, acc);
                acc = Blocks.finiteHalfToFloat(halfBits(v, o + 3 * stride)).fma(b3, acc);
                acc.intoArray(y, yOff + i);
            }
        }

        /** FL halves at {@code off}, sign-extended to int lanes. */
        private static IntVector halfBits(MemorySegment s, long off) {
            return (IntVector) ShortVector.fromMemorySegment(S, s, off, LE).convertShape(VectorOperators.S2I, I, 0);
        }


        /** Halves are converted a chunk at a time by C2's vectorized {@link PlainKernels#halves}, then one FMA each. */
        static void axpyF16(float alpha, MemorySegment v, long vOff, float[] y, int yOff, int n) {
            FloatVector a = FloatVector.broadcast(F, alpha);
            float[] t = AXPY_HALVES.get();
            int i = 0;
            while (i <= n - FL) {
                int len = Math.min(t.length, (n - i) / FL * FL);
                PlainKernels.halves(v, vOff + 2L * i, t, 0, len);
                for (int j = 0; j < len; j += FL) {
                    FloatVector.fromArray(F, t, j).fma(a, FloatVector.fromArray(F, y, yOff + i + j)).intoArray(y, yOff + i + j);
                }
                i += len;
            }
            for (; i < n; i++) y[yOff + i] += alpha * Float.float16ToFloat(v.get(SHORT_LE, vOff + 2L * i));
        }

        private static final ThreadLocal<float[]> AXPY_HALVES = ThreadLocal.withInitial(() -> new float[512]);

        private static FloatVector half(MemorySegment s, long off) {
            return Blocks.halfToFloat(ShortVector.fromMemorySegment(S, s, off, LE));
        }
    }
}
