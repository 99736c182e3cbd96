package org.powerinfer4j.engine.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.TensorInfo;

class QuantizerTest {

    private static float[] gaussian(int n, long seed, double sigma) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) (r.nextGaussian() * sigma);
        return x;
    }

    /**
     * Quantize → dequantize stays within the type's error bound, relative to each block's max |x|: half a
     * quantization step for the round-to-nearest types (Q4_0 a full step: its 16 levels are asymmetric, so the
     * end opposite the block's extreme value is clamped at 7/8), a looser bound for the K-quants whose scales are
     * themselves 6/8-bit quantized and searched for least squares rather than least max error.
     */
    @ParameterizedTest
    @CsvSource({"F32, 0", "F16, 0.0005", "BF16, 0.004", "Q8_0, 0.0045", "Q4_0, 0.13", "Q4_1, 0.075",
            "Q4_K, 0.12", "Q5_K, 0.06", "Q6_K, 0.03"})
    void errorWithinBound(GGMLType type, double relBound) {
        int n = 256 * 64;
        for (double sigma : new double[] {0.02, 1.0, 300.0}) {
            float[] x = gaussian(n, 42, sigma);
            // a few structured blocks: constant, all zero, one spike, all positive
            Arrays.fill(x, 0, 256, 0.25f * (float) sigma);
            Arrays.fill(x, 256, 512, 0f);
            x[700] = (float) (50 * sigma);
            for (int i = 1024; i < 1280; i++) x[i] = Math.abs(x[i]) + (float) sigma;
            byte[] q = Quantizer.quantize(type, x);
            assertThat(q.length).isEqualTo(type.byteSize(n));
            float[] y = RefDequant.dequantize(type, q, n);
            int block = Math.max(32, type.blockSize);
            for (int b = 0; b < n / block; b++) {
                float amax = 0;
                for (int i = 0; i < block; i++) amax = Math.max(amax, Math.abs(x[b * block + i]));
                for (int i = 0; i < block; i++) {
                    int k = b * block + i;
                    double err = Math.abs(y[k] - x[k]);
                    assertThat(err).as("%s sigma %s element %d: %s -> %s", type, sigma, k, x[k], y[k])
                            .isLessThanOrEqualTo(relBound * amax + (type == GGMLType.F32 ? 0 : 1e-30));
                }
            }
        }
    }

    @Test
    void scalarConversionsMatchGgml() {
        assertThat(Quantizer.bf16(1.0f)).isEqualTo((short) 0x3F80);
        assertThat(Quantizer.bf16(Float.intBitsToFloat(0x3F808000))).isEqualTo((short) 0x3F80); // tie → even
        assertThat(Quantizer.bf16(Float.intBitsToFloat(0x3F818000))).isEqualTo((short) 0x3F82);
        assertThat(Quantizer.bf16(Float.intBitsToFloat(0x7F800001))).isEqualTo((short) 0x7FC0); // NaN stays NaN
        assertThat(Quantizer.fp16(65520f)).isEqualTo((short) 0x7C00);                           // overflows to inf
        assertThat(Quantizer.nearestInt(2.5f)).isEqualTo(2);
        assertThat(Quantizer.nearestInt(3.5f)).isEqualTo(4);
        assertThat(Quantizer.nearestInt(-2.5f)).isEqualTo(-2);
        assertThat(Quantizer.roundf(2.5f)).isEqualTo(3f);
        assertThat(Quantizer.roundf(-2.5f)).isEqualTo(-3f);
        assertThat(Quantizer.roundf(0.49999997f)).isEqualTo(0f);
    }

    @Test
    void rejectsBadInput() {
        assertThatThrownBy(() -> Quantizer.quantize(GGMLType.Q4_0, new float[31])).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Quantizer.quantize(GGMLType.Q2_K, new float[256])).hasMessageContaining("Q2_K");
        assertThatThrownBy(() -> Quantizer.quantize(GGMLType.Q8_0, new float[64], 0, 64, new byte[67], 0))
                .isInstanceOf(IndexOutOfBoundsException.class);
    }

    /** The tensor's values as floats (F32 source tensors only). */
    private static float[] floats(GGUFFile f, String name) throws Exception {
        var t = f.tensor(name);
        assertThat(t.type()).isEqualTo(GGMLType.F32);
        return t.data().toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
    }

    /**
     * Quantizing the F32 originals reproduces, byte for byte, every tensor llama-quantize wrote: stories260K
     * in F16, BF16, Q8_0, Q4_0, Q4_1 (ffn_down in F16) and the random model in Q4_K, Q5_K, Q6_K and Q8_0.
     */
    @ParameterizedTest
    @CsvSource({
            "models/stories260K.gguf, models/quantized/stories260K-f16.gguf",
            "models/stories260K.gguf, models/quantized/stories260K-bf16.gguf",
            "models/stories260K.gguf, models/quantized/stories260K-q8_0.gguf",
            "models/stories260K.gguf, models/quantized/stories260K-q4_0.gguf",
            "models/stories260K.gguf, models/quantized/stories260K-q4_1.gguf",
            "models/quantized/rand-k-f32.gguf, models/quantized/rand-k-q8_0.gguf",
            "models/quantized/rand-k-f32.gguf, models/quantized/rand-k-q4_k.gguf",
            "models/quantized/rand-k-f32.gguf, models/quantized/rand-k-q5_k.gguf",
            "models/quantized/rand-k-f32.gguf, models/quantized/rand-k-q6_k.gguf"})
    void reproducesLlamaQuantize(String source, String quantized) throws Exception {
        int tensors = 0, quantizedTensors = 0, expectedTensors;
        try (GGUFFile src = GGUFFile.open(TestData.file(source)); GGUFFile dst = GGUFFile.open(TestData.file(quantized))) {
            expectedTensors = src.tensorInfos().size();
            for (TensorInfo ti : dst.tensorInfos()) {
                float[] x = floats(src, ti.name());
                byte[] expected = dst.tensor(ti.name()).data().toArray(ValueLayout.JAVA_BYTE);
                byte[] actual = Quantizer.quantize(ti.type(), x);
                int mismatch = Arrays.mismatch(actual, expected);
                assertThat(mismatch).as("%s %s: first differing byte (block %d)", ti.name(), ti.type(),
                        mismatch / Math.max(1, ti.type().typeSize)).isEqualTo(-1);
                tensors++;
                if (ti.type().isQuantized()) quantizedTensors++;
            }
        }
        assertThat(tensors).isEqualTo(expectedTensors);
        if (!quantized.endsWith("f16.gguf")) assertThat(quantizedTensors).isGreaterThanOrEqualTo(14);
    }

    /** The test's dequantizer agrees bit for bit with gguf-py's dequantization of the llama.cpp files. */
    @ParameterizedTest
    @CsvSource({"q4_k, blk.0.ffn_gate.weight", "q5_k, blk.1.attn_v.weight", "q6_k, blk.0.ffn_gate.weight",
            "q8_0, blk.1.attn_v.weight"})
    void referenceDequantizerMatchesGgufPy(String type, String tensor) throws Exception {
        Path ref = TestData.file("reference/dequant/rand-k-" + type + "." + tensor + ".f32");
        float[] expected = java.lang.foreign.MemorySegment.ofArray(Files.readAllBytes(ref))
                .toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
        try (GGUFFile f = GGUFFile.open(TestData.file("models/quantized/rand-k-" + type + ".gguf"))) {
            var t = f.tensor(tensor);
            float[] y = RefDequant.dequantize(t.type(), t.data().toArray(ValueLayout.JAVA_BYTE), (int) t.elementCount());
            assertThat(y).hasSameSizeAs(expected);
            assertThat(Arrays.mismatch(y, expected)).as("first differing element").isEqualTo(-1);
        }
    }

    @ParameterizedTest
    @EnumSource(value = GGMLType.class, names = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K"})
    void offsetsAreHonoured(GGMLType type) {
        float[] x = gaussian(1024, 3, 1);
        byte[] whole = Quantizer.quantize(type, x);
        int half = 512, bytesHalf = (int) type.byteSize(half);
        byte[] parts = new byte[whole.length + 7];
        Quantizer.quantize(type, x, 0, half, parts, 7);
        Quantizer.quantize(type, x, half, half, parts, 7 + bytesHalf);
        assertThat(Arrays.copyOfRange(parts, 7, parts.length)).containsExactly(whole);
    }
}
