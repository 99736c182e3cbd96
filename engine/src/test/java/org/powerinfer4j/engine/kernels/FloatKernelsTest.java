package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;
import net.jqwik.api.constraints.IntRange;
import org.assertj.core.data.Offset;

/** Vector float loops against the scalar references; tolerances from the float summation error bound. */
class FloatKernelsTest {

    private static final ValueLayout.OfFloat FLOAT_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort SHORT_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** |computed - exact| ≤ γ_(n+2) Σ|a·b| for any summation order (plus FMA vs mul+add). */
    private static Offset<Double> tol(double absSum, int n) {
        return Offset.offset(2.0 * (n + 2) * 0x1p-24 * absSum + Float.MIN_NORMAL);
    }

    @Property(tries = 100)
    void siluMulMatchesScalar(@ForAll @IntRange(min = 0, max = 300) int n, @ForAll long seed) {
        Random r = new Random(seed);
        float[] g = new float[n], u = QuantData.randomFloats(r, n);
        for (int i = 0; i < n; i++) g[i] = (float) (r.nextGaussian() * 6);   // covers saturation on both sides
        float[] v = g.clone(), sc = g.clone();
        FloatKernels.Vector.siluMul(v, u, n);
        FloatKernels.Scalar.siluMul(sc, u, n);
        assertThat(v).as("vector and scalar SwiGLU give the same bits").isEqualTo(sc);
        for (int i = 0; i < n; i++) {
            double exact = g[i] / (1 + Math.exp(-g[i])) * u[i];
            // exp within 1 ulp, then a division and a product: 1e-6 relative plus a tiny absolute floor
            assertThat((double) sc[i]).isCloseTo(exact, Offset.offset(1e-6 * Math.abs(exact) + 1e-30));
        }
    }

    @Property(tries = 100)
    void arrayLoops(@ForAll @IntRange(min = 0, max = 300) int n, @ForAll @IntRange(min = 0, max = 20) int aOff,
                    @ForAll @IntRange(min = 0, max = 20) int bOff, @ForAll long seed) {
        Random r = new Random(seed);
        float[] a = QuantData.randomFloats(r, n + aOff), b = QuantData.randomFloats(r, n + bOff);
        double exact = 0, abs = 0, sq = 0;
        for (int i = 0; i < n; i++) {
            exact += (double) a[aOff + i] * b[bOff + i];
            abs += Math.abs((double) a[aOff + i] * b[bOff + i]);
            sq += (double) a[aOff + i] * a[aOff + i];
        }
        assertThat((double) FloatKernels.Vector.dot(a, aOff, b, bOff, n)).isCloseTo(exact, tol(abs, n));
        assertThat((double) FloatKernels.Scalar.dot(a, aOff, b, bOff, n)).isCloseTo(exact, tol(abs, n));
        assertThat((double) FloatKernels.dot(a, aOff, b, bOff, n)).isCloseTo(exact, tol(abs, n));
        assertThat((double) FloatKernels.Vector.sumOfSquares(a, aOff, n)).isCloseTo(sq, tol(sq, n));
        assertThat((double) FloatKernels.sumOfSquares(a, aOff, n)).isCloseTo(sq, tol(sq, n));

        float alpha = (float) r.nextGaussian();
        float[] y1 = b.clone(), y2 = b.clone();
        FloatKernels.Vector.axpy(alpha, a, aOff, y1, bOff, n);
        FloatKernels.Scalar.axpy(alpha, a, aOff, y2, bOff, n);
        assertAxpy(alpha, a, aOff, b, bOff, n, y1, y2);
    }

