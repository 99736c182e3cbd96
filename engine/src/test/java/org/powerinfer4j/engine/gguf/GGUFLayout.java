package org.powerinfer4j.engine.gguf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the header fields of a valid GGUF file lie, so that the fuzzer can write hostile values into counts,
 * lengths, type ids, dimensions and offsets rather than only at random bytes. Walks the format independently
 * of {@link GGUFFile} (a test should not trust the parser it tests).
 */
final class GGUFLayout {
    /** What a field holds; the fuzzer picks hostile values by kind. */
    enum Kind { COUNT, STRING_LENGTH, VALUE_TYPE, VALUE32, VALUE64, N_DIMS, DIM, TENSOR_TYPE, TENSOR_OFFSET }

    record Field(Kind kind, int offset, int width, String name) {}

    final List<Field> fields = new ArrayList<>();
    /** End of the tensor infos: everything before it is header. */
    final int headerEnd;

    private final ByteBuffer b;

    GGUFLayout(byte[] file) {
        b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        b.position(8);
        long tensors = field(Kind.COUNT, 8, "tensor_count");
        long kvs = field(Kind.COUNT, 8, "kv_count");
        for (long i = 0; i < kvs; i++) {
            String key = string("key #" + i);
            int type = (int) field(Kind.VALUE_TYPE, 4, key + " type");
            value(key, type);
        }
        for (long i = 0; i < tensors; i++) {
            String name = string("tensor #" + i);
            int dims = (int) field(Kind.N_DIMS, 4, name + " n_dims");
            for (int d = 0; d < dims; d++) field(Kind.DIM, 8, name + " ne[" + d + "]");
            field(Kind.TENSOR_TYPE, 4, name + " type");
            field(Kind.TENSOR_OFFSET, 8, name + " offset");
        }
        headerEnd = b.position();
    }

    private long field(Kind kind, int width, String name) {
        fields.add(new Field(kind, b.position(), width, name));
        return width == 4 ? Integer.toUnsignedLong(b.getInt()) : b.getLong();
    }

    private String string(String name) {
        int len = (int) field(Kind.STRING_LENGTH, 8, name + " length");
        byte[] s = new byte[len];
        b.get(s);
        return new String(s, java.nio.charset.StandardCharsets.UTF_8);
    }

    private void value(String key, int type) {
        switch (type) {
            case 0, 1, 7 -> b.get();
            case 2, 3 -> b.getShort();
            case 4, 5 -> field(Kind.VALUE32, 4, key);
            case 6 -> b.getFloat();
            case 8 -> string(key);
            case 9 -> {
                int et = (int) field(Kind.VALUE_TYPE, 4, key + " element type");
                long n = field(Kind.COUNT, 8, key + " length");
                // record only the first few elements' fields: a 32k-token vocabulary would drown the rest
                int before = fields.size();
                for (long i = 0; i < n; i++) {
                    value(key + "[" + i + "]", et);
                    if (i >= 4) while (fields.size() > before + 8) fields.removeLast();
                }
            }
            case 10, 11 -> field(Kind.VALUE64, 8, key);
            case 12 -> b.getDouble();
            default -> throw new IllegalArgumentException("seed file has unknown value type " + type);
        }
    }
}
