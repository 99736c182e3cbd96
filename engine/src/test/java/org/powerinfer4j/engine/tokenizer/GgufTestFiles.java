package org.powerinfer4j.engine.tokenizer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFValueType;
import org.powerinfer4j.engine.gguf.MetadataValue;

/** Writes tensor-less GGUF v3 files: a real vocabulary's metadata with some keys changed or removed. */
final class GgufTestFiles {
    private GgufTestFiles() {}

    /** Copies {@code source}'s metadata, replacing keys in {@code overrides} (a null value removes the key). */
    static Path withMetadata(Path source, Path target, Map<String, Object> overrides) throws IOException {
        Map<String, Object> kv = new LinkedHashMap<>();
        try (GGUFFile g = GGUFFile.open(source)) {
            g.metadata().forEach((k, v) -> kv.put(k, v));
        }
        overrides.forEach((k, v) -> {
            if (v == null) kv.remove(k);
            else kv.put(k, v);
        });
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes("GGUF".getBytes(StandardCharsets.US_ASCII));
        u32(out, 3);
        u64(out, 0);
        u64(out, kv.size());
        for (Map.Entry<String, Object> e : kv.entrySet()) {
            str(out, e.getKey());
            value(out, e.getValue());
        }
        Files.write(target, out.toByteArray());
        return target;
    }

    private static void value(ByteArrayOutputStream out, Object v) {
        if (v instanceof String s) {
            u32(out, GGUFValueType.STRING.id());
            str(out, s);
        } else if (v instanceof Boolean b) {
            u32(out, GGUFValueType.BOOL.id());
            out.write(b ? 1 : 0);
        } else if (v instanceof Integer i) {
            u32(out, GGUFValueType.INT32.id());
            u32(out, i);
        } else if (v instanceof MetadataValue m) {
            if (!m.isArray()) {
                switch (m.type()) {
                    case STRING -> value(out, m.asString());
                    case BOOL -> value(out, m.asBoolean());
                    case FLOAT32 -> { u32(out, GGUFValueType.FLOAT32.id()); u32(out, Float.floatToRawIntBits((float) m.asDouble())); }
                    case UINT32, INT32 -> { u32(out, m.type().id()); u32(out, (int) m.asLong()); }
                    case UINT64, INT64 -> { u32(out, m.type().id()); u64(out, m.asLong()); }
                    default -> throw new IllegalArgumentException("unsupported scalar " + m.type());
                }
                return;
            }
            u32(out, GGUFValueType.ARRAY.id());
            switch (m.value()) {
                case String[] a -> { u32(out, GGUFValueType.STRING.id()); u64(out, a.length); for (String s : a) str(out, s); }
                case float[] a -> { u32(out, GGUFValueType.FLOAT32.id()); u64(out, a.length); for (float f : a) u32(out, Float.floatToRawIntBits(f)); }
                case int[] a -> { u32(out, m.elementType().id()); u64(out, a.length); for (int i : a) u32(out, i); }
                default -> throw new IllegalArgumentException("unsupported array " + m.elementType());
            }
        } else {
            throw new IllegalArgumentException("unsupported value " + v);
        }
    }

    private static void str(ByteArrayOutputStream out, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        u64(out, b.length);
        out.writeBytes(b);
    }

    private static void u32(ByteArrayOutputStream out, int v) {
        out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array());
    }

    private static void u64(ByteArrayOutputStream out, long v) {
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
    }
}
