package org.powerinfer4j.engine.model.generator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Path;
import java.util.SplittableRandom;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;

/** Logits of a generated model over fixed random tokens, and their comparison between two FFN modes. */
final class GeneratedLogits {
    private GeneratedLogits() {}

    /** The logits after each of {@code n} random tokens (seed 9), fed one by one. */
    static float[][] evaluate(Path p, ModelOptions options, int n) throws Exception {
        SplittableRandom r = new SplittableRandom(9);
        float[][] out = new float[n][];
        try (Model m = Model.open(p, options); Session s = m.newSession()) {
            for (int i = 0; i < n; i++) out[i] = s.evaluate(3 + r.nextInt(m.config().vocabSize() - 3)).clone();
        }
        return out;
    }

    /** Every logit of {@code actual} within {@code relative} × the position's largest |logit| (+1e-6) of {@code expected}. */
    static void assertClose(float[][] expected, float[][] actual, float relative) {
        for (int i = 0; i < expected.length; i++) {
            float scale = 0;
            for (float v : expected[i]) scale = Math.max(scale, Math.abs(v));
            for (int v = 0; v < expected[i].length; v++)
                assertThat(actual[i][v]).as("position %d logit %d", i, v).isCloseTo(expected[i][v], within(relative * scale + 1e-6f));
        }
    }
}
