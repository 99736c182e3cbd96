package org.powerinfer4j.engine.offline;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFWriter;
import org.powerinfer4j.engine.gguf.TensorInfo;
import org.powerinfer4j.engine.kernels.Kernels;
import org.powerinfer4j.engine.kernels.RowKernel;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Quantizer;

/**
 * Writes a PowerInfer sparse model ({@code PWRI}) from a dense or sparse GGUF and trained predictors: every
 * metadata value and tensor of the source in order and type, except that each {@code blk.N.ffn_down.weight}
 * {n_ff, n_embd} becomes {@code blk.N.ffn_down_t.weight} {n_embd, n_ff} (its transpose, so row r is neuron r's
 * output column) followed by {@code blk.N.fc1.weight} {n_embd, H} and {@code blk.N.fc2.weight} {H, n_ff} in F16
 * (replacing predictors the source already has), plus {@code powerinfer.sparse_threshold} (f32). In a
 * mixture-of-experts layer the experts' tensors stay as they are and {@code blk.N.ffn_down_exps.weight} is followed by
 * every expert E's predictor {@code blk.N.fc1.E.weight} {n_embd, H_E} and {@code blk.N.fc2.E.weight} {H_E, n_ff}
 * (our extension: PowerInfer runs no MoE; one 2-D pair per expert so each expert keeps its own adaptive size) — or,
 * for a predictor over all the layer's experts ({@code train-predictors --moe-predictor layer}), one pair
 * {@code blk.N.fc1.weight} {n_embd, H} and {@code blk.N.fc2.weight} {H, n_expert·n_ff}, expert E's neurons at rows
 * {@code E·n_ff..}.
 * {@code general.file_type} is left as it was.
 *
 * <p>The transposed down matrix keeps its type when it can: F32/F16/BF16 always; a quantized type when the new row
 * length n_embd is a whole number of blocks and {@link Quantizer} produces that type (dequantize, transpose,
 * re-quantize; lossy only as that type is); otherwise F16.
 */
public final class PowerInferWriter {
    private PowerInferWriter() {}

    public static final String KEY_THRESHOLD = "powerinfer.sparse_threshold";

    public static void write(GGUFFile src, PredictorTrainer.Result predictors, Path out) throws IOException {
        Map<Integer, PredictorTrainer.LayerPredictor> byLayer = new HashMap<>();
        Map<Integer, java.util.TreeMap<Integer, PredictorTrainer.LayerPredictor>> byExpert = new HashMap<>();
        for (PredictorTrainer.LayerPredictor p : predictors.layers())
            if (p.expert() < 0) byLayer.put(p.layer(), p);
            else byExpert.computeIfAbsent(p.layer(), l -> new java.util.TreeMap<>()).put(p.expert(), p);
        GGUFWriter w = new GGUFWriter().magic(GGUFFile.MAGIC_PWRI);
        w.putAll(src, k -> true);
        w.putFloat32(KEY_THRESHOLD, predictors.fileThreshold());
        java.util.regex.Pattern layerTensor = java.util.regex.Pattern.compile(
                "blk\\.(\\d+)\\.(ffn_down|ffn_down_t|fc1|fc2|ffn_down_exps|fc1\\.\\d+|fc2\\.\\d+)\\.weight");
        for (TensorInfo ti : src.tensorInfos()) {
            java.util.regex.Matcher m = layerTensor.matcher(ti.name());
            if (!m.matches()) {
                w.addTensor(ti.name(), ti.type(), ti.ne(), slice(src, ti));
                continue;
            }
            int layer = Integer.parseInt(m.group(1));
            PredictorTrainer.LayerPredictor p = byLayer.get(layer);
            var experts = byExpert.get(layer);
            String part = m.group(2);
            if (part.startsWith("fc1.") || part.startsWith("fc2.")) {
                if (experts == null && p == null) w.addTensor(ti.name(), ti.type(), ti.ne(), slice(src, ti)); // kept: no new predictors for this layer
                continue;
            }
            switch (part) {
                case "fc1", "fc2" -> {
                    if (p == null && experts == null) w.addTensor(ti.name(), ti.type(), ti.ne(), slice(src, ti)); // kept: no new predictor for this layer
                }
                case "ffn_down_exps" -> {   // MoE: the experts stay as they are (transposed at load), their predictors follow
                    w.addTensor(ti.name(), ti.type(), ti.ne(), slice(src, ti));
                    if (experts != null)
                        for (var e : experts.values()) addPredictor(w, "blk." + layer + ".", "." + e.expert(), e, ti.ne()[1], ti.ne()[0]);
                    // one predictor over all experts' neurons: fc2 {H, n_expert·n_ff}, expert E's block at rows E·n_ff
                    addPredictor(w, "blk." + layer + ".", "", p, ti.ne()[1], ti.ne()[0] * ti.ne()[2]);
                }
                case "ffn_down_t" -> {
                    w.addTensor(ti.name(), ti.type(), ti.ne(), slice(src, ti));
                    addPredictor(w, "blk." + layer + ".", "", p, ti.ne()[0], ti.ne()[1]);
                }
                default -> {
                    long nFf = ti.ne()[0], nEmbd = ti.ne()[1];
                    GGMLType t = transposedType(ti.type(), nEmbd);
                    w.addTensor("blk." + layer + ".ffn_down_t.weight", t, new long[]{nEmbd, nFf}, transposed(src, ti, t));
                    addPredictor(w, "blk." + layer + ".", "", p, nEmbd, nFf);
                }
            }
        }
        for (int l : byLayer.keySet())
            if (!w.tensorNames().contains("blk." + l + ".fc1.weight"))
                throw new IOException("layer " + l + " has a predictor but the model has no blk." + l + ".ffn_down tensor");
        for (var e : byExpert.entrySet())
            for (int x : e.getValue().keySet())
                if (!w.tensorNames().contains("blk." + e.getKey() + ".fc1." + x + ".weight"))
                    throw new IOException("layer " + e.getKey() + " has expert predictors but the model has no blk." + e.getKey() + ".ffn_down_exps tensor");
        w.write(out);
    }

