package org.powerinfer4j.bench.peer;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;

/**
 * Reads llama-bench's {@code -o json} output: an array of objects, one per test (a pp test has {@code n_gen}
 * 0, a tg test {@code n_prompt} 0). Only the fields the side-by-side comparison needs are mapped; the rest of
 * llama-bench's many fields (and ones later versions add) are ignored.
 */
public final class LlamaBenchJson {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private LlamaBenchJson() {}

    /** One llama-bench test, under llama-bench's own field names. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record Test(@JsonProperty("build_commit") String buildCommit,
                       @JsonProperty("build_number") int buildNumber,
                       @JsonProperty("cpu_info") String cpuInfo,
                       @JsonProperty("backends") String backends,
                       @JsonProperty("model_filename") String modelFilename,
                       @JsonProperty("model_type") String modelType,
                       @JsonProperty("model_size") long modelSize,
                       @JsonProperty("model_n_params") long modelNParams,
                       @JsonProperty("n_threads") int nThreads,
                       @JsonProperty("type_k") String typeK,
                       @JsonProperty("n_prompt") int nPrompt,
                       @JsonProperty("n_gen") int nGen,
                       @JsonProperty("test_time") String testTime,
                       @JsonProperty("avg_ns") long avgNs,
                       @JsonProperty("stddev_ns") long stddevNs,
                       @JsonProperty("avg_ts") double avgTs,
                       @JsonProperty("stddev_ts") double stddevTs,
                       @JsonProperty("samples_ns") long[] samplesNs,
                       @JsonProperty("samples_ts") double[] samplesTs) {

        /** llama-bench's test name: {@code pp512}, {@code tg128}, or {@code pp512+tg128} for a combined test. */
        public String name() {
            if (nGen == 0) return "pp" + nPrompt;
            if (nPrompt == 0) return "tg" + nGen;
            return "pp" + nPrompt + "+tg" + nGen;
        }
    }

    /** The tests in {@code json}; a message naming what is wrong when it is not llama-bench's JSON. */
    public static List<Test> parse(String json) {
        try {
            return List.of(MAPPER.readValue(json, Test[].class));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not llama-bench JSON: " + e.getOriginalMessage(), e);
        }
    }
}
