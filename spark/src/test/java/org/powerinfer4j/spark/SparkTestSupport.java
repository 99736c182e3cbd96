package org.powerinfer4j.spark;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.SparkSession;

/** The embedded Spark ({@code local[2]}) the tests share, the test models, and the {@code generate} command to compare with. */
final class SparkTestSupport {
    static final Path TESTDATA = Path.of(System.getProperty("powerinfer4j.testdata", "../../shared/testdata"));
    static final Path STORIES = TESTDATA.resolve("models/stories260K.gguf");
    private static SparkSession spark;

    private SparkTestSupport() {}

    /** A running {@code local[2]} session with the plugin; a new one when a test stopped the last. */
    static synchronized SparkSession spark() {
        if (spark == null || spark.sparkContext().isStopped()) {
            spark = SparkSession.builder().master("local[2]").appName("powerinfer4j-test")
                    .config("spark.ui.enabled", "false")
                    .config("spark.sql.shuffle.partitions", "2")
                    .config("spark.plugins", PowerInferPlugin.class.getName())
                    .config("spark.driver.host", "127.0.0.1")
                    .config("spark.sql.warehouse.dir", System.getProperty("java.io.tmpdir") + "/powerinfer4j-spark-warehouse")
                    .getOrCreate();
        }
        return spark;
    }

    /**
     * What {@code java -jar powerinfer4j.jar generate -m MODEL ARGS --no-display-prompt} prints on stdout, without the
     * newline it ends with: the command a user runs, in a JVM of its own.
     */
    static String generate(Path model, String... args) throws IOException, InterruptedException {
        Path jar = Path.of(System.getProperty("powerinfer4j.cli.jar", "../cli/target/powerinfer4j.jar"));
        if (!Files.isRegularFile(jar))
            throw new IllegalStateException(jar + " is missing: build the cli module's jar first (mvn verify builds it before this module)");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m", "-jar",
                jar.toString(), "generate", "-m", model.toString(), "--no-display-prompt"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        p.getOutputStream().close();
        CompletableFuture<byte[]> out = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()));
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("generate did not finish: " + cmd);
        }
        if (p.exitValue() != 0) throw new IllegalStateException("generate exited with " + p.exitValue() + ": " + cmd);
        String text = new String(out.join(), StandardCharsets.UTF_8);
        return text.endsWith("\n") ? text.substring(0, text.length() - 1) : text;
    }

    private static byte[] readAll(InputStream in) {
        try (in) {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            in.transferTo(b);
            return b.toByteArray();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
