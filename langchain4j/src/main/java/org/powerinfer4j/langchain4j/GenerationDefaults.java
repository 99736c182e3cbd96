package org.powerinfer4j.langchain4j;

import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.DefaultChatRequestParameters;
import java.util.List;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * A model's default generation settings (the builder's, else the engine's), and the checked translation of a call's
 * settings into the engine's {@link GenerationParams}.
 *
 * @param maxTokens null: no limit (until end of generation or a full context)
 * @param seed      null: a fresh seed per call
 */
record GenerationDefaults(double temperature, double topP, int topK, double minP, double repeatPenalty, Integer maxTokens,
                          Long seed, List<String> stopSequences) {

    static GenerationDefaults of(Double temperature, Double topP, Integer topK, Double minP, Double repeatPenalty, Integer maxTokens,
                                 Long seed, List<String> stopSequences) {
        SamplingParams e = SamplingParams.DEFAULT;
        GenerationDefaults d = new GenerationDefaults(
                temperature != null ? temperature : e.temperature(), topP != null ? topP : e.topP(), topK != null ? topK : e.topK(),
                minP != null ? minP : e.minP(), repeatPenalty != null ? repeatPenalty : e.repeatPenalty(), maxTokens, seed,
                stopSequences != null ? stopSequences : List.of());
        d.params(null, null, null, null, 0);   // checks every value now, so a bad setting fails at build()
        d.stops(null);
        return d;
    }

    /** The LangChain4j view of these defaults, which chat requests' parameters override. */
    ChatRequestParameters asChatParameters(String modelName) {
        return DefaultChatRequestParameters.builder()
                .modelName(modelName)
                .temperature(temperature)
                .topP(topP)
                .topK(topK)
                .maxOutputTokens(maxTokens)
                .stopSequences(stopSequences)
                .build();
    }

    /** Engine parameters for one call: the given values where not null, else these defaults; every value checked. */
    GenerationParams params(Double temperature, Double topP, Integer topK, Integer maxTokens, long seed) {
        double t = temperature != null ? temperature : this.temperature;
        double p = topP != null ? topP : this.topP;
        int k = topK != null ? topK : this.topK;
        Integer max = maxTokens != null ? maxTokens : this.maxTokens;
        if (!(t >= 0) || Double.isInfinite(t)) throw new IllegalArgumentException("temperature must be a finite number >= 0, is " + t);
        if (!(p >= 0 && p <= 1)) throw new IllegalArgumentException("topP must be in [0, 1], is " + p);
        if (k < 0) throw new IllegalArgumentException("topK must be >= 0 (0 = off), is " + k);
        if (!(minP >= 0 && minP <= 1)) throw new IllegalArgumentException("minP must be in [0, 1], is " + minP);
        if (!(repeatPenalty > 0) || Double.isInfinite(repeatPenalty))
            throw new IllegalArgumentException("repeatPenalty must be a finite number > 0 (1 = off), is " + repeatPenalty);
        if (max != null && max < 1) throw new IllegalArgumentException("maxOutputTokens must be >= 1, is " + max);
        SamplingParams sampling = SamplingParams.DEFAULT.withTemperature((float) t).withTopP((float) p).withTopK(k)
                .withMinP((float) minP).withRepeatPenalty((float) repeatPenalty).withSeed(seed);
        return GenerationParams.defaults().withMaxTokens(max != null ? max : -1).withSampling(sampling);
    }

    /** The call's stop sequences where not null, else these defaults; each must be a non-empty text. */
    List<String> stops(List<String> requested) {
        List<String> stops = requested != null ? requested : stopSequences;
        for (String s : stops)
            if (s == null || s.isEmpty()) throw new IllegalArgumentException("stop sequences must be non-empty texts, got " + stops);
        return stops;
    }
}
