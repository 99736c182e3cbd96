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
}
