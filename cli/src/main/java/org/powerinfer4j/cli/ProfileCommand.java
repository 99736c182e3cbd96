package org.powerinfer4j.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.offline.ActivationPlot;
import org.powerinfer4j.engine.offline.ActivationProfiler;
import org.powerinfer4j.engine.placement.ActivationStats;
import org.powerinfer4j.engine.offline.CalibrationCorpus;
import org.powerinfer4j.engine.hub.TerminalProgress;
import org.powerinfer4j.engine.sparse.SparseMode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code profile}: per-layer, per-neuron FFN firing counts over a calibration text. */
@Command(name = "profile", mixinStandardHelpOptions = true,
        description = {"Run the model (dense FFN) over calibration text and count how often each FFN neuron fires",
                "(h != 0 for ReLU-family models, |h| > --threshold for SwiGLU models). Writes a GGUF side file with",
                "blk.N.activation_counts (I32 [n_ff]) and prints the skew per layer.",
                "Example: profile -m model.gguf --ffn-act relu -f corpus.txt --tokens 100000 --plot skew.svg"})
public final class ProfileCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    ModelOptionsMixin modelOptions;

    @Option(names = {"-f", "--file"}, paramLabel = "CORPUS.txt", description = "Calibration text, cut into context-sized chunks that each start with BOS.")
    Path corpus;

    @Option(names = "--sample", paramLabel = "N", description = "Instead of -f: profile N tokens the model samples itself from BOS (temperature 1).")
    Long sample;

    @Option(names = "--tokens", paramLabel = "N", defaultValue = "0", description = "Stop after N tokens (default: the whole corpus).")
    long tokens;

    @Option(names = {"-o", "--output"}, paramLabel = "OUT.activations.gguf", description = "Side file (default: MODEL with .activations.gguf).")
    Path output;

    @Option(names = "--plot", paramLabel = "OUT.svg|OUT.html", description = "Also draw the rank-frequency and cumulative-share plot.")
    Path plot;

    @Option(names = "--threshold", paramLabel = "T", description = "SwiGLU models: a neuron fires when |h| > T (default 0.1). Ignored for ReLU models.")
    Float threshold;

    @Option(names = "--seed", defaultValue = "42", description = "Seed for --sample (default ${DEFAULT-VALUE}).")
    long seed;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut(), err = spec.commandLine().getErr();
        if ((corpus == null) == (sample == null)) throw new ParameterException(spec.commandLine(), "give exactly one of -f CORPUS or --sample N");
        try (Model model = Model.open(modelOptions.checkedPath(), modelOptions.toOptions().withSparseMode(SparseMode.OFF))) {
            List<int[]> chunks = chunks(model, corpus, sample, tokens, seed, err);
            float thr = threshold != null ? threshold : 0.1f;
            if (!model.config().activation().isRelu())
                err.printf(Locale.ROOT, "%s FFN: counting |h| > %s as firing%n", model.config().activation(), thr);
            TerminalProgress bar = new TerminalProgress(err, StderrListener.isTerminal()).counting("tok").showingAfter(StderrListener.SHOW_AFTER_NANOS);
            ActivationStats stats = ActivationProfiler.profile(model, chunks, thr, (done, total, ns) -> bar.update("profile", done, total));
            Path o = output != null ? output : sibling(modelOptions.checkedPath(), ".activations.gguf");
            stats.write(o);
            stats.summary().forEach(out::println);
            out.printf(Locale.ROOT, "wrote %s (%,d tokens, criterion %s)%n", o, stats.tokens(), stats.criterion());
            if (plot != null) {
                ActivationPlot.write(stats, plot);
                out.println("wrote " + plot);
            }
        }
        out.flush();
        return 0;
    }

    /** Chunks from a text file (tokenized) or from the model's own samples. */
    static List<int[]> chunks(Model model, Path corpus, Long sample, long maxTokens, long seed, PrintWriter err) throws java.io.IOException {
        int ctx = model.contextLength();
        if (corpus != null) {
            String text = Files.readString(corpus, StandardCharsets.UTF_8);
            List<int[]> c = CalibrationCorpus.fromText(model, text, ctx, maxTokens);
            if (c.isEmpty()) throw new IllegalArgumentException(corpus + ": no tokens");
            return c;
        }
        long n = maxTokens > 0 ? Math.min(maxTokens, sample) : sample;
        int len = Math.min(ctx, 256);
        int seqs = (int) Math.max(1, (n + len - 1) / len);
        err.printf(Locale.ROOT, "sampling %d sequences of %d tokens from the model (seed %d)%n", seqs, len, seed);
        err.flush();
        return CalibrationCorpus.sample(model, seqs, len, 1.0f, seed);
    }

    static Path sibling(Path model, String suffix) {
        String name = model.getFileName().toString();
        if (name.endsWith(".gguf")) name = name.substring(0, name.length() - 5);
        return model.resolveSibling(name + suffix);
    }
}
