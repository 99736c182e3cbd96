package org.powerinfer4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** {@code bench -o json|csv}: llama-bench's field names, types and csv quoting; a bad {@code -o} is a one-line error. */
class BenchCommandTest {
    private static final Path TESTDATA = Path.of(System.getProperty("powerinfer4j.testdata"));
    private static final String STORIES = TESTDATA.resolve("models/stories260K.gguf").toString();

    /** llama-bench -o json's fields in its order, written out here so a rename in BenchCommand is caught. */
    private static final List<String> LLAMA_BENCH = List.of(
            "build_commit", "build_number", "cpu_info", "gpu_info", "backends", "model_filename", "model_type", "model_size",
            "model_n_params", "n_batch", "n_ubatch", "n_threads", "cpu_mask", "cpu_strict", "poll", "type_k", "type_v",
            "n_gpu_layers", "split_mode", "main_gpu", "no_kv_offload", "flash_attn", "tensor_split", "use_mmap", "embeddings",
            "n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts");
    private static final Set<String> INTS = Set.of("build_number", "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads",
            "poll", "n_gpu_layers", "main_gpu", "n_prompt", "n_gen", "n_depth", "avg_ns", "stddev_ns");
    private static final Set<String> BOOLS = Set.of("cpu_strict", "no_kv_offload", "flash_attn", "use_mmap", "embeddings");
    private static final Set<String> FLOATS = Set.of("avg_ts", "stddev_ts");

    @Test
    void jsonRowsHaveEveryLlamaBenchFieldWithItsType() throws Exception {
        CliTest.Result r = CliTest.run("bench", "-m", STORIES, "-p", "8", "-n", "4", "-t", "1", "-r", "2", "-o", "json");
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode rows = new ObjectMapper().readTree(r.out());
        assertThat(rows.isArray()).isTrue();
        assertThat(rows.size()).isEqualTo(2);
        for (JsonNode row : rows) {
            List<String> names = new ArrayList<>();
            row.fieldNames().forEachRemaining(names::add);
            // llama-bench's fields first, in its order; then only ours, under a prefix that cannot collide
            assertThat(names.subList(0, LLAMA_BENCH.size())).containsExactlyElementsOf(LLAMA_BENCH);
            assertThat(names.subList(LLAMA_BENCH.size(), names.size())).isNotEmpty().allMatch(n -> n.startsWith("pi4j_"));
            for (String f : LLAMA_BENCH) {
                JsonNode v = row.get(f);
                if (INTS.contains(f)) assertThat(v.isIntegralNumber()).as(f + " = " + v).isTrue();
                else if (BOOLS.contains(f)) assertThat(v.isBoolean()).as(f + " = " + v).isTrue();
                else if (FLOATS.contains(f)) assertThat(v.isNumber()).as(f + " = " + v).isTrue();
                else if (f.equals("samples_ns")) assertThat(v.isArray() && v.size() == 2 && all(v, JsonNode::isIntegralNumber)).as(f + " = " + v).isTrue();
                else if (f.equals("samples_ts")) assertThat(v.isArray() && v.size() == 2 && all(v, JsonNode::isNumber)).as(f + " = " + v).isTrue();
                else assertThat(v.isTextual()).as(f + " = " + v).isTrue();
            }
            assertThat(row.get("backends").asText()).isEqualTo("CPU");
            assertThat(row.get("gpu_info").asText()).isEmpty();
            assertThat(row.get("n_threads").asInt()).isEqualTo(1);
            assertThat(row.get("n_gpu_layers").asInt()).isZero();
            assertThat(row.get("type_k").asText()).isEqualTo("f16");
            assertThat(row.get("model_filename").asText()).endsWith("stories260K.gguf");
            // stories260K has no general.file_type: llama.cpp's guess from its F32 tensors
            assertThat(row.get("model_type").asText()).matches("llama \\d+K all F32 \\(guessed\\)");
            assertThat(row.get("model_size").asLong()).isPositive();
            assertThat(row.get("model_n_params").asLong()).isBetween(200_000L, 400_000L);
            assertThat(row.get("test_time").asText()).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ");
            assertThat(Instant.parse(row.get("test_time").asText())).isBeforeOrEqualTo(Instant.now());
            // avg_ts = the mean over repetitions of n_tokens / seconds, each sample from its samples_ns
            int tokens = row.get("n_prompt").asInt() + row.get("n_gen").asInt();
            double sum = 0;
            long sumNs = 0;
            for (int i = 0; i < 2; i++) {
                long ns = row.get("samples_ns").get(i).asLong();
                double ts = row.get("samples_ts").get(i).asDouble();
                assertThat(ns).isPositive();
                assertThat(ts).isCloseTo(tokens * 1e9 / ns, within(1e-9 * ts));
                sum += ts;
                sumNs += ns;
            }
            assertThat(row.get("avg_ts").asDouble()).isCloseTo(sum / 2, within(1e-9 * sum));
            assertThat(row.get("avg_ns").asLong()).isEqualTo(sumNs / 2);
            assertThat(row.get("stddev_ts").asDouble()).isNotNegative();
        }
        // a pp test has n_gen 0, a tg test n_prompt 0 (how llama-bench's readers tell them apart)
        assertThat(rows.get(0).get("n_prompt").asInt()).isEqualTo(8);
        assertThat(rows.get(0).get("n_gen").asInt()).isZero();
        assertThat(rows.get(0).get("pi4j_test").asText()).isEqualTo("pp8");
        assertThat(rows.get(1).get("n_prompt").asInt()).isZero();
        assertThat(rows.get(1).get("n_gen").asInt()).isEqualTo(4);
        assertThat(rows.get(1).get("pi4j_test").asText()).isEqualTo("tg4");
        assertThat(rows.get(1).get("pi4j_n_parallel").asInt()).isEqualTo(1);
    }

