package org.powerinfer4j.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.quality.BaseLogitsFile;
import org.powerinfer4j.engine.quality.KlDivergence;
import org.powerinfer4j.engine.quality.Perplexity;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code perplexity}: llama-perplexity's measurement — perplexity over a text in chunks of {@code -c} tokens, and the
 * KL divergence from a base run's saved logits ({@code --kl-divergence-base FILE} to save them, with
 * {@code --kl-divergence} to compare against them). Base files in llama.cpp's format are read and written, so either
 * tool can take the other's base.
 */
@Command(name = "perplexity", mixinStandardHelpOptions = true,
        description = {"Perplexity of a model over a text (as llama-perplexity: chunks of -c tokens, the second half of each scored),",
                "or its KL divergence from a base run's saved logits (quantizations, sparse modes and thresholds against a reference)."})
public final class PerplexityCommand implements Callable<Integer> {
    /** llama-perplexity's default chunk length. */
    static final int DEFAULT_CHUNK = 512;

    @Spec
    CommandSpec spec;

    @Mixin ModelOptionsMixin model;

    @Option(names = {"-f", "--file"}, paramLabel = "TEXT", description = "The text to score (UTF-8). Not needed with --kl-divergence: the base file holds its tokens.")
    Path textFile;

    @Option(names = "--chunks", paramLabel = "N", defaultValue = "0", description = "Score at most N chunks (default: all).")
    int chunks;

    @Option(names = "--kl-divergence-base", paramLabel = "FILE",
            description = "Base logits: written by a plain run (perplexity plus the scored positions' log-probabilities), read with --kl-divergence.")
    Path baseFile;

    @Option(names = "--kl-divergence", description = "Compare against --kl-divergence-base FILE (its tokens and chunk length): KL divergence, top-1 agreement, perplexity ratio.")
    boolean klDivergence;

    @Option(names = "--base-format", paramLabel = "llama|f32", defaultValue = "llama",
            description = "Format of a written base: llama (llama-perplexity's uint16 log-probs, readable by it) or f32 (exact; a model against its own base gives 0). Default: ${DEFAULT-VALUE}.")
    String baseFormat;

    @Option(names = "--json", description = "Print the result as one JSON object instead of the text report.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        if (klDivergence) {
            if (baseFile == null) throw new CommandLine.ParameterException(spec.commandLine(), "--kl-divergence needs --kl-divergence-base FILE");
            try (BaseLogitsFile.Reader base = new BaseLogitsFile.Reader(baseFile)) {
                int ctx = base.header().ctx();
                if (model.contextLength > 0 && model.contextLength < ctx)
                    throw new CommandLine.ParameterException(spec.commandLine(), baseFile + " was computed with chunks of " + ctx + " tokens; -c " + model.contextLength + " is smaller");
                try (Model m = Model.open(model.checkedPath(), model.toOptions().withContextLength(ctx))) {
                    if (!json) out.printf(Locale.ROOT, "KL divergence over %d chunks of %d tokens against %s%n", base.header().chunks(), ctx, baseFile);
                    Perplexity.Result r = Perplexity.klDivergence(m, base, progress(out));
                    report(out, r);
                }
            }
            return 0;
        }
        if (textFile == null) throw new CommandLine.ParameterException(spec.commandLine(), "give the text to score with -f FILE");
        if (chunks < 0) throw new CommandLine.ParameterException(spec.commandLine(), "--chunks must be >= 0");
        BaseLogitsFile.Format format;
        try {
            format = BaseLogitsFile.Format.parse(baseFormat);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        String text = Files.readString(textFile, StandardCharsets.UTF_8);
        int ctx = model.contextLength > 0 ? model.contextLength : DEFAULT_CHUNK;
        try (Model m = Model.open(model.checkedPath(), model.toOptions().withContextLength(ctx))) {
            int[] tokens = Perplexity.tokenize(m, text);
            if (!json) out.printf(Locale.ROOT, "perplexity over %d tokens in chunks of %d%n", tokens.length, ctx);
            Perplexity.Result r;
            if (baseFile != null) {
                try (BaseLogitsFile.Writer w = new BaseLogitsFile.Writer(baseFile, Perplexity.baseHeader(m, tokens, ctx, chunks, format))) {
                    r = Perplexity.measure(m, tokens, ctx, chunks, w, progress(out));
                }
            } else {
                r = Perplexity.measure(m, tokens, ctx, chunks, null, progress(out));
            }
            report(out, r);
            if (baseFile != null && !json) out.println("base logits saved to " + baseFile + " (" + format.name().toLowerCase(Locale.ROOT) + " format)");
        }
        return 0;
    }

