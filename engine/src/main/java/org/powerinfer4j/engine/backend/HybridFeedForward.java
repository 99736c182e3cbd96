package org.powerinfer4j.engine.backend;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.powerinfer4j.engine.gpu.GgmlRows;
import org.powerinfer4j.engine.gpu.GpuActivation;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.GpuBuffer;
import org.powerinfer4j.engine.gpu.GpuEvent;
import org.powerinfer4j.engine.gpu.GpuMatrix;
import org.powerinfer4j.engine.gpu.GpuStream;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.ExpertFeedForward;
import org.powerinfer4j.engine.model.FeedForward;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.placement.DeviceFootprint;
import org.powerinfer4j.engine.placement.GpuFootprint;
import org.powerinfer4j.engine.sparse.SparseFeedForward;
import org.powerinfer4j.engine.kernels.SparseOps;
import org.powerinfer4j.engine.sparse.SparsityStats;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * PowerInfer's hybrid FFN in predict mode: each layer's hot neurons ({@link HybridPlacement}) are computed on the
 * GPU from compact copies of their gate/up/down_t rows, the cold ones on the CPU with {@link SparseOps}, at the same
 * time, and the two partial outputs are added. For a mixture-of-experts model the same runs per routed expert
 * ({@link HybridUnits}: every (layer, expert) is a unit with its own hot neurons and predictor; {@link #experts()}).
 *
 * <p>Per layer call, on one device stream (in order, so no events are needed between these steps):
 * <ol>
 *   <li>copy x (normed FFN input) and the predictor input (residual) to the device — {@code batch·n_embd} floats each;</li>
 *   <li>predictor → mask (one byte per neuron); mask copied back ({@code batch·n_ff} bytes), event "mask";</li>
 *   <li>per token: row-sparse gate and up over the hot rows (the row map sends compact row j to neuron hot[j], so
 *       the mask decides), activation, sparse axpy of down_t → partial output; from
 *       {@link GpuBackend#hybridDenseFrom()} tokens the predictor and the hot rows run as GEMMs over the whole batch
 *       and the mask zeroes the left-out rows' activations instead ({@link HybridDevicePass});</li>
 *   <li>partial output copied back ({@code batch·n_embd} floats), event "done".</li>
 * </ol>
 * Meanwhile the CPU takes the cold part of the mask ({@link ColdMaskSource}), computes the cold predicted-active
 * neurons into the output, waits for the stream (not the device) and adds the GPU partial. Results equal
 * {@link SparseFeedForward} up to float summation order: every neuron is hot or cold, never both, and each side
 * computes exactly the predicted-active neurons it owns.
 *
 * <p>Failures never abort and never give a wrong answer: a part that cannot be placed at load (workspace,
 * a predictor, a layer's hot rows: device out of memory, unsupported weight type) falls back to the CPU for that
 * part with one warning; a device failure during a forward pass disables the GPU, warns once, and the layer is
 * recomputed on the CPU.
 *
 * <p>Calls are serialised (one device workspace); the model runs one forward pass at a time anyway (Model.forward).
 */
public final class HybridFeedForward implements FeedForward, AutoCloseable {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    private final GpuBackend gpu;                 // null: CPU only
    private final boolean ownsBackend;
    private final FfnActivation activation;
    private final GpuActivation gpuActivation;
    private final float threshold;
    private final Tensor[] downT;
    private final SparsityStats stats;
    private final ColdMaskSource coldMask;
    private final Consumer<String> warn;
    private final HybridUnits units;             // what the per-"layer" arrays index: layers, or a MoE model's experts
    private final int layers, dim, ffMax, hMax, maxBatch;
    private final int denseFrom;                  // tokens from which a call's device half runs as GEMMs
    private final HybridPlacement requested;
    private final DeviceFootprint footprint;
    private HybridPlacement placement;            // after load-time fallbacks
    private final HybridLayer[] onGpu;               // null entry: layer entirely on the CPU
    private final List<String> loadNotes = new ArrayList<>();
    private final OverlapStats overlap = new OverlapStats();
    private final AtomicLongArray gpuComputed, cpuComputed; // predicted-active neurons served by each side, per layer
    private final ReentrantLock lock = new ReentrantLock();
    private GpuStream stream;
    private HybridWorkspace ws;
    private volatile boolean gpuEnabled;
    private volatile String disabledReason;

    private final HybridCpuPart cpu;    // the CPU's half and its scratch, guarded by lock
    private final HybridLayer.SharedUploads shared = new HybridLayer.SharedUploads();



    /**
     * Uploads the hot parts; never throws for device trouble (the affected parts stay on the CPU, see
     * {@link #loadNotes()}).
     *
     * @param gpu         the device; null = CPU only
     * @param ownsBackend close {@code gpu} with this
     * @param placement   hot/cold split per layer
     * @param w           the model's weights (predictors required)
     * @param downT       neuron-major down projection per layer
     * @param maxBatch    most tokens per call (the session's batch size)
     * @param stats       predicted-active counts are recorded here (nullable)
     * @param warn        receives one line per degradation
     */
    public HybridFeedForward(GpuBackend gpu, boolean ownsBackend, HybridPlacement placement, ModelWeights w, FfnActivation activation,
                             float threshold, Tensor[] downT, int maxBatch, ColdMaskSource coldMask, SparsityStats stats, Consumer<String> warn) {
        this(gpu, ownsBackend, placement, HybridUnits.ofLayers(w, downT), activation, threshold, maxBatch, coldMask, stats, warn);
    }

    /**
     * The same over any {@link HybridUnits}: a dense model's layers, or a MoE model's routed experts (then the
     * placement has one entry per expert, and {@link #experts()} computes them).
     */
    public HybridFeedForward(GpuBackend gpu, boolean ownsBackend, HybridPlacement placement, HybridUnits units, FfnActivation activation,
                             float threshold, int maxBatch, ColdMaskSource coldMask, SparsityStats stats, Consumer<String> warn) {
        if (!activation.isRelu()) throw new IllegalArgumentException("the hybrid FFN needs a ReLU-family activation, not " + activation);
        LayerWeights[] lw = units.allWeights();
        this.units = units;
        if (placement.layers() != lw.length) throw new IllegalArgumentException("placement has " + placement.layers() + " units, the model " + lw.length);
        this.gpu = gpu;
        this.ownsBackend = ownsBackend;
        this.activation = activation;
        this.gpuActivation = GpuActivation.of(activation, lw[0].ffnGate() != null);
        this.threshold = threshold;
        this.downT = units.downT();
        this.stats = stats;
        this.coldMask = coldMask == null ? GpuOptions.DEFAULT_COLD_MASK : coldMask;
        this.warn = warn == null ? m -> {} : warn;
        this.layers = lw.length;
        this.dim = lw[0].ffnUp().rowLength();
        this.maxBatch = Math.max(1, maxBatch);
        this.denseFrom = GpuBackend.hybridDenseFrom();
        this.requested = placement;
        this.footprint = gpu == null ? DeviceFootprint.EMPTY
                : DeviceFootprint.hybridFfn(lw, units.ofExperts() ? units.labels() : null, placement.hotCounts(), this.maxBatch);
        int ff = 0, h = 1;
        for (int l = 0; l < layers; l++) {
            if (!lw[l].hasPredictor()) throw new IllegalArgumentException(units.label(l) + " has no activation predictor (the hybrid FFN runs in predict mode)");
            if (placement.ff(l) != lw[l].ffnUp().rows()) throw new IllegalArgumentException("placement of " + units.label(l) + " has " + placement.ff(l) + " neurons, the model " + lw[l].ffnUp().rows());
            ff = Math.max(ff, lw[l].ffnUp().rows());
            h = Math.max(h, lw[l].predictorFc1().rows());
        }
        this.ffMax = ff;
        this.hMax = h;
        this.cpu = new HybridCpuPart(activation, threshold, this.downT, dim, this.maxBatch, ffMax, hMax);
        this.gpuComputed = new AtomicLongArray(layers);
        this.cpuComputed = new AtomicLongArray(layers);
        this.onGpu = new HybridLayer[layers];
        this.placement = placement;
        load(lw);
    }

    private void load(LayerWeights[] lw) {
        if (gpu == null || placement.totalHot() == 0) {
            placement = placement.totalHot() == 0 ? placement : allCold("no device");
            return;
        }
        int kMax = 0;
        for (int l = 0; l < layers; l++) kMax = Math.max(kMax, placement.hotCount(l));
        try {
            stream = gpu.createStream();
            ws = new HybridWorkspace(gpu, dim, ffMax, kMax, hMax, maxBatch, denseFrom);
        } catch (RuntimeException e) {
            note("device workspace (" + human(HybridWorkspace.bytes(dim, ffMax, kMax, hMax, maxBatch, denseFrom)) + ") could not be allocated: "
                    + e.getMessage() + "; all FFN neurons on the CPU");
            closeDevice();
            placement = allCold("device workspace unavailable");
            warnLoadNotes();
            return;
        }
        // PowerInfer's priority: predictors before hot rows; a layer without hot rows needs no device predictor
        List<Integer> predictorOnCpu = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            if (placement.hotCount(l) == 0) continue;
            HybridLayer g = new HybridLayer(placement.hot(l), placement.cold(l));
            onGpu[l] = g;
            try {
                g.fc1 = shared.acquire(lw[l].predictorFc1(), t -> gpu.uploadMatrix(stream, t));
                // counted with the first unit that uses it (a layer-wide fc1 is one allocation for the layer's experts)
                g.predictorBytes = shared.firstUse(g.fc1) ? bytes(g.fc1) : 0;
                g.fc2 = shared.acquire(lw[l].predictorFc2(), t -> gpu.uploadMatrix(stream, t));
                g.predictorBytes += shared.firstUse(g.fc2) ? bytes(g.fc2) : 0;
            } catch (RuntimeException e) {
                g.freePredictor(shared);
                predictorOnCpu.add(l);
                if (predictorOnCpu.size() == 1) loadNotes.add("predictor of " + units.label(l) + " not placed on the device (" + e.getMessage() + ")");
            }
        }
        if (predictorOnCpu.size() > 1) loadNotes.add("predictors of " + labels(predictorOnCpu) + " evaluated on the CPU");
        List<Integer> rowsOnCpu = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            HybridLayer g = onGpu[l];
            if (g == null) continue;
            try {
                int k = g.hot.length;
                if (lw[l].ffnGate() != null) g.gate = gpu.uploadRows(stream, lw[l].ffnGate(), g.hot, k);
                g.up = gpu.uploadRows(stream, lw[l].ffnUp(), g.hot, k);
                GgmlRows.requireAxpySupported(downT[l].type());
                g.down = gpu.uploadRows(stream, downT[l], g.hot, k);
                g.rowMap = gpu.uploadInts(stream, g.hot);
                g.gateBias = hotBias(lw[l].get("ffn_gate.bias"), g.hot);
                g.upBias = hotBias(lw[l].get("ffn_up.bias"), g.hot);
            } catch (RuntimeException e) {
                g.freeRows();
                g.freePredictor(shared);
                onGpu[l] = null;
                placement = placement.withLayerCold(l);
                rowsOnCpu.add(l);
                if (rowsOnCpu.size() == 1) loadNotes.add("hot rows of " + units.label(l) + " not placed on the device (" + e.getMessage() + ")");
                continue;
            }
            g.bytes = bytes(g.gate) + bytes(g.up) + bytes(g.down) + GpuFootprint.pad(g.rowMap.byteSize()) + (g.fc1 == null ? 0 : g.predictorBytes)
                    + (g.gateBias == null ? 0 : GpuFootprint.pad(g.gateBias.byteSize())) + (g.upBias == null ? 0 : GpuFootprint.pad(g.upBias.byteSize()));
        }
        if (rowsOnCpu.size() > 1) loadNotes.add(labels(rowsOnCpu) + " run entirely on the CPU");
        gpuEnabled = Arrays.stream(onGpu).anyMatch(g -> g != null);
        if (!gpuEnabled) {
            closeDevice();
            placement = allCold("nothing could be placed on the device");
        }
        warnLoadNotes();
    }

    private String labels(List<Integer> unitList) {
        return unitList.stream().map(units::label).toList().toString();
    }

    /** A bias vector's hot entries in hot order, on the device; null without a bias. */
    private GpuBuffer hotBias(Tensor bias, int[] hot) {
        if (bias == null) return null;
        float[] v = new float[hot.length];
        for (int j = 0; j < hot.length; j++) v[j] = bias.data().getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, hot[j]);
        return gpu.uploadFloats(stream, v);
    }

    private HybridPlacement allCold(String why) {
        return HybridPlacement.allCold(placement.ffSizes(), placement.source() + "; " + why);
    }

    private void note(String s) {
        loadNotes.add(s);
    }

    private void warnLoadNotes() {
        if (!loadNotes.isEmpty()) warn.accept("warning: hybrid FFN: " + String.join("; ", loadNotes) + " (computed on the CPU instead)");
    }

    private static long bytes(GpuMatrix m) {
        return m == null ? 0 : GpuFootprint.pad(Math.max(1, m.data().byteSize()));
    }

    // --- forward ---------------------------------------------------------------------------------------------------

    @Override
    public void compute(WorkerPool pool, int layer, LayerWeights w, InferenceState s, int batch) {
        if (units.ofExperts()) throw new IllegalStateException("this hybrid FFN places experts: run it through experts()");
        computeRows(pool, layer, w, s.ffnInput(), s.residual(), s.ffnOutput(), s.ffnGate(), s.ffnUp(), batch, s.perTokenProducts());
    }

    /**
     * Decode steps of several sessions in one pass: an FFN row depends on nothing but its own input, so a sequence
     * batch's rows run as a prompt batch's do, in pieces the device workspace holds ({@link #computeRows}).
     */
    @Override
    public boolean supportsSequenceBatches() {
        return true;
    }

    /**
     * Unit {@code unit} over {@code batch} rows in pieces of at most {@link #maxBatch} (the device workspace's rows),
     * or one row at a time with {@code perToken} (exact decode batching: each row gets exactly its step alone).
     */
    private void computeRows(WorkerPool pool, int unit, LayerWeights w, float[] x, float[] residual, float[] out, float[] gate, float[] up,
                             int batch, boolean perToken) {
        int step = perToken ? 1 : maxBatch;
        if (batch <= step) {
            computeUnit(pool, unit, w, x, residual, out, gate, up, batch);
            return;
        }
        float[] px = new float[step * dim], pr = new float[step * dim], po = new float[step * dim];
        for (int b0 = 0; b0 < batch; b0 += step) {
            int n = Math.min(step, batch - b0);
            System.arraycopy(x, b0 * dim, px, 0, n * dim);
            System.arraycopy(residual, b0 * dim, pr, 0, n * dim);
            computeUnit(pool, unit, w, px, pr, po, gate, up, n);
            System.arraycopy(po, 0, out, b0 * dim, n * dim);
        }
    }

    /**
     * The routed experts' FFN of a MoE model whose units are its experts: each expert's hot neurons on the device,
     * its cold ones on the CPU, as a dense layer's.
     */
    public ExpertFeedForward experts() {
        if (!units.ofExperts()) throw new IllegalStateException("this hybrid FFN places dense layers, not experts");
        return new ExpertFeedForward() {
            @Override
            public boolean needsResidual() {
                return true;
            }

            @Override
            public boolean supportsSequenceBatches() {
                return true;   // an expert's rows from several sessions run as a prompt's do (computeRows)
            }

            @Override
            public void compute(WorkerPool pool, FfnActivation activation, int layer, int e, LayerWeights w, float[] x, float[] residual, int[] tokens,
                                int n, float[] hb, float[] hb2, float[] y, Object scratch, InferenceState seq) {
                int u = units.unit(layer, e);
                computeRows(pool, u, units.weights(u), x, residual, y, hb, hb2, n, seq != null && seq.perTokenProducts());
            }
        };
    }

    /**
     * Unit {@code unit}'s FFN over {@code batch} rows of {@code x} (n_embd each) into {@code out} (overwritten);
     * {@code residual} is the predictor's input, {@code gate}/{@code up} scratch of batch·n_ff floats.
     */
    private void computeUnit(WorkerPool pool, int unit, LayerWeights w, float[] x, float[] residual, float[] out, float[] gate, float[] up, int batch) {
        if (batch > maxBatch) throw new IllegalArgumentException("batch " + batch + " exceeds the hybrid FFN's " + maxBatch);
        lock.lock();
        try {
            HybridLayer g = onGpu[unit];
            if (gpuEnabled && g != null) {
                try {
                    hybrid(pool, unit, w, x, residual, out, gate, up, batch, g);
                    cpu.addDownBias(w, out, batch);
                    return;
                } catch (RuntimeException e) {
                    deviceFailed(e);   // then the whole unit again on the CPU: never a partial answer
                }
            }
            long t0 = System.nanoTime();
            int ff = w.ffnUp().rows();
            cpu.predict(pool, w, residual, batch, ff, null);
            cpuComputed.addAndGet(unit, cpu.computeCold(pool, unit, w, batch, ff, cpu.allNeurons(ff), x, gate, up, out));
            if (stats != null) for (int b = 0; b < batch; b++) stats.record(units.layer(unit), cpu.activeCount[b], -1, 0);
            cpu.addDownBias(w, out, batch);
            overlap.recordCpuOnly(System.nanoTime() - t0);
        } finally {
            lock.unlock();
        }
    }

    private void hybrid(WorkerPool pool, int layer, LayerWeights w, float[] x, float[] res, float[] out, float[] gate, float[] up, int batch,
                        HybridLayer g) {
        int ff = w.ffnUp().rows();
        long t0 = System.nanoTime();
        boolean gpuPredictor = g.fc1 != null, dense = batch >= denseFrom;
        // the device's busy time comes from timing events around its work (no thread waits on it: the CPU is busy)
        GpuEvent started = ws.started, done = ws.done, maskReady = ws.maskReady;
        gpu.record(started, stream);
        // inputs to the device
        MemorySegment.copy(x, 0, ws.hX, F32, 0, batch * dim);
        gpu.upload(stream, ws.hX.asSlice(0, 4L * batch * dim), ws.x, 0);
        if (gpuPredictor) {
            MemorySegment.copy(res, 0, ws.hR, F32, 0, batch * dim);
            gpu.upload(stream, ws.hR.asSlice(0, 4L * batch * dim), ws.residual, 0);
            HybridDevicePass.predictor(gpu, stream, ws, g, dim, ff, threshold, batch, dense);
            gpu.download(stream, ws.mask, 0, ws.hMask.asSlice(0, (long) batch * ff));
            if (coldMask == ColdMaskSource.GPU_EVENT) gpu.record(maskReady, stream);
        } else {
            // predictor not on the device: the CPU decides for every neuron and sends the mask over
            cpu.predict(pool, w, res, batch, ff, null);
            MemorySegment.copy(cpu.mask, 0, ws.hMask, ValueLayout.JAVA_BYTE, 0, batch * ff);
            gpu.upload(stream, ws.hMask.asSlice(0, (long) batch * ff), ws.mask, 0);
        }

        // hot neurons: token by token, or the batch as GEMMs (HybridDevicePass)
        HybridDevicePass.hotRows(gpu, stream, ws, g, gpuActivation, dim, ff, batch, dense);
        gpu.download(stream, ws.y, 0, ws.hY.asSlice(0, 4L * batch * dim));
        gpu.record(done, stream);
        long issued = System.nanoTime();

        // cold neurons on the CPU, meanwhile
        long maskWait = 0;
        if (gpuPredictor) {
            if (coldMask == ColdMaskSource.GPU_EVENT) {
                gpu.synchronize(maskReady);
                maskWait = System.nanoTime() - issued;
                MemorySegment.copy(ws.hMask, ValueLayout.JAVA_BYTE, 0, cpu.mask, 0, batch * ff);
            } else {
                cpu.predict(pool, w, res, batch, ff, g.cold);
            }
        }
        int cpuActive = cpu.computeCold(pool, layer, w, batch, ff, g.cold, x, gate, up, out);
        long cpuDone = System.nanoTime();

        // merge: the stream ends with the partial's copy-back, so synchronising it waits for exactly that (and
        // reports a failed operation), without a device-wide synchronisation
        gpu.synchronize(stream);
        long merged = System.nanoTime();
        long deviceNanos = gpu.elapsedNanos(started, done);
        long gpuDone = deviceNanos >= 0 ? Math.min(merged, t0 + deviceNanos) : merged;
        for (int i = 0; i < batch * dim; i++) out[i] += ws.hY.getAtIndex(F32, i);
        long end = System.nanoTime();

        int gpuActive = 0;
        // hot neurons the predictor selected (for the statistics). When the host mask is the device's whole mask
        // (GPU predictor + GPU_EVENT, or a CPU predictor for every neuron), that is all active minus the cold
        // active, counted over contiguous bytes; with the CPU predicting only the cold rows, the hot part of the
        // mask exists only in the device's copy, walked row by row
        boolean wholeMaskOnHost = !gpuPredictor || coldMask == ColdMaskSource.GPU_EVENT;
        for (int b = 0; b < batch; b++) {
            int n = 0;
            if (wholeMaskOnHost) {
                for (int i = b * ff, e = i + ff; i < e; i++) n += cpu.mask[i] != 0 ? 1 : 0;
                n -= cpu.activeCount[b];
            } else {
                for (int r : g.hot) if (ws.hMask.get(ValueLayout.JAVA_BYTE, (long) b * ff + r) != 0) n++;
            }
            gpuActive += n;
            if (stats != null) stats.record(units.layer(layer), n + cpu.activeCount[b], -1, 0);
        }
        gpuComputed.addAndGet(layer, gpuActive);
        cpuComputed.addAndGet(layer, cpuActive);
        overlap.recordHybrid(t0, issued, cpuDone, gpuDone, end, maskWait, merged - cpuDone);
    }

    private void deviceFailed(RuntimeException e) {
        gpuEnabled = false;
        disabledReason = String.valueOf(e.getMessage());
        warn.accept("warning: hybrid FFN: device operation failed (" + e.getMessage() + "); the GPU is disabled and every FFN neuron is computed on the CPU from now on");
    }

    // --- reporting -------------------------------------------------------------------------------------------------

    /** The placement in effect (after load-time fallbacks). */
    public HybridPlacement placement() {
        return placement;
    }

    /** The placement that was asked for. */
    public HybridPlacement requestedPlacement() {
        return requested;
    }

    /** Whether hot neurons are currently computed on the device. */
    public boolean gpuActive() {
        return gpuEnabled;
    }

    /** What could not be placed at load, one entry per fallback (empty when everything was placed). */
    public List<String> loadNotes() {
        return List.copyOf(loadNotes);
    }

    /** The device's name, or "none". */
    public String deviceName() {
        return gpu == null ? "none" : gpu.name();
    }

    public ColdMaskSource coldMaskSource() {
        return coldMask;
    }

    public OverlapStats overlapStats() {
        return overlap;
    }

    /** Hot neurons resident on the device in {@code layer} (0 when the layer runs on the CPU). */
    public int residentHot(int layer) {
        HybridLayer g = onGpu[layer];
        return g == null ? 0 : g.hot.length;
    }

    /** Whether {@code layer}'s predictor is evaluated on the device. */
    public boolean predictorOnDevice(int layer) {
        HybridLayer g = onGpu[layer];
        return g != null && g.fc1 != null;
    }

    /** Device bytes of {@code layer}'s hot rows, row map and predictor (padded, as the device and the footprint count). */
    public long deviceBytes(int layer) {
        HybridLayer g = onGpu[layer];
        return g == null ? 0 : g.bytes;
    }

    /** What the requested placement allocates on the device, in this FFN's order (what a load without fallbacks allocates). */
    public DeviceFootprint footprint() {
        return footprint;
    }

    /** All device bytes this FFN holds (layers plus workspace). */
    public long deviceBytes() {
        long b = ws == null ? 0 : ws.deviceBytes;
        for (int l = 0; l < layers; l++) b += deviceBytes(l);
        return b;
    }

    /** Predicted-active neurons computed on the device / on the CPU, per layer, since the last reset. */
    public long gpuComputed(int layer) { return gpuComputed.get(layer); }
    public long cpuComputed(int layer) { return cpuComputed.get(layer); }

    /** Clears the overlap and served-neuron counters. */
    public void resetCounters() {
        overlap.reset();
        for (int l = 0; l < layers; l++) {
            gpuComputed.set(l, 0);
            cpuComputed.set(l, 0);
        }
    }

    /** The placement table and the overlap line, for {@code generate}/{@code bench}. */
    public String summary() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "hybrid FFN: device %s, placement: %s, cold mask: %s%n", deviceName(), placement.source(),
                coldMask.name().toLowerCase(Locale.ROOT).replace('_', '-')));
        if (disabledReason != null) sb.append("GPU disabled after a device failure: ").append(disabledReason).append('\n');
        for (String n : loadNotes) sb.append("fallback: ").append(n).append('\n');
        sb.append(String.format(Locale.ROOT, "%-10s %11s %7s %9s %9s %14s  %s%n", "layer", "hot/n_ff", "share", "profiled", "served", "device bytes", "predictor"));
        long hot = 0, all = 0, gpuServed = 0, cpuServed = 0;
        for (int l = 0; l < layers; l++) {
            int k = residentHot(l), ff = placement.ff(l);
            hot += k;
            all += ff;
            long gs = gpuComputed(l), cs = cpuComputed(l);
            gpuServed += gs;
            cpuServed += cs;
            sb.append(String.format(Locale.ROOT, "%-10s %5d/%-5d %6.1f%% %9s %9s %,14d  %s%n", units.ofExperts() ? units.label(l) : String.valueOf(l), k, ff, 100.0 * k / ff, pct(placement.coverage(l)),
                    gs + cs == 0 ? "-" : pct((double) gs / (gs + cs)), deviceBytes(l), k == 0 ? "-" : predictorOnDevice(l) ? "gpu" : "cpu"));
        }
        sb.append(String.format(Locale.ROOT, "%-10s %5d/%-5d %6.1f%% %9s %9s %,14d  (+ workspace %,d)%n", "total", hot, all, all == 0 ? 0 : 100.0 * hot / all,
                pct(placement.coverage()), gpuServed + cpuServed == 0 ? "-" : pct((double) gpuServed / (gpuServed + cpuServed)),
                deviceBytes() - (ws == null ? 0 : ws.deviceBytes), ws == null ? 0 : ws.deviceBytes));
        sb.append("profiled = share of profiled activations on hot neurons; served = share of predicted-active neurons computed on the GPU\n");
        sb.append(overlap.snapshot().format()).append('\n');
        return sb.toString();
    }

    private static String pct(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.1f%%", 100 * v);
    }

    static String human(long bytes) {
        return bytes >= 1 << 20 ? String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0) : String.format(Locale.ROOT, "%.1f KiB", bytes / 1024.0);
    }

    private void closeDevice() {
        if (stream != null) {
            try {
                gpu.synchronize(stream);
            } catch (RuntimeException ignored) {
                // a failed stream still has to release its memory
            }
        }
        // best effort, each piece on its own: after a fatal device error every driver call fails, and the rest
        // (pinned memory, the stream, the context) must still be released
        for (int l = 0; l < layers; l++) {
            HybridLayer g = onGpu[l];
            if (g != null) {
                quietly(g::freeRows);
                quietly(() -> g.freePredictor(shared));
                onGpu[l] = null;
            }
        }
        HybridWorkspace w = ws;
        if (w != null) quietly(w::close);
        ws = null;
        GpuStream st = stream;
        if (st != null) quietly(st::close);
        stream = null;
    }

    private static void quietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException ignored) {
            // already reported where the device failed
        }
    }

    @Override
    public void close() {
        lock.lock();
        try {
            gpuEnabled = false;
            if (gpu != null) closeDevice();
            if (ownsBackend && gpu != null) gpu.close();
        } finally {
            lock.unlock();
        }
    }
}