    @Test
    void csvHeaderIsLlamaBenchsFieldsThenOurs() {
        String q8 = TESTDATA.resolve("models/quantized/stories260K-q8_0.gguf").toString();   // general.file_type 7
        CliTest.Result r = CliTest.run("bench", "-m", q8, "-p", "0", "-n", "4", "-t", "1", "-r", "1", "-o", "csv");
        assertThat(r.code()).as(r.err()).isZero();
        List<String> lines = r.out().lines().toList();
        assertThat(lines).hasSize(2);
        // llama-bench's csv has its json fields except the two sample arrays
        List<String> header = List.of(lines.get(0).split(","));
        List<String> llama = LLAMA_BENCH.stream().filter(f -> !f.startsWith("samples_")).toList();
        assertThat(header.subList(0, llama.size())).containsExactlyElementsOf(llama);
        assertThat(header.subList(llama.size(), header.size())).containsExactlyElementsOf(BenchCommand.PI4J_FIELDS).allMatch(n -> n.startsWith("pi4j_"));
        assertThat(header).containsExactlyElementsOf(BenchCommand.CSV_FIELDS);
        List<String> values = parseCsvLine(lines.get(1));
        assertThat(values).hasSameSizeAs(header);
        Map<String, String> row = new LinkedHashMap<>();
        for (int i = 0; i < header.size(); i++) row.put(header.get(i), values.get(i));
        assertThat(row).containsEntry("n_prompt", "0").containsEntry("n_gen", "4").containsEntry("n_threads", "1")
                .containsEntry("backends", "CPU").containsEntry("cpu_strict", "0").containsEntry("use_mmap", "1")
                .containsEntry("pi4j_test", "tg4");
        assertThat(row.get("avg_ts")).matches("\\d+\\.\\d{6}");
        assertThat(row.get("model_type")).matches("llama \\d+K Q8_0");
    }

    @Test
    void csvQuotesEveryValueLikeLlamaBench() {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("model_filename", "/m/a \"b\".gguf");
        row.put("cpu_strict", false);
        row.put("use_mmap", true);
        row.put("n_gen", 128);
        row.put("avg_ts", 213.25);
        row.put("pi4j_ffn_computed", null);
        String[] lines = BenchCommand.csv(List.of(row)).split("\n");
        assertThat(lines[0]).isEqualTo(String.join(",", BenchCommand.CSV_FIELDS));
        List<String> values = List.of(lines[1].split(",", -1));
        Map<String, String> byName = new LinkedHashMap<>();
        for (int i = 0; i < values.size(); i++) byName.put(BenchCommand.CSV_FIELDS.get(i), values.get(i));
        assertThat(byName).containsEntry("model_filename", "\"/m/a \"\"b\"\".gguf\"").containsEntry("cpu_strict", "\"0\"")
                .containsEntry("use_mmap", "\"1\"").containsEntry("n_gen", "\"128\"").containsEntry("avg_ts", "\"213.250000\"")
                .containsEntry("pi4j_ffn_computed", "\"\"").containsEntry("build_commit", "\"\"");
        assertThat(parseCsvLine(lines[1]).get(BenchCommand.CSV_FIELDS.indexOf("model_filename"))).isEqualTo("/m/a \"b\".gguf");
    }

    @Test
    void gpuInfoIsTheDevicesName() {
        assertThat(BenchCommand.gpuInfo(null)).isEmpty();
        assertThat(BenchCommand.gpuInfo("none")).isEmpty();
        assertThat(BenchCommand.gpuInfo("cuda:0 (NVIDIA H200, sm_90)")).isEqualTo("NVIDIA H200");
        assertThat(BenchCommand.gpuInfo("GPU layers: 4 of 12 (blk.8-11) on cuda:0 (NVIDIA H200, sm_90), 10 MiB of weights"))
                .isEqualTo("NVIDIA H200");
        assertThat(BenchCommand.gpuInfo("simulated (synchronous)")).isEqualTo("simulated");
        assertThat(BenchCommand.fileTypeName(15)).isEqualTo("Q4_K - Medium");
        assertThat(BenchCommand.fileTypeName(0)).isEqualTo("all F32");
        assertThat(BenchCommand.fileTypeName(BenchCommand.guessedFileType("Q4_K"))).isEqualTo("Q4_K - Medium");
        assertThat(BenchCommand.guessedFileType("Q1_X")).isEqualTo(-1);
    }

    @Test
    void aBadOutputFormatIsOneLineError() {
        CliTest.Result r = CliTest.run("bench", "-m", STORIES, "-p", "8", "-n", "4", "-r", "1", "-o", "xml");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("error: -o must be md, csv or json, not 'xml'");
        assertThat(r.out()).isEmpty();
    }

    private static boolean all(JsonNode array, java.util.function.Predicate<JsonNode> p) {
        for (JsonNode v : array) if (!p.test(v)) return false;
        return true;
    }

    /** One csv line with double-quoted values (a doubled quote inside is one quote). */
    private static List<String> parseCsvLine(String line) {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quoted) {
                if (c == '"' && i + 1 < line.length() && line.charAt(i + 1) == '"') { cur.append('"'); i++; }
                else if (c == '"') quoted = false;
                else cur.append(c);
            } else if (c == '"') quoted = true;
            else if (c == ',') { out.add(cur.toString()); cur.setLength(0); }
            else cur.append(c);
        }
        out.add(cur.toString());
        return out;
    }
}
