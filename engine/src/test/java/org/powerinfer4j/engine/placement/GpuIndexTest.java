package org.powerinfer4j.engine.placement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFValueType;
import org.powerinfer4j.engine.gguf.GGUFWriter;
import org.powerinfer4j.engine.tensor.GGMLType;

/** {@code .gpuidx} files: round trips, PowerInfer's exact layout, and files with empty layers. */
class GpuIndexTest {
    @TempDir
    Path dir;

    @Provide
    Arbitrary<GpuIndex> indexes() {
        Arbitrary<boolean[]> layer = Arbitraries.of(true, false).list().ofMinSize(0).ofMaxSize(300).map(l -> {
            boolean[] b = new boolean[l.size()];
            for (int i = 0; i < b.length; i++) b[i] = l.get(i);
            return b;
        });
        return layer.list().ofMinSize(1).ofMaxSize(6).flatMap(ls -> Arbitraries.longs().between(0, Long.MAX_VALUE).map(cap -> {
            int[] ff = new int[ls.size()], experts = new int[ls.size()];
            int[][] buckets = new int[ls.size()][];
            for (int l = 0; l < ff.length; l++) {
                boolean[] b = ls.get(l);
                ff[l] = b.length;
                // expert layers too ([n_ff, n_expert] masks): 3 experts wherever the neurons split into three
                experts[l] = b.length > 0 && b.length % 3 == 0 ? 3 : 1;
                buckets[l] = java.util.stream.IntStream.range(0, b.length).filter(i -> b[i]).toArray();
            }
            return new GpuIndex(cap, ff, buckets, experts);
        }));
    }

    @Property(tries = 60)
    void roundTripIsIdentical(@ForAll("indexes") GpuIndex index) throws IOException {
        Path f = Files.createTempFile("idx", ".gpuidx");
        Path g = Files.createTempFile("idx", ".gpuidx");
        try {
            index.write(f);
            GpuIndex back = GpuIndex.read(f);
            assertThat(back).isEqualTo(index);
            back.write(g);
            assertThat(Files.readAllBytes(g)).isEqualTo(Files.readAllBytes(f));
        } finally {
            Files.deleteIfExists(f);
            Files.deleteIfExists(g);
        }
    }

