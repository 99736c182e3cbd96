package org.powerinfer4j.engine.api;

import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * @param maxTokens tokens to generate at most ({@code -n}); -1 = until end of generation or full context
 * @param sampling  sampler settings
 * @param stopAtEndOfGeneration stop at EOS/EOT (true unless benchmarking a fixed length)
 */
public record GenerationParams(int maxTokens, SamplingParams sampling, boolean stopAtEndOfGeneration) {
    public static GenerationParams defaults() {
        return new GenerationParams(-1, SamplingParams.DEFAULT, true);
    }

    public GenerationParams withMaxTokens(int n) { return new GenerationParams(n, sampling, stopAtEndOfGeneration); }
    public GenerationParams withSampling(SamplingParams s) { return new GenerationParams(maxTokens, s, stopAtEndOfGeneration); }
    public GenerationParams withStopAtEndOfGeneration(boolean b) { return new GenerationParams(maxTokens, sampling, b); }
}
