package org.powerinfer4j.engine.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.placement.GpuIndex;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * PowerInfer's ggml numbers I8/I16/I32 as 16/17/18 (it predates the IQ types; see its ggml.h {@code enum ggml_type}
 * and gguf-py {@code GGMLQuantizationType}), and its {@code .generated.gpuidx} files carry I32 as 18: in
 * {@code PWRI} files we read and write that numbering, in {@code GGUF} files today's (16..18 = IQ2_XXS..IQ3_XXS).
 */
class PowerInferTypeIdsTest {
    @TempDir
    Path dir;

    @Test
    void gpuIndexIsWrittenWithI32AsType18() throws IOException {
        Path f = dir.resolve("m.generated.gpuidx");
        new GpuIndex(1L << 30, new int[]{6, 4}, new int[][]{{0, 5}, {1}}).write(f);
        byte[] bytes = Files.readAllBytes(f);
        for (String name : new String[]{"blk.0.gpu_idx", "blk.0.gpu_bucket", "blk.1.gpu_idx", "blk.1.gpu_bucket"})
            assertThat(typeIdOf(bytes, name)).as(name).isEqualTo(18);
        // and our reader takes it back as I32
        try (GGUFFile g = GGUFFile.open(f)) {
            assertThat(g.isPowerInfer()).isTrue();
            for (TensorInfo ti : g.tensorInfos()) assertThat(ti.type()).as(ti.name()).isEqualTo(GGMLType.I32);
        }
        GpuIndex back = GpuIndex.read(f);
        assertThat(back.bucket(0)).containsExactly(0, 5);
        assertThat(back.bucket(1)).containsExactly(1);
    }

    @Test
    void handBuiltPowerInferFileWithType18ReadsAsI32() throws IOException {
        // built byte by byte as PowerInfer's gguf-py writes a gpuidx: no writer of ours involved
        Path f = dir.resolve("pi.gpuidx");
        Files.write(f, handBuiltIndex(GGUFFile.MAGIC_PWRI, 18));
        try (GGUFFile g = GGUFFile.open(f)) {
            assertThat(g.tensorInfo("blk.0.gpu_idx").type()).isEqualTo(GGMLType.I32);
            assertThat(g.tensorInfo("blk.0.gpu_bucket").type()).isEqualTo(GGMLType.I32);
        }
        GpuIndex idx = GpuIndex.read(f);
        assertThat(idx.vramCapacity()).isEqualTo(4096);
        assertThat(idx.mask(0)).containsExactly(1, 0, 1, 0, 0, 0, 0, 1);
        assertThat(idx.bucket(0)).containsExactly(0, 2, 7);

        // the files this project wrote before (I32 as today's 26) still read
        Files.write(f, handBuiltIndex(GGUFFile.MAGIC_PWRI, 26));
        assertThat(GpuIndex.read(f).bucket(0)).containsExactly(0, 2, 7);
    }

    @Test
    void inGgufFilesTheIdsKeepTodaysMeaning() throws IOException {
        Path f = dir.resolve("plain.gguf");
        Files.write(f, handBuiltIndex(GGUFFile.MAGIC_GGUF, 18));
        // 18 is IQ3_XXS there (256-element blocks), so an 8-element row is rejected, naming the type
        assertThatThrownBy(() -> GGUFFile.open(f)).isInstanceOf(GGUFFormatException.class).hasMessageContaining("IQ3_XXS");
        Files.write(f, handBuiltIndex(GGUFFile.MAGIC_GGUF, 26));
        try (GGUFFile g = GGUFFile.open(f)) {
            assertThat(g.tensorInfo("blk.0.gpu_idx").type()).isEqualTo(GGMLType.I32);
        }
    }

