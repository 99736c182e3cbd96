package org.powerinfer4j.engine.quality;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.FloatRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/** llama-perplexity's uint16 log-probability encoding, against its definition. */
class BaseLogitsFileTest {
    @Property(tries = 300)
    void quantizedLogProbsDecodeWithinHalfAStep(@ForAll @Size(min = 2, max = 64) java.util.List<@FloatRange(min = -40, max = 40) Float> values,
                                               @ForAll @IntRange(min = 0, max = 3) int offset) {
        int n = values.size();
        float[] logits = new float[offset + n];
        for (int i = 0; i < n; i++) logits[offset + i] = values.get(i);
        ByteBuffer b = ByteBuffer.allocate(2 * (2 * ((n + 1) / 2) + 4)).order(ByteOrder.LITTLE_ENDIAN);
        BaseLogitsFile.quantize(logits, offset, n, b);
        assertThat(b.position()).isEqualTo(b.capacity());
        b.flip();
        float scale = b.getFloat(), min = b.getFloat();
        float lse = LogSoftmax.maxPlusLogSumExp(logits, offset, n);
        float max = logits[offset + LogSoftmax.argmax(logits, offset, n)];
        for (int i = 0; i < n; i++) {
            float decoded = scale * Short.toUnsignedInt(b.getShort()) + min;
            float exact = logits[offset + i] - lse;
            if (logits[offset + i] > max - 16) assertThat((double) decoded).isCloseTo(exact, org.assertj.core.data.Offset.offset(scale / 2 + 1e-4));
            else assertThat(decoded).isEqualTo(min);   // clipped to the window's floor
        }
    }
}
