package org.powerinfer4j.engine.gguf;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * A memory-mapped GGUF (or PowerInfer {@code PWRI}) file.
 *
 * <pre>
 * file   := magic "GGUF"|"PWRI" (4) · version u32 (2|3) · tensor_count u64 · kv_count u64
 *           · kv[kv_count] · tensor_info[tensor_count] · padding to general.alignment · data
 * kv     := key string · value_type u32 · value
 * string := length u64 · UTF-8 bytes
 * array  := element_type u32 · count u64 · elements
 * tensor_info := name string · n_dims u32 · ne u64[n_dims] · type u32 · offset u64 (relative to data)
 * </pre>
 *
 * The whole file is mapped once into a shared {@link Arena}; tensors are slices of that mapping, so opening
 * costs only the header parse and weights never reach the Java heap. {@link #close()} unmaps the file.
 * Every count, length and offset is checked against the bytes that remain before it is used.
 */
public final class GGUFFile implements AutoCloseable {
    public static final int MAGIC_GGUF = 0x46554747; // "GGUF" little-endian
    public static final int MAGIC_PWRI = 0x49525750; // "PWRI" little-endian
    public static final int DEFAULT_ALIGNMENT = 32;
    private static final int MAX_DIMS = 4;
    private static final int MAX_ARRAY_NESTING = 8;

    private final Path path;
    /** Kept open: its size is the mapped file's own (the same inode even after the path is renamed over). */
    private final FileChannel channel;
    private final Arena arena;
    private final MemorySegment file;
    private final int magic;
    private final int version;
    private final Map<String, MetadataValue> metadata;
    private final Map<String, TensorInfo> tensors;
    private final int alignment;
    private final long dataOffset;

    private GGUFFile(Path path, FileChannel channel, Arena arena, MemorySegment file, int magic, int version,
                     Map<String, MetadataValue> metadata, Map<String, TensorInfo> tensors, int alignment, long dataOffset) {
        this.path = path;
        this.channel = channel;
        this.arena = arena;
        this.file = file;
        this.magic = magic;
        this.version = version;
        this.metadata = metadata;
        this.tensors = tensors;
        this.alignment = alignment;
        this.dataOffset = dataOffset;
    }

    /** Maps and parses {@code path}. Throws {@link GGUFFormatException} for malformed files. */
    public static GGUFFile open(Path path) throws IOException {
        // mapping a directory fails with the OS's "No such device"; say what is wrong instead
        if (java.nio.file.Files.isDirectory(path)) throw new IOException(path + " is a directory, not a GGUF file");
        Arena arena = Arena.ofShared();
        FileChannel ch;
        try {
            ch = FileChannel.open(path, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            arena.close();
            throw new NoSuchFileException(path.toString(), null, "no such file");
        }
        try {
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
            return new Parser(path, seg).parse(ch, arena);
        } catch (IOException | RuntimeException e) {
            arena.close();
            ch.close();
            throw e;
        }
    }

    public Path path() {
        return path;
    }

    /** True for PowerInfer sparse files (magic {@code PWRI}). */
    public boolean isPowerInfer() {
        return magic == MAGIC_PWRI;
    }

    public String magicString() {
        return magic == MAGIC_PWRI ? "PWRI" : "GGUF";
    }

    public int version() {
        return version;
    }

    public int alignment() {
        return alignment;
    }

    /** Absolute file offset of the tensor data section. */
    public long dataOffset() {
        return dataOffset;
    }

    public long fileSize() {
        return file.byteSize();
    }

    /** All metadata in file order. */
    public Map<String, MetadataValue> metadata() {
        return metadata;
    }

    /** Tensor infos in file order. */
    public List<TensorInfo> tensorInfos() {
        return List.copyOf(tensors.values());
    }

    public boolean hasTensor(String name) {
        return tensors.containsKey(name);
    }

    public TensorInfo tensorInfo(String name) {
        return tensors.get(name);
    }

    /** The named tensor as a slice of the mapping, or {@code null} when the file has none of that name. */
    public Tensor tensorOrNull(String name) {
        TensorInfo ti = tensors.get(name);
        if (ti == null) return null;
        return new Tensor(name, ti.type(), ti.ne(), file.asSlice(dataOffset + ti.offset(), ti.byteSize()));
    }

    /** The named tensor; a missing tensor is a format error naming it. */
    public Tensor tensor(String name) throws GGUFFormatException {
        Tensor t = tensorOrNull(name);
        if (t == null) throw new GGUFFormatException(path, "tensor '" + name + "'", dataOffset, "missing from file");
        return t;
    }

    public MetadataValue get(String key) {
        return metadata.get(key);
    }

    public boolean has(String key) {
        return metadata.containsKey(key);
    }

    public String getString(String key, String defaultValue) {
        MetadataValue v = metadata.get(key);
        return v != null && v.type() == GGUFValueType.STRING ? v.asString() : defaultValue;
    }

    public long getLong(String key, long defaultValue) {
        MetadataValue v = metadata.get(key);
        if (v == null || v.isArray() || v.type() == GGUFValueType.STRING) return defaultValue;
        return v.asLong();
    }

    public int getInt(String key, int defaultValue) {
        long v = getLong(key, defaultValue);
        return v > Integer.MAX_VALUE || v < Integer.MIN_VALUE ? defaultValue : (int) v;
    }

    public float getFloat(String key, float defaultValue) {
        MetadataValue v = metadata.get(key);
        if (v == null || v.isArray() || v.type() == GGUFValueType.STRING) return defaultValue;
        return (float) v.asDouble();
    }

    public boolean getBoolean(String key, boolean defaultValue) {
        MetadataValue v = metadata.get(key);
        if (v == null || v.isArray() || v.type() == GGUFValueType.STRING) return defaultValue;
        return v.asBoolean();
    }

    /** An array value of the given Java array class ({@code String[].class}, {@code float[].class}, ...), or null. */
    public <T> T getArray(String key, Class<T> arrayClass) {
        MetadataValue v = metadata.get(key);
        if (v == null || !v.isArray() || !arrayClass.isInstance(v.value())) return null;
        return arrayClass.cast(v.value());
    }

    /** The mapping of the whole file (read-only). */
    public MemorySegment segment() {
        return file;
    }

    /**
     * The file's size on disk now, when it is smaller than the mapping (someone truncated or rewrote it in place since
     * it was opened), else -1. Reading a mapped page past the new end faults (SIGBUS): scalar reads of the mapping
     * then throw an {@link InternalError}, but the Vector API's compiled loads crash the JVM, so callers check this
     * before a pass over the weights. One {@code fstat}; a file replaced by renaming a new one over its path is
     * not affected (the mapping keeps the old file).
     */
    public long shrunkTo() {
        try {
            long now = channel.size();
            return now < file.byteSize() ? now : -1;
        } catch (IOException e) {
            return -1;   // closed: the caller's own closed check reports that
        }
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) arena.close();
        try {
            channel.close();
        } catch (IOException e) {
            // read-only: nothing was buffered to lose
        }
    }

    /** Reads the header with bounds checks on every step. */
    private static final class Parser {
        private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

        private final Path path;
        private final MemorySegment seg;
        private final long size;
        private long pos;

        Parser(Path path, MemorySegment seg) {
            this.path = path;
            this.seg = seg;
            this.size = seg.byteSize();
        }

        GGUFFormatException error(String field, long at, String problem) {
            return new GGUFFormatException(path, field, at, problem);
        }

        private long remaining() {
            return size - pos;
        }

        private void need(long n, String field) throws GGUFFormatException {
            if (n < 0 || n > remaining())
                throw error(field, pos, "needs " + (n < 0 ? "an impossible number of" : String.valueOf(n)) + " bytes but only "
                        + remaining() + " remain (file truncated or corrupt)");
        }

        private int u32(String field) throws GGUFFormatException {
            need(4, field);
            int v = seg.get(I32, pos);
            pos += 4;
            return v;
        }

        private long u64(String field) throws GGUFFormatException {
            need(8, field);
            long v = seg.get(I64, pos);
            pos += 8;
            return v;
        }

        /** A u64 count that must fit the remaining bytes at {@code minBytesEach} per item. */
        private long count(String field, long minBytesEach) throws GGUFFormatException {
            long at = pos;
            long n = u64(field);
            if (n < 0 || (minBytesEach > 0 && n > remaining() / minBytesEach))
                throw error(field, at, "count " + Long.toUnsignedString(n) + " cannot fit in the " + remaining() + " remaining bytes");
            return n;
        }

        private String string(String field) throws GGUFFormatException {
            long len = count(field + " (string length)", 1);
            if (len > Integer.MAX_VALUE - 16) throw error(field, pos - 8, "string of " + len + " bytes is too long");
            byte[] b = seg.asSlice(pos, len).toArray(ValueLayout.JAVA_BYTE);
            pos += len;
            return new String(b, StandardCharsets.UTF_8);
        }

        GGUFFile parse(FileChannel channel, Arena arena) throws GGUFFormatException {
            need(4, "magic");
            int magic = seg.get(I32, 0);
            if (magic != MAGIC_GGUF && magic != MAGIC_PWRI)
                throw error("magic", 0, "not a GGUF file (expected 'GGUF' or 'PWRI', found " + printable(magic) + ")");
            pos = 4;
            long vAt = pos;
            int version = u32("version");
            if (version == 1) throw error("version", vAt, "GGUF v1 is not supported (only v2 and v3); re-convert the model");
            if (version != 2 && version != 3) {
                if (Integer.reverseBytes(version) == 2 || Integer.reverseBytes(version) == 3)
                    throw error("version", vAt, "big-endian GGUF is not supported");
                throw error("version", vAt, "unsupported version " + Integer.toUnsignedString(version));
            }
            // minimum on-disk sizes: tensor info = name len (8) + n_dims (4) + one dim (8) + type (4) + offset (8)
            long tensorCount = count("tensor_count", 32);
            long kvCount = count("metadata_kv_count", 8 + 4 + 1);

            Map<String, MetadataValue> metadata = new LinkedHashMap<>();
            long alignmentAt = -1;
            for (long i = 0; i < kvCount; i++) {
                long keyAt = pos;
                String key = string("metadata key #" + i);
                if (metadata.containsKey(key)) throw error("metadata key '" + key + "'", keyAt, "duplicate key");
                long typeAt = pos;
                int typeId = u32("type of '" + key + "'");
                GGUFValueType type = GGUFValueType.byId(Integer.toUnsignedLong(typeId));
                if (type == null) throw error("type of '" + key + "'", typeAt, "unknown value type " + Integer.toUnsignedString(typeId));
                if (key.equals("general.alignment")) alignmentAt = pos;
                metadata.put(key, value(key, type, 0));
            }

            int alignment = DEFAULT_ALIGNMENT;
            MetadataValue al = metadata.get("general.alignment");
            if (al != null) {
                if (al.type() != GGUFValueType.UINT32) // llama.cpp accepts only u32 here
                    throw error("general.alignment", alignmentAt, "must be a u32, is " + al.type());
                long a = al.asLong();
                if (a <= 0 || Long.bitCount(a) != 1 || a > (1 << 20))
                    throw error("general.alignment", alignmentAt, "must be a power of two between 1 and 1 MiB, is " + a);
                alignment = (int) a;
            }

            Map<String, TensorInfo> tensors = new LinkedHashMap<>();
            Map<String, Long> offsetFieldAt = new java.util.HashMap<>();
            for (long i = 0; i < tensorCount; i++) {
                long infoAt = pos;
                String name = string("tensor #" + i + " name");
                String f = "tensor '" + name + "'";
                if (tensors.containsKey(name)) throw error(f, infoAt, "duplicate tensor name");
                long dimsAt = pos;
                int nDims = u32(f + " n_dims");
                if (nDims < 1 || nDims > MAX_DIMS) throw error(f + " n_dims", dimsAt, "must be 1.." + MAX_DIMS + ", is " + Integer.toUnsignedString(nDims));
                long[] ne = new long[nDims];
                long elements = 1;
                for (int d = 0; d < nDims; d++) {
                    long at = pos;
                    ne[d] = u64(f + " ne[" + d + "]");
                    if (ne[d] < 0 || ne[d] > (1L << 40)) throw error(f + " ne[" + d + "]", at, "dimension " + Long.toUnsignedString(ne[d]) + " is out of range");
                    try {
                        elements = Math.multiplyExact(elements, ne[d]);
                    } catch (ArithmeticException e) {
                        throw error(f + " shape", dimsAt, "element count overflows");
                    }
                }
                if (elements > (1L << 48)) throw error(f + " shape", dimsAt, "element count " + elements + " is not sane");
                long typeAt = pos;
                int typeId = u32(f + " type");
                // PowerInfer's files number I8/I16/I32 as its ggml does (16..18, see GGMLType.byPowerInferId)
                GGMLType type = magic == MAGIC_PWRI ? GGMLType.byPowerInferId(Integer.toUnsignedLong(typeId)) : GGMLType.byId(Integer.toUnsignedLong(typeId));
                if (type == null) throw error(f + " type", typeAt, "unknown tensor type id " + Integer.toUnsignedString(typeId));
                if (ne[0] % type.blockSize != 0)
                    throw error(f + " ne[0]", dimsAt + 4, "row length " + ne[0] + " is not a multiple of the " + type + " block size " + type.blockSize);
                long offAt = pos;
                long offset = u64(f + " offset");
                if (offset < 0 || offset % alignment != 0)
                    throw error(f + " offset", offAt, "offset " + Long.toUnsignedString(offset) + " is not a multiple of the alignment " + alignment);
                long bytes = Math.multiplyExact(elements / type.blockSize, (long) type.typeSize);
                tensors.put(name, new TensorInfo(name, type, ne, offset, bytes));
                offsetFieldAt.put(name, offAt);
            }

            long dataOffset = alignUp(pos, alignment);
            if (tensorCount > 0) {
                if (dataOffset > size) throw error("tensor data", pos, "file ends before the data section at " + dataOffset);
                long dataSize = size - dataOffset;
                for (TensorInfo ti : tensors.values()) {
                    if (ti.offset() > dataSize || ti.byteSize() > dataSize - ti.offset())
                        throw error("tensor '" + ti.name() + "' offset", offsetFieldAt.get(ti.name()),
                                ti.byteSize() + " bytes at data offset " + ti.offset() + " run past the end of the file (data section is " + dataSize + " bytes)");
                }
            }
            return new GGUFFile(path, channel, arena, seg, magic, version, Collections.unmodifiableMap(metadata),
                    Collections.unmodifiableMap(tensors), alignment, dataOffset);
        }

        private MetadataValue value(String key, GGUFValueType type, int depth) throws GGUFFormatException {
            String f = "value of '" + key + "'";
            return switch (type) {
                case UINT8, INT8 -> { need(1, f); byte b = seg.get(ValueLayout.JAVA_BYTE, pos); pos += 1; yield MetadataValue.of(type, b); }
                case UINT16, INT16 -> { need(2, f); short s = seg.get(I16, pos); pos += 2; yield MetadataValue.of(type, s); }
                case UINT32, INT32 -> MetadataValue.of(type, u32(f));
                case UINT64, INT64 -> MetadataValue.of(type, u64(f));
                case FLOAT32 -> { need(4, f); float v = seg.get(F32, pos); pos += 4; yield MetadataValue.of(type, v); }
                case FLOAT64 -> { need(8, f); double v = seg.get(F64, pos); pos += 8; yield MetadataValue.of(type, v); }
                case BOOL -> {
                    need(1, f);
                    byte b = seg.get(ValueLayout.JAVA_BYTE, pos);
                    if (b != 0 && b != 1) throw error(f, pos, "bool must be 0 or 1, is " + b);
                    pos += 1;
                    yield MetadataValue.of(type, b == 1);
                }
                case STRING -> MetadataValue.of(type, string(f));
                case ARRAY -> array(key, depth);
            };
        }

        private MetadataValue array(String key, int depth) throws GGUFFormatException {
            String f = "array '" + key + "'";
            if (depth >= MAX_ARRAY_NESTING) throw error(f, pos, "arrays nested deeper than " + MAX_ARRAY_NESTING);
            long typeAt = pos;
            int typeId = u32(f + " element type");
            GGUFValueType et = GGUFValueType.byId(Integer.toUnsignedLong(typeId));
            if (et == null) throw error(f + " element type", typeAt, "unknown value type " + Integer.toUnsignedString(typeId));
            long n = count(f + " length", et.minBytes);
            if (n > Integer.MAX_VALUE - 16) throw error(f + " length", typeAt + 4, "too many elements: " + n);
            int len = (int) n;
            Object arr;
            switch (et) {
                case UINT8, INT8, BOOL -> {
                    byte[] a = seg.asSlice(pos, len).toArray(ValueLayout.JAVA_BYTE);
                    pos += len;
                    if (et == GGUFValueType.BOOL) {
                        boolean[] z = new boolean[len];
                        for (int i = 0; i < len; i++) z[i] = a[i] != 0;
                        arr = z;
                    } else arr = a;
                }
                case UINT16, INT16 -> { arr = seg.asSlice(pos, 2L * len).toArray(I16); pos += 2L * len; }
                case UINT32, INT32 -> { arr = seg.asSlice(pos, 4L * len).toArray(I32); pos += 4L * len; }
                case FLOAT32 -> { arr = seg.asSlice(pos, 4L * len).toArray(F32); pos += 4L * len; }
                case UINT64, INT64 -> { arr = seg.asSlice(pos, 8L * len).toArray(I64); pos += 8L * len; }
                case FLOAT64 -> { arr = seg.asSlice(pos, 8L * len).toArray(F64); pos += 8L * len; }
                case STRING -> {
                    String[] s = new String[len];
                    for (int i = 0; i < len; i++) s[i] = string(f + "[" + i + "]");
                    arr = s;
                }
                case ARRAY -> {
                    MetadataValue[] a = new MetadataValue[len];
                    for (int i = 0; i < len; i++) a[i] = array(key + "[" + i + "]", depth + 1);
                    arr = a;
                }
                default -> throw new AssertionError(et);
            }
            return MetadataValue.array(et, arr);
        }

        private static String printable(int magic) {
            StringBuilder sb = new StringBuilder("'");
            for (int i = 0; i < 4; i++) {
                int c = (magic >>> (8 * i)) & 0xFF;
                sb.append(c >= 32 && c < 127 ? String.valueOf((char) c) : String.format("\\x%02x", c));
            }
            return sb.append("'").toString();
        }
    }

    static long alignUp(long v, int alignment) {
        return (v + alignment - 1) / alignment * alignment;
    }

    /** Per-file tensor listing convenience, in file order. */
    public List<String> tensorNames() {
        return new ArrayList<>(tensors.keySet());
    }
}
