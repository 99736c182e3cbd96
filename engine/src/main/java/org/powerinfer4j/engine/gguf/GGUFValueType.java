package org.powerinfer4j.engine.gguf;

/** Metadata value types, numbered as in the GGUF specification ({@code gguf_type}). */
public enum GGUFValueType {
    UINT8(1), INT8(1), UINT16(2), INT16(2), UINT32(4), INT32(4), FLOAT32(4), BOOL(1), STRING(8), ARRAY(12),
    UINT64(8), INT64(8), FLOAT64(8);

    /** The fewest bytes one value of this type can occupy (used to bound counts before allocating). */
    final int minBytes;

    GGUFValueType(int minBytes) {
        this.minBytes = minBytes;
    }

    static GGUFValueType byId(long id) {
        GGUFValueType[] v = values();
        return id >= 0 && id < v.length ? v[(int) id] : null;
    }

    public int id() {
        return ordinal();
    }
}
