package org.powerinfer4j.engine.placement;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFFormatException;
import org.powerinfer4j.engine.gguf.GGUFWriter;
import org.powerinfer4j.engine.gguf.MetadataValue;
import org.powerinfer4j.engine.gguf.TensorInfo;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * PowerInfer's GPU index ({@code <model>.generated.gpuidx}): per layer, which FFN neurons are resident on the GPU.
 *
 * <p>File layout, as PowerInfer's {@code powerinfer-py/export_split.py} writes it: magic {@code PWRI}, GGUF v3,
 * KVs {@code general.architecture = "generic.gpu_index"}, {@code generic.gpu_index.block_count} (u32) and
 * {@code split.vram_capacity} (u64, the budget in bytes the index was solved for); tensors per layer in this
 * order: {@code blk.i.gpu_idx} I32 [n_ff] (1 = on the GPU) then {@code blk.i.gpu_bucket} I32 [k_i], the GPU neuron
 * ids ascending. I32 is type id 18 there, PowerInfer's numbering ({@link GGMLType#byPowerInferId}); its loader
 * accepts nothing else. PowerInfer reads the tensors by position (2i, 2i+1), so the reader does too.
 *
 * <p>Mixture-of-experts layers (our extension; PowerInfer runs no MoE): the layer's mask is 2-D, {@code blk.i.gpu_idx}
 * I32 [n_ff, n_expert] (expert 0's neurons first, as the profile's {@code expert_activation_counts}), and its bucket
 * lists flat ids E·n_ff + r ascending. Such a layer counts n_expert·n_ff neurons here.
 *
 * @param vramCapacity the budget (bytes) this index was solved for
 * @param ffSizes      neurons per layer: n_ff, or n_expert·n_ff for an expert layer
 * @param buckets      per layer, the GPU-resident neuron ids, strictly ascending
 * @param experts      experts per layer (1 for a dense FFN)
 */
public record GpuIndex(long vramCapacity, int[] ffSizes, int[][] buckets, int[] experts) {
    public static final String ARCHITECTURE = "generic.gpu_index";
    public static final String KEY_BLOCK_COUNT = ARCHITECTURE + ".block_count";
    public static final String KEY_VRAM_CAPACITY = "split.vram_capacity";
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public GpuIndex {
        if (ffSizes.length != buckets.length) throw new IllegalArgumentException(ffSizes.length + " layer sizes for " + buckets.length + " buckets");
        if (experts.length != ffSizes.length) throw new IllegalArgumentException(experts.length + " expert counts for " + ffSizes.length + " layers");
        for (int l = 0; l < experts.length; l++)
            if (experts[l] < 1 || ffSizes[l] % experts[l] != 0)
                throw new IllegalArgumentException("layer " + l + ": " + ffSizes[l] + " neurons do not split into " + experts[l] + " experts");
        experts = experts.clone();
        ffSizes = ffSizes.clone();
        int[][] copy = new int[buckets.length][];
        for (int l = 0; l < buckets.length; l++) {
            int[] b = buckets[l].clone();
            for (int j = 0; j < b.length; j++) {
                if (b[j] < 0 || b[j] >= ffSizes[l]) throw new IllegalArgumentException("layer " + l + ": neuron " + b[j] + " outside [0, " + ffSizes[l] + ")");
                if (j > 0 && b[j] <= b[j - 1]) throw new IllegalArgumentException("layer " + l + ": bucket not strictly ascending at " + j);
            }
            copy[l] = b;
        }
        buckets = copy;
    }

    /** A dense-FFN index (one expert per layer: PowerInfer's own files). */
    public GpuIndex(long vramCapacity, int[] ffSizes, int[][] buckets) {
        this(vramCapacity, ffSizes, buckets, ones(ffSizes.length));
    }

    private static int[] ones(int n) {
        int[] e = new int[n];
        Arrays.fill(e, 1);
        return e;
    }

    /** An index from unsorted per-layer neuron choices (sorted and checked here). */
    public static GpuIndex of(long vramCapacity, int[] ffSizes, int[][] chosen) {
        return of(vramCapacity, ffSizes, ones(ffSizes.length), chosen);
    }

    /** The same with {@code experts[l]} experts in layer l, {@code ffSizes[l]} = n_expert·n_ff flat neurons. */
    public static GpuIndex of(long vramCapacity, int[] ffSizes, int[] experts, int[][] chosen) {
        int[][] sorted = new int[chosen.length][];
        for (int l = 0; l < chosen.length; l++) {
            sorted[l] = chosen[l].clone();
            Arrays.sort(sorted[l]);
        }
        return new GpuIndex(vramCapacity, ffSizes, sorted, experts);
    }

    /** Experts in {@code layer} (1 for a dense FFN). */
    public int experts(int layer) {
        return experts[layer];
    }

    public int layers() {
        return ffSizes.length;
    }

    /** The 0/1 residency mask of a layer ({@code blk.i.gpu_idx}). */
    public int[] mask(int layer) {
        int[] m = new int[ffSizes[layer]];
        for (int r : buckets[layer]) m[r] = 1;
        return m;
    }

    public int[] bucket(int layer) {
        return buckets[layer].clone();
    }

    /** Total GPU-resident neurons over all layers. */
    public long totalNeurons() {
        long n = 0;
        for (int[] b : buckets) n += b.length;
        return n;
    }

