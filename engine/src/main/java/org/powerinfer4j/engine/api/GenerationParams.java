package org.powerinfer4j.engine.api;

import org.powerinfer4j.engine.grammar.Grammar;
import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * @param maxTokens tokens to generate at most ({@code -n}); -1 = until end of generation or full context
 * @param sampling  sampler settings
 * @param stopAtEndOfGeneration stop at EOS/EOT (true unless benchmarking a fixed length)
 * @param speculation speculative decoding (a draft model or prompt lookup), or null for plain decoding
 * @param grammar   constrained decoding: only text this grammar accepts is generated (e.g.
 *                  {@link Grammar#jsonSchema(String)}), ending as soon as it is complete; null = unconstrained.
 *                  Not combinable with speculation.
 */
public record GenerationParams(int maxTokens, SamplingParams sampling, boolean stopAtEndOfGeneration, Speculation speculation, Grammar grammar) {
    public GenerationParams(int maxTokens, SamplingParams sampling, boolean stopAtEndOfGeneration) {
        this(maxTokens, sampling, stopAtEndOfGeneration, null, null);
    }

    public GenerationParams(int maxTokens, SamplingParams sampling, boolean stopAtEndOfGeneration, Speculation speculation) {
        this(maxTokens, sampling, stopAtEndOfGeneration, speculation, null);
    }

    public static GenerationParams defaults() {
        return new GenerationParams(-1, SamplingParams.DEFAULT, true);
    }

    public GenerationParams withMaxTokens(int n) { return new GenerationParams(n, sampling, stopAtEndOfGeneration, speculation, grammar); }
    public GenerationParams withSampling(SamplingParams s) { return new GenerationParams(maxTokens, s, stopAtEndOfGeneration, speculation, grammar); }
    public GenerationParams withStopAtEndOfGeneration(boolean b) { return new GenerationParams(maxTokens, sampling, b, speculation, grammar); }
    public GenerationParams withSpeculation(Speculation s) { return new GenerationParams(maxTokens, sampling, stopAtEndOfGeneration, s, grammar); }
    public GenerationParams withGrammar(Grammar g) { return new GenerationParams(maxTokens, sampling, stopAtEndOfGeneration, speculation, g); }
}
