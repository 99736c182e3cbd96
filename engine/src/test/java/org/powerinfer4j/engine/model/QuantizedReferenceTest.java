package org.powerinfer4j.engine.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.TensorInfo;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * End to end, every quant type on a real llama.cpp-made file: each {@code models/quantized/rand-k-*.gguf} listed in
 * {@code reference/rand-k.f64.json} (pure F32, Q8_0, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS and llama-quantize's
 * Q3_K_M/Q4_K_M/Q5_K_M mixes) against a float64 forward pass over the gguf-py-dequantized weights. Teacher
 * forcing, one token at a time: after each position the top-1 must equal the reference's wherever the reference's
 * top-2 gap exceeds 1e-3, and the log-softmax (in double, over the whole vocabulary) of the reference's top-5 ids
 * must be within the type's tolerance.
 *
 * <p>Our dequantization is bit-exact with gguf-py ({@code kernels.DequantReferenceTest}) and none of our kernels
 * quantizes activations (llama.cpp's do, to 8 bits): the only difference from the reference is float32
 * arithmetic (accumulation order, F32 activations, K/V cache and norms) against float64, plus the JSON's rounding of
 * log-probs to 6 decimals (±5e-7). Measured max |Δlogprob| over both sequences (52 positions × 5 ids), 1 thread,
 * at 512-bit / 256-bit vectors / scalar kernels:
 * <pre>
 *   F32     1.5e-6 1.4e-6 3.7e-6    Q2_K    2.4e-6 2.4e-6 2.0e-6    IQ4_NL  1.5e-6 1.5e-6 1.6e-6
 *   Q8_0    2.1e-6 1.5e-6 1.4e-6    Q3_K    1.3e-6 1.2e-6 1.4e-6    IQ4_XS  1.2e-6 1.1e-6 1.3e-6
 *   Q5_0    1.2e-6 1.2e-6 1.3e-6    Q4_K    2.5e-6 3.1e-6 3.1e-6    Q3_K_M  2.1e-6 2.0e-6 2.7e-6
 *   Q5_1    2.1e-6 2.3e-6 2.1e-6    Q5_K    3.4e-6 3.6e-6 3.0e-6    Q4_K_M  2.9e-6 3.4e-6 3.2e-6
 *                                   Q6_K    3.0e-6 2.1e-6 1.1e-6    Q5_K_M  2.9e-6 3.2e-6 2.9e-6
 * </pre>
 * Every type sits at the same float32-rounding level (the error does not depend on the weight format once the
 * weights are decoded exactly), so every file gets the same bound, 1e-5: 2.6× the largest figure (the K-quant
 * decode kernels sum per sub-block and fold the mins/offsets in from Σx, a different order from the reference). It is also far below what a decoding
 * slip costs: the references of the quantized files differ from the F32 file's by 0.05 (Q8_0) to 0.9 (Q2_K).
 */
class QuantizedReferenceTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Max |Δlogprob| allowed, every file (see the measurements above). */
    private static final double TOLERANCE = 1e-5;

    /** The quant types each file must contain (besides F32 norms), so the test checks what it says it does. */
    private static final Map<String, Set<GGMLType>> TYPES = Map.ofEntries(
            Map.entry("rand-k-f32", EnumSet.of(GGMLType.F32)),
            Map.entry("rand-k-q8_0", EnumSet.of(GGMLType.Q8_0)),
            Map.entry("rand-k-q5_0", EnumSet.of(GGMLType.Q5_0)),
            Map.entry("rand-k-q5_1", EnumSet.of(GGMLType.Q5_1)),
            Map.entry("rand-k-q2_k", EnumSet.of(GGMLType.Q2_K)),
            Map.entry("rand-k-q3_k", EnumSet.of(GGMLType.Q3_K)),
            Map.entry("rand-k-q4_k", EnumSet.of(GGMLType.Q4_K)),
            Map.entry("rand-k-q5_k", EnumSet.of(GGMLType.Q5_K)),
            Map.entry("rand-k-q6_k", EnumSet.of(GGMLType.Q6_K)),
            Map.entry("rand-k-iq4_nl", EnumSet.of(GGMLType.IQ4_NL)),
            Map.entry("rand-k-iq4_xs", EnumSet.of(GGMLType.IQ4_XS)),
            Map.entry("rand-k-q3_k_m", EnumSet.of(GGMLType.Q3_K, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K)),
            Map.entry("rand-k-q4_k_m", EnumSet.of(GGMLType.Q4_K, GGMLType.Q6_K)),
            Map.entry("rand-k-q5_k_m", EnumSet.of(GGMLType.Q5_K, GGMLType.Q6_K)));

    @TestFactory
    List<DynamicTest> teacherForcedLogProbsMatchTheFloat64Reference() throws Exception {
        JsonNode ref = JSON.readTree(Files.readString(TestData.file("reference/rand-k.f64.json")));
        List<DynamicTest> tests = new ArrayList<>();
        ref.get("models").properties().forEach(e -> tests.add(DynamicTest.dynamicTest(e.getKey(), () -> check(e.getKey(), e.getValue()))));
        assertThat(tests).as("models in rand-k.f64.json").hasSizeGreaterThanOrEqualTo(14);
        return tests;
    }

    private static void check(String file, JsonNode sequences) throws Exception {
        var path = TestData.file(file);
        String stem = path.getFileName().toString().replace(".gguf", "");
        Set<GGMLType> types = EnumSet.noneOf(GGMLType.class);
        try (GGUFFile f = GGUFFile.open(path)) {
            for (TensorInfo ti : f.tensorInfos()) if (ti.ne().length == 2) types.add(ti.type());
        }
        assertThat(types).as("matrix types of %s", stem).containsAll(TYPES.getOrDefault(stem, Set.of()));
        double max = 0, sum = 0;
        int count = 0, top1Checked = 0;
        try (Model m = Model.open(path, ModelOptions.defaults().withThreads(1).withKvCacheType(GGMLType.F32))) {
            int seq = 0;
            for (JsonNode s : sequences) {
                JsonNode ids = s.get("ids"), top5 = s.get("top5");
                assertThat(top5.size()).isEqualTo(ids.size());
                try (Session session = m.newSession()) {
                    for (int p = 0; p < ids.size(); p++) {
                        double[] lp = LlamaCppParityTest.logSoftmax(session.evaluate(ids.get(p).asInt()));
                        JsonNode top = top5.get(p);
                        for (JsonNode t : top) {
                            double ours = lp[t.get(0).asInt()], theirs = t.get(1).asDouble();
                            assertThat(ours).as("%s sequence %d position %d id %d", stem, seq, p, t.get(0).asInt()).isCloseTo(theirs, within(TOLERANCE));
                            max = Math.max(max, Math.abs(ours - theirs));
                            sum += Math.abs(ours - theirs);
                            count++;
                        }
                        if (top.get(0).get(1).asDouble() - top.get(1).get(1).asDouble() > 1e-3) {
                            assertThat(argmax(lp)).as("%s sequence %d position %d top-1", stem, seq, p).isEqualTo(top.get(0).get(0).asInt());
                            top1Checked++;
                        }
                    }
                }
                seq++;
            }
        }
        System.out.printf("QuantizedReferenceTest %-14s %-22s max |dlogprob| %.2e mean %.2e, top-1 checked at %d positions%n",
                stem, types, max, sum / count, top1Checked);
    }

    private static int argmax(double[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }
}
