package org.powerinfer4j.engine.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.FloatRange;
import org.junit.jupiter.api.Test;

/**
 * gpt-oss's clamped SwiGLU against its definition in double (transformers' {@code GptOssExperts}: gate clamped
 * above at 7, up clamped to ±7, {@code gate·sigmoid(1.702·gate)·(up + 1)}). The archs/ test model's
 * activations rarely reach the clamp, so the clamp is checked here, on inputs far beyond it.
 */
class SwigluOaiTest {
    private static double reference(double g, double u) {
        g = Math.min(g, 7.0);
        u = Math.max(-7.0, Math.min(u, 7.0));
        return g / (1.0 + Math.exp(-1.702 * g)) * (u + 1.0);
    }

    @Property(tries = 2000)
    void matchesTheDefinition(@ForAll @FloatRange(min = -40f, max = 40f) float g, @ForAll @FloatRange(min = -40f, max = 40f) float u) {
        float[] gate = {g}, up = {u};
        DenseFeedForward.activate(FfnActivation.SWIGLU_OAI, gate, up, 1, true);
        double ref = reference(g, u);
        assertThat((double) gate[0]).isCloseTo(ref, within(2e-6 * Math.max(1.0, Math.abs(ref))));
    }

    @Test
    void clampsBothInputs() {
        float[] gate = {20f, 7f, -3f}, up = {100f, 7f, -100f};
        DenseFeedForward.activate(FfnActivation.SWIGLU_OAI, gate, up, 3, true);
        assertThat(gate[0]).isEqualTo(gate[1]);   // both clamp to gate 7, up 7
        assertThat((double) gate[2]).isCloseTo(reference(-3, -7), within(1e-6));   // up clamps to -7: (u + 1) = -6
    }
}
