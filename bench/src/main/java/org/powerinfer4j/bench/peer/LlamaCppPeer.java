package org.powerinfer4j.bench.peer;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Runs llama.cpp on the same model for side-by-side numbers. The peer of record is a <b>native</b> build's
 * {@code llama-bench} ({@code bench/llamacpp/build.sh}: {@code -DGGML_NATIVE=ON}, Release), run with
 * {@code -o json} and read by {@link LlamaBenchJson}; where it is not built, node-llama-cpp's prebuilt CPU
 * binaries through {@code bench/node/llamacpp-bench.mjs} (markedly slower than a native build on this machine
 * kind, so ratios against it flatter us — results say which peer ran). When neither is there, results say so
 * instead of failing.
 */
public final class LlamaCppPeer {
    public static final String SCRIPT = "llamacpp-bench.mjs";
    /** System property naming the {@code bench/node} directory when it cannot be found from the working directory. */
    public static final String DIR_PROPERTY = "powerinfer4j.llamacpp.dir";
    /** System property naming a native {@code llama-bench} binary (overrides the one bench/llamacpp/build.sh builds). */
    public static final String LLAMA_BENCH_PROPERTY = "powerinfer4j.llamabench";
    /** Where bench/llamacpp/build.sh leaves llama-bench, relative to the repository root. */
    static final Path NATIVE_BENCH = Path.of("bench", "llamacpp", "build", "llama.cpp", "build", "bin", "llama-bench");

    private final Path nodeDir;
    private final String nodeExecutable;
    /** A native llama-bench, or null to go through node-llama-cpp. */
    private final Path llamaBench;

    /** One measurement; when {@code available} is false only {@code reason} is meaningful. */
    public record Result(boolean available, String reason, String build, int threads, int promptTokens, int genTokens,
                         int reps, double ppTps, double tgTps, double ppStd, double tgStd, String json) {

        public static Result unavailable(String reason) {
            return new Result(false, reason, null, 0, 0, 0, 0, Double.NaN, Double.NaN, Double.NaN, Double.NaN, null);
        }

        @Override
        public String toString() {
            if (!available) return "llama.cpp unavailable: " + reason;
            return String.format(java.util.Locale.ROOT, "llama.cpp %s, %d threads: pp%d %.2f ± %.2f t/s, tg%d %.2f ± %.2f t/s",
                    build, threads, promptTokens, ppTps, ppStd, genTokens, tgTps, tgStd);
        }
    }

    public LlamaCppPeer(Path nodeDir) {
        this(nodeDir, "node");
    }

    public LlamaCppPeer(Path nodeDir, String nodeExecutable) {
        this(nodeDir, nodeExecutable, null);
    }

    private LlamaCppPeer(Path nodeDir, String nodeExecutable, Path llamaBench) {
        this.nodeDir = Objects.requireNonNull(nodeDir).toAbsolutePath().normalize();
        this.nodeExecutable = Objects.requireNonNull(nodeExecutable);
        this.llamaBench = llamaBench == null ? null : llamaBench.toAbsolutePath().normalize();
    }

    /** The peer that runs a native {@code llama-bench} binary. */
    public static LlamaCppPeer nativeBench(Path llamaBench) {
        return new LlamaCppPeer(Path.of("bench", "node"), "node", Objects.requireNonNull(llamaBench));
    }

    /** True when this peer runs a native llama-bench (else node-llama-cpp's prebuilt binaries). */
    public boolean isNative() {
        return llamaBench != null;
    }

