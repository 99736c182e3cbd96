package org.powerinfer4j.bench.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LlamaCppPeerTest {

    @Test
    void parsesTheScriptsJsonLine() {
        String line = "{\"engine\":\"llama.cpp\",\"build\":\"ggml-org/llama.cpp@v0.5.0 (node-llama-cpp 3.22.1, cpu)\","
                + "\"model\":\"/m/a \\\"b\\\".gguf\",\"threads\":2,\"prompt_tokens\":128,\"gen_tokens\":64,\"reps\":3,"
                + "\"pp_tps\":1214.5,\"tg_tps\":223,\"pp_std\":1.5e1,\"tg_std\":null}";
        LlamaCppPeer.Result r = LlamaCppPeer.parseResult(line);
        assertThat(r.available()).isTrue();
        assertThat(r.build()).startsWith("ggml-org/llama.cpp@v0.5.0");
        assertThat(r.threads()).isEqualTo(2);
        assertThat(r.promptTokens()).isEqualTo(128);
        assertThat(r.ppTps()).isEqualTo(1214.5);
        assertThat(r.tgTps()).isEqualTo(223);
        assertThat(r.ppStd()).isEqualTo(15);
        assertThat(r.tgStd()).isNaN();
        Map<String, Object> m = LlamaCppPeer.parseFlatJson(line);
        assertThat(m.get("model")).isEqualTo("/m/a \"b\".gguf");
        assertThat(LlamaCppPeer.parseFlatJson(" { } ")).isEmpty();
        assertThat(LlamaCppPeer.parseFlatJson("{\"a\":true,\"b\":\"\\u00e9\\n\"}")).containsEntry("a", true).containsEntry("b", "é\n");
    }

    @Test
    void rejectsMalformedJson() {
        assertThatThrownBy(() -> LlamaCppPeer.parseFlatJson("{\"a\":1")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> LlamaCppPeer.parseFlatJson("{\"a\" 1}")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> LlamaCppPeer.parseFlatJson("{\"a\":x}")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> LlamaCppPeer.parseFlatJson("{\"a\":1} x")).isInstanceOf(IllegalArgumentException.class);
        assertThat(LlamaCppPeer.parseResult("{\"engine\":\"other\"}").available()).isFalse();
        assertThat(LlamaCppPeer.parseResult("not json").reason()).contains("unreadable");
    }

    @Test
    void reportsWhyItIsUnavailable(@TempDir Path empty) {
        LlamaCppPeer.Result r = new LlamaCppPeer(empty).run(Path.of("x.gguf"), 1, 8, 8, 1, Duration.ofSeconds(10));
        assertThat(r.available()).isFalse();
        assertThat(r.reason()).contains("llamacpp-bench.mjs not found");
        assertThat(r.toString()).startsWith("llama.cpp unavailable");
        LlamaCppPeer noNode = new LlamaCppPeer(LlamaCppPeer.locate().directory(), "/nonexistent/node");
        if (noNode.unavailableReason() != null) assertThat(noNode.unavailableReason()).isNotBlank();
    }

    /** Runs llama.cpp for real when bench/node is installed (bench/node/install.sh); skipped otherwise. */
    @Test
    void runsLlamaCppOnATestModel() {
        LlamaCppPeer peer = LlamaCppPeer.locate();
        assumeTrue(peer.unavailableReason() == null, () -> "llama.cpp peer not installed: " + peer.unavailableReason());
        String data = System.getProperty("powerinfer4j.testdata");
        assumeTrue(data != null, "no test data");
        Path model = Path.of(data).resolve("models/quantized/stories260K-q8_0.gguf");
        LlamaCppPeer.Result r = peer.run(model, 1, 16, 8, 1, Duration.ofMinutes(2));
        assertThat(r.available()).as(r.toString()).isTrue();
        assertThat(r.ppTps()).isPositive();
        assertThat(r.tgTps()).isPositive();
        assertThat(r.build()).contains("llama.cpp");
    }

    /** Two tests as llama-bench -o json prints them (fields trimmed; unknown fields must be ignored). */
    private static final String LLAMA_BENCH_JSON = """
            [
              {"build_commit": "de3ff81", "build_number": 1, "cpu_info": "AMD EPYC", "gpu_info": "", "backends": "CPU",
               "model_filename": "/tmp/m.gguf", "model_type": "llama ?B Q4_K - Medium", "model_size": 61676544,
               "model_n_params": 109529856, "n_batch": 2048, "n_threads": 2, "type_k": "f16", "n_prompt": 128, "n_gen": 0,
               "n_depth": 0, "test_time": "2026-12-04T05:04:50Z", "avg_ns": 17226742, "stddev_ns": 100, "avg_ts": 928.788508,
               "stddev_ts": 1.5, "samples_ns": [ 17226742 ], "samples_ts": [ 928.789 ]},
              {"build_commit": "de3ff81", "build_number": 1, "cpu_info": "AMD EPYC", "gpu_info": "", "backends": "CPU",
               "model_filename": "/tmp/m.gguf", "model_type": "llama ?B Q4_K - Medium", "model_size": 61676544,
               "model_n_params": 109529856, "n_batch": 2048, "n_threads": 2, "type_k": "f16", "n_prompt": 0, "n_gen": 64,
               "n_depth": 0, "test_time": "2026-12-04T05:04:51Z", "avg_ns": 300000000, "stddev_ns": 0, "avg_ts": 213.25,
               "stddev_ts": 2.0, "samples_ns": [ 300000000 ], "samples_ts": [ 213.25 ]}
            ]""";

    @Test
    void readsANativeLlamaBenchsJson() {
        var tests = LlamaBenchJson.parse(LLAMA_BENCH_JSON);
        assertThat(tests).extracting(LlamaBenchJson.Test::name).containsExactly("pp128", "tg64");
        assertThat(tests.get(0).samplesNs()).containsExactly(17226742L);
        LlamaCppPeer.Result r = LlamaCppPeer.fromLlamaBench(LLAMA_BENCH_JSON, 2, 128, 64, 1);
        assertThat(r.available()).isTrue();
        assertThat(r.ppTps()).isEqualTo(928.788508);
        assertThat(r.tgTps()).isEqualTo(213.25);
        assertThat(r.tgStd()).isEqualTo(2.0);
        assertThat(r.build()).contains("llama.cpp de3ff81").contains("native");
        // a test that was not run, or output that is not llama-bench's, is a reason, not a number
        assertThat(LlamaCppPeer.fromLlamaBench(LLAMA_BENCH_JSON, 2, 512, 64, 1).reason()).contains("no pp512/tg64");
        assertThat(LlamaCppPeer.fromLlamaBench("{oops", 2, 128, 64, 1).reason()).startsWith("not llama-bench JSON");
    }

    @Test
    void aMissingNativeBinaryIsAReason(@TempDir Path empty) {
        LlamaCppPeer peer = LlamaCppPeer.nativeBench(empty.resolve("llama-bench"));
        assertThat(peer.isNative()).isTrue();
        assertThat(peer.unavailableReason()).contains("no llama-bench at").contains("bench/llamacpp/build.sh");
        assertThat(peer.run(Path.of("x.gguf"), 1, 8, 8, 1, Duration.ofSeconds(10)).available()).isFalse();
    }
}
