package org.powerinfer4j.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.sparse.SparsityStats;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Decode speed of a ReLU (PowerInfer) model in the three FFN modes against each mode's byte-count bound.
 *
 * <p>Per model and thread count, one {@link Model} per mode is opened (they share the page cache), warmed up, and
 * the timed repetitions are interleaved — off, exact, predict, off, … — so machine noise hits all modes alike.
 * A separate untimed pass per mode measures the activations on the same tokens (predict mode with verification,
 * which the timed runs leave off because it computes the gate densely).
 *
 * <p>Bytes of weights read per token, from the tensors' sizes and the measured per-layer fractions:
 * <ul>
 *   <li>common to all modes: attention matrices, norms, the output head;</li>
 *   <li>off: gate and up in full; down only for neurons with h ≠ 0, because the dense FFN on a file with
 *       {@code ffn_down_t} already skips zero rows (a file with plain {@code ffn_down} reads all of it);</li>
 *   <li>exact: gate in full, up and down for the active neurons;</li>
 *   <li>predict: fc1 and fc2 in full, gate and up for the predicted neurons, down for predicted ∩ active.</li>
 * </ul>
 * The bound speed-up of a mode is bytes(off) / bytes(mode): what it would gain if decode were purely
 * weight-bandwidth bound. The ratio column is (measured speed-up) / (bound speed-up). Figures are medians over the
 * repetitions (± half their range). With one thread the table adds the same figures from the decoding thread's
 * CPU time, which on a machine shared with other work leaves out the time the core was taken away.
 *
 * <pre>java --add-modules jdk.incubator.vector -cp bench/target/benchmarks.jar \
 *     org.powerinfer4j.bench.SparseDecodeBenchmark MODEL.powerinfer.gguf [MORE.gguf ...] [-t 1,2] [-n 64] [-r 3]</pre>
 */
public final class SparseDecodeBenchmark {
    private SparseDecodeBenchmark() {}

    private static final SparseMode[] MODES = SparseMode.values();

