package org.powerinfer4j.engine.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.powerinfer4j.engine.tensor.GGMLType;

public final class Kernels {
    private Kernels() {}
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort S = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public static RowKernel forType(GGMLType t) {
        return switch (t) {
            case F32 -> new RowKernel() {
                public GGMLType type() { return t; }
                public void dequantize(MemorySegment s, long o, float[] d, int dOff, int n) { for (int i = 0; i < n; i++) d[dOff + i] = s.get(F, o + 4L * i); }
                public float dot(MemorySegment s, long o, float[] x, int xOff, int n) { float acc = 0; for (int i = 0; i < n; i++) acc += s.get(F, o + 4L * i) * x[xOff + i]; return acc; }
            };
            case F16 -> new RowKernel() {
                public GGMLType type() { return t; }
                public void dequantize(MemorySegment s, long o, float[] d, int dOff, int n) { for (int i = 0; i < n; i++) d[dOff + i] = Float.float16ToFloat(s.get(S, o + 2L * i)); }
                public float dot(MemorySegment s, long o, float[] x, int xOff, int n) { float acc = 0; for (int i = 0; i < n; i++) acc += Float.float16ToFloat(s.get(S, o + 2L * i)) * x[xOff + i]; return acc; }
            };
            default -> throw new IllegalArgumentException("no kernels for " + t);
        };
    }
}
