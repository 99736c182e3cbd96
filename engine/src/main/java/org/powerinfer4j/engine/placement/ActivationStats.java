package org.powerinfer4j.engine.placement;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFWriter;
import org.powerinfer4j.engine.gguf.TensorInfo;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Per-layer, per-neuron firing counts over a profiling corpus, and the skew summaries derived from them.
 *
 * <p>Side file format (GGUF v3, written by {@code profile}): {@code general.architecture = "activation_stats"},
 * {@code activation_stats.block_count} (u32), {@code activation_stats.token_count} (u64),
 * {@code activation_stats.model_name} (string), {@code activation_stats.criterion} ({@code "nonzero"}: h ≠ 0, for
 * ReLU-family models; {@code "abs_gt"}: |h| > threshold, for SwiGLU models), {@code activation_stats.threshold}
 * (f32), and one tensor {@code blk.N.activation_counts} I32 [n_ff] per layer; mixture-of-experts layers add their
 * per-expert counts ({@link ExpertCounts}: {@code blk.N.expert_token_counts}, {@code blk.N.expert_activation_counts}).
 *
 * <p>Also read: a directory of per-layer files ({@code activation_3.npy}, {@code layer3.txt}, ... ordered by the
 * number in the name), single {@code .npy} files (1-D: one layer; 2-D: [layers][n_ff]), plain text (numbers
 * separated by white space: one layer per file), and the JSON of {@code testdata/sparse/activation_counts.json}.
 * Frequencies given as fractions (all values ≤ 1, not all whole numbers) are scaled to counts over a notional {@link #FRACTION_SCALE}
 * tokens; only relative values matter for placement.
 */
public final class ActivationStats {
    public static final String ARCH = "activation_stats";
    public static final String KEY_LAYERS = ARCH + ".block_count";
    public static final String KEY_TOKENS = ARCH + ".token_count";
    public static final String KEY_MODEL = ARCH + ".model_name";
    public static final String KEY_CRITERION = ARCH + ".criterion";
    public static final String KEY_THRESHOLD = ARCH + ".threshold";
    public static final String CRITERION_NONZERO = "nonzero";
    public static final String CRITERION_ABS_GT = "abs_gt";
    public static final long FRACTION_SCALE = 1_000_000;

    private final long[][] counts;
    private final long tokens;
    private final String modelName;
    private final String criterion;
    private final float threshold;
    private final ExpertCounts[] experts;   // per layer, null for a dense layer; null when no layer is MoE

    public ActivationStats(long[][] counts, long tokens, String modelName, String criterion, float threshold) {
        this(counts, tokens, modelName, criterion, threshold, null);
    }

    /** With {@code experts[l]} the expert counts of MoE layer l (null for dense layers; the array may be null). */
    public ActivationStats(long[][] counts, long tokens, String modelName, String criterion, float threshold, ExpertCounts[] experts) {
        if (experts != null && experts.length != counts.length)
            throw new IllegalArgumentException(experts.length + " layers of expert counts for " + counts.length + " layers");
        this.experts = experts == null || Arrays.stream(experts).allMatch(java.util.Objects::isNull) ? null : experts.clone();
        this.counts = new long[counts.length][];
        for (int l = 0; l < counts.length; l++) this.counts[l] = counts[l].clone();
        this.tokens = tokens;
        this.modelName = modelName == null ? "" : modelName;
        this.criterion = criterion;
        this.threshold = threshold;
    }

    public int layers() { return counts.length; }
    public int ff(int layer) { return counts[layer].length; }
    public long tokens() { return tokens; }
    public String modelName() { return modelName; }
    public String criterion() { return criterion; }
    public float threshold() { return threshold; }
    public long[] counts(int layer) { return counts[layer].clone(); }
    /** The expert counts of MoE layer {@code layer}; null for a dense layer. */
    public ExpertCounts experts(int layer) { return experts == null ? null : experts[layer]; }

    /** All counts (copies). */
    public long[][] counts() {
        long[][] c = new long[counts.length][];
        for (int l = 0; l < c.length; l++) c[l] = counts[l].clone();
        return c;
    }

    public long total(int layer) {
        long t = 0;
        for (long c : counts[layer]) t += c;
        return t;
    }

    /** The layer's counts sorted descending. */
    public long[] sortedDescending(int layer) {
        long[] s = counts[layer].clone();
        Arrays.sort(s);
        for (int i = 0, j = s.length - 1; i < j; i++, j--) { long t = s[i]; s[i] = s[j]; s[j] = t; }
        return s;
    }

    /** Share of the layer's activations carried by its top {@code fraction} of neurons (rounded up to whole neurons). */
    public double topShare(int layer, double fraction) {
        long[] s = sortedDescending(layer);
        long t = total(layer);
        if (t == 0) return 0;
        int k = (int) Math.ceil(fraction * s.length - 1e-9);
        long sum = 0;
        for (int i = 0; i < k; i++) sum += s[i];
        return (double) sum / t;
    }

    /** Smallest fraction of the layer's neurons (most frequent first) that covers {@code share} of its activations. */
    public double neuronsCovering(int layer, double share) {
        long[] s = sortedDescending(layer);
        long t = total(layer);
        if (t == 0) return 0;
        long sum = 0;
        for (int i = 0; i < s.length; i++) {
            sum += s[i];
            if (sum >= share * t - 1e-9) return (double) (i + 1) / s.length;
        }
        return 1;
    }

    /** Mean fraction of neurons firing per token (NaN without a token count). */
    public double meanActiveFraction(int layer) {
        return tokens <= 0 ? Double.NaN : (double) total(layer) / tokens / counts[layer].length;
    }

    /** One line per layer, e.g. "layer 3: 20% of neurons cover 80% of activations; top 10% carry 34%". */
    public List<String> summary() {
        List<String> lines = new ArrayList<>();
        for (int l = 0; l < layers(); l++) {
            String active = tokens > 0 ? String.format(Locale.ROOT, "; %.1f%% of neurons fire per token", 100 * meanActiveFraction(l)) : "";
            ExpertCounts e = experts(l);
            if (e != null) {
                lines.add(String.format(Locale.ROOT, "layer %d: %s; summed over experts, %.0f%% of neurons cover 80%% of activations",
                        l, e.summary(Math.max(1, (int) Math.round((double) Arrays.stream(e.tokens()).sum() / Math.max(1, tokens)))), 100 * neuronsCovering(l, 0.8)));
                continue;
            }
            lines.add(String.format(Locale.ROOT, "layer %d: %.0f%% of neurons cover 80%% of activations; top 10%% carry %.0f%%%s",
                    l, 100 * neuronsCovering(l, 0.8), 100 * topShare(l, 0.1), active));
        }
        return lines;
    }

    // ---- writing -----------------------------------------------------------------------------------

    public void write(Path path) throws IOException {
        GGUFWriter w = new GGUFWriter();
        w.putString("general.architecture", ARCH);
        w.putUInt32(KEY_LAYERS, layers());
        w.putUInt64(KEY_TOKENS, tokens);
        w.putString(KEY_MODEL, modelName);
        w.putString(KEY_CRITERION, criterion);
        w.putFloat32(KEY_THRESHOLD, threshold);
        ValueLayout.OfInt le = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        for (int l = 0; l < layers(); l++) {
            long[] c = counts[l];
            byte[] b = new byte[4 * c.length];
            MemorySegment s = MemorySegment.ofArray(b);
            for (int i = 0; i < c.length; i++) {
                if (c[i] > Integer.MAX_VALUE) throw new IOException("layer " + l + " neuron " + i + ": count " + c[i] + " exceeds I32");
                s.set(le, 4L * i, (int) c[i]);
            }
            w.addTensor("blk." + l + ".activation_counts", GGMLType.I32, new long[]{c.length}, s);
            if (experts(l) != null) experts(l).write(w, l);
        }
        w.write(path);
    }

    // ---- reading -----------------------------------------------------------------------------------

    /** Reads statistics in any of the supported formats (see the class comment). */
    public static ActivationStats read(Path path) throws IOException {
        if (Files.isDirectory(path)) return readDirectory(path);
        if (isGguf(path)) return readGguf(path);
        if (path.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".json") && !isNpy(path)) return readJson(path);
        return fromRows(readRaw(path), 0, path.getFileName().toString());
    }

    /** Per-layer files (one layer each, .npy or text), in the given order. */
    public static ActivationStats readLayers(List<Path> files) throws IOException {
        List<double[]> rows = new ArrayList<>();
        for (Path p : files) {
            double[][] r = readRaw(p);
            if (r.length != 1) throw new IOException(p.getFileName() + ": holds " + r.length + " layers, expected one");
            rows.add(r[0]);
        }
        return fromRows(rows.toArray(double[][]::new), 0, files.isEmpty() ? "" : files.get(0).getParent() + "");
    }

    private static boolean isGguf(Path p) throws IOException {
        String m = magic(p);
        return m.equals("GGUF") || m.equals("PWRI");
    }

    private static boolean isNpy(Path p) throws IOException {
        String m = magic(p);
        return !m.isEmpty() && m.charAt(0) == (char) 0x93;
    }

    private static String magic(Path p) throws IOException {
        byte[] head = new byte[4];
        try (var in = Files.newInputStream(p)) {
            int n = in.readNBytes(head, 0, 4);
            return new String(head, 0, n, StandardCharsets.ISO_8859_1);
        }
    }

    /** The numbers of a .npy or text file, unscaled. */
    private static double[][] readRaw(Path p) throws IOException {
        return isNpy(p) ? NpyReader.read(p) : new double[][]{readText(p)};
    }

    private static final Pattern LAYER_NUMBER = Pattern.compile("(\\d+)(?!.*\\d)");

    private static ActivationStats readDirectory(Path dir) throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(Files::isRegularFile).filter(p -> {
                String n = p.getFileName().toString().toLowerCase(Locale.ROOT);
                return (n.endsWith(".npy") || n.endsWith(".txt") || n.endsWith(".csv")) && LAYER_NUMBER.matcher(n).find();
            }).toList();
        }
        if (files.isEmpty()) throw new IOException(dir + ": no per-layer .npy/.txt files (named with their layer number)");
        List<Path> sorted = new ArrayList<>(files);
        sorted.sort((a, b) -> Integer.compare(layerNumber(a), layerNumber(b)));
        for (int i = 0; i < sorted.size(); i++)
            if (layerNumber(sorted.get(i)) != i) throw new IOException(dir + ": layer files must be numbered 0.." + (sorted.size() - 1)
                    + ", found " + sorted.get(i).getFileName() + " at position " + i);
        return readLayers(sorted);
    }

    private static int layerNumber(Path p) {
        String n = p.getFileName().toString();
        int dot = n.lastIndexOf('.');
        Matcher m = LAYER_NUMBER.matcher(dot > 0 ? n.substring(0, dot) : n);
        return m.find() ? Integer.parseInt(m.group(1)) : -1;
    }

    private static double[] readText(Path path) throws IOException {
        String t = Files.readString(path, StandardCharsets.UTF_8).trim();
        if (t.isEmpty()) throw new IOException(path.getFileName() + ": empty");
        String[] parts = t.split("[\\s,]+");
        double[] v = new double[parts.length];
        for (int i = 0; i < parts.length; i++) {
            try {
                v[i] = Double.parseDouble(parts[i]);
            } catch (NumberFormatException e) {
                throw new IOException(path.getFileName() + ": '" + parts[i] + "' is not a number (value " + i + ")");
            }
        }
        return v;
    }

    /**
     * Numbers → counts. Frequencies (every value ≤ 1 and some not a whole number) are scaled; negative or
     * non-finite values are errors.
     */
    static ActivationStats fromRows(double[][] rows, long tokens, String source) throws IOException {
        boolean fractions = true, whole = true;
        for (double[] r : rows)
            for (double v : r) {
                if (!Double.isFinite(v) || v < 0) throw new IOException(source + ": value " + v + " is not a non-negative count or frequency");
                if (v > 1) fractions = false;
                if (v != Math.rint(v)) whole = false;
            }
        fractions &= !whole;
        long[][] c = new long[rows.length][];
        for (int l = 0; l < rows.length; l++) {
            c[l] = new long[rows[l].length];
            for (int i = 0; i < c[l].length; i++) c[l][i] = Math.round(fractions ? rows[l][i] * FRACTION_SCALE : rows[l][i]);
        }
        return new ActivationStats(c, fractions ? FRACTION_SCALE : tokens, source, CRITERION_NONZERO, 0f);
    }

    private static ActivationStats readGguf(Path path) throws IOException {
        try (GGUFFile f = GGUFFile.open(path)) {
            List<long[]> layers = new ArrayList<>();
            List<ExpertCounts> perLayer = new ArrayList<>();
            ValueLayout.OfInt le = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
            for (int l = 0; ; l++) {
                TensorInfo ti = f.tensorInfo("blk." + l + ".activation_counts");
                if (ti == null) break;
                if (ti.type() != GGMLType.I32 || ti.ne().length != 1)
                    throw new IOException(path.getFileName() + ": " + ti.name() + " must be a 1-D I32 tensor");
                MemorySegment s = f.segment().asSlice(f.dataOffset() + ti.offset(), ti.byteSize());
                long[] c = new long[Math.toIntExact(ti.ne()[0])];
                for (int i = 0; i < c.length; i++) c[i] = Integer.toUnsignedLong(s.get(le, 4L * i));
                layers.add(c);
                perLayer.add(ExpertCounts.read(f, l, path.getFileName().toString()));
            }
            if (layers.isEmpty()) throw new IOException(path.getFileName() + ": no blk.N.activation_counts tensors (not an activation statistics file)");
            long declared = f.getLong(KEY_LAYERS, layers.size());
            if (declared != layers.size()) throw new IOException(path.getFileName() + ": " + KEY_LAYERS + " is " + declared + " but " + layers.size() + " layers are stored");
            return new ActivationStats(layers.toArray(long[][]::new), f.getLong(KEY_TOKENS, 0), f.getString(KEY_MODEL, ""),
                    f.getString(KEY_CRITERION, CRITERION_NONZERO), f.getFloat(KEY_THRESHOLD, 0f), perLayer.toArray(ExpertCounts[]::new));
        }
    }

    private static ActivationStats readJson(Path path) throws IOException {
        com.fasterxml.jackson.databind.JsonNode root;
        try {
            root = new com.fasterxml.jackson.databind.ObjectMapper().readTree(Files.readString(path, StandardCharsets.UTF_8));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IOException(path.getFileName() + ": " + e.getOriginalMessage().replace('\n', ' '));   // one line, without Jackson's source excerpt
        }
        com.fasterxml.jackson.databind.JsonNode layers = root == null ? null : root.get("layers");
        if (layers == null || !layers.isArray())
            throw new IOException(path.getFileName() + ": expected an object with a \"layers\" array");
        double[][] rows = new double[layers.size()][];
        for (com.fasterxml.jackson.databind.JsonNode layer : layers) {
            com.fasterxml.jackson.databind.JsonNode counts = layer.get("counts");
            if (counts == null || !counts.isArray()) throw new IOException(path.getFileName() + ": each layer needs a \"counts\" array");
            int idx = layer.path("layer").isNumber() ? layer.get("layer").intValue() : Arrays.asList(rows).indexOf(null);
            if (idx < 0 || idx >= rows.length || rows[idx] != null) throw new IOException(path.getFileName() + ": bad or repeated layer index " + idx);
            double[] row = new double[counts.size()];
            for (int i = 0; i < row.length; i++) {
                if (!counts.get(i).isNumber()) throw new IOException(path.getFileName() + ": layer " + idx + " count " + i + " is not a number");
                row[i] = counts.get(i).doubleValue();
            }
            rows[idx] = row;
        }
        long tokens = root.path("n_tokens").isNumber() ? root.get("n_tokens").longValue() : 0;
        return fromRows(rows, tokens, path.getFileName().toString());
    }
}
