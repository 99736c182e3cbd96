package org.powerinfer4j.bindings.cuda;

/** Grid or block dimensions of a kernel launch; every component at least 1. */
public record Dim3(int x, int y, int z) {
    public Dim3 {
        if (x < 1 || y < 1 || z < 1) throw new IllegalArgumentException("launch dimensions must be positive: " + x + "x" + y + "x" + z);
    }

    public static Dim3 of(int x) {
        return new Dim3(x, 1, 1);
    }

    public static Dim3 of(int x, int y) {
        return new Dim3(x, y, 1);
    }
}