    private Perplexity.Progress progress(PrintStream out) {
        if (json) return Perplexity.Progress.NONE;
        return (done, total, ppl) -> {
            out.printf(Locale.ROOT, "[%d]%.4f,", done, ppl);
            if (done == total) out.println();
        };
    }

    private void report(PrintStream out, Perplexity.Result r) throws Exception {
        KlDivergence.Summary k = r.klDivergence();
        if (json) {
            ObjectNode o = new ObjectMapper().createObjectNode();
            o.put("ctx", r.ctx()).put("chunks", r.chunks()).put("scored", r.scored())
                    .put("ppl", r.perplexity().value()).put("ppl_uncertainty", r.perplexity().uncertainty());
            if (k != null) {
                o.put("ppl_base", k.pplBase().value()).put("ln_ppl_ratio", k.logPplRatio().value())
                        .put("kld_mean", k.kld().value()).put("kld_uncertainty", k.kld().uncertainty()).put("kld_median", k.medianKld())
                        .put("kld_max", k.maxKld()).put("kld_99", k.kld99()).put("same_top", k.sameTop().value())
                        .put("delta_p_rms", k.pDiffRms().value()).put("delta_p_mean", k.pDiff().value());
            }
            out.println(o);
            return;
        }
        if (k == null) {
            out.printf(Locale.ROOT, "Final estimate: PPL = %.4f +/- %.5f%n", r.perplexity().value(), r.perplexity().uncertainty());
            return;
        }
        out.printf(Locale.ROOT, "Mean PPL(Q)                : %10.6f ± %10.6f%n", k.ppl().value(), k.ppl().uncertainty());
        out.printf(Locale.ROOT, "Mean PPL(base)             : %10.6f ± %10.6f%n", k.pplBase().value(), k.pplBase().uncertainty());
        out.printf(Locale.ROOT, "Cor(ln(PPL(Q)), ln(base))  : %6.2f%%%n", 100 * k.logPplCorrelation());
        out.printf(Locale.ROOT, "Mean ln(PPL(Q)/PPL(base))  : %10.6f ± %10.6f%n", k.logPplRatio().value(), k.logPplRatio().uncertainty());
        out.printf(Locale.ROOT, "Mean PPL(Q)/PPL(base)      : %10.6f%n", Math.exp(k.logPplRatio().value()));
        out.printf(Locale.ROOT, "Mean    KLD: %10.6f ± %10.6f%n", k.kld().value(), k.kld().uncertainty());
        out.printf(Locale.ROOT, "Maximum KLD: %10.6f%n", k.maxKld());
        out.printf(Locale.ROOT, "99.9%%   KLD: %10.6f%n", k.kld999());
        out.printf(Locale.ROOT, "99.0%%   KLD: %10.6f%n", k.kld99());
        out.printf(Locale.ROOT, "Median  KLD: %10.6f%n", k.medianKld());
        out.printf(Locale.ROOT, "Minimum KLD: %10.6f%n", k.minKld());
        out.printf(Locale.ROOT, "Mean    Δp: %6.3f ± %5.3f %%%n", 100 * k.pDiff().value(), 100 * k.pDiff().uncertainty());
        out.printf(Locale.ROOT, "Maximum Δp: %6.3f%%   Median Δp: %6.3f%%   Minimum Δp: %6.3f%%%n", 100 * k.maxPDiff(), 100 * k.medianPDiff(), 100 * k.minPDiff());
        out.printf(Locale.ROOT, "RMS Δp    : %6.3f ± %5.3f %%%n", 100 * k.pDiffRms().value(), 100 * k.pDiffRms().uncertainty());
        out.printf(Locale.ROOT, "Same top p: %6.3f ± %5.3f %%%n", 100 * k.sameTop().value(), 100 * k.sameTop().uncertainty());
    }
}
