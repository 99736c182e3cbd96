package org.powerinfer4j.engine.sampling;

/**
 * Sampler settings, named and defaulted as in llama.cpp ({@code --temp 0.8 --top-k 40 --top-p 0.95
 * --min-p 0.05 --repeat-penalty 1.0 --repeat-last-n 64}). Temperature ≤ 0 means greedy.
 */
public record SamplingParams(float temperature, int topK, float topP, float minP, float repeatPenalty, int repeatLastN, long seed) {

    public static final SamplingParams DEFAULT = new SamplingParams(0.8f, 40, 0.95f, 0.05f, 1.0f, 64, 0xC0FFEE);
    public static final SamplingParams GREEDY = DEFAULT.withTemperature(0f);

    public SamplingParams {
        if (topP < 0 || topP > 1) throw new IllegalArgumentException("top-p must be in [0, 1], is " + topP);
        if (minP < 0 || minP > 1) throw new IllegalArgumentException("min-p must be in [0, 1], is " + minP);
        if (repeatPenalty <= 0) throw new IllegalArgumentException("repeat penalty must be > 0, is " + repeatPenalty);
        if (topK < 0) throw new IllegalArgumentException("top-k must be >= 0 (0 = off), is " + topK);
        if (repeatLastN < 0) throw new IllegalArgumentException("repeat-last-n must be >= 0, is " + repeatLastN);
    }

    public SamplingParams withTemperature(float t) { return new SamplingParams(t, topK, topP, minP, repeatPenalty, repeatLastN, seed); }
    public SamplingParams withTopK(int k) { return new SamplingParams(temperature, k, topP, minP, repeatPenalty, repeatLastN, seed); }
    public SamplingParams withTopP(float p) { return new SamplingParams(temperature, topK, p, minP, repeatPenalty, repeatLastN, seed); }
    public SamplingParams withMinP(float p) { return new SamplingParams(temperature, topK, topP, p, repeatPenalty, repeatLastN, seed); }
    public SamplingParams withRepeatPenalty(float r) { return new SamplingParams(temperature, topK, topP, minP, r, repeatLastN, seed); }
    public SamplingParams withRepeatLastN(int n) { return new SamplingParams(temperature, topK, topP, minP, repeatPenalty, n, seed); }
    public SamplingParams withSeed(long s) { return new SamplingParams(temperature, topK, topP, minP, repeatPenalty, repeatLastN, s); }

    public boolean greedy() {
        return temperature <= 0f;
    }
}
