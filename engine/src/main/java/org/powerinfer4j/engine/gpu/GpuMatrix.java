package org.powerinfer4j.engine.gpu;

import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * A row-major weight matrix on the device in a ggml layout: {@code rows} rows (neurons, for the FFN's neuron-major
 * matrices) of {@code cols} elements each, {@link #rowBytes()} bytes per row.
 */
public record GpuMatrix(GpuBuffer data, GGMLType type, int rows, int cols) {
    public GpuMatrix {
        GgmlRows.requireSupported(type, cols);
        if (rows < 0) throw new IllegalArgumentException("negative row count " + rows);
        if (data.byteSize() < type.byteSize((long) cols) * rows)
            throw new IllegalArgumentException(rows + "x" + cols + " " + type + " needs " + type.byteSize((long) cols) * rows + " bytes, buffer has " + data.byteSize());
    }

    public long rowBytes() {
        return type.byteSize(cols);
    }
}
