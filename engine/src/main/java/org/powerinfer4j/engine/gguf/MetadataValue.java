package org.powerinfer4j.engine.gguf;

import java.lang.reflect.Array;

/**
 * One metadata value. Scalars are boxed ({@code UINT32} as Integer holding the raw bits, read with
 * {@link #asLong()} for the unsigned value); arrays of numbers are primitive arrays ({@code int[]},
 * {@code float[]}, ...), arrays of strings {@code String[]}, and nested arrays {@code MetadataValue[]}.
 */
public record MetadataValue(GGUFValueType type, GGUFValueType elementType, Object value) {

    public static MetadataValue of(GGUFValueType type, Object value) {
        return new MetadataValue(type, null, value);
    }

    public static MetadataValue array(GGUFValueType elementType, Object array) {
        return new MetadataValue(GGUFValueType.ARRAY, elementType, array);
    }

    public boolean isArray() {
        return type == GGUFValueType.ARRAY;
    }

    public int arrayLength() {
        return Array.getLength(value);
    }

    /** Integer value, unsigned types widened without sign. */
    public long asLong() {
        return switch (type) {
            case UINT8 -> ((Number) value).longValue() & 0xFF;
            case UINT16 -> ((Number) value).longValue() & 0xFFFF;
            case UINT32 -> ((Number) value).longValue() & 0xFFFF_FFFFL;
            case INT8, INT16, INT32, INT64, UINT64 -> ((Number) value).longValue();
            case FLOAT32, FLOAT64 -> (long) ((Number) value).doubleValue();
            case BOOL -> (Boolean) value ? 1 : 0;
            default -> throw new IllegalStateException("not a number: " + type);
        };
    }

    public double asDouble() {
        return switch (type) {
            case FLOAT32, FLOAT64 -> ((Number) value).doubleValue();
            default -> asLong();
        };
    }

    public String asString() {
        if (type != GGUFValueType.STRING) throw new IllegalStateException("not a string: " + type);
        return (String) value;
    }

    public boolean asBoolean() {
        return type == GGUFValueType.BOOL ? (Boolean) value : asLong() != 0;
    }

    /** Short human-readable form: arrays longer than {@code maxItems} are summarised. */
    public String display(int maxItems) {
        if (!isArray()) return switch (type) {
            case STRING -> quote((String) value);
            case UINT8, UINT16, UINT32 -> String.valueOf(asLong());
            case UINT64 -> Long.toUnsignedString((Long) value);
            default -> String.valueOf(value);
        };
        int n = arrayLength();
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < Math.min(n, maxItems); i++) {
            if (i > 0) sb.append(", ");
            Object e = Array.get(value, i);
            sb.append(e instanceof String s ? quote(s) : e instanceof MetadataValue m ? m.display(maxItems) : String.valueOf(e));
        }
        if (n > maxItems) sb.append(", ... (").append(n).append(" ").append(elementType.name().toLowerCase()).append(" values)");
        return sb.append("]").toString();
    }

    private static String quote(String s) {
        String shown = s.length() > 80 ? s.substring(0, 77) + "..." : s;
        return '"' + shown.replace("\\", "\\\\").replace("\n", "\\n").replace("\"", "\\\"") + '"';
    }
}
