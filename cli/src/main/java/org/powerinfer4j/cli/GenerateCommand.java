package org.powerinfer4j.cli;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code generate}: complete a prompt, streaming the text to stdout and timings to stderr. */
@Command(name = "generate", mixinStandardHelpOptions = true, description = "Generate text from a prompt.")
public final class GenerateCommand implements Callable<Integer> {
    @Mixin ModelOptionsMixin model;
    @Mixin SamplingMixin sampling;
    @Mixin SpeculationMixin speculation;

    static final class PromptSource {
        @Option(names = {"-p", "--prompt"}, paramLabel = "TEXT", description = "Prompt text.")
        String text;

        @Option(names = {"-f", "--file"}, paramLabel = "FILE", description = "Read the prompt from a file.")
        Path file;
    }

    @ArgGroup(exclusive = true)
    PromptSource prompt;

    @Option(names = {"-n", "--n-predict"}, defaultValue = "-1", paramLabel = "N",
            description = "Tokens to generate; -1 = until end of text or full context (default: ${DEFAULT-VALUE}).")
    int nPredict;

    @Option(names = "--ignore-eos", description = "Keep generating past end-of-generation tokens.")
    boolean ignoreEos;

    @Option(names = "--no-display-prompt", description = "Do not echo the prompt.")
    boolean noDisplayPrompt;

    @Option(names = "--stats", description = "Print per-layer FFN sparsity statistics (in predict mode also measures predictor recall/precision, at the cost of a dense gate product).")
    boolean stats;

    @Option(names = "--warmup", description = "Before the prompt, compile the kernels with about 3 s of short throwaway generations (as chat and serve do); "
            + "the timings then show warm speeds, and the warm-up's own time is printed.")
    boolean warmup;

    @Override
    public Integer call() throws Exception {
        // every option is checked before the model loads or the prompt is echoed
        GenerationParams base = GenerationParams.defaults().withMaxTokens(nPredict)
                .withSampling(sampling.toParams()).withStopAtEndOfGeneration(!ignoreEos);
        speculation.checkFlags();
        String text = prompt == null ? "" : prompt.file != null ? Files.readString(prompt.file, StandardCharsets.UTF_8) : prompt.text;
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8); // UTF-8 whatever the platform encoding
        try (Model m = Model.open(model.checkedPath(), model.toOptions().withSparseStats(stats)); Session s = m.newSession();
             Model draft = speculation.openDraft(model, m)) {
            int[] ids = m.tokenizer().encode(text, true, false);
            if (ids.length >= s.contextLength())
                throw new IllegalArgumentException("prompt too long: " + ids.length + " tokens do not fit the context of " + s.contextLength() + " (raise -c)");
            long warmupMillis = -1;
            if (warmup) {
                warmupMillis = m.warmUp();
                if (m.sparsityStats() != null) m.sparsityStats().reset();   // --stats counts the prompt's tokens only
            }
            if (!noDisplayPrompt) out.print(text);
            out.flush();
            GenerationParams params = speculation.apply(base, draft);
            GenerationResult r = s.generate(ids, params, (id, piece) -> {
                out.print(piece);
                out.flush();
                return true;
            });
            out.println();
            String spec = params.speculation() == null ? "" : String.format(" | draft: %d accepted of %d (%.1f%%)",
                    r.acceptedTokens(), r.draftedTokens(), r.draftedTokens() == 0 ? 0 : 100 * r.acceptanceRate());
            System.err.printf("%nload: %d ms%s | prompt: %d tokens, %.2f tokens/s | generation: %d tokens, %.2f tokens/s%s | stop: %s%n",
                    m.loadMillis(), warmupMillis < 0 ? "" : " | warm-up: " + warmupMillis + " ms", r.promptTokens().length, r.promptTokensPerSecond(),
                    r.generatedTokens().length, r.generationTokensPerSecond(), spec, r.stopReason());
            if (m.sparsityStats() != null && (stats || m.sparseMode() != org.powerinfer4j.engine.sparse.SparseMode.OFF)) {
                System.err.printf("ffn: --sparse %s%s, %.1f%% of neurons computed per token%n", m.sparseMode().name().toLowerCase(),
                        Float.isNaN(m.sparseThreshold()) ? "" : " (threshold " + m.sparseThreshold() + ")", 100 * m.sparsityStats().meanPredictedFraction());
                if (stats) System.err.print(m.sparsityStats().format());
            }
            if (!m.placementSummary().isEmpty()) System.err.print(m.placementSummary().endsWith("\n") ? m.placementSummary() : m.placementSummary() + "\n");
        }
        return 0;
    }
}