    /**
     * The peer in {@code -Dpowerinfer4j.llamacpp.dir}, else in {@code bench/node} (or {@code node}) of the
     * working directory or one of its parents.
     */
    public static LlamaCppPeer locate() {
        String bench = System.getProperty(LLAMA_BENCH_PROPERTY);
        if (bench != null) return nativeBench(Path.of(bench));
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent())
            if (Files.isExecutable(p.resolve(NATIVE_BENCH))) return nativeBench(p.resolve(NATIVE_BENCH));
        String prop = System.getProperty(DIR_PROPERTY);
        if (prop != null) return new LlamaCppPeer(Path.of(prop));
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            for (Path c : List.of(p.resolve("bench").resolve("node"), p.resolve("node")))
                if (Files.isRegularFile(c.resolve(SCRIPT))) return new LlamaCppPeer(c);
        }
        return new LlamaCppPeer(Path.of("bench", "node"));
    }

    public Path directory() {
        return nodeDir;
    }

    /** Why the peer cannot run, or {@code null} when it can. */
    public String unavailableReason() {
        if (llamaBench != null)
            return Files.isExecutable(llamaBench) ? null : "no llama-bench at " + llamaBench + " (run bench/llamacpp/build.sh)";
        if (!Files.isRegularFile(nodeDir.resolve(SCRIPT))) return SCRIPT + " not found in " + nodeDir;
        if (!Files.isDirectory(nodeDir.resolve("node_modules").resolve("node-llama-cpp")))
            return "node-llama-cpp is not installed in " + nodeDir + " (run " + nodeDir.resolve("install.sh") + ")";
        try {
            Process p = new ProcessBuilder(nodeExecutable, "--version").redirectErrorStream(true).start();
            String v = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "'" + nodeExecutable + " --version' did not finish";
            }
            if (p.exitValue() != 0) return "'" + nodeExecutable + " --version' failed: " + v;
            int major = v.startsWith("v") ? parseMajor(v.substring(1)) : -1;
            if (major < 20) return "node " + v + " is too old (node-llama-cpp needs >= 20)";
        } catch (IOException e) {
            return "node is not installed (" + e.getMessage() + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
        return null;
    }

    private static int parseMajor(String v) {
        int dot = v.indexOf('.');
        try {
            return Integer.parseInt(dot < 0 ? v : v.substring(0, dot));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** Benchmarks {@code model} with llama.cpp: prefill of {@code promptTokens}, decode of {@code genTokens}. */
    public Result run(Path model, int threads, int promptTokens, int genTokens, int reps, Duration timeout) {
        String why = unavailableReason();
        if (why != null) return Result.unavailable(why);
        if (!Files.isRegularFile(model)) return Result.unavailable("model not found: " + model);
        List<String> cmd = llamaBench != null
                ? List.of(llamaBench.toString(), "-m", model.toAbsolutePath().toString(), "-t", String.valueOf(threads),
                        "-p", String.valueOf(promptTokens), "-n", String.valueOf(genTokens), "-r", String.valueOf(reps), "-o", "json")
                : List.of(nodeExecutable, nodeDir.resolve(SCRIPT).toString(),
                        model.toAbsolutePath().toString(), "--threads", String.valueOf(threads),
                        "--prompt-tokens", String.valueOf(promptTokens), "--gen-tokens", String.valueOf(genTokens),
                        "--reps", String.valueOf(reps));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory((llamaBench != null ? llamaBench.getParent() : nodeDir).toFile());
        // belt and braces: node-llama-cpp must never download or build llama.cpp during a benchmark
        pb.environment().put("NODE_LLAMA_CPP_SKIP_DOWNLOAD", "true");
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            return Result.unavailable("cannot start node: " + e.getMessage());
        }
        CompletableFuture<String> out = drain(p.getInputStream());
        CompletableFuture<String> err = drain(p.getErrorStream());
        try {
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                return Result.unavailable("llama.cpp run timed out after " + timeout.toSeconds() + " s");
            }
            String stdout = out.join(), stderr = err.join();
            if (p.exitValue() != 0)
                return Result.unavailable((llamaBench != null ? "llama-bench" : "llamacpp-bench") + " exited with " + p.exitValue() + ": " + lastLines(stderr, 5));
            if (llamaBench != null) return fromLlamaBench(stdout, threads, promptTokens, genTokens, reps);
            String line = lastJsonLine(stdout);
            if (line == null) return Result.unavailable("no JSON result in output: " + lastLines(stdout + stderr, 5));
            return parseResult(line);
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            return Result.unavailable("interrupted");
        }
    }

    /** A result from llama-bench's JSON: its pp and tg tests, under the same names as the node script's line. */
    static Result fromLlamaBench(String json, int threads, int promptTokens, int genTokens, int reps) {
        List<LlamaBenchJson.Test> tests;
        try {
            tests = LlamaBenchJson.parse(json);
        } catch (IllegalArgumentException e) {
            return Result.unavailable(e.getMessage());
        }
        LlamaBenchJson.Test pp = null, tg = null;
        for (LlamaBenchJson.Test t : tests) {
            if (t.nGen() == 0 && t.nPrompt() == promptTokens) pp = t;
            if (t.nPrompt() == 0 && t.nGen() == genTokens) tg = t;
        }
        if ((promptTokens > 0 && pp == null) || (genTokens > 0 && tg == null))
            return Result.unavailable("llama-bench printed no pp" + promptTokens + "/tg" + genTokens + " test");
        LlamaBenchJson.Test any = pp != null ? pp : tg;
        String build = "llama.cpp " + any.buildCommit() + " (native llama-bench, " + any.backends() + ")";
        return new Result(true, null, build, threads, promptTokens, genTokens, reps,
                pp == null ? Double.NaN : pp.avgTs(), tg == null ? Double.NaN : tg.avgTs(),
                pp == null ? Double.NaN : pp.stddevTs(), tg == null ? Double.NaN : tg.stddevTs(), json);
    }

    private static CompletableFuture<String> drain(InputStream in) {
        return CompletableFuture.supplyAsync(() -> {
            try (in) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    private static String lastJsonLine(String s) {
        String[] lines = s.split("\\R");
        for (int i = lines.length - 1; i >= 0; i--) {
            String l = lines[i].strip();
            if (l.startsWith("{") && l.endsWith("}")) return l;
        }
        return null;
    }

    private static String lastLines(String s, int n) {
        String[] lines = s.strip().split("\\R");
        return String.join(" | ", java.util.Arrays.copyOfRange(lines, Math.max(0, lines.length - n), lines.length));
    }

    /** Builds a result from the script's JSON line. */
    public static Result parseResult(String line) {
        Map<String, Object> m;
        try {
            m = parseFlatJson(line);
        } catch (IllegalArgumentException e) {
            return Result.unavailable("unreadable result line: " + e.getMessage());
        }
        if (!"llama.cpp".equals(m.get("engine"))) return Result.unavailable("not a llama.cpp result: " + line);
        return new Result(true, null, (String) m.get("build"), (int) num(m, "threads"), (int) num(m, "prompt_tokens"),
                (int) num(m, "gen_tokens"), (int) num(m, "reps"), num(m, "pp_tps"), num(m, "tg_tps"), num(m, "pp_std"),
                num(m, "tg_std"), line);
    }

    private static double num(Map<String, Object> m, String key) {
        return m.get(key) instanceof Double d ? d : Double.NaN;
    }

    /**
     * Parses one JSON object whose values are strings, numbers, booleans or null (no nesting) — all the
     * script prints. Numbers come back as Double, strings unescaped.
     */
    public static Map<String, Object> parseFlatJson(String s) {
        Map<String, Object> m = new LinkedHashMap<>();
        int[] pos = {skipWs(s, 0)};
        expect(s, pos, '{');
        pos[0] = skipWs(s, pos[0]);
        if (peek(s, pos) == '}') {
            pos[0]++;
            return m;
        }
        while (true) {
            pos[0] = skipWs(s, pos[0]);
            String key = string(s, pos);
            pos[0] = skipWs(s, pos[0]);
            expect(s, pos, ':');
            pos[0] = skipWs(s, pos[0]);
            char c = peek(s, pos);
            Object v;
            if (c == '"') v = string(s, pos);
            else if (s.startsWith("null", pos[0])) { v = null; pos[0] += 4; }
            else if (s.startsWith("true", pos[0])) { v = Boolean.TRUE; pos[0] += 4; }
            else if (s.startsWith("false", pos[0])) { v = Boolean.FALSE; pos[0] += 5; }
            else {
                int start = pos[0];
                while (pos[0] < s.length() && "+-0123456789.eE".indexOf(s.charAt(pos[0])) >= 0) pos[0]++;
                try {
                    v = Double.parseDouble(s.substring(start, pos[0]));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("bad value at " + start + " in " + s);
                }
            }
            m.put(key, v);
            pos[0] = skipWs(s, pos[0]);
            char sep = peek(s, pos);
            pos[0]++;
            if (sep == '}') break;
            if (sep != ',') throw new IllegalArgumentException("expected ',' or '}' at " + (pos[0] - 1) + " in " + s);
        }
        if (skipWs(s, pos[0]) != s.length()) throw new IllegalArgumentException("trailing text in " + s);
        return m;
    }

    private static int skipWs(String s, int i) {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        return i;
    }

    private static char peek(String s, int[] pos) {
        if (pos[0] >= s.length()) throw new IllegalArgumentException("unexpected end of " + s);
        return s.charAt(pos[0]);
    }

    private static void expect(String s, int[] pos, char c) {
        if (peek(s, pos) != c) throw new IllegalArgumentException("expected '" + c + "' at " + pos[0] + " in " + s);
        pos[0]++;
    }

    private static String string(String s, int[] pos) {
        expect(s, pos, '"');
        StringBuilder sb = new StringBuilder();
        while (true) {
            char c = peek(s, pos);
            pos[0]++;
            if (c == '"') return sb.toString();
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            char e = peek(s, pos);
            pos[0]++;
            switch (e) {
                case '"', '\\', '/' -> sb.append(e);
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                case 'u' -> {
                    if (pos[0] + 4 > s.length()) throw new IllegalArgumentException("bad \\u escape in " + s);
                    sb.append((char) Integer.parseInt(s.substring(pos[0], pos[0] + 4), 16));
                    pos[0] += 4;
                }
                default -> throw new IllegalArgumentException("bad escape \\" + e + " in " + s);
            }
        }
    }
}
