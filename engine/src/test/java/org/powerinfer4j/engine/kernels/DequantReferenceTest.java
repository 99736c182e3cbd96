package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.RepackedQ4;
import org.powerinfer4j.engine.tensor.RepackedQ5K;
import org.powerinfer4j.engine.tensor.RepackedQ6K;
import org.powerinfer4j.engine.tensor.RepackedQ8;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Dequantization against llama.cpp's gguf-py ({@code gguf.quants.dequantize}) dumps in
 * {@code reference/dequant/}: every row of each listed tensor must match bit for bit, for the kernel in use
 * and for the scalar reference.
 */
class DequantReferenceTest {

    /** INDEX.json's keys: {@code reference/dequant/MODEL.STEM.f32}, the model a {@code rand-k-*} file of models/quantized. */
    private static final Pattern DUMP = Pattern.compile("reference/dequant/(rand-k-[a-z0-9_]+)\\.(.+)\\.f32");

    @TestFactory
    List<DynamicTest> dequantizationMatchesGgufPyBitForBit() throws IOException {
        com.fasterxml.jackson.databind.JsonNode index = new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(Files.readString(TestData.file("reference/dequant/INDEX.json")));
        List<DynamicTest> tests = new ArrayList<>();
        for (var entry : index.properties()) {
            Matcher m = DUMP.matcher(entry.getKey());
            if (!m.matches()) continue;
            String model = m.group(1), stem = m.group(2), tensor = entry.getValue().get("tensor").asText();
            GGMLType type = GGMLType.valueOf(entry.getValue().get("type").asText());
            Path dump = TestData.file("reference/dequant/" + model + "." + stem + ".f32");
            Path gguf = TestData.file("models/quantized/" + model + ".gguf");
            tests.add(DynamicTest.dynamicTest(model + " " + tensor, () -> check(gguf, tensor, type, dump)));
        }
        assertThat(tests).as("entries in INDEX.json").hasSizeGreaterThanOrEqualTo(8);
        return tests;
    }

    private static void check(Path gguf, String name, GGMLType type, Path dump) throws IOException {
        ByteBuffer ref = ByteBuffer.wrap(Files.readAllBytes(dump)).order(ByteOrder.LITTLE_ENDIAN);
        try (GGUFFile f = GGUFFile.open(gguf)) {
            Tensor t = f.tensor(name);
            assertThat(t.type()).isEqualTo(type);
            int n = t.rowLength(), rows = t.rows();
            assertThat((long) n * rows * 4).isEqualTo(ref.capacity());
            float[] vec = new float[n], sca = new float[n];
            for (int r = 0; r < rows; r++) {
                Kernels.forType(type).dequantize(t.data(), t.rowOffset(r), vec, 0, n);
                Kernels.scalar(type).dequantize(t.data(), t.rowOffset(r), sca, 0, n);
                for (int i = 0; i < n; i++) {
                    int expected = ref.getInt(4 * (r * n + i));
                    if (Float.floatToRawIntBits(vec[i]) != expected || Float.floatToRawIntBits(sca[i]) != expected) {
                        throw new AssertionError(name + " row " + r + " element " + i + ": expected " + Float.intBitsToFloat(expected)
                                + ", kernel " + vec[i] + ", scalar " + sca[i]);
                    }
                }
            }
            if (RepackedQ4.repackable(t)) checkRepacked(t, ref);
            if (RepackedQ5K.repackable(t)) checkRepackedQ5K(t, ref);
            if (RepackedQ6K.repackable(t)) checkRepackedQ6K(t, ref);
            if (RepackedQ8.repackable(t)) checkRepackedQ8(t, ref);
        }
    }

    /** Q4_0 and Q4_K also through the CPU's repacked copy: the same values bit for bit, in permuted order. */
    private static void checkRepacked(Tensor t, ByteBuffer ref) {
        int n = t.rowLength(), rows = t.rows();
        try (Arena arena = Arena.ofConfined()) {
            RepackedQ4 rep = RepackedQ4.allocate(arena, t.type(), n, rows);
            rep.repackRows(t, 0, rows);
            float[] vec = new float[rep.paddedLength()], sca = new float[rep.paddedLength()];
            for (int r = 0; r < rows; r++) {
                RepackedQ4Kernels.dequantizePermuted(rep, r, vec, 0);
                RepackedQ4Kernels.dequantizePermutedScalar(rep, r, sca, 0);
                for (int i = 0; i < n; i++) {
                    int expected = ref.getInt(4 * (r * n + i)), at = RepackedQ4.permutedIndex(i);
                    if (Float.floatToRawIntBits(vec[at]) != expected || Float.floatToRawIntBits(sca[at]) != expected)
                        throw new AssertionError(t.name() + " repacked row " + r + " element " + i + ": expected " + Float.intBitsToFloat(expected)
                                + ", kernel " + vec[at] + ", scalar " + sca[at]);
                }
            }
        }
    }

    /** Q5_K through its repacked copy: every value bit for bit gguf-py's. */
    private static void checkRepackedQ5K(Tensor t, ByteBuffer ref) {
        try (Arena arena = Arena.ofConfined()) {
            RepackedQ5K rep = RepackedQ5K.allocate(arena, t.rowLength(), t.rows());
            rep.repackRows(t, 0, t.rows());
            checkValues(t, ref, rep::value);
        }
    }

    /** Q6_K through its repacked copy: every value bit for bit gguf-py's. */
    private static void checkRepackedQ6K(Tensor t, ByteBuffer ref) {
        try (Arena arena = Arena.ofConfined()) {
            RepackedQ6K rep = RepackedQ6K.allocate(arena, t.rowLength(), t.rows());
            rep.repackRows(t, 0, t.rows());
            checkValues(t, ref, rep::value);
        }
    }

    /** Q8_0 through its repacked copy: every value bit for bit gguf-py's. */
    private static void checkRepackedQ8(Tensor t, ByteBuffer ref) {
        try (Arena arena = Arena.ofConfined()) {
            RepackedQ8 rep = RepackedQ8.allocate(arena, t.rowLength(), t.rows());
            rep.repackRows(t, 0, t.rows());
            checkValues(t, ref, rep::value);
        }
    }

    private static void checkValues(Tensor t, ByteBuffer ref, RepackedChecks.RowColValue rep) {
        int n = t.rowLength(), rows = t.rows();
        for (int r = 0; r < rows; r++) {
            for (int i = 0; i < n; i++) {
                int expected = ref.getInt(4 * (r * n + i));
                float v = rep.value(r, i);
                if (Float.floatToRawIntBits(v) != expected)
                    throw new AssertionError(t.name() + " repacked row " + r + " element " + i + ": expected " + Float.intBitsToFloat(expected) + ", got " + v);
            }
        }
    }
}
