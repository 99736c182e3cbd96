package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * MXFP4 has no gguf-py dump here, so it is checked against a reference derived independently from the format's
 * definition (OCP Microscaling spec, as ggml implements it) on hand-made blocks: a block is one E8M0 scale byte e
 * (the value 2^(e−127)) and 32 E2M1 elements (sign bit 3, exponent bits 1–2, mantissa bit 0: 0.5·m when the
 * exponent is 0, else 2^(exp−1)·(1 + m/2)), element j &lt; 16 in the low nibble of byte j and j + 16 in its high
 * nibble. Where ggml departs from the spec the reference follows ggml: e = 255 is the number 2^128 (the spec's NaN)
 * and the negative zero code 0x8 decodes as +0 ({@code kvalues_mxfp4[8] = 0}). The reference is computed in
 * double and rounded once; every product is exactly representable (or overflows), so decoding must match bit for
 * bit, for every scale byte 0..255 — including e = 0 and 1, whose element values fall below float's normal range.
 */
class Mxfp4ReferenceTest {
    private static final int BYTES = 17, QK = 32;

    /** E2M1 code → value, from the bit fields (not from ggml's table). */
    static double e2m1(int code) {
        int sign = code >> 3 & 1, exp = code >> 1 & 3, man = code & 1;
        double mag = exp == 0 ? 0.5 * man : Math.scalb(1.0 + 0.5 * man, exp - 1);
        return mag == 0 ? 0.0 : sign == 1 ? -mag : mag;
    }

    /** The reference value of element j of a block with scale byte e and quant bytes qs. */
    static float reference(int e, byte[] qs, int j) {
        int code = j < 16 ? qs[j] & 0xF : (qs[j - 16] & 0xFF) >> 4;
        return (float) (e2m1(code) * Math.scalb(1.0, e - 127));
    }

    /** 256 blocks, one per scale byte; block e's bytes hold every code in both nibbles (rotated by e). */
    private static byte[][] quantBytes() {
        byte[][] qs = new byte[256][16];
        for (int e = 0; e < 256; e++)
            for (int j = 0; j < 16; j++) qs[e][j] = (byte) (((j + e) & 0xF) | ((15 - j + 3 * e) & 0xF) << 4);
        return qs;
    }

    private static MemorySegment row(Arena arena, byte[][] qs, int[] scales) {
        MemorySegment s = arena.allocate((long) scales.length * BYTES);
        for (int b = 0; b < scales.length; b++) {
            s.set(ValueLayout.JAVA_BYTE, (long) b * BYTES, (byte) scales[b]);
            MemorySegment.copy(qs[b], 0, s, ValueLayout.JAVA_BYTE, (long) b * BYTES + 1, 16);
        }
        return s;
    }

    @Test
    void decodesEveryScaleAndCodeAsTheSpecSays() {
        byte[][] qs = quantBytes();
        int[] scales = new int[256];
        for (int e = 0; e < 256; e++) scales[e] = e;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = row(arena, qs, scales);
            int n = 256 * QK;
            for (RowKernel k : new RowKernel[]{Kernels.scalar(GGMLType.MXFP4), Kernels.vector(GGMLType.MXFP4)}) {
                float[] y = new float[n];
                k.dequantize(s, 0, y, 0, n);
                for (int e = 0; e < 256; e++)
                    for (int j = 0; j < QK; j++) {
                        float expected = reference(e, qs[e], j);
                        assertThat(Float.floatToRawIntBits(y[e * QK + j])).as("%s e=%d element %d: %s vs %s", k.getClass(), e, j, y[e * QK + j], expected)
                                .isEqualTo(Float.floatToRawIntBits(expected));
                    }
            }
        }
    }

    @Test
    void knownValues() {
        try (Arena arena = Arena.ofConfined()) {
            byte[][] qs = new byte[4][16];
            qs[1][0] = (byte) 0xF1; // e = 128 (scale 2): low 0x1 = 0.5·2 = 1, high 0xF = −6·2 = −12
            qs[2][0] = 0x21;        // e = 0 (scale 2^-127): 0x1 → 2^-128 (subnormal), 0x2 → 2^-127
            qs[3][0] = 0x28;        // e = 255: 0x8 → +0 (ggml's table), 0x2 → 1·2^128 = +Inf in float
            qs[0][0] = (byte) 0xF7; // e = 127 (scale 1): low 0x7 = +6, high 0xF = −6
            MemorySegment s = row(arena, qs, new int[]{127, 128, 0, 255});
            for (RowKernel k : new RowKernel[]{Kernels.scalar(GGMLType.MXFP4), Kernels.vector(GGMLType.MXFP4)}) {
                float[] y = new float[4 * QK];
                k.dequantize(s, 0, y, 0, 4 * QK);
                assertThat(y[0]).isEqualTo(6f);
                assertThat(y[16]).isEqualTo(-6f);
                assertThat(y[QK]).isEqualTo(1f);
                assertThat(y[QK + 16]).isEqualTo(-12f);
                assertThat(Float.floatToRawIntBits(y[2 * QK])).isEqualTo(0x00200000);      // 2^-128
                assertThat(Float.floatToRawIntBits(y[2 * QK + 16])).isEqualTo(0x00400000); // 2^-127
                assertThat(Float.floatToRawIntBits(y[3 * QK])).isEqualTo(0);               // +0, not −0
                assertThat(y[3 * QK + 16]).isEqualTo(Float.POSITIVE_INFINITY);
                assertThat(y[1]).isEqualTo(0f); // zero bytes decode as +0 at any scale
            }
        }
    }

    @Test
    void dotAndAxpyAgreeWithTheReference() {
        Random r = new Random(39);
        byte[][] qs = new byte[64][16];
        int[] scales = new int[64];
        for (int b = 0; b < 64; b++) {
            r.nextBytes(qs[b]);
            // across the range where a 64-block dot of N(0,1) activations stays finite, subnormal scales included
            scales[b] = b < 4 ? b : r.nextInt(230);
        }
        int n = 64 * QK;
        float[] x = QuantData.randomFloats(r, n), w = new float[n];
        double exact = 0, mag = 0;
        for (int b = 0; b < 64; b++)
            for (int j = 0; j < QK; j++) {
                w[b * QK + j] = reference(scales[b], qs[b], j);
                exact += (double) w[b * QK + j] * x[b * QK + j];
                mag += Math.abs((double) w[b * QK + j] * x[b * QK + j]);
            }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = row(arena, qs, scales);
            for (RowKernel k : new RowKernel[]{Kernels.scalar(GGMLType.MXFP4), Kernels.vector(GGMLType.MXFP4)}) {
                // float summation of n products in some order: within (n + 2)·2^-24·Σ|w·x| (Higham §3.1)
                assertThat((double) k.dot(s, 0, x, 0, n)).as("%s dot", k.getClass()).isCloseTo(exact, within((n + 2) * 0x1p-24 * mag));
                float alpha = 0.75f;
                float[] y = QuantData.randomFloats(new Random(7), n), y0 = y.clone();
                k.axpy(s, 0, alpha, y, 0, n);
                for (int i = 0; i < n; i++) {
                    double want = y0[i] + (double) alpha * w[i];
                    assertThat((double) y[i]).as("%s axpy %d", k.getClass(), i).isCloseTo(want, within((double) Math.ulp((float) Math.abs(want)) + Math.ulp(Math.abs(alpha * w[i])) + Float.MIN_VALUE));
                }
            }
        }
    }
}
