package org.powerinfer4j.engine.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

class GgmlRowsTest {
    @Test
    void decodesQ8_0Blocks() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment m = a.allocate(34);
            m.set(TestWeights.I16, 0, Float.floatToFloat16(0.5f));
            for (int j = 0; j < 32; j++) m.set(ValueLayout.JAVA_BYTE, 2 + j, (byte) (j - 16));
            float[] out = new float[32];
            GgmlRows.dequantize(GGMLType.Q8_0, m, 0, out, 0, 32);
            for (int j = 0; j < 32; j++) assertThat(out[j]).isEqualTo(0.5f * (j - 16));
        }
    }

    @Test
    void decodesQ4_0LowNibblesFirstThenHighNibbles() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment m = a.allocate(18);
            m.set(TestWeights.I16, 0, Float.floatToFloat16(2f));
            for (int j = 0; j < 16; j++) m.set(ValueLayout.JAVA_BYTE, 2 + j, (byte) (j | ((15 - j) << 4)));
            float[] out = new float[32];
            GgmlRows.dequantize(GGMLType.Q4_0, m, 0, out, 0, 32);
            for (int j = 0; j < 16; j++) {
                assertThat(out[j]).as("low nibble %d", j).isEqualTo(2f * (j - 8));
                assertThat(out[j + 16]).as("high nibble %d", j).isEqualTo(2f * (15 - j - 8));
            }
        }
    }

    @Test
    void quantizersRoundTripWithinTheirResolution() {
        Random rnd = new Random(3);
        try (Arena a = Arena.ofConfined()) {
            for (GGMLType t : new GGMLType[] {GGMLType.F16, GGMLType.Q8_0, GGMLType.Q4_0}) {
                float[] v = TestWeights.floats(rnd, 4 * 64, 0f);
                Tensor q = TestWeights.encode("w", t, v, 4, 64, a);
                float tol = t == GGMLType.F16 ? 1e-3f : t == GGMLType.Q8_0 ? 1f / 127 : 1f / 7;
                for (int r = 0; r < 4; r++) {
                    float[] row = TestWeights.row(q, r);
                    for (int c = 0; c < 64; c++) assertThat(row[c]).isCloseTo(v[r * 64 + c], org.assertj.core.data.Offset.offset(tol));
                }
            }
        }
    }

    @Test
    void gathersRowsInListOrder() {
        Random rnd = new Random(4);
        try (Arena a = Arena.ofConfined()) {
            Tensor t = TestWeights.random("w", GGMLType.Q4_0, 10, 64, rnd, a);
            int[] bucket = {7, 2, 9};
            MemorySegment c = GgmlRows.gatherRows(t, bucket, 3, a);
            assertThat(c.byteSize()).isEqualTo(3 * t.rowBytes());
            for (int j = 0; j < 3; j++)
                assertThat(c.asSlice(j * t.rowBytes(), t.rowBytes()).mismatch(t.data().asSlice(t.rowOffset(bucket[j]), t.rowBytes()))).isEqualTo(-1);
            assertThatThrownBy(() -> GgmlRows.gatherRows(t, new int[] {10}, 1, a)).isInstanceOf(IndexOutOfBoundsException.class);
        }
        // the mat-vecs take Q4_K/Q5_K/Q6_K (Q4_K_M files), the sparse axpy does not; other K-quants stay on the CPU
        assertThat(GgmlRows.supported(GGMLType.Q4_K)).isTrue();
        assertThat(GgmlRows.axpySupported(GGMLType.Q4_K)).isFalse();
        assertThat(GgmlRows.supported(GGMLType.Q3_K)).isFalse();
    }
}
