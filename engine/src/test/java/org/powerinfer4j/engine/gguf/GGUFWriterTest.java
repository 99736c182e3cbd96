package org.powerinfer4j.engine.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.tensor.GGMLType;

class GGUFWriterTest {

    @TempDir
    Path dir;

    /** Every metadata value type, including nested arrays, survives write → open unchanged. */
    @Test
    void roundTripsAllValueTypes() throws Exception {
        MetadataValue nested = MetadataValue.array(GGUFValueType.ARRAY, new MetadataValue[] {
                MetadataValue.array(GGUFValueType.INT32, new int[] {1, -2, 3}),
                MetadataValue.array(GGUFValueType.STRING, new String[] {"a", "βγ", ""}),
                MetadataValue.array(GGUFValueType.ARRAY, new MetadataValue[] {
                        MetadataValue.array(GGUFValueType.FLOAT64, new double[] {Math.PI})})});
        GGUFWriter w = new GGUFWriter()
                .putUInt8("u8", (byte) 0xFE).putInt8("i8", (byte) -3)
                .putUInt16("u16", (short) 0xFFFE).putInt16("i16", (short) -300)
                .putUInt32("u32", 0xFFFF_FFF0).putInt32("i32", -70000)
                .putUInt64("u64", -1L).putInt64("i64", Long.MIN_VALUE)
                .putFloat32("f32", 1.5e-5f).putFloat64("f64", -2.25e300)
                .putBool("t", true).putBool("f", false)
                .putString("s", "héllo ▁world\n").putString("empty", "")
                .putArray("a.u8", GGUFValueType.UINT8, new byte[] {1, 2, (byte) 255})
                .putArray("a.i8", GGUFValueType.INT8, new byte[] {-1})
                .putArray("a.bool", GGUFValueType.BOOL, new boolean[] {true, false, true})
                .putArray("a.u16", GGUFValueType.UINT16, new short[] {1, (short) 65535})
                .putArray("a.i16", GGUFValueType.INT16, new short[] {-1})
                .putArray("a.u32", GGUFValueType.UINT32, new int[] {7, -1})
                .putArray("a.i32", GGUFValueType.INT32, new int[0])
                .putArray("a.f32", GGUFValueType.FLOAT32, new float[] {0.5f, Float.NaN, -0f})
                .putArray("a.u64", GGUFValueType.UINT64, new long[] {Long.MAX_VALUE})
                .putArray("a.i64", GGUFValueType.INT64, new long[] {-5})
                .putArray("a.f64", GGUFValueType.FLOAT64, new double[] {1e-300})
                .putArray("a.str", GGUFValueType.STRING, new String[] {"x", "", "üñí"})
                .put("a.nested", nested);
        Path p = dir.resolve("all.gguf");
        w.write(p);
        assertThat(Files.size(p)).isEqualTo(w.fileSize());
        try (GGUFFile f = GGUFFile.open(p)) {
            assertThat(f.version()).isEqualTo(3);
            assertThat(f.metadata().keySet()).containsExactlyElementsOf(w.metadata().keySet());
            for (var e : w.metadata().entrySet()) assertSameValue(e.getKey(), f.get(e.getKey()), e.getValue());
            assertThat(f.get("u32").asLong()).isEqualTo(0xFFFF_FFF0L);
            assertThat(f.get("u8").asLong()).isEqualTo(0xFE);
            assertThat(f.tensorInfos()).isEmpty();
        }
    }

    static void assertSameValue(String key, MetadataValue actual, MetadataValue expected) {
        assertThat(actual).as(key).isNotNull();
        assertThat(actual.type()).as(key).isEqualTo(expected.type());
        assertThat(actual.elementType()).as(key).isEqualTo(expected.elementType());
        if (expected.elementType() == GGUFValueType.ARRAY) {
            MetadataValue[] a = (MetadataValue[]) actual.value();
            MetadataValue[] b = (MetadataValue[]) expected.value();
            assertThat(a).as(key).hasSameSizeAs(b);
            for (int i = 0; i < a.length; i++) assertSameValue(key + "[" + i + "]", a[i], b[i]);
        } else if (expected.value() instanceof float[] fb) {
            float[] fa = (float[]) actual.value();
            assertThat(fa).hasSameSizeAs(fb);
            for (int i = 0; i < fa.length; i++) assertThat(Float.floatToRawIntBits(fa[i])).isEqualTo(Float.floatToRawIntBits(fb[i]));
        } else {
            assertThat(actual.value()).as(key).isEqualTo(expected.value());
        }
    }

