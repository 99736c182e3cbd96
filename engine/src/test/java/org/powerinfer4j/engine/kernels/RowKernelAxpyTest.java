package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * The fused {@link RowKernel#axpy} of every type: bit-identical to dequantize + float axpy on the same path (so the
 * sparse down projection gives the same bits as the dense one), and vector within FMA rounding of scalar.
 */
class RowKernelAxpyTest {

    @Provide
    Arbitrary<GGMLType> types() {
        return Arbitraries.of(QuantData.TYPES);
    }

    private static int length(GGMLType t, int units) {
        return t.isQuantized() ? (units % 9 + 1) * t.blockSize : units;
    }

    private record Case(MemorySegment w, int n, float alpha, float[] y0, int yOff) {}

    private static Case make(Arena arena, GGMLType t, int units, int skew, int yOff, long seed, boolean extreme) {
        int n = length(t, units);
        Random r = new Random(seed);
        MemorySegment s = arena.allocate(t.byteSize(n) + skew + 64).asSlice(skew);
        QuantData.fill(t, r, s, 0, n, extreme);
        float[] y = QuantData.randomFloats(r, n + yOff + 8);
        return new Case(s, n, (float) r.nextGaussian(), y, yOff);
    }

    @Property(tries = 150)
    void scalarAxpyEqualsScalarDequantizeThenAxpy(@ForAll("types") GGMLType t, @ForAll @IntRange(min = 1, max = 300) int units,
                                                  @ForAll @IntRange(min = 0, max = 257) int skew, @ForAll @IntRange(min = 0, max = 40) int yOff,
                                                  @ForAll long seed, @ForAll boolean extreme) {
        try (Arena arena = Arena.ofConfined()) {
            Case c = make(arena, t, units, skew, yOff, seed, extreme);
            float[] fused = c.y0().clone(), ref = c.y0().clone(), w = new float[c.n()];
            Kernels.scalar(t).axpy(c.w(), 0, c.alpha(), fused, c.yOff(), c.n());
            Kernels.scalar(t).dequantize(c.w(), 0, w, 0, c.n());
            FloatKernels.Scalar.axpy(c.alpha(), w, 0, ref, c.yOff(), c.n());
            assertSameBits(t, fused, ref);
        }
    }

    @Property(tries = 150)
    void vectorAxpyEqualsVectorDequantizeThenAxpy(@ForAll("types") GGMLType t, @ForAll @IntRange(min = 1, max = 300) int units,
                                                  @ForAll @IntRange(min = 0, max = 257) int skew, @ForAll @IntRange(min = 0, max = 40) int yOff,
                                                  @ForAll long seed, @ForAll boolean extreme) {
        try (Arena arena = Arena.ofConfined()) {
            Case c = make(arena, t, units, skew, yOff, seed, extreme);
            float[] fused = c.y0().clone(), ref = c.y0().clone(), w = new float[c.n()];
            Kernels.vector(t).axpy(c.w(), 0, c.alpha(), fused, c.yOff(), c.n());
            Kernels.vector(t).dequantize(c.w(), 0, w, 0, c.n());
            FloatKernels.Vector.axpy(c.alpha(), w, 0, ref, c.yOff(), c.n());
            assertSameBits(t, fused, ref);
        }
    }

    @Property(tries = 150)
    void vectorAxpyMatchesScalarWithinFmaRounding(@ForAll("types") GGMLType t, @ForAll @IntRange(min = 1, max = 300) int units,
                                                  @ForAll @IntRange(min = 0, max = 257) int skew, @ForAll @IntRange(min = 0, max = 40) int yOff,
                                                  @ForAll long seed) {
        try (Arena arena = Arena.ofConfined()) {
            Case c = make(arena, t, units, skew, yOff, seed, false);
            float[] vec = c.y0().clone(), ref = c.y0().clone(), w = new float[c.n()];
            Kernels.vector(t).axpy(c.w(), 0, c.alpha(), vec, c.yOff(), c.n());
            Kernels.scalar(t).axpy(c.w(), 0, c.alpha(), ref, c.yOff(), c.n());
            Kernels.scalar(t).dequantize(c.w(), 0, w, 0, c.n());
            for (int i = 0; i < ref.length; i++) {
                int j = i - c.yOff();
                double product = j >= 0 && j < c.n() ? Math.abs((double) c.alpha() * w[j]) : 0;
                // one rounding of the product (mul + add) vs none (fma): at most an ulp of the product and of the sum
                double tol = Math.ulp((float) product) + Math.ulp(Math.abs(ref[i]));
                assertThat((double) vec[i]).as("%s n=%d element %d", t, c.n(), i).isCloseTo(ref[i], org.assertj.core.data.Offset.offset(tol));
            }
        }
    }

    private static void assertSameBits(GGMLType t, float[] a, float[] b) {
        for (int i = 0; i < a.length; i++)
            assertThat(Float.floatToIntBits(a[i])).as("%s element %d", t, i).isEqualTo(Float.floatToIntBits(b[i]));
    }
}
