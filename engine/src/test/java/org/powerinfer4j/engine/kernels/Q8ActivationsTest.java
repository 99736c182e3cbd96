package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.assertj.core.data.Offset;
import org.powerinfer4j.engine.tensor.GGMLType;

/** The measured Q8-activation alternative: integer dot equals its scalar reference and approximates the float dot. */
class Q8ActivationsTest {

    @Property(tries = 50)
    void integerDotMatchesReferenceAndFloatDot(@ForAll @IntRange(min = 1, max = 20) int blocks, @ForAll long seed) {
        Random r = new Random(seed);
        int n = 32 * blocks;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(GGMLType.Q8_0.byteSize(n));
            QuantData.fill(GGMLType.Q8_0, r, s, 0, n, false);
            float[] x = QuantData.randomFloats(r, n);
            Q8Activations a = Q8Activations.quantize(x, 0, n);
            for (int i = 0; i < n; i++) assertThat(Math.abs(a.qs[i] * a.d[i / 32] - x[i])).isLessThanOrEqualTo(a.d[i / 32] * 0.5001f);
            float ref = Q8Activations.dotQ8_0Scalar(s, 0, a, n), vec = Q8Activations.dotQ8_0(s, 0, a, n);
            // integer block sums are exact; only the per-block float scaling and the final sum round
            double mag = 0;
            float[] w = new float[n];
            Kernels.scalar(GGMLType.Q8_0).dequantize(s, 0, w, 0, n);
            for (int i = 0; i < n; i++) mag += Math.abs((double) w[i] * x[i]);
            assertThat((double) vec).isCloseTo(ref, Offset.offset(4.0 * (blocks + 4) * 0x1p-24 * mag * 2 + Float.MIN_NORMAL));
            // activation quantization error: |x - q·d| <= d/2 per element
            double qerr = 0;
            for (int i = 0; i < n; i++) qerr += Math.abs(w[i]) * a.d[i / 32] * 0.5;
            assertThat((double) vec).isCloseTo(QuantData.exactDot(GGMLType.Q8_0, s, 0, x, 0, n), Offset.offset(qerr + 1e-3 * mag + Float.MIN_NORMAL));
        }
    }
}