    @Test
    void pwriMagicAlignmentAndData() throws Exception {
        for (int alignment : new int[] {1, 8, 32, 64, 4096}) {
            float[] a = {1, 2, 3, 4, 5};
            byte[] q = new byte[34 * 2];
            for (int i = 0; i < q.length; i++) q[i] = (byte) i;
            GGUFWriter w = new GGUFWriter().magic(GGUFFile.MAGIC_PWRI).alignment(alignment).putString("general.name", "t")
                    .addTensor("a", GGMLType.F32, new long[] {5}, MemorySegment.ofArray(a))
                    .addTensor("q", GGMLType.Q8_0, new long[] {32, 2}, out -> {
                        out.write(q, 0, 10);
                        out.write(ByteBuffer.wrap(q, 10, q.length - 10));
                    });
            Path p = dir.resolve("t" + alignment + ".gguf");
            w.write(p);
            assertThat(Files.size(p)).isEqualTo(w.fileSize());
            assertThat(Files.size(p) % alignment).isZero();
            try (GGUFFile f = GGUFFile.open(p)) {
                assertThat(f.isPowerInfer()).isTrue();
                assertThat(f.alignment()).isEqualTo(alignment);
                assertThat(f.dataOffset() % alignment).isZero();
                assertThat(f.tensor("a").data().toArray(ValueLayout.JAVA_FLOAT)).containsExactly(a);
                assertThat(f.tensor("q").data().toArray(ValueLayout.JAVA_BYTE)).containsExactly(q);
                assertThat(f.tensorInfo("q").ne()).containsExactly(32, 2);
                assertThat(f.tensorInfo("q").offset() % alignment).isZero();
            }
        }
    }

    @Test
    void rejectsWrongSizesAndShapes() {
        GGUFWriter w = new GGUFWriter();
        assertThatThrownBy(() -> w.addTensor("x", GGMLType.F32, new long[] {4}, MemorySegment.ofArray(new float[3])))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs 16");
        assertThatThrownBy(() -> w.addTensor("x", GGMLType.Q4_0, new long[] {31, 2}, out -> {}))
                .hasMessageContaining("block size 32");
        assertThatThrownBy(() -> w.addTensor("x", GGMLType.F32, new long[] {1, 1, 1, 1, 1}, out -> {}))
                .hasMessageContaining("dimensions");
        assertThatThrownBy(() -> w.alignment(48)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> w.put("k", MetadataValue.of(GGUFValueType.UINT32, 5L)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> w.putArray("k", GGUFValueType.FLOAT32, new int[1]))
                .isInstanceOf(IllegalArgumentException.class);
        w.addTensor("x", GGMLType.F32, new long[] {1}, out -> {});
        assertThatThrownBy(() -> w.addTensor("x", GGMLType.F32, new long[] {1}, out -> {})).hasMessageContaining("duplicate");
    }

    @Test
    void shortOrLongCallbackFailsAndLeavesNoFile() {
        Path p = dir.resolve("bad.gguf");
        GGUFWriter shortW = new GGUFWriter().addTensor("x", GGMLType.F32, new long[] {4}, out -> out.write(new byte[8], 0, 8));
        assertThatThrownBy(() -> shortW.write(p)).hasMessageContaining("wrote 8 of 16");
        assertThat(p).doesNotExist();
        GGUFWriter longW = new GGUFWriter().addTensor("x", GGMLType.F32, new long[] {1}, out -> out.write(new byte[8], 0, 8));
        assertThatThrownBy(() -> longW.write(p)).hasMessageContaining("more than");
        assertThat(p).doesNotExist();
    }

    /** Re-writing llama.cpp-written files from their parsed contents reproduces them byte for byte. */
    @ParameterizedTest
    @ValueSource(strings = {"models/stories260K.gguf", "models/llama-2-tiny-random.gguf",
            "models/quantized/stories260K-q4_1.gguf", "models/quantized/rand-k-q5_k.gguf",
            "sparse/stories260K-relu.powerinfer.gguf", "vocab/ggml-vocab-gpt-2.gguf"})
    void rewriteIsByteIdentical(String file) throws Exception {
        Path src = TestData.file(file);
        Path out = dir.resolve("rewrite.gguf");
        try (GGUFFile f = GGUFFile.open(src)) {
            GGUFWriter w = copyOf(f);
            w.write(out);
            assertThat(w.fileSize()).isEqualTo(Files.size(src));
        }
        assertThat(Files.mismatch(src, out)).as("first differing byte").isEqualTo(-1L);
    }

    static GGUFWriter copyOf(GGUFFile f) {
        GGUFWriter w = new GGUFWriter().magic(f.isPowerInfer() ? GGUFFile.MAGIC_PWRI : GGUFFile.MAGIC_GGUF);
        f.metadata().forEach(w::put);
        for (TensorInfo ti : f.tensorInfos())
            w.addTensor(ti.name(), ti.type(), ti.ne(), f.tensorOrNull(ti.name()).data());
        return w;
    }

    @Test
    void streamsLargerThanHeapChunks() throws Exception {
        // 64 MiB produced in 1 MiB pieces by a callback, never held whole
        long n = 16L << 20;
        Path p = dir.resolve("big.gguf");
        new GGUFWriter().addTensor("big", GGMLType.F32, new long[] {n}, out -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment chunk = arena.allocate(1 << 20);
                for (long off = 0; off < n * 4; off += chunk.byteSize()) {
                    chunk.fill((byte) (off >>> 20));
                    out.write(chunk);
                }
            }
        }).write(p);
        try (GGUFFile f = GGUFFile.open(p)) {
            MemorySegment d = f.tensor("big").data();
            assertThat(d.byteSize()).isEqualTo(n * 4);
            assertThat(d.get(ValueLayout.JAVA_BYTE, 5L << 20)).isEqualTo((byte) 5);
        }
    }
}