    public static void main(String[] args) throws Exception {
        List<Path> models = new ArrayList<>();
        List<Integer> threads = List.of(1, 2);
        int tokens = 64, reps = 3;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "-t" -> threads = parseList(args[++i]);
                case "-n" -> tokens = Integer.parseInt(args[++i]);
                case "-r" -> reps = Integer.parseInt(args[++i]);
                default -> {
                    if (args[i].startsWith("-")) throw new IllegalArgumentException("unknown option " + args[i]);
                    models.add(Path.of(args[i]));
                }
            }
        }
        if (models.isEmpty()) {
            System.err.println("usage: SparseDecodeBenchmark MODEL.powerinfer.gguf [MODEL...] [-t 1,2] [-n 64] [-r 3]");
            System.exit(2);
        }
        for (Path model : models)
            for (int t : threads) run(model, t, tokens, reps);
    }

    /** Per-layer fractions measured on the benchmark tokens. */
    private record Activity(double[] active, double[] predicted, double[] predictedAndActive) {}

    static void run(Path path, int threads, int tokens, int reps) throws Exception {
        ModelOptions base = ModelOptions.defaults().withThreads(threads).withContextLength(tokens + 8);
        Model[] models = new Model[MODES.length];
        try {
            for (SparseMode m : MODES) models[m.ordinal()] = Model.open(path, base.withSparseMode(m));
            int[] ids = randomTokens(models[0].config().vocabSize(), tokens);
            Activity act = measure(path, base, ids);

            double[] bytes = new double[MODES.length];
            for (SparseMode m : MODES) bytes[m.ordinal()] = bytesPerToken(models[0].weights(), m, act);

            Session[] sessions = new Session[MODES.length];
            for (int i = 0; i < MODES.length; i++) sessions[i] = models[i].newSession();
            double[][] tps = new double[MODES.length][reps], cpuTps = new double[MODES.length][reps];
            for (int i = 0; i < MODES.length; i++) decode(sessions[i], ids, null);   // warm-up: JIT, page cache
            for (int r = 0; r < reps; r++)
                for (int i = 0; i < MODES.length; i++) {
                    double[] cpu = new double[1];
                    tps[i][r] = decode(sessions[i], ids, cpu);
                    cpuTps[i][r] = cpu[0];
                }
            for (Session s : sessions) s.close();

            var c = models[0].config();
            System.out.printf(Locale.ROOT, "%n# %s: n_embd %d, n_ff %d, %d layers, %s FFN; %d thread(s), tg%d × %d interleaved reps%n",
                    path.getFileName(), c.dim(), c.ffDim(), c.layers(), models[0].weights().layers()[0].ffnUp().type(), threads, tokens, reps);
            System.out.printf(Locale.ROOT, "# measured: active %.1f%%, predicted %.1f%%, recall %.3f (mean over layers)%n",
                    100 * mean(act.active()), 100 * mean(act.predicted()), mean(act.predictedAndActive()) / mean(act.active()));
            // one thread computes everything on the caller, so its CPU time excludes the time other processes
            // held the core: on a shared machine that is the steadier figure
            boolean cpuValid = threads == 1;
            System.out.println("| mode | active fraction | MB/token | tok/s (wall) | speed-up vs off | bound speed-up | ratio to bound |"
                    + (cpuValid ? " tok/s (CPU time) | speed-up (CPU) | ratio to bound (CPU) |" : ""));
            System.out.println("| --- | ---: | ---: | ---: | ---: | ---: | ---: |" + (cpuValid ? " ---: | ---: | ---: |" : ""));
            double off = median(tps[SparseMode.OFF.ordinal()]), offCpu = median(cpuTps[SparseMode.OFF.ordinal()]);
            for (SparseMode m : MODES) {
                int i = m.ordinal();
                double frac = m == SparseMode.PREDICT ? mean(act.predicted()) : m == SparseMode.EXACT ? mean(act.active()) : 1.0;
                double speedup = median(tps[i]) / off, bound = bytes[SparseMode.OFF.ordinal()] / bytes[i];
                System.out.printf(Locale.ROOT, "| %s | %.3f | %.1f | %.2f ± %.2f | %.2f× | %.2f× | %.0f%% |", m.name().toLowerCase(Locale.ROOT),
                        frac, bytes[i] / 1e6, median(tps[i]), spread(tps[i]), speedup, bound, 100 * speedup / bound);
                if (cpuValid) {
                    double cs = median(cpuTps[i]) / offCpu;
                    System.out.printf(Locale.ROOT, " %.2f ± %.2f | %.2f× | %.0f%% |", median(cpuTps[i]), spread(cpuTps[i]), cs, 100 * cs / bound);
                }
                System.out.println();
            }
            System.out.flush();
        } finally {
            for (Model m : models) if (m != null) m.close();
        }
    }

    /** Untimed pass: true activity (exact) and the predictor's choices with verification (predict). */
    private static Activity measure(Path path, ModelOptions base, int[] ids) throws Exception {
        try (Model m = Model.open(path, base.withSparseMode(SparseMode.PREDICT).withSparseStats(true))) {
            decodeWith(m, ids);
            SparsityStats st = m.sparsityStats();
            int layers = st.layers();
            double[] active = new double[layers], predicted = new double[layers], both = new double[layers];
            for (int l = 0; l < layers; l++) {
                active[l] = st.activeFraction(l);
                predicted[l] = st.predictedFraction(l);
                both[l] = st.recall(l) * active[l];
            }
            return new Activity(active, predicted, both);
        }
    }

    private static void decodeWith(Model m, int[] ids) {
        try (Session s = m.newSession()) {
            decode(s, ids, null);
        }
    }

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** Decodes ids one by one from an empty cache; tokens per wall-clock second (and per CPU second of this thread into cpu[0]). */
    private static double decode(Session s, int[] ids, double[] cpu) {
        s.reset();
        long c0 = THREADS.getCurrentThreadCpuTime(), t0 = System.nanoTime();
        for (int id : ids) s.evaluate(id);
        long t1 = System.nanoTime(), c1 = THREADS.getCurrentThreadCpuTime();
        if (cpu != null) cpu[0] = ids.length / ((c1 - c0) / 1e9);
        return ids.length / ((t1 - t0) / 1e9);
    }

    static double bytesPerToken(ModelWeights w, SparseMode mode, Activity a) {
        double b = w.output().data().byteSize() + w.outputNorm().data().byteSize();
        LayerWeights[] layers = w.layers();
        for (int l = 0; l < layers.length; l++) {
            LayerWeights lw = layers[l];
            for (Tensor t : new Tensor[]{lw.attnNorm(), lw.wq(), lw.wk(), lw.wv(), lw.wo(), lw.ffnNorm()}) b += size(t);
            Tensor down = lw.ffnDownT() != null ? lw.ffnDownT() : lw.ffnDown();
            double gate = size(lw.ffnGate()), up = size(lw.ffnUp()), dn = size(down);
            double act = a.active()[l], pred = a.predicted()[l], both = a.predictedAndActive()[l];
            b += switch (mode) {
                case OFF -> gate + up + (lw.ffnDownT() != null ? act : 1.0) * dn;
                case EXACT -> (gate > 0 ? gate + act * up : up) + act * dn;
                case PREDICT -> size(lw.predictorFc1()) + size(lw.predictorFc2()) + pred * (gate + up) + both * dn;
            };
        }
        return b;
    }

    private static double size(Tensor t) {
        return t == null ? 0 : t.data().byteSize();
    }

    static int[] randomTokens(int vocab, int n) {
        SplittableRandom r = new SplittableRandom(42);
        int lo = Math.min(3, vocab - 1);
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) ids[i] = lo + r.nextInt(vocab - lo);
        return ids;
    }

    private static double mean(double[] v) {
        double s = 0;
        for (double x : v) s += x;
        return s / v.length;
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        java.util.Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    /** Half the range: a robust noise indicator for a few repetitions. */
    private static double spread(double[] v) {
        double lo = Double.MAX_VALUE, hi = -Double.MAX_VALUE;
        for (double x : v) {
            lo = Math.min(lo, x);
            hi = Math.max(hi, x);
        }
        return (hi - lo) / 2;
    }

    private static List<Integer> parseList(String s) {
        List<Integer> r = new ArrayList<>();
        for (String p : s.split(",")) r.add(Integer.parseInt(p.trim()));
        return r;
    }
}
