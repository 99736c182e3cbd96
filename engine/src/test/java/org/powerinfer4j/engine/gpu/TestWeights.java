package org.powerinfer4j.engine.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/** Random weight tensors in ggml layouts, quantized the way ggml's reference quantizers do. */
final class TestWeights {
    private TestWeights() {}

    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** A rows × cols tensor of values uniform in [-1, 1) (some rows scaled up, so rows differ in magnitude). */
    static Tensor random(String name, GGMLType t, int rows, int cols, Random rnd, Arena arena) {
        float[] v = new float[rows * cols];
        for (int r = 0; r < rows; r++) {
            float scale = r % 7 == 3 ? 4f : 1f;
            for (int c = 0; c < cols; c++) v[r * cols + c] = (rnd.nextFloat() * 2 - 1) * scale;
        }
        return encode(name, t, v, rows, cols, arena);
    }

    static Tensor encode(String name, GGMLType t, float[] v, int rows, int cols, Arena arena) {
        long rb = t.byteSize(cols);
        MemorySegment m = arena.allocate(Math.max(1, rb * rows), 16);
        for (int r = 0; r < rows; r++) {
            long o = r * rb;
            int base = r * cols;
            switch (t) {
                case F32 -> { for (int c = 0; c < cols; c++) m.set(F32, o + 4L * c, v[base + c]); }
                case F16 -> { for (int c = 0; c < cols; c++) m.set(I16, o + 2L * c, Float.floatToFloat16(v[base + c])); }
                case Q8_0 -> { for (int b = 0; b < cols / 32; b++) q8_0(v, base + 32 * b, m, o + 34L * b); }
                case Q4_0 -> { for (int b = 0; b < cols / 32; b++) q4_0(v, base + 32 * b, m, o + 18L * b); }
                case Q4_K, Q5_K, Q6_K -> {   // the engine's port of ggml's reference K-quantizers
                    byte[] q = new byte[(int) rb];
                    org.powerinfer4j.engine.tensor.Quantizer.quantize(t, v, base, cols, q, 0);
                    MemorySegment.copy(q, 0, m, ValueLayout.JAVA_BYTE, o, q.length);
                }
                default -> throw new IllegalArgumentException(t.toString());
            }
        }
        return new Tensor(name, t, new long[] {cols, rows}, m);
    }

    /** ggml quantize_row_q8_0_ref: d = amax / 127, q = round(x / d). */
    private static void q8_0(float[] x, int off, MemorySegment m, long o) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[off + j]));
        float d = amax / 127f, id = d != 0 ? 1f / d : 0f;
        m.set(I16, o, Float.floatToFloat16(d));
        for (int j = 0; j < 32; j++) m.set(ValueLayout.JAVA_BYTE, o + 2 + j, (byte) Math.round(x[off + j] * id));
    }

    /** ggml quantize_row_q4_0_ref: d = (signed absmax) / −8, q = min(15, (int)(x / d + 8.5)). */
    private static void q4_0(float[] x, int off, MemorySegment m, long o) {
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++) {
            float v = x[off + j];
            if (Math.abs(v) > amax) {
                amax = Math.abs(v);
                max = v;
            }
        }
        float d = max / -8f, id = d != 0 ? 1f / d : 0f;
        m.set(I16, o, Float.floatToFloat16(d));
        for (int j = 0; j < 16; j++) {
            int q0 = Math.min(15, (int) (x[off + j] * id + 8.5f));
            int q1 = Math.min(15, (int) (x[off + 16 + j] * id + 8.5f));
            m.set(ValueLayout.JAVA_BYTE, o + 2 + j, (byte) (q0 | (q1 << 4)));
        }
    }

    /** Row r of t, decoded. */
    static float[] row(Tensor t, int r) {
        float[] out = new float[t.rowLength()];
        GgmlRows.dequantize(t.type(), t.data(), t.rowOffset(r), out, 0, out.length);
        return out;
    }

    static float[] floats(Random rnd, int n, float zeroFraction) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = rnd.nextFloat() < zeroFraction ? 0f : rnd.nextFloat() * 2 - 1;
        return v;
    }

    /**
     * Float64 attention of one query (heads·headDim floats of {@code q} from {@code qOff}) over cache positions
     * {@code [lo, lo + n)} (position t, KV head g at t·kvStride + g·headDim of k and v): per head
     * softmax(cap(q·k·scale)) · v, cap(s) = softcap·tanh(s / softcap) when softcap &gt; 0, with head h's sink logit
     * (nullable) in the denominator.
     */
    static double[] attention(float[] q, int qOff, float[] k, float[] v, int heads, int kvHeads, int headDim, int kvStride, int lo, int n,
                              float scale, float softcap, float[] sinks) {
        double[] out = new double[heads * headDim];
        for (int h = 0; h < heads; h++) {
            int g = h / (heads / kvHeads);
            double[] sc = new double[n];
            double max = sinks != null ? sinks[h] : Double.NEGATIVE_INFINITY, sum = 0;
            for (int j = 0; j < n; j++) {
                double d = 0;
                for (int i = 0; i < headDim; i++) d += (double) q[qOff + h * headDim + i] * k[(lo + j) * kvStride + g * headDim + i];
                d *= scale;
                if (softcap > 0) d = softcap * Math.tanh(d / softcap);
                sc[j] = d;
                max = Math.max(max, d);
            }
            if (sinks != null) sum = Math.exp(sinks[h] - max);
            for (int j = 0; j < n; j++) sum += sc[j] = Math.exp(sc[j] - max);
            for (int j = 0; j < n; j++)
                for (int i = 0; i < headDim; i++) out[h * headDim + i] += sc[j] / sum * v[(lo + j) * kvStride + g * headDim + i];
        }
        return out;
    }
}
