package org.powerinfer4j.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.offline.PowerInferWriter;
import org.powerinfer4j.engine.offline.MoePredictorLayouts;
import org.powerinfer4j.engine.offline.PredictorDataset;
import org.powerinfer4j.engine.offline.PredictorTrainer;
import org.powerinfer4j.engine.hub.TerminalProgress;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sparse.SparseMode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code train-predictors}: trains PowerInfer activation predictors and writes a PWRI sparse model. */
@Command(name = "train-predictors", mixinStandardHelpOptions = true,
        description = {"Train one activation predictor per layer (fc1 -> ReLU -> fc2, no biases) on the dense ReLU FFN's",
                "activations over calibration text, and write a PowerInfer sparse model (PWRI): all tensors of MODEL,",
                "ffn_down replaced by ffn_down_t, plus blk.N.fc1/fc2 (F16) and powerinfer.sparse_threshold.",
                "Example: train-predictors -m relu-model.gguf --ffn-act relu -f corpus.txt --target-recall 0.95 -o model.powerinfer.gguf"})
public final class TrainPredictorsCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    ModelOptionsMixin modelOptions;

    @Option(names = {"-f", "--file"}, paramLabel = "CORPUS.txt", description = "Calibration text, cut into context-sized chunks that each start with BOS.")
    Path corpus;

    @Option(names = "--sample", paramLabel = "N", description = "Instead of -f: train on N tokens the model samples itself from BOS (temperature 1).")
    Long sample;

    @Option(names = "--tokens", paramLabel = "N", defaultValue = "0", description = "Use at most N calibration tokens (default: all).")
    long tokens;

    @Option(names = "--hidden", paramLabel = "H", description = "Fixed predictor hidden size for every layer (default: adaptive).")
    Integer hidden;

    @Option(names = "--hidden-candidates", paramLabel = "H,...", split = ",",
            description = "Adaptive hidden sizes to try, smallest first (default: 32,48,64,96,128 × max(1, n_embd/256)).")
    int[] candidates;

    @Option(names = "--target-recall", paramLabel = "R", defaultValue = "0.95",
            description = "Adaptive hidden size: the smallest candidate with held-out recall >= R at threshold 0 (default ${DEFAULT-VALUE}).")
    double targetRecall;

    @Option(names = "--threshold-recall", paramLabel = "R",
            description = "Calibrate the threshold: the largest keeping held-out recall >= R in every layer (default: threshold 0).")
    Double thresholdRecall;

    @Option(names = "--epochs", defaultValue = "24", description = "Training epochs per candidate (default ${DEFAULT-VALUE}).")
    int epochs;

    @Option(names = "--seed", defaultValue = "42", description = "Seed for sampling, the held-out split and initialisation (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--moe-predictor", paramLabel = "expert|layer", defaultValue = "expert",
            description = {"Mixture-of-experts layers: one predictor per expert (blk.N.fc1.E/fc2.E, default) or one per layer over all",
                    "experts' neurons (blk.N.fc1/fc2, fc2 {H, n_expert*n_ff}), which learns from all the layer's tokens."})
    String moePredictor;

    @Option(names = "--compare-moe-layouts",
            description = {"Instead of writing a model: on each mixture-of-experts layer, train one predictor per expert (at --hidden,",
                    "default the smallest candidate) and one per layer over all experts' neurons at the same cost per token, and",
                    "print both layouts' held-out recall, precision and the fraction of neurons computed at --target-recall."})
    boolean compareMoeLayouts;

    @Option(names = {"-o", "--output"}, paramLabel = "OUT.powerinfer.gguf", description = "Output (default: MODEL with .powerinfer.gguf).")
    Path output;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut(), err = spec.commandLine().getErr();
        if ((corpus == null) == (sample == null)) throw new ParameterException(spec.commandLine(), "give exactly one of -f CORPUS or --sample N");
        if (targetRecall <= 0 || targetRecall > 1) throw new ParameterException(spec.commandLine(), "--target-recall must be in (0, 1]");
        if (thresholdRecall != null && (thresholdRecall <= 0 || thresholdRecall > 1))
            throw new ParameterException(spec.commandLine(), "--threshold-recall must be in (0, 1]");
        if (!moePredictor.equals("expert") && !moePredictor.equals("layer"))
            throw new ParameterException(spec.commandLine(), "--moe-predictor must be expert or layer, not " + moePredictor);
        boolean layerWide = moePredictor.equals("layer");
        Path o = output != null ? output : ProfileCommand.sibling(modelOptions.checkedPath(), ".powerinfer.gguf");
        if (o.toAbsolutePath().normalize().equals(modelOptions.checkedPath().toAbsolutePath().normalize()))
            throw new ParameterException(spec.commandLine(), "the output must not overwrite the input model");
        PredictorDataset data;
        int threads;
        try (Model model = Model.open(modelOptions.checkedPath(), modelOptions.toOptions().withSparseMode(SparseMode.OFF))) {
            threads = model.options().threads();
            if (compareMoeLayouts && model.config().params().experts() <= 0)
                throw new ModelException("--compare-moe-layouts needs a mixture-of-experts model; " + modelOptions.checkedPath().getFileName() + " has dense FFNs");
            List<int[]> chunks = ProfileCommand.chunks(model, corpus, sample, tokens, seed, err);
            TerminalProgress bar = new TerminalProgress(err, StderrListener.isTerminal())
                    .counting("tok").showingAfter(StderrListener.SHOW_AFTER_NANOS);
            data = PredictorDataset.collect(model, chunks, (done, total, ns) -> bar.update("collect", done, total));
            PredictorTrainer.Config cfg = PredictorTrainer.Config.defaults(model.config().dim()).withTargetRecall(targetRecall)
                    .withEpochs(epochs).withSeed(seed).withThreads(threads);
            if (candidates != null && candidates.length > 0) cfg = cfg.withCandidates(candidates);
            if (hidden != null) cfg = cfg.withHidden(hidden);
            if (thresholdRecall != null) cfg = cfg.withThresholdRecall(thresholdRecall);
            long t0 = System.nanoTime();
            java.util.function.Consumer<String> log = line -> { err.println(line); err.flush(); };
            if (compareMoeLayouts) {
                int h = hidden != null ? hidden : java.util.Arrays.stream(cfg.hiddenCandidates()).min().orElseThrow();
                out.print(MoePredictorLayouts.compare(data, cfg, h, model.config().params().expertsUsed(), targetRecall, log).table());
                out.printf(Locale.ROOT, "trained in %.1f s%n", (System.nanoTime() - t0) / 1e9);
                out.flush();
                return 0;
            }
            PredictorTrainer.Result r = layerWide
                    ? MoePredictorLayouts.trainLayerWide(data, cfg, log) : PredictorTrainer.train(data, cfg, log);
            out.print(r.table());
            out.printf(Locale.ROOT, "trained in %.1f s%n", (System.nanoTime() - t0) / 1e9);
            PowerInferWriter.write(model.file(), r, o);
        }
        out.println("wrote " + o);
        out.flush();
        return 0;
    }
}
