package org.powerinfer4j.engine.api;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.model.generator.ModelShape;
import org.powerinfer4j.engine.model.generator.PlantedSparsity;
import org.powerinfer4j.engine.model.generator.RandomModelGenerator;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Random-weight models of real shape, generated once per test JVM into a temporary directory (deleted at exit):
 * big enough that every product goes through the worker pool and the kernels get compiled by C2.
 */
final class GeneratedModels {
    private GeneratedModels() {}

    private static Path dir, llama110m, sparse, small;

    /** stories110M's shape (dim 768, 12 layers, n_ff 2048, SwiGLU), Q4_0, the stories260K vocabulary (512 tokens). */
    static synchronized Path llama110m() {
        if (llama110m == null) llama110m = generate("110m-q4_0.gguf", ModelShape.preset("110m").withContextLength(256), false);
        return llama110m;
    }

    /** A PowerInfer ReLU model with predictors (dim 512, 4 layers, n_ff 2048, 90% planted sparsity), Q4_0. */
    static synchronized Path sparseRelu() {
        if (sparse == null) sparse = generate("relu-q4_0.powerinfer.gguf", ModelShape.of(512, 4, 2048, 8, 8, true).withContextLength(256), true);
        return sparse;
    }

    /** A small SwiGLU model (dim 128, 2 layers, n_ff 512), Q4_0: fast enough to run in an interpreter-only JVM. */
    static synchronized Path smallSwiglu() {
        if (small == null) small = generate("small-q4_0.gguf", ModelShape.of(128, 2, 512, 4, 4, true).withContextLength(128), false);
        return small;
    }

    private static Path generate(String name, ModelShape shape, boolean sparseRelu) {
        try {
            Path out = dir().resolve(name);
            RandomModelGenerator g = new RandomModelGenerator(shape, GGMLType.Q4_0, TestData.file("models/stories260K.gguf")).seed(7).threads(2);
            if (sparseRelu) g = g.sparseRelu(PlantedSparsity.Spec.defaults());
            g.write(out);
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path dir() throws IOException {
        if (dir == null) {
            Path d = Files.createTempDirectory("powerinfer4j-generated");
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try (Stream<Path> s = Files.walk(d)) {
                    s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                } catch (IOException ignored) {
                    // best effort: a temp directory
                }
            }));
            dir = d;
        }
        return dir;
    }
}
