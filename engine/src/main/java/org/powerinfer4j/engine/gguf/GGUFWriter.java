package org.powerinfer4j.engine.gguf;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Writes GGUF v3 files (magic {@code GGUF} or PowerInfer's {@code PWRI}) in the layout of ggml's own writer:
 * header, metadata in insertion order, tensor infos in insertion order, zero padding to the alignment, then
 * each tensor's data followed by zero padding to the alignment (a file without tensors ends after its
 * tensor-info section, unpadded, as llama.cpp's vocab-only files do). Tensor offsets are assigned the same way
 * ggml does (each tensor starts at the previous offset plus its size padded to the alignment), so a file
 * re-written from a parsed llama.cpp file is byte-identical.
 *
 * <p>Tensor data is not held by the writer: it comes from a {@link MemorySegment} (a mapped file, say) or
 * from a {@link TensorData} callback invoked once, in file order, while the file is written, so files of
 * many GB are written with bounded heap.
 *
 * <p>The alignment is {@code general.alignment} when that key is set (u32), otherwise 32.
 */
public final class GGUFWriter {
    public static final int VERSION = 3;
    public static final String ALIGNMENT_KEY = "general.alignment";
    private static final int MAX_DIMS = 4;

    /** Produces one tensor's bytes. It must write exactly the tensor's byte size to {@code out}. */
    @FunctionalInterface
    public interface TensorData {
        void writeTo(TensorOutput out) throws IOException;
    }

    /** The sink a {@link TensorData} callback writes into; writes go straight to the file. */
    public interface TensorOutput {
        void write(ByteBuffer src) throws IOException;

        default void write(MemorySegment src) throws IOException {
            if (src.isNative() || src.heapBase().orElse(null) instanceof byte[]) {
                // asByteBuffer is limited to 2 GiB, so larger segments go in slices
                final long chunk = 1L << 30;
                for (long off = 0; off < src.byteSize(); off += chunk)
                    write(src.asSlice(off, Math.min(chunk, src.byteSize() - off)).asByteBuffer());
            } else {
                // heap segments over float[], short[], ... have no ByteBuffer view: copy through a byte buffer
                byte[] buf = new byte[(int) Math.min(1 << 16, src.byteSize())];
                MemorySegment bufSeg = MemorySegment.ofArray(buf);
                for (long off = 0; off < src.byteSize(); off += buf.length) {
                    int n = (int) Math.min(buf.length, src.byteSize() - off);
                    MemorySegment.copy(src, off, bufSeg, 0, n);
                    write(ByteBuffer.wrap(buf, 0, n));
                }
            }
        }

        default void write(byte[] src, int offset, int length) throws IOException {
            write(ByteBuffer.wrap(src, offset, length));
        }
    }

    private record PendingTensor(String name, GGMLType type, long[] ne, long byteSize, TensorData data) {}

    private int magic = GGUFFile.MAGIC_GGUF;
    private final Map<String, MetadataValue> metadata = new LinkedHashMap<>();
    private final Map<String, PendingTensor> tensors = new LinkedHashMap<>();

    /** Selects the magic: {@link GGUFFile#MAGIC_GGUF} (default) or {@link GGUFFile#MAGIC_PWRI}. */
    public GGUFWriter magic(int magic) {
        if (magic != GGUFFile.MAGIC_GGUF && magic != GGUFFile.MAGIC_PWRI)
            throw new IllegalArgumentException("magic must be GGUF or PWRI, is 0x" + Integer.toHexString(magic));
        this.magic = magic;
        return this;
    }

    /** Sets {@code general.alignment} (a power of two). */
    public GGUFWriter alignment(int alignment) {
        if (alignment <= 0 || Integer.bitCount(alignment) != 1 || alignment > (1 << 20))
            throw new IllegalArgumentException("alignment must be a power of two up to 1 MiB, is " + alignment);
        return put(ALIGNMENT_KEY, MetadataValue.of(GGUFValueType.UINT32, alignment));
    }

    /** The alignment the file will use. */
    public int alignment() {
        MetadataValue v = metadata.get(ALIGNMENT_KEY);
        return v == null ? GGUFFile.DEFAULT_ALIGNMENT : (int) v.asLong();
    }

    /**
     * Adds (or replaces, keeping its position) a metadata value, in the representation {@link GGUFFile} reads:
     * scalars boxed ({@code UINT32} as an Integer with the raw bits), arrays as primitive arrays,
     * {@code String[]} or {@code MetadataValue[]} (nested arrays).
     */
    public GGUFWriter put(String key, MetadataValue value) {
        Objects.requireNonNull(key, "key");
        validate(key, value, 0);
        if (key.equals(ALIGNMENT_KEY)) {
            if (value.type() != GGUFValueType.UINT32) throw new IllegalArgumentException(ALIGNMENT_KEY + " must be UINT32");
            long a = value.asLong();
            if (a <= 0 || Long.bitCount(a) != 1 || a > (1 << 20))
                throw new IllegalArgumentException("alignment must be a power of two up to 1 MiB, is " + a);
        }
        metadata.put(key, value);
        return this;
    }

    public GGUFWriter putString(String key, String value) {
        return put(key, MetadataValue.of(GGUFValueType.STRING, Objects.requireNonNull(value)));
    }

    public GGUFWriter putUInt8(String key, byte value) {
        return put(key, MetadataValue.of(GGUFValueType.UINT8, value));
    }

    public GGUFWriter putInt8(String key, byte value) {
        return put(key, MetadataValue.of(GGUFValueType.INT8, value));
    }

    public GGUFWriter putUInt16(String key, short value) {
        return put(key, MetadataValue.of(GGUFValueType.UINT16, value));
    }

    public GGUFWriter putInt16(String key, short value) {
        return put(key, MetadataValue.of(GGUFValueType.INT16, value));
    }

    /** An unsigned 32-bit value given as its raw bits. */
    public GGUFWriter putUInt32(String key, int value) {
        return put(key, MetadataValue.of(GGUFValueType.UINT32, value));
    }

    public GGUFWriter putInt32(String key, int value) {
        return put(key, MetadataValue.of(GGUFValueType.INT32, value));
    }

    /** An unsigned 64-bit value given as its raw bits. */
    public GGUFWriter putUInt64(String key, long value) {
        return put(key, MetadataValue.of(GGUFValueType.UINT64, value));
    }

    public GGUFWriter putInt64(String key, long value) {
        return put(key, MetadataValue.of(GGUFValueType.INT64, value));
    }

    public GGUFWriter putFloat32(String key, float value) {
        return put(key, MetadataValue.of(GGUFValueType.FLOAT32, value));
    }

    public GGUFWriter putFloat64(String key, double value) {
        return put(key, MetadataValue.of(GGUFValueType.FLOAT64, value));
    }

    public GGUFWriter putBool(String key, boolean value) {
        return put(key, MetadataValue.of(GGUFValueType.BOOL, value));
    }

    /** An array: {@code array} is {@code byte[]}, {@code short[]}, ..., {@code String[]} or {@code MetadataValue[]}. */
    public GGUFWriter putArray(String key, GGUFValueType elementType, Object array) {
        return put(key, MetadataValue.array(elementType, array));
    }

    /** Copies every metadata value of {@code file} whose key passes {@code filter}, in file order. */
    public GGUFWriter putAll(GGUFFile file, java.util.function.Predicate<String> filter) {
        file.metadata().forEach((k, v) -> {
            if (filter.test(k)) put(k, v);
        });
        return this;
    }

    public Map<String, MetadataValue> metadata() {
        return java.util.Collections.unmodifiableMap(metadata);
    }

    /** Adds a tensor whose bytes are {@code data} (its size must match type and shape); read when the file is written. */
    public GGUFWriter addTensor(String name, GGMLType type, long[] ne, MemorySegment data) {
        long size = checkedByteSize(name, type, ne);
        if (data.byteSize() != size)
            throw new IllegalArgumentException("tensor '" + name + "': data has " + data.byteSize() + " bytes, " + type + " "
                    + java.util.Arrays.toString(ne) + " needs " + size);
        return add(new PendingTensor(name, type, ne.clone(), size, out -> out.write(data)));
    }

    /** Adds a tensor whose bytes {@code data} produces, once, while the file is written. */
    public GGUFWriter addTensor(String name, GGMLType type, long[] ne, TensorData data) {
        long size = checkedByteSize(name, type, ne);
        return add(new PendingTensor(name, type, ne.clone(), size, Objects.requireNonNull(data)));
    }

    private GGUFWriter add(PendingTensor t) {
        if (tensors.containsKey(t.name)) throw new IllegalArgumentException("duplicate tensor '" + t.name + "'");
        tensors.put(t.name, t);
        return this;
    }

    private static long checkedByteSize(String name, GGMLType type, long[] ne) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        if (ne.length < 1 || ne.length > MAX_DIMS)
            throw new IllegalArgumentException("tensor '" + name + "': 1.." + MAX_DIMS + " dimensions, got " + ne.length);
        long n = 1;
        for (long d : ne) {
            if (d < 0) throw new IllegalArgumentException("tensor '" + name + "': negative dimension " + d);
            n = Math.multiplyExact(n, d);
        }
        if (ne[0] % type.blockSize != 0)
            throw new IllegalArgumentException("tensor '" + name + "': row length " + ne[0] + " is not a multiple of the "
                    + type + " block size " + type.blockSize);
        return type.byteSize(n);
    }

    /** Total file size the current contents will produce. */
    public long fileSize() {
        int align = alignment();
        long header = headerBytes().length;
        long size = tensors.isEmpty() ? header : align(header, align);
        for (PendingTensor t : tensors.values()) size += align(t.byteSize, align);
        return size;
    }

    /**
     * Writes the file (replacing any existing one). A failure leaves no partial file behind.
     */
    public void write(Path path) throws IOException {
        boolean done = false;
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            write(ch);
            done = true;
        } finally {
            if (!done) Files.deleteIfExists(path);
        }
    }

    /** Writes the file to {@code ch} from its current position. */
    public void write(FileChannel ch) throws IOException {
        int align = alignment();
        byte[] header = headerBytes();
        writeFully(ch, ByteBuffer.wrap(header));
        // ggml pads the header only when a data section follows (vocab-only files end unpadded)
        if (!tensors.isEmpty()) writePadding(ch, header.length, align);
        for (PendingTensor t : tensors.values()) {
            CountingOutput out = new CountingOutput(ch, t);
            t.data.writeTo(out);
            if (out.written != t.byteSize)
                throw new IllegalStateException("tensor '" + t.name + "': data source wrote " + out.written + " of " + t.byteSize + " bytes");
            writePadding(ch, t.byteSize, align);
        }
    }

    private static final class CountingOutput implements TensorOutput {
        private final FileChannel ch;
        private final PendingTensor t;
        long written;

        CountingOutput(FileChannel ch, PendingTensor t) {
            this.ch = ch;
            this.t = t;
        }

        @Override
        public void write(ByteBuffer src) throws IOException {
            if (written + src.remaining() > t.byteSize)
                throw new IllegalStateException("tensor '" + t.name + "': data source writes more than its " + t.byteSize + " bytes");
            written += src.remaining();
            writeFully(ch, src);
        }
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) ch.write(b);
    }

    private static void writePadding(FileChannel ch, long size, int align) throws IOException {
        int pad = (int) (align(size, align) - size);
        if (pad > 0) writeFully(ch, ByteBuffer.allocate(pad));
    }

    static long align(long v, int alignment) {
        return (v + alignment - 1) / alignment * alignment;
    }

    /** Header, metadata and tensor infos, unpadded. */
    byte[] headerBytes() {
        int align = alignment();
        Buf b = new Buf();
        b.i32(magic);
        b.i32(VERSION);
        b.i64(tensors.size());
        b.i64(metadata.size());
        for (Map.Entry<String, MetadataValue> e : metadata.entrySet()) {
            b.str(e.getKey());
            b.i32(e.getValue().type().id());
            writeValue(b, e.getValue());
        }
        long offset = 0;
        for (PendingTensor t : tensors.values()) {
            b.str(t.name);
            b.i32(t.ne.length);
            for (long d : t.ne) b.i64(d);
            // PWRI: PowerInfer's numbering (I32 is 18 there, and its gpuidx loader accepts only that)
            b.i32(magic == GGUFFile.MAGIC_PWRI ? t.type.powerInferId() : t.type.id);
            b.i64(offset);
            offset += align(t.byteSize, align);
        }
        return b.toArray();
    }

    private static void writeValue(Buf b, MetadataValue v) {
        switch (v.type()) {
            case UINT8, INT8 -> b.i8(((Number) v.value()).byteValue());
            case UINT16, INT16 -> b.i16(((Number) v.value()).shortValue());
            case UINT32, INT32 -> b.i32(((Number) v.value()).intValue());
            case UINT64, INT64 -> b.i64(((Number) v.value()).longValue());
            case FLOAT32 -> b.i32(Float.floatToRawIntBits(((Number) v.value()).floatValue()));
            case FLOAT64 -> b.i64(Double.doubleToRawLongBits(((Number) v.value()).doubleValue()));
            case BOOL -> b.i8((byte) ((Boolean) v.value() ? 1 : 0));
            case STRING -> b.str((String) v.value());
            case ARRAY -> writeArray(b, v);
        }
    }

    private static void writeArray(Buf b, MetadataValue v) {
        GGUFValueType et = v.elementType();
        b.i32(et.id());
        Object a = v.value();
        switch (et) {
            case UINT8, INT8 -> { byte[] x = (byte[]) a; b.i64(x.length); b.bytes(x); }
            case BOOL -> { boolean[] x = (boolean[]) a; b.i64(x.length); for (boolean z : x) b.i8((byte) (z ? 1 : 0)); }
            case UINT16, INT16 -> { short[] x = (short[]) a; b.i64(x.length); for (short s : x) b.i16(s); }
            case UINT32, INT32 -> { int[] x = (int[]) a; b.i64(x.length); for (int i : x) b.i32(i); }
            case FLOAT32 -> { float[] x = (float[]) a; b.i64(x.length); for (float f : x) b.i32(Float.floatToRawIntBits(f)); }
            case UINT64, INT64 -> { long[] x = (long[]) a; b.i64(x.length); for (long l : x) b.i64(l); }
            case FLOAT64 -> { double[] x = (double[]) a; b.i64(x.length); for (double d : x) b.i64(Double.doubleToRawLongBits(d)); }
            case STRING -> { String[] x = (String[]) a; b.i64(x.length); for (String s : x) b.str(s); }
            case ARRAY -> { MetadataValue[] x = (MetadataValue[]) a; b.i64(x.length); for (MetadataValue m : x) writeArray(b, m); }
        }
    }

    /** Rejects values the file format cannot represent before anything is written. */
    private static void validate(String key, MetadataValue v, int depth) {
        Objects.requireNonNull(v, "value of " + key);
        Objects.requireNonNull(v.type(), "type of " + key);
        if (depth > 0 && !v.isArray()) throw new IllegalArgumentException(key + ": elements of a nested array must be arrays");
        Object x = v.value();
        if (x == null) throw new IllegalArgumentException(key + ": null value");
        boolean ok = switch (v.type()) {
            case UINT8, INT8 -> x instanceof Byte;
            case UINT16, INT16 -> x instanceof Short;
            case UINT32, INT32 -> x instanceof Integer;
            case UINT64, INT64 -> x instanceof Long;
            case FLOAT32 -> x instanceof Float;
            case FLOAT64 -> x instanceof Double;
            case BOOL -> x instanceof Boolean;
            case STRING -> x instanceof String;
            case ARRAY -> v.elementType() != null && switch (v.elementType()) {
                case UINT8, INT8 -> x instanceof byte[];
                case BOOL -> x instanceof boolean[];
                case UINT16, INT16 -> x instanceof short[];
                case UINT32, INT32 -> x instanceof int[];
                case FLOAT32 -> x instanceof float[];
                case UINT64, INT64 -> x instanceof long[];
                case FLOAT64 -> x instanceof double[];
                case STRING -> x instanceof String[] s && java.util.Arrays.stream(s).allMatch(Objects::nonNull);
                case ARRAY -> x instanceof MetadataValue[];
            };
        };
        if (!ok) throw new IllegalArgumentException(key + ": " + x.getClass().getSimpleName() + " does not represent "
                + v.type() + (v.isArray() ? " of " + v.elementType() : ""));
        if (v.isArray() && v.elementType() == GGUFValueType.ARRAY)
            for (MetadataValue m : (MetadataValue[]) x) validate(key + "[]", m, depth + 1);
    }

    /** Little-endian growable byte buffer for the header. */
    private static final class Buf {
        private ByteBuffer bb = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);

        private void ensure(int n) {
            if (bb.remaining() >= n) return;
            long cap = Math.max((long) bb.capacity() * 2, (long) bb.position() + n);
            if (cap > Integer.MAX_VALUE - 16) throw new IllegalStateException("GGUF header larger than 2 GiB");
            ByteBuffer nb = ByteBuffer.allocate((int) cap).order(ByteOrder.LITTLE_ENDIAN);
            bb.flip();
            nb.put(bb);
            bb = nb;
        }

        void i8(byte v) { ensure(1); bb.put(v); }
        void i16(short v) { ensure(2); bb.putShort(v); }
        void i32(int v) { ensure(4); bb.putInt(v); }
        void i64(long v) { ensure(8); bb.putLong(v); }
        void bytes(byte[] v) { ensure(v.length); bb.put(v); }

        void str(String s) {
            byte[] u = s.getBytes(StandardCharsets.UTF_8);
            i64(u.length);
            bytes(u);
        }

        byte[] toArray() {
            byte[] out = new byte[bb.position()];
            bb.flip();
            bb.get(out);
            return out;
        }
    }

    /** Names of the tensors added so far, in file order. */
    public List<String> tensorNames() {
        return new ArrayList<>(tensors.keySet());
    }
}
