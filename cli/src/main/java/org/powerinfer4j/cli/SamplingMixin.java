package org.powerinfer4j.cli;

import org.powerinfer4j.engine.sampling.SamplingParams;
import picocli.CommandLine.Option;

/** Sampler flags, named and defaulted as in llama.cpp. */
public final class SamplingMixin {
    @Option(names = "--temp", defaultValue = "0.8", description = "Temperature; 0 = greedy (default: ${DEFAULT-VALUE}).")
    float temperature;

    @Option(names = "--top-k", defaultValue = "40", description = "Top-k, 0 = off (default: ${DEFAULT-VALUE}).")
    int topK;

    @Option(names = "--top-p", defaultValue = "0.95", description = "Top-p, 1.0 = off (default: ${DEFAULT-VALUE}).")
    float topP;

    @Option(names = "--min-p", defaultValue = "0.05", description = "Min-p, 0 = off (default: ${DEFAULT-VALUE}).")
    float minP;

    @Option(names = "--repeat-penalty", defaultValue = "1.0", description = "Repetition penalty, 1.0 = off (default: ${DEFAULT-VALUE}).")
    float repeatPenalty;

    @Option(names = "--repeat-last-n", defaultValue = "64", description = "Tokens the penalty looks back over (default: ${DEFAULT-VALUE}).")
    int repeatLastN;

    @Option(names = {"-s", "--seed"}, description = "Sampler seed (default: random).")
    Long seed;

    public SamplingParams toParams() {
        long s = seed != null ? seed : System.nanoTime();
        return new SamplingParams(temperature, topK, topP, minP, repeatPenalty, repeatLastN, s);
    }
}