    @Test
    void writesPowerInfersLayout() throws IOException {
        Path f = dir.resolve("m.generated.gpuidx");
        new GpuIndex(123_456_789_012L, new int[]{4, 3}, new int[][]{{1, 3}, {}}).write(f);
        byte[] bytes = Files.readAllBytes(f);
        assertThat(new String(bytes, 0, 4, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("PWRI");
        assertThat(ByteBuffer.wrap(bytes, 4, 4).order(ByteOrder.LITTLE_ENDIAN).getInt()).isEqualTo(3);
        try (GGUFFile g = GGUFFile.open(f)) {
            assertThat(g.getString("general.architecture", null)).isEqualTo("generic.gpu_index");
            assertThat(g.get(GpuIndex.KEY_BLOCK_COUNT).type()).isEqualTo(GGUFValueType.UINT32);
            assertThat(g.get(GpuIndex.KEY_VRAM_CAPACITY).type()).isEqualTo(GGUFValueType.UINT64);
            assertThat(g.getLong(GpuIndex.KEY_VRAM_CAPACITY, 0)).isEqualTo(123_456_789_012L);
            assertThat(g.tensorNames()).containsExactly("blk.0.gpu_idx", "blk.0.gpu_bucket", "blk.1.gpu_idx", "blk.1.gpu_bucket");
            assertThat(g.tensorInfo("blk.0.gpu_idx").type()).isEqualTo(GGMLType.I32);
            assertThat(g.tensorInfo("blk.1.gpu_bucket").ne()).containsExactly(0L);
        }
    }

    /** A file built tensor by tensor, the way gguf-py writes it, with some layers holding no GPU neuron. */
    @Test
    void readsHandBuiltIndexWithEmptyLayers() throws IOException {
        Path f = dir.resolve("hand.gpuidx");
        int[][] masks = {{0, 0, 0, 0, 0}, {1, 0, 1, 1, 0}, {0, 0, 0, 0, 0}};
        int[][] buckets = {{}, {0, 2, 3}, {}};
        GGUFWriter w = new GGUFWriter().magic(GGUFFile.MAGIC_PWRI);
        w.putString("general.architecture", "generic.gpu_index");
        for (int l = 0; l < 3; l++) {
            w.addTensor("blk." + l + ".gpu_idx", GGMLType.I32, new long[]{masks[l].length}, seg(masks[l]));
            w.addTensor("blk." + l + ".gpu_bucket", GGMLType.I32, new long[]{buckets[l].length}, seg(buckets[l]));
        }
        w.putUInt32("generic.gpu_index.block_count", 3);
        w.putUInt64("split.vram_capacity", 1L << 33);
        w.write(f);
        GpuIndex idx = GpuIndex.read(f);
        assertThat(idx.layers()).isEqualTo(3);
        assertThat(idx.vramCapacity()).isEqualTo(1L << 33);
        assertThat(idx.bucket(0)).isEmpty();
        assertThat(idx.bucket(1)).containsExactly(0, 2, 3);
        assertThat(idx.mask(1)).containsExactly(1, 0, 1, 1, 0);
        assertThat(idx.bucket(2)).isEmpty();
        assertThat(idx.totalNeurons()).isEqualTo(3);
    }

    @Test
    void rejectsBucketThatDisagreesWithMask() throws IOException {
        Path f = dir.resolve("bad.gpuidx");
        GGUFWriter w = new GGUFWriter().magic(GGUFFile.MAGIC_PWRI);
        w.putString("general.architecture", "generic.gpu_index");
        w.putUInt32("generic.gpu_index.block_count", 1);
        w.putUInt64("split.vram_capacity", 0);
        w.addTensor("blk.0.gpu_idx", GGMLType.I32, new long[]{3}, seg(new int[]{1, 0, 1}));
        w.addTensor("blk.0.gpu_bucket", GGMLType.I32, new long[]{2}, seg(new int[]{0, 1}));
        w.write(f);
        assertThatThrownBy(() -> GpuIndex.read(f)).isInstanceOf(IOException.class).hasMessageContaining("gpu_bucket");
    }

    @Test
    void expertLayersHaveTwoDimensionalMasksOnly() throws IOException {
        Path f = dir.resolve("experts.gpuidx");
        GpuIndex.of(0, new int[]{6}, new int[]{2}, new int[][]{{5, 1}}).write(f);
        try (GGUFFile g = GGUFFile.open(f)) {
            assertThat(g.tensorInfo("blk.0.gpu_idx").ne()).containsExactly(3L, 2L);
        }
        assertThat(GpuIndex.read(f).experts(0)).isEqualTo(2);
        Path bad = dir.resolve("bad-experts.gpuidx");
        GGUFWriter w = new GGUFWriter().magic(GGUFFile.MAGIC_PWRI);
        w.putString("general.architecture", "generic.gpu_index");
        w.putUInt32("generic.gpu_index.block_count", 1);
        w.addTensor("blk.0.gpu_idx", GGMLType.I32, new long[]{2}, seg(new int[]{1, 0}));
        w.addTensor("blk.0.gpu_bucket", GGMLType.I32, new long[]{1, 1}, seg(new int[]{0}));
        w.write(bad);
        assertThatThrownBy(() -> GpuIndex.read(bad)).isInstanceOf(IOException.class).hasMessageContaining("gpu_bucket").hasMessageContaining("1-D I32");
        assertThatThrownBy(() -> GpuIndex.of(0, new int[]{5}, new int[]{2}, new int[][]{{}})).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("layer 0: 5 neurons do not split into 2 experts");
    }

    @Test
    void ofSortsAndRejectsOutOfRange() {
        GpuIndex g = GpuIndex.of(0, new int[]{5}, new int[][]{{4, 0, 2}});
        assertThat(g.bucket(0)).containsExactly(0, 2, 4);
        assertThatThrownBy(() -> GpuIndex.of(0, new int[]{3}, new int[][]{{3}})).isInstanceOf(IllegalArgumentException.class);
        assertThat(Arrays.stream(g.mask(0)).sum()).isEqualTo(3);
    }

    private static MemorySegment seg(int[] v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int x : v) b.putInt(x);
        return MemorySegment.ofArray(b.array());
    }
}
