package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.backend.GpuMode;
import org.powerinfer4j.engine.backend.GpuOptions;

/** The library prints nothing: notes, warnings and load progress reach the {@link ModelListener} set in {@link ModelOptions}. */
class QuietLibraryTest {

    @Test
    void noPrintingInTheLibrarySources() throws IOException {
        Path sources = Path.of("src/main/java");
        assertThat(sources).isDirectory();
        List<String> offending = new ArrayList<>();
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                List<String> lines = Files.readAllLines(f);
                for (int i = 0; i < lines.size(); i++) {
                    String code = lines.get(i).strip();
                    if (code.startsWith("*") || code.startsWith("//") || code.startsWith("/*")) continue;   // comments and javadoc examples
                    if (code.contains("System.out") || code.contains("System.err") || code.contains("printStackTrace()"))
                        offending.add(sources.relativize(f) + ":" + (i + 1) + ": " + code);
                }
            }
        }
        assertThat(offending).as("prints in engine/src/main").isEmpty();
    }

    @Test
    void notesGoToTheListener() throws IOException {
        List<String> notes = Collections.synchronizedList(new ArrayList<>());
        // --gpu on a dense model without -ngl or a budget: a note, everything on the CPU
        GpuOptions gpu = new GpuOptions(GpuMode.SIMULATED, -1, null, null, GpuOptions.DEFAULT_COLD_MASK, GpuOptions.DEFAULT_TILE, 0);
        ModelOptions o = ModelOptions.defaults().withThreads(1).withContextLength(32).withGpu(gpu).withListener(notes::add);
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), o)) {
            assertThat(m.contextLength()).isEqualTo(32);
        }
        assertThat(notes).singleElement().asString().startsWith("note: --gpu on a dense FFN moves whole layers");
    }

    @Test
    void theRepackReportsItsProgress() throws IOException {
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        long[] last = {-1};
        ModelListener listener = new ModelListener() {
            @Override public void message(String line) { events.add(line); }
            @Override public void loadStarted(String what, long totalBytes) { events.add("start " + what + " " + totalBytes); }
            @Override public void loadAdvanced(long doneBytes) { last[0] = doneBytes; }
            @Override public void loadFinished() { events.add("finished at " + last[0]); }
        };
        ModelOptions o = ModelOptions.defaults().withThreads(1).withContextLength(32).withListener(listener);
        try (Model m = Model.open(TestData.file("models/quantized/stories260K-q4_0.gguf"), o)) {
            assertThat(m.contextLength()).isEqualTo(32);
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(org.powerinfer4j.engine.kernels.RepackedQ4Kernels.SUPPORTED, "no repack on this CPU");
        assertThat(events).hasSize(2);
        assertThat(events.get(0)).startsWith("start repacking Q4_0/Q4_K/Q5_K/Q6_K/Q8_0 matrices ");
        long total = Long.parseLong(events.get(0).substring(events.get(0).lastIndexOf(' ') + 1));
        assertThat(total).isPositive();
        assertThat(events.get(1)).isEqualTo("finished at " + total);
    }

    @Test
    void theDefaultIsTheSystemLogger() {
        assertThat(ModelOptions.defaults().listener()).isSameAs(ModelListener.systemLogger());
        ModelListener.systemLogger().message("note: routed to java.util.logging by default");   // no exception, nothing required of the application
    }
}