    static GGMLType transposedType(GGMLType t, long rowLength) {
        if (t == GGMLType.F32 || t == GGMLType.F16 || t == GGMLType.BF16) return t;
        return rowLength % t.blockSize == 0 && Quantizer.supports(t) ? t : GGMLType.F16;
    }

    /** {@code blk.N.fc1<suffix>.weight} {n_embd, H} and {@code fc2<suffix>} {H, n_ff} in F16 (suffix "" or ".E" for expert E). */
    private static void addPredictor(GGUFWriter w, String prefix, String suffix, PredictorTrainer.LayerPredictor p, long nEmbd, long nFf) {
        if (p == null) return;
        if (p.fc1().length != p.hidden() * nEmbd || p.fc2().length != nFf * p.hidden())
            throw new IllegalArgumentException(prefix + "fc1" + suffix + ": predictor shape does not match n_embd " + nEmbd + ", n_ff " + nFf);
        w.addTensor(prefix + "fc1" + suffix + ".weight", GGMLType.F16, new long[]{nEmbd, p.hidden()},
                MemorySegment.ofArray(Quantizer.quantize(GGMLType.F16, p.fc1())));
        w.addTensor(prefix + "fc2" + suffix + ".weight", GGMLType.F16, new long[]{p.hidden(), nFf},
                MemorySegment.ofArray(Quantizer.quantize(GGMLType.F16, p.fc2())));
    }

    private static MemorySegment slice(GGUFFile f, TensorInfo ti) {
        return f.segment().asSlice(f.dataOffset() + ti.offset(), ti.byteSize());
    }

    /** Streams the transpose of {@code down} {n_ff, n_embd} as {n_embd, n_ff} rows of type {@code t}, one output row at a time. */
    private static GGUFWriter.TensorData transposed(GGUFFile f, TensorInfo down, GGMLType t) {
        return out -> {
            int nFf = Math.toIntExact(down.ne()[0]), nEmbd = Math.toIntExact(down.ne()[1]);
            MemorySegment s = slice(f, down);
            RowKernel k = Kernels.forType(down.type());
            long rowBytes = down.type().byteSize(nFf);
            // whole matrix as floats [n_embd][n_ff]: the source rows are contiguous along n_ff
            float[] full = new float[Math.multiplyExact(nFf, nEmbd)];
            for (int e = 0; e < nEmbd; e++) k.dequantize(s, e * rowBytes, full, e * nFf, nFf);
            float[] row = new float[nEmbd];
            byte[] q = new byte[Math.toIntExact(t.byteSize(nEmbd))];
            for (int r = 0; r < nFf; r++) {
                for (int e = 0; e < nEmbd; e++) row[e] = full[e * nFf + r];
                Quantizer.quantize(t, row, 0, nEmbd, q, 0);
                out.write(ByteBuffer.wrap(q).order(ByteOrder.LITTLE_ENDIAN));
            }
        };
    }
}
