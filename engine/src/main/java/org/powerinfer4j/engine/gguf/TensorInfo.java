package org.powerinfer4j.engine.gguf;

import java.util.Arrays;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * A tensor's entry in the GGUF header. {@code offset} is relative to the start of the data section;
 * {@code byteSize} is derived from type and shape.
 */
public record TensorInfo(String name, GGMLType type, long[] ne, long offset, long byteSize) {
    public TensorInfo {
        ne = ne.clone();
    }

    public long elementCount() {
        long n = 1;
        for (long d : ne) n *= d;
        return n;
    }

    @Override
    public String toString() {
        return name + " " + type + " " + Arrays.toString(ne) + " @" + offset + " (" + byteSize + " B)";
    }
}