    @Property(tries = 100)
    void kvCacheLoops(@ForAll @IntRange(min = 0, max = 300) int n, @ForAll @IntRange(min = 0, max = 67) int byteOff,
                      @ForAll @IntRange(min = 0, max = 20) int qOff, @ForAll long seed) {
        Random r = new Random(seed);
        float[] q = QuantData.randomFloats(r, n + qOff);
        float[] v = QuantData.randomFloats(r, n), h = new float[n];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment f32 = arena.allocate(4L * n + byteOff), f16 = arena.allocate(2L * n + byteOff);
            for (int i = 0; i < n; i++) {
                f32.set(FLOAT_LE, byteOff + 4L * i, v[i]);
                short hv = Float.floatToFloat16(v[i]);
                f16.set(SHORT_LE, byteOff + 2L * i, hv);
                h[i] = Float.float16ToFloat(hv);
            }
            checkDot(q, qOff, v, n, FloatKernels.Vector.dot(q, qOff, f32, byteOff, n), FloatKernels.Scalar.dot(q, qOff, f32, byteOff, n));
            checkDot(q, qOff, h, n, FloatKernels.Vector.dotF16(q, qOff, f16, byteOff, n), FloatKernels.Scalar.dotF16(q, qOff, f16, byteOff, n));
            checkDot(q, qOff, h, n, FloatKernels.dotF16(q, qOff, f16, byteOff, n), FloatKernels.dot(q, qOff, h, 0, n));

            float alpha = (float) r.nextGaussian();
            float[] y1 = q.clone(), y2 = q.clone();
            FloatKernels.Vector.axpy(alpha, f32, byteOff, y1, qOff, n);
            FloatKernels.Scalar.axpy(alpha, f32, byteOff, y2, qOff, n);
            assertAxpy(alpha, v, 0, q, qOff, n, y1, y2);
            y1 = q.clone();
            y2 = q.clone();
            FloatKernels.Vector.axpyF16(alpha, f16, byteOff, y1, qOff, n);
            FloatKernels.axpyF16(alpha, f16, byteOff, y2, qOff, n);
            assertAxpy(alpha, h, 0, q, qOff, n, y1, y2);
        }
    }

    @Property(tries = 100)
    void fourScoresAtOnceMatchFourDots(@ForAll @IntRange(min = 1, max = 12) int vectors, @ForAll @IntRange(min = 0, max = 5) int tail,
                                       @ForAll @IntRange(min = 0, max = 9) int qOff, @ForAll @IntRange(min = 0, max = 40) int gap, @ForAll long seed) {
        Random r = new Random(seed);
        int n = vectors * Simd.FL + (tail == 0 ? 0 : tail);          // whole vectors take the vector path, others the fallback
        float[] q = QuantData.randomFloats(r, n + qOff);
        long stride = 2L * n + 2L * gap;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate(4 * stride + 6);
            float[][] h = new float[4][n];
            for (int row = 0; row < 4; row++)
                for (int i = 0; i < n; i++) {
                    short hv = Float.floatToFloat16((float) r.nextGaussian());
                    k.set(SHORT_LE, 6 + row * stride + 2L * i, hv);
                    h[row][i] = Float.float16ToFloat(hv);
                }
            float[] out = new float[7];
            out[6] = 42f;
            FloatKernels.dotF16x4(q, qOff, k, 6, stride, n, out, 2);
            for (int row = 0; row < 4; row++)
                checkDot(q, qOff, h[row], n, out[2 + row], FloatKernels.Scalar.dotF16(q, qOff, k, 6 + row * stride, n));
            assertThat(out[0]).isZero();
            assertThat(out[6]).isEqualTo(42f);

            // four queries at once (a prompt chunk's block): each row of scores bit-identical to dotF16x4's
            int qStride = n + 3;
            float[] qs = QuantData.randomFloats(r, qOff + 4 * qStride);
            float[] block = new float[4 * 9], alone = new float[4];
            FloatKernels.dotF16x4q4(qs, qOff, qStride, k, 6, stride, n, block, 1, 9);
            for (int j = 0; j < 4; j++) {
                FloatKernels.dotF16x4(qs, qOff + j * qStride, k, 6, stride, n, alone, 0);
                for (int row = 0; row < 4; row++) assertThat(block[1 + 9 * j + row]).as("query %d key %d", j, row).isEqualTo(alone[row]);
            }

            // four axpy steps at once: bit-identical to four single steps
            float[] y1 = QuantData.randomFloats(r, n + qOff + 2), y2 = y1.clone();
            float[] a = {(float) r.nextGaussian(), (float) r.nextGaussian(), (float) r.nextGaussian(), (float) r.nextGaussian()};
            FloatKernels.axpyF16x4(a[0], a[1], a[2], a[3], k, 6, stride, y1, qOff, n);
            for (int row = 0; row < 4; row++) FloatKernels.axpyF16(a[row], k, 6 + row * stride, y2, qOff, n);
            assertThat(y1).containsExactly(y2);
        }
    }

    @Test
    void kvCacheNotesKeysOrValuesBeyondHalfRange() {
        try (org.powerinfer4j.engine.model.KVCache kv = new org.powerinfer4j.engine.model.KVCache(2, 8, 4, org.powerinfer4j.engine.tensor.GGMLType.F16)) {
            kv.store(0, 0, new float[] {1, -2, 65504, 0}, 0, new float[] {0, 0, 0, -1e-8f}, 0);
            assertThat(kv.nonFinite()).isFalse();
            kv.store(1, 3, new float[] {0, 0, 0, 0}, 0, new float[] {0, 70000, 0, 0}, 0);
            assertThat(kv.nonFinite()).isTrue();
        }
    }

    private static void checkDot(float[] q, int qOff, float[] k, int n, float vec, float ref) {
        double exact = 0, abs = 0;
        for (int i = 0; i < n; i++) {
            exact += (double) q[qOff + i] * k[i];
            abs += Math.abs((double) q[qOff + i] * k[i]);
        }
        assertThat((double) vec).isCloseTo(exact, tol(abs, n));
        assertThat((double) ref).isCloseTo(exact, tol(abs, n));
    }

    /** Each element is y + alpha·x rounded once (FMA) or twice: within 2 ulps of the exact value. */
    private static void assertAxpy(float alpha, float[] x, int xOff, float[] y0, int yOff, int n, float[] y1, float[] y2) {
        for (int i = 0; i < y0.length; i++) {
            if (i < yOff || i >= yOff + n) {
                assertThat(y1[i]).isEqualTo(y0[i]);
                assertThat(y2[i]).isEqualTo(y0[i]);
                continue;
            }
            double exact = y0[i] + (double) alpha * x[xOff + i - yOff];
            Offset<Double> ulps = Offset.offset(0x1p-23 * (Math.abs((double) y0[i]) + Math.abs((double) alpha * x[xOff + i - yOff])) + Float.MIN_NORMAL);
            assertThat((double) y1[i]).isCloseTo(exact, ulps);
            assertThat((double) y2[i]).isCloseTo(exact, ulps);
        }
    }

    /** Attention's softmax passes: the scaled maximum exactly as the scalar loop finds it, numerators exactly FixedMath.exp's. */
    @Property(tries = 100)
    void scaleMaxAndExpSumAreTheScalarPasses(@ForAll @IntRange(min = 0, max = 300) int n, @ForAll @IntRange(min = 0, max = 5) int from, @ForAll long seed) {
        Random r = new Random(seed);
        float[] x = new float[from + n];
        for (int i = 0; i < x.length; i++) x[i] = (float) (r.nextGaussian() * 8);
        float scale = 0.125f + r.nextFloat();
        float[] expect = x.clone();
        float max = Float.NEGATIVE_INFINITY;
        for (int i = from; i < from + n; i++) {
            expect[i] *= scale;
            if (expect[i] > max) max = expect[i];
        }
        assertThat(FloatKernels.scaleMax(x, from, from + n, scale)).isEqualTo(max);
        assertThat(x).isEqualTo(expect);
        double sum = 0;
        for (int i = from; i < from + n; i++) sum += expect[i] = FixedMath.exp(expect[i] - max);
        float got = FloatKernels.expSum(x, from, from + n, max);
        assertThat(x).isEqualTo(expect);
        assertThat((double) got).isCloseTo(sum, Offset.offset(1e-6 * (n + 1) * Math.max(1, sum)));
    }
}