    @Test
    void integerTypesRoundTripInBothMagicsAndIqTypesThatCollideAreRefusedInPwri() throws IOException {
        for (int magic : new int[]{GGUFFile.MAGIC_GGUF, GGUFFile.MAGIC_PWRI}) {
            Path f = dir.resolve("ints-" + Integer.toHexString(magic) + ".gguf");
            GGUFWriter w = new GGUFWriter().magic(magic);
            w.addTensor("a", GGMLType.I8, new long[]{4}, MemorySegment.ofArray(new byte[4]));
            w.addTensor("b", GGMLType.I16, new long[]{4}, MemorySegment.ofArray(new byte[8]));
            w.addTensor("c", GGMLType.I32, new long[]{4}, MemorySegment.ofArray(new byte[16]));
            w.addTensor("d", GGMLType.Q5_0, new long[]{32}, MemorySegment.ofArray(new byte[22]));
            w.write(f);
            byte[] bytes = Files.readAllBytes(f);
            boolean pwri = magic == GGUFFile.MAGIC_PWRI;
            assertThat(typeIdOf(bytes, "a")).isEqualTo(pwri ? 16 : 24);
            assertThat(typeIdOf(bytes, "b")).isEqualTo(pwri ? 17 : 25);
            assertThat(typeIdOf(bytes, "c")).isEqualTo(pwri ? 18 : 26);
            assertThat(typeIdOf(bytes, "d")).isEqualTo(6);
            try (GGUFFile g = GGUFFile.open(f)) {
                assertThat(g.tensorInfo("a").type()).isEqualTo(GGMLType.I8);
                assertThat(g.tensorInfo("b").type()).isEqualTo(GGMLType.I16);
                assertThat(g.tensorInfo("c").type()).isEqualTo(GGMLType.I32);
                assertThat(g.tensorInfo("d").type()).isEqualTo(GGMLType.Q5_0);
            }
        }
        GGUFWriter w = new GGUFWriter().magic(GGUFFile.MAGIC_PWRI);
        w.addTensor("x", GGMLType.IQ2_XXS, new long[]{256}, MemorySegment.ofArray(new byte[GGMLType.IQ2_XXS.typeSize]));
        assertThatThrownBy(() -> w.write(dir.resolve("iq.gguf"))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("IQ2_XXS").hasMessageContaining("PWRI");
    }

    /** The u32 type field of tensor {@code name}'s info: after its name (u64 length + bytes), n_dims and the dims. */
    private static int typeIdOf(byte[] file, String name) {
        byte[] key = new byte[8 + name.length()];
        ByteBuffer.wrap(key).order(ByteOrder.LITTLE_ENDIAN).putLong(name.length()).put(name.getBytes(StandardCharsets.US_ASCII));
        for (int i = 24; i + key.length <= file.length; i++) {
            if (java.util.Arrays.equals(file, i, i + key.length, key, 0, key.length)) {
                ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
                int at = i + key.length, nDims = b.getInt(at);
                return b.getInt(at + 4 + 8 * nDims);
            }
        }
        throw new AssertionError("no tensor info for " + name);
    }

    /**
     * One layer's gpuidx, byte by byte: magic, v3, 2 tensors, 3 KVs (architecture, block_count u32,
     * split.vram_capacity u64), then gpu_idx [8] and gpu_bucket [3] with the given type id, data 32-aligned.
     */
    private static byte[] handBuiltIndex(int magic, int typeId) {
        Bytes b = new Bytes();
        b.i32(magic).i32(3).i64(2).i64(3);
        b.str("general.architecture").i32(8).str("generic.gpu_index");
        b.str("generic.gpu_index.block_count").i32(4).i32(1);
        b.str("split.vram_capacity").i32(10).i64(4096);
        b.str("blk.0.gpu_idx").i32(1).i64(8).i32(typeId).i64(0);
        b.str("blk.0.gpu_bucket").i32(1).i64(3).i32(typeId).i64(32);
        while (b.size() % 32 != 0) b.i8(0);
        for (int v : new int[]{1, 0, 1, 0, 0, 0, 0, 1}) b.i32(v);
        for (int v : new int[]{0, 2, 7}) b.i32(v);
        while (b.size() % 32 != 0) b.i8(0);
        return b.toByteArray();
    }

    private static final class Bytes extends ByteArrayOutputStream {
        Bytes i8(int v) { write(v); return this; }
        Bytes i32(int v) { for (int i = 0; i < 4; i++) write(v >>> 8 * i); return this; }
        Bytes i64(long v) { for (int i = 0; i < 8; i++) write((int) (v >>> 8 * i)); return this; }
        Bytes str(String s) { byte[] u = s.getBytes(StandardCharsets.UTF_8); i64(u.length); write(u, 0, u.length); return this; }
    }
}
