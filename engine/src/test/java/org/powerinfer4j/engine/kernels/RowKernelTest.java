package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.tensor.GGMLType;

/** Every vector kernel against its scalar reference, on random rows placed at random offsets. */
class RowKernelTest {

    @Provide
    Arbitrary<GGMLType> types() {
        return Arbitraries.of(QuantData.TYPES);
    }

    /** Element count: 1..9 blocks for quantized types, 1..300 elements (vector tails) for plain ones. */
    private static int length(GGMLType t, int units) {
        return t.isQuantized() ? (units % 9 + 1) * t.blockSize : units;
    }

    @Property(tries = 150)
    void vectorDequantizeIsBitIdenticalToScalar(@ForAll("types") GGMLType t, @ForAll @IntRange(min = 1, max = 300) int units,
                                                @ForAll @IntRange(min = 0, max = 257) int skew, @ForAll @IntRange(min = 0, max = 40) int dstOff,
                                                @ForAll long seed, @ForAll boolean extreme) {
        int n = length(t, units);
        Random r = new Random(seed);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(t.byteSize(n) + skew + 64);
            QuantData.fill(t, r, s, skew, n, extreme);
            float[] ref = new float[n + dstOff], vec = new float[n + dstOff];
            Kernels.scalar(t).dequantize(s, skew, ref, dstOff, n);
            Kernels.vector(t).dequantize(s, skew, vec, dstOff, n);
            for (int i = 0; i < ref.length; i++) {
                assertThat(Float.floatToRawIntBits(vec[i])).as("%s n=%d element %d", t, n, i).isEqualTo(Float.floatToRawIntBits(ref[i]));
            }
            assertThat(Kernels.forType(t).type()).isEqualTo(t);
        }
    }

    @Property(tries = 200)
    void vectorDotMatchesScalarWithinSummationError(@ForAll("types") GGMLType t, @ForAll @IntRange(min = 1, max = 300) int units,
                                                    @ForAll @IntRange(min = 0, max = 257) int skew, @ForAll @IntRange(min = 0, max = 40) int xOff,
                                                    @ForAll long seed, @ForAll boolean extreme) {
        int n = length(t, units);
        Random r = new Random(seed);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(t.byteSize(n) + skew + 64);
            QuantData.fill(t, r, s, skew, n, extreme);
            float[] x = QuantData.randomFloats(r, n + xOff);
            double exact = QuantData.exactDot(t, s, skew, x, xOff, n);
            double tol = QuantData.dotTolerance(t, s, skew, x, xOff, n);
            float ref = Kernels.scalar(t).dot(s, skew, x, xOff, n);
            float vec = Kernels.vector(t).dot(s, skew, x, xOff, n);
            assertThat((double) ref).as("scalar %s n=%d", t, n).isCloseTo(exact, org.assertj.core.data.Offset.offset(tol));
            assertThat((double) vec).as("vector %s n=%d", t, n).isCloseTo(exact, org.assertj.core.data.Offset.offset(tol));
        }
    }

    @Test
    void halfConversionIsExactForAllHalves() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(2L << 16);
            for (int h = 0; h < 1 << 16; h++) s.setAtIndex(ValueLayout.JAVA_SHORT.withOrder(ByteOrder.LITTLE_ENDIAN), h, (short) h);
            float[] vec = new float[1 << 16], ref = new float[1 << 16];
            Kernels.vector(GGMLType.F16).dequantize(s, 0, vec, 0, 1 << 16);
            Kernels.scalar(GGMLType.F16).dequantize(s, 0, ref, 0, 1 << 16);
            for (int h = 0; h < 1 << 16; h++) {
                float expected = Float.float16ToFloat((short) h);
                if (Float.isNaN(expected)) {
                    assertThat(vec[h]).as("half %04x", h).isNaN();
                } else {
                    assertThat(Float.floatToRawIntBits(vec[h])).as("half %04x", h).isEqualTo(Float.floatToRawIntBits(expected));
                    assertThat(Float.floatToRawIntBits(ref[h])).as("half %04x", h).isEqualTo(Float.floatToRawIntBits(expected));
                }
            }
        }
    }

    @Test
    void bf16IsTheTopHalfOfAFloat() {
        try (Arena arena = Arena.ofConfined()) {
            int n = 1 << 16;
            MemorySegment s = arena.allocate(2L * n);
            for (int h = 0; h < n; h++) s.setAtIndex(ValueLayout.JAVA_SHORT.withOrder(ByteOrder.LITTLE_ENDIAN), h, (short) h);
            float[] vec = new float[n];
            Kernels.vector(GGMLType.BF16).dequantize(s, 0, vec, 0, n);
            for (int h = 0; h < n; h++) assertThat(Float.floatToRawIntBits(vec[h])).isEqualTo(h << 16);
        }
    }

    @Test
    void knownBlocksDecodeAsGgmlDoes() {
        try (Arena arena = Arena.ofConfined()) {
            // Q4_0: d = 0.5, byte j = (j & 0xF) | ((15 - j) << 4): low nibble j, high nibble 15-j
            MemorySegment s = arena.allocate(18);
            s.set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, Float.floatToFloat16(0.5f));
            for (int j = 0; j < 16; j++) s.set(ValueLayout.JAVA_BYTE, 2 + j, (byte) (j | (15 - j) << 4));
            for (RowKernel k : new RowKernel[] {Kernels.scalar(GGMLType.Q4_0), Kernels.vector(GGMLType.Q4_0)}) {
                float[] y = new float[32];
                k.dequantize(s, 0, y, 0, 32);
                for (int j = 0; j < 16; j++) {
                    assertThat(y[j]).isEqualTo((j - 8) * 0.5f);
                    assertThat(y[j + 16]).isEqualTo((15 - j - 8) * 0.5f);
                }
            }
        }
    }

    @Test
    void unsupportedTypesFailWithAClearMessage() {
        assertThatThrownBy(() -> Kernels.forType(GGMLType.IQ2_XXS))
                .isInstanceOf(UnsupportedTensorTypeException.class)
                .hasMessageContaining("IQ2_XXS").hasMessageContaining("Q5_0").hasMessageContaining("MXFP4");
        for (GGMLType t : QuantData.TYPES) assertThat(Kernels.supports(t)).isTrue();
    }

    @Test
    void rowLengthMustBeWholeBlocks() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(1024);
            assertThatThrownBy(() -> Kernels.forType(GGMLType.Q8_0).dot(s, 0, new float[48], 0, 48))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("48");
        }
    }
}
