package org.powerinfer4j.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Speculation;
import picocli.CommandLine.Option;

/** Speculative decoding flags (llama.cpp's names): a draft model or prompt lookup, and the draft length. */
public final class SpeculationMixin {
    @Option(names = {"-md", "--model-draft"}, paramLabel = "FILE",
            description = "Draft model for speculative decoding (same vocabulary as -m); opened with -m's options.")
    Path draftModel;

    @Option(names = "--lookup", description = "Speculative decoding without a draft model: propose the tokens that followed the "
            + "context's last n-gram earlier in it (prompt lookup; pays off on repetitive text).")
    boolean lookup;

    @Option(names = "--draft-max", paramLabel = "N", description = "Draft tokens proposed per step at most (default: "
            + Speculation.DEFAULT_DRAFT_MAX + ").")
    Integer draftMax;

    @Option(names = "--lookup-ngram", paramLabel = "N", description = "Longest n-gram --lookup matches (default: "
            + Speculation.DEFAULT_LOOKUP_NGRAM + ").")
    Integer lookupNgram;

    boolean enabled() {
        return lookup || draftModel != null;
    }

    /** Checks the flags' combination and values (one-line errors), without opening anything. */
    void checkFlags() {
        if (lookup && draftModel != null) throw new IllegalArgumentException("--lookup and -md are alternatives: pass one");
        if (!enabled() && (draftMax != null || lookupNgram != null))
            throw new IllegalArgumentException("--draft-max and --lookup-ngram need --lookup or -md");
        if (draftModel != null && lookupNgram != null) throw new IllegalArgumentException("--lookup-ngram goes with --lookup, not -md");
        if (draftMax != null && draftMax < 1) throw new IllegalArgumentException("--draft-max must be >= 1, is " + draftMax);
        if (lookupNgram != null && lookupNgram < 1) throw new IllegalArgumentException("--lookup-ngram must be >= 1, is " + lookupNgram);
    }

    /** Opens the draft model (null without -md), checked to share the target's vocabulary (a one-line error otherwise). */
    Model openDraft(ModelOptionsMixin options, Model target) throws IOException {
        checkFlags();
        if (draftModel == null) return null;
        if (!Files.isRegularFile(draftModel)) throw new IOException("draft model " + draftModel + " is not a file");
        Model d = Model.open(draftModel, options.toOptions().withContextLength(target.contextLength()));
        try {
            Speculation.checkCompatible(target, d);
            return d;
        } catch (RuntimeException e) {
            d.close();
            throw e;
        }
    }

    /** {@code params} with speculative decoding as the flags ask (unchanged without --lookup or -md). */
    GenerationParams apply(GenerationParams params, Model draft) {
        if (!enabled()) return params;
        int max = draftMax != null ? draftMax : Speculation.DEFAULT_DRAFT_MAX;
        int ngram = lookupNgram != null ? lookupNgram : Speculation.DEFAULT_LOOKUP_NGRAM;
        return params.withSpeculation(new Speculation(draft, max, ngram));
    }
}