    public void write(Path path) throws IOException {
        GGUFWriter w = new GGUFWriter().magic(GGUFFile.MAGIC_PWRI);
        w.putString("general.architecture", ARCHITECTURE);
        w.putUInt32(KEY_BLOCK_COUNT, layers());
        w.putUInt64(KEY_VRAM_CAPACITY, vramCapacity);
        for (int l = 0; l < layers(); l++) {
            long[] shape = experts[l] == 1 ? new long[]{ffSizes[l]} : new long[]{ffSizes[l] / experts[l], experts[l]};
            w.addTensor("blk." + l + ".gpu_idx", GGMLType.I32, shape, MemorySegment.ofArray(le(mask(l))));
            w.addTensor("blk." + l + ".gpu_bucket", GGMLType.I32, new long[]{buckets[l].length}, MemorySegment.ofArray(le(buckets[l])));
        }
        w.write(path);
    }

    private static byte[] le(int[] v) {
        byte[] b = new byte[v.length * 4];
        MemorySegment s = MemorySegment.ofArray(b);
        for (int i = 0; i < v.length; i++) s.set(I32, 4L * i, v[i]);
        return b;
    }

    /**
     * Reads a GPU index. The mask and the bucket of each layer must agree (PowerInfer uses both: the mask on
     * the CPU side, the bucket to map compact GPU rows to neurons), otherwise the file is rejected.
     */
    public static GpuIndex read(Path path) throws IOException {
        try (GGUFFile f = GGUFFile.open(path)) {
            String arch = f.getString("general.architecture", null);
            if (!ARCHITECTURE.equals(arch))
                throw new GGUFFormatException(path, "general.architecture", 0, "is " + arch + ", not " + ARCHITECTURE + " (not a GPU index)");
            List<TensorInfo> infos = f.tensorInfos();
            long layers = f.getLong(KEY_BLOCK_COUNT, infos.size() / 2);
            if (layers < 0 || layers * 2 != infos.size())
                throw new GGUFFormatException(path, KEY_BLOCK_COUNT, 0, layers + " layers but " + infos.size() + " tensors (expected 2 per layer)");
            MetadataValue cap = f.get(KEY_VRAM_CAPACITY);
            long vram = cap == null || cap.isArray() || cap.type() == org.powerinfer4j.engine.gguf.GGUFValueType.STRING ? 0 : cap.asLong();
            int[] ff = new int[(int) layers], experts = new int[(int) layers];
            int[][] buckets = new int[(int) layers][];
            for (int l = 0; l < layers; l++) {
                TensorInfo maskInfo = infos.get(2 * l);
                int[] mask = ints(f, path, maskInfo, true);
                int[] bucket = ints(f, path, infos.get(2 * l + 1), false);
                ff[l] = mask.length;
                experts[l] = maskInfo.ne().length == 2 ? Math.toIntExact(maskInfo.ne()[1]) : 1;
                int set = 0;
                for (int m : mask) {
                    if (m != 0 && m != 1) throw new GGUFFormatException(path, infos.get(2 * l).name(), 0, "mask value " + m + " is not 0/1");
                    set += m;
                }
                if (set != bucket.length)
                    throw new GGUFFormatException(path, infos.get(2 * l + 1).name(), 0, bucket.length + " entries but the mask marks " + set);
                for (int j = 0; j < bucket.length; j++)
                    if (bucket[j] < 0 || bucket[j] >= mask.length || mask[bucket[j]] != 1 || (j > 0 && bucket[j] <= bucket[j - 1]))
                        throw new GGUFFormatException(path, infos.get(2 * l + 1).name(), 0, "entry " + j + " = " + bucket[j]
                                + " is not an ascending GPU neuron of the mask");
                buckets[l] = bucket;
            }
            return new GpuIndex(vram, ff, buckets, experts);
        }
    }

    /** A 1-D I32 tensor's values; a mask may also be 2-D [n_ff, n_expert] (an expert layer). */
    private static int[] ints(GGUFFile f, Path path, TensorInfo ti, boolean mask) throws GGUFFormatException {
        boolean shapeOk = ti.ne().length == 1 || (mask && ti.ne().length == 2 && ti.ne()[1] >= 1);
        if (ti.type() != GGMLType.I32 || !shapeOk)
            throw new GGUFFormatException(path, ti.name(), 0, "must be a " + (mask ? "1-D (or [n_ff, n_expert]) " : "1-D ") + "I32 tensor, is "
                    + ti.type() + " " + Arrays.toString(ti.ne()));
        long n = ti.ne().length == 1 ? ti.ne()[0] : Math.multiplyExact(ti.ne()[0], ti.ne()[1]);
        if (n > Integer.MAX_VALUE) throw new GGUFFormatException(path, ti.name(), 0, "has " + n + " entries, too many for a layer");
        MemorySegment s = f.segment().asSlice(f.dataOffset() + ti.offset(), ti.byteSize());
        int[] v = new int[(int) n];
        for (int i = 0; i < v.length; i++) v[i] = s.get(I32, 4L * i);
        return v;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GpuIndex g && g.vramCapacity == vramCapacity && Arrays.equals(g.ffSizes, ffSizes)
                && Arrays.deepEquals(g.buckets, buckets) && Arrays.equals(g.experts, experts);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(vramCapacity) * 31 + Arrays.deepHashCode(buckets);
    }

    @Override
    public String toString() {
        return "GpuIndex[" + layers() + " layers, " + totalNeurons() + " GPU neurons, vram_capacity " + vramCapacity + "]";
    }
}
