package org.powerinfer4j.engine.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Malformed input must give a {@link GGUFFormatException} naming the file and a byte offset, never another
 * exception, an out-of-memory or a hang: truncations at every length, random byte corruption of the header,
 * and hand-made headers with hostile counts, lengths, shapes, types, offsets and alignments.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class GGUFRobustnessTest {

    /** Candidate files are rewritten in place under target/, one name per kind of check. */
    private static Path scratch() throws IOException {
        return Files.createDirectories(Path.of("target", "gguf-robustness"));
    }

    /** Outcome of opening one candidate file. */
    record Outcome(boolean opened, GGUFFormatException error) {}

    /**
     * Opens {@code bytes} as a file. Success must leave every tensor inside the file; failure must be a
     * {@link GGUFFormatException} naming the file with an offset inside it. Anything else fails the test.
     */
    static Outcome open(byte[] bytes, String name) {
        try {
            Path p = scratch().resolve(name);
            Files.write(p, bytes);
            try (GGUFFile f = GGUFFile.open(p)) {
                for (TensorInfo ti : f.tensorInfos()) {
                    MemorySegment d = f.tensor(ti.name()).data();
                    if (d.byteSize() > 0) d.get(ValueLayout.JAVA_BYTE, d.byteSize() - 1);
                }
                return new Outcome(true, null);
            } catch (GGUFFormatException e) {
                assertThat(e.getMessage()).as("message of %s", e).startsWith(name + ": ").containsPattern("at byte \\d+");
                // the offset is where the problem is: inside the file, or for data that runs past the end, where
                // that data would start
                assertThat(e.offset()).as("offset in %s", e.getMessage()).isNotNegative();
                return new Outcome(false, e);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
            throw new AssertionError("GGUFFile.open threw " + e + " for " + bytes.length + " bytes: " + hex(bytes, 96), e);
        }
    }

    private static GGUFFormatException rejects(byte[] bytes) {
        Outcome o = open(bytes, "hostile.gguf");
        if (o.opened) fail("accepted a malformed file: " + hex(bytes, 128));
        return o.error;
    }

    private static String hex(byte[] b, int max) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < Math.min(b.length, max); i++) sb.append(String.format("%02x", b[i]));
        return sb + (b.length > max ? "..." : "");
    }

    // ---------------------------------------------------------------------------------------------------
    // a tiny but varied model written with GGUFWriter

    static byte[] tinyModel;
    static long tinyDataEnd;   // end of the last tensor's bytes (before its trailing padding)
    static long tinyDataOffset; // start of the data section: everything before it is header

    static synchronized byte[] tinyModel() throws IOException {
        if (tinyModel != null) return tinyModel;
        GGUFWriter w = new GGUFWriter()
                .putString("general.architecture", "llama").putUInt32("llama.block_count", 1)
                .putFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5f).putBool("flag", true)
                .putArray("tokenizer.ggml.tokens", GGUFValueType.STRING, new String[] {"<unk>", "<s>", "▁a", "é"})
                .putArray("tokenizer.ggml.scores", GGUFValueType.FLOAT32, new float[] {0, 0, -1, -2})
                .putArray("nested", GGUFValueType.ARRAY, new MetadataValue[] {
                        MetadataValue.array(GGUFValueType.UINT16, new short[] {1, 2}),
                        MetadataValue.array(GGUFValueType.STRING, new String[] {"x"})})
                .putUInt64("big", 1L << 40);
        byte[] q8 = new byte[34 * 2];
        Arrays.fill(q8, (byte) 7);
        byte[] q4k = new byte[144];
        Arrays.fill(q4k, (byte) 3);
        w.addTensor("norm", GGMLType.F32, new long[] {5}, MemorySegment.ofArray(new float[] {1, 1, 1, 1, 1}))
                .addTensor("q8", GGMLType.Q8_0, new long[] {32, 2}, MemorySegment.ofArray(q8))
                .addTensor("k", GGMLType.Q4_K, new long[] {256, 1, 1}, MemorySegment.ofArray(q4k))
                .addTensor("h", GGMLType.F16, new long[] {3, 1}, MemorySegment.ofArray(new short[] {1, 2, 3}));
        Path p = scratch().resolve("tiny.gguf");
        w.write(p);
        tinyModel = Files.readAllBytes(p);
        try (GGUFFile f = GGUFFile.open(p)) {
            TensorInfo last = f.tensorInfo("h");
            tinyDataEnd = f.dataOffset() + last.offset() + last.byteSize();
            tinyDataOffset = f.dataOffset();
        }
        return tinyModel;
    }

    @Test
    void everyPrefixOfATinyModel() throws IOException {
        byte[] full = tinyModel();
        assertThat(full.length).isLessThan(4096);
        for (int len = 0; len <= full.length; len++) {
            Outcome o = open(Arrays.copyOf(full, len), "prefix.gguf");
            // only cuts inside the last tensor's trailing padding (or none) keep all tensor data
            assertThat(o.opened).as("prefix of %d bytes (%s)", len, o.error == null ? "opened" : o.error.getMessage())
                    .isEqualTo(len >= tinyDataEnd);
        }
    }

    @Test
    void prefixesOfStories260K() throws IOException {
        byte[] full = Files.readAllBytes(TestData.file("models/stories260K.gguf"));
        long dataOffset;
        try (GGUFFile f = GGUFFile.open(TestData.file("models/stories260K.gguf"))) {
            dataOffset = f.dataOffset();
        }
        // every length through the header (one byte at a time for the first 512 bytes, then a stride of 11), then a
        // coarse stride through the tensor data: none of these can open, the data is always cut
        int limit = Math.min(full.length - 1, 64 * 1024);
        for (int len = 0; len <= limit; len += len < 512 ? 1 : len < dataOffset + 64 ? 11 : 509) {
            Outcome o = open(Arrays.copyOf(full, len), "stories-prefix.gguf");
            assertThat(o.opened).as("prefix %d", len).isFalse();
            if (len >= dataOffset) assertThat(o.error.getMessage()).contains("data");
        }
        assertThat(open(full, "stories-full.gguf").opened).isTrue();
    }

    // ---------------------------------------------------------------------------------------------------
    // hostile hand-made headers

    /** Little-endian byte builder for hand-made headers. */
    static final class Raw {
        private ByteBuffer bb = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);

        Raw magic() { bb.put("GGUF".getBytes(StandardCharsets.US_ASCII)); return this; }
        Raw i8(int v) { bb.put((byte) v); return this; }
        Raw i32(int v) { bb.putInt(v); return this; }
        Raw i64(long v) { bb.putLong(v); return this; }
        Raw str(String s) { byte[] u = s.getBytes(StandardCharsets.UTF_8); bb.putLong(u.length); bb.put(u); return this; }
        Raw zeros(int n) { bb.put(new byte[n]); return this; }
        Raw pad(int align) { while (bb.position() % align != 0) bb.put((byte) 0); return this; }
        Raw header(long tensors, long kvs) { return magic().i32(3).i64(tensors).i64(kvs); }
        /** A tensor info with the given fields. */
        Raw tensor(String name, long[] ne, int type, long offset) {
            str(name).i32(ne.length);
            for (long d : ne) i64(d);
            return i32(type).i64(offset);
        }
        Raw apply(Consumer<Raw> c) { c.accept(this); return this; }
        byte[] bytes() { return Arrays.copyOf(bb.array(), bb.position()); }
    }

    static Raw withKv(String key, int type, Consumer<Raw> value) {
        return new Raw().header(0, 1).str(key).i32(type).apply(value).zeros(64);
    }

    private static final int U8 = 0, U32 = 4, I32 = 5, BOOL = 7, STRING = 8, ARRAY = 9, U64 = 10;

    static Object[][] hostile() {
        return new Object[][] {
                {"empty file", new byte[0], "magic"},
                {"3 bytes", new byte[] {'G', 'G', 'U'}, "magic"},
                {"wrong magic", "GGML....".getBytes(StandardCharsets.US_ASCII), "magic"},
                {"version 1", new Raw().magic().i32(1).i64(0).i64(0).bytes(), "version"},
                {"version 99", new Raw().magic().i32(99).i64(0).i64(0).bytes(), "version"},
                {"big-endian version", new Raw().magic().i32(0x03000000).i64(0).i64(0).bytes(), "big-endian"},
                {"tensor count 2^62", new Raw().header(1L << 62, 0).zeros(64).bytes(), "tensor_count"},
                {"tensor count -1", new Raw().header(-1, 0).zeros(64).bytes(), "tensor_count"},
                {"kv count 2^62", new Raw().header(0, 1L << 62).zeros(64).bytes(), "kv_count"},
                {"key length 2^63-1", new Raw().header(0, 1).i64(Long.MAX_VALUE).zeros(64).bytes(), "key"},
                {"key length 2^64-1", new Raw().header(0, 1).i64(-1).zeros(64).bytes(), "key"},
                {"string value length 2^63-1", withKv("k", STRING, r -> r.i64(Long.MAX_VALUE)).bytes(), "'k'"},
                {"unknown value type 99", withKv("k", 99, r -> {}).bytes(), "unknown value type 99"},
                {"value type -1", withKv("k", -1, r -> {}).bytes(), "unknown value type"},
                {"bool 2", withKv("k", BOOL, r -> r.i8(2)).bytes(), "bool"},
                {"u8 array length 2^60", withKv("k", ARRAY, r -> r.i32(U8).i64(1L << 60)).bytes(), "'k'"},
                {"string array length 2^60", withKv("k", ARRAY, r -> r.i32(STRING).i64(1L << 60)).bytes(), "'k'"},
                {"nested array length 2^60", withKv("k", ARRAY, r -> r.i32(ARRAY).i64(1L << 60)).bytes(), "'k'"},
                {"array length -1", withKv("k", ARRAY, r -> r.i32(U32).i64(-1)).bytes(), "'k'"},
                {"array of unknown type", withKv("k", ARRAY, r -> r.i32(99).i64(1)).bytes(), "unknown value type"},
                {"array string element 2^63-1 long", withKv("k", ARRAY, r -> r.i32(STRING).i64(2).i64(Long.MAX_VALUE)).bytes(), "'k'"},
                {"arrays nested 1000 deep", withKv("k", ARRAY, r -> {
                    for (int i = 0; i < 1000; i++) r.i32(ARRAY).i64(1);
                }).bytes(), "nested"},
                {"duplicate key", new Raw().header(0, 2).str("a").i32(U8).i8(1).str("a").i32(U8).i8(1).bytes(), "duplicate"},
                {"alignment 0", new Raw().header(0, 1).str("general.alignment").i32(U32).i32(0).bytes(), "alignment"},
                {"alignment 3", new Raw().header(0, 1).str("general.alignment").i32(U32).i32(3).bytes(), "alignment"},
                {"alignment 2^31", new Raw().header(0, 1).str("general.alignment").i32(U32).i32(1 << 31).bytes(), "alignment"},
                {"alignment -32 (i32)", new Raw().header(0, 1).str("general.alignment").i32(I32).i32(-32).bytes(), "alignment"},
                {"alignment as string", new Raw().header(0, 1).str("general.alignment").i32(STRING).str("32").bytes(), "alignment"},
                {"alignment as u64", new Raw().header(0, 1).str("general.alignment").i32(U64).i64(32).bytes(), "alignment"},
                {"n_dims 1000", new Raw().header(1, 0).str("t").i32(1000).zeros(64).bytes(), "n_dims"},
                {"n_dims 0", new Raw().header(1, 0).tensor("t", new long[0], 0, 0).zeros(64).bytes(), "n_dims"},
                {"n_dims -1", new Raw().header(1, 0).str("t").i32(-1).zeros(64).bytes(), "n_dims"},
                {"dims product overflows", new Raw().header(1, 0).tensor("t", new long[] {1L << 40, 1L << 40}, 0, 0).zeros(64).bytes(), "overflow"},
                {"dims product 2^60", new Raw().header(1, 0).tensor("t", new long[] {1L << 30, 1L << 30}, 0, 0).zeros(64).bytes(), "shape"},
                {"dim 2^63", new Raw().header(1, 0).tensor("t", new long[] {Long.MIN_VALUE}, 0, 0).zeros(64).bytes(), "ne[0]"},
                {"dim 2^64-1", new Raw().header(1, 0).tensor("t", new long[] {4, -1}, 0, 0).zeros(64).bytes(), "ne[1]"},
                {"tensor type 99", new Raw().header(1, 0).tensor("t", new long[] {4}, 99, 0).zeros(64).bytes(), "unknown tensor type id 99"},
                {"tensor type -1", new Raw().header(1, 0).tensor("t", new long[] {4}, -1, 0).zeros(64).bytes(), "unknown tensor type"},
                {"removed type 4 (Q4_2)", new Raw().header(1, 0).tensor("t", new long[] {32}, 4, 0).zeros(64).bytes(), "unknown tensor type"},
                {"row not a block multiple", new Raw().header(1, 0).tensor("t", new long[] {33}, GGMLType.Q8_0.id, 0).zeros(128).bytes(), "block size"},
                {"offset past EOF", new Raw().header(1, 0).tensor("t", new long[] {4}, 0, 1L << 40).pad(32).zeros(64).bytes(), "past the end"},
                {"offset 2^64-32", new Raw().header(1, 0).tensor("t", new long[] {4}, 0, -32).pad(32).zeros(64).bytes(), "offset"},
                {"misaligned offset", new Raw().header(1, 0).tensor("t", new long[] {4}, 0, 3).pad(32).zeros(64).bytes(), "alignment"},
                {"data runs past EOF", new Raw().header(1, 0).tensor("t", new long[] {64}, 0, 0).pad(32).zeros(255).bytes(), "past the end"},
                {"file ends before data section", new Raw().header(1, 0).tensor("t", new long[] {1}, 0, 0).bytes(), "data"},
                {"duplicate tensor", new Raw().header(2, 0).tensor("t", new long[] {1}, 0, 0).tensor("t", new long[] {1}, 0, 32).pad(32).zeros(64).bytes(), "duplicate"},
                {"tensor name length 2^63-1", new Raw().header(1, 0).i64(Long.MAX_VALUE).zeros(64).bytes(), "name"},
        };
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("hostile")
    void hostileHeaderGivesCleanFormatError(String what, byte[] bytes, String mention) {
        GGUFFormatException e = rejects(bytes);
        assertThat(e.getMessage()).as(what).containsIgnoringCase(mention);
    }

    static byte[] offsetNear2pow63() {
        return new Raw().header(1, 0).tensor("t", new long[] {4}, 0, Long.MAX_VALUE - 31).pad(32).zeros(64).bytes();
    }

    /** An aligned tensor offset near 2^63 is rejected with the right exception type (its message: see below). */
    @Test
    void offsetNear2pow63IsRejected() throws IOException {
        Path p = scratch().resolve("offset63.gguf");
        Files.write(p, offsetNear2pow63());
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> GGUFFile.open(p)).isInstanceOf(GGUFFormatException.class);
    }

    /**
     * GGUFFile defect (reported, GGUFFile is not ours to change): for data past the end it reports the byte
     * offset {@code dataOffset + tensorOffset}, which overflows to a negative number for offsets near 2^63
     * (and lies past the end of the file in general). Enable once GGUFFile reports the offset field's position.
     */
    @Test
    void offsetNear2pow63ReportsAPositionInsideTheFile() {
        GGUFFormatException e = rejects(offsetNear2pow63());
        assertThat(e.offset()).isBetween(0L, (long) offsetNear2pow63().length);
    }

    @Test
    void hugeButConsistentCountsDoNotExhaustMemory() {
        // 2^20 empty strings in an array are 8 MiB of lengths: legal, parsed without trouble
        int n = 1 << 20;
        Raw r = new Raw();
        r.bb = ByteBuffer.allocate(8 * n + 256).order(ByteOrder.LITTLE_ENDIAN);
        r.header(0, 1).str("k").i32(ARRAY).i32(STRING).i64(n).zeros(8 * n);
        assertThat(open(r.bytes(), "many.gguf").opened).isTrue();
        // one byte short must fail cleanly
        byte[] b = r.bytes();
        open(Arrays.copyOf(b, b.length - 1), "many-short.gguf");
    }
}
