package org.powerinfer4j.engine.offline;

import org.powerinfer4j.engine.placement.NpyReader;
import org.powerinfer4j.engine.placement.ActivationStats;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;

/** Reading activation statistics in every supported format, and the skew summaries. */
class ActivationStatsTest {
    @TempDir
    Path dir;

    @Test
    void readsReferenceJsonAndSummarisesItAsDocumented() throws IOException {
        ActivationStats s = ActivationStats.read(TestData.file("sparse/activation_counts.json"));
        assertThat(s.layers()).isEqualTo(5);
        assertThat(s.ff(0)).isEqualTo(172);
        assertThat(s.tokens()).isEqualTo(131_072);
        assertThat(s.counts(0)[0]).isEqualTo(17703);
        // SOURCES.md: 80% of activations come from 61% of the neurons in layer 0 and 73–74% in layers 1–4
        assertThat(s.neuronsCovering(0, 0.8)).isCloseTo(0.61, within(0.01));
        for (int l = 1; l < 5; l++) assertThat(s.neuronsCovering(l, 0.8)).isBetween(0.72, 0.75);
        // gate sparsity 0.872..0.877 ⇒ 12.3..12.8% of neurons fire per token
        for (int l = 0; l < 5; l++) assertThat(s.meanActiveFraction(l)).isBetween(0.12, 0.13);
        assertThat(s.summary().get(0)).startsWith("layer 0: 61% of neurons cover 80% of activations; top 10% carry ");
    }

    @Test
    void readsNpyInEveryDtype() throws IOException {
        Path f32 = dir.resolve("a.npy");
        NpyReader.writeFloat32(f32, new float[][]{{3, 0, 7}}, true);
        assertThat(ActivationStats.read(f32).counts(0)).containsExactly(3, 0, 7);
        Path two = dir.resolve("b.npy");
        NpyReader.writeFloat32(two, new float[][]{{1, 2}, {5, 4}}, false);
        ActivationStats t = ActivationStats.read(two);
        assertThat(t.layers()).isEqualTo(2);
        assertThat(t.counts(1)).containsExactly(5, 4);
        Path i64 = dir.resolve("c.npy");
        writeNpy(i64, "<i8", "(3,)", b -> { b.putLong(9); b.putLong(1L << 33); b.putLong(0); }, 24);
        assertThat(ActivationStats.read(i64).counts(0)).containsExactly(9, 1L << 33, 0);
        Path i32 = dir.resolve("d.npy");
        writeNpy(i32, "<i4", "(2,)", b -> { b.putInt(4); b.putInt(2); }, 8);
        assertThat(ActivationStats.read(i32).counts(0)).containsExactly(4, 2);
        // frequencies (all ≤ 1) are scaled to counts over a notional token count
        Path freq = dir.resolve("e.npy");
        NpyReader.writeFloat32(freq, new float[][]{{0.5f, 0.25f, 0f}}, true);
        ActivationStats fs = ActivationStats.read(freq);
        assertThat(fs.counts(0)).containsExactly(500_000, 250_000, 0);
        assertThat(fs.tokens()).isEqualTo(ActivationStats.FRACTION_SCALE);
        Path fortran = dir.resolve("f.npy");
        writeNpy(fortran, "<f4", "(1,)", b -> b.putFloat(1), 4, true);
        assertThatThrownBy(() -> ActivationStats.read(fortran)).hasMessageContaining("Fortran");
    }

    @Test
    void readsTextFilesAndDirectoriesOrderedByLayerNumber() throws IOException {
        Path d = Files.createDirectory(dir.resolve("acts"));
        Files.writeString(d.resolve("activation_10.txt"), "1 1 1");
        for (int l = 0; l < 10; l++) Files.writeString(d.resolve("activation_" + l + ".txt"), l + "\n" + (2 * l) + "\n7\n");
        Files.writeString(d.resolve("README.md"), "not a layer");
        ActivationStats s = ActivationStats.read(d);
        assertThat(s.layers()).isEqualTo(11);
        assertThat(s.counts(3)).containsExactly(3, 6, 7);
        assertThat(s.counts(10)).containsExactly(1, 1, 1);
        Path bad = dir.resolve("bad.txt");
        Files.writeString(bad, "1 two 3");
        assertThatThrownBy(() -> ActivationStats.read(bad)).hasMessageContaining("'two'");
        ActivationStats list = ActivationStats.readLayers(List.of(d.resolve("activation_2.txt"), d.resolve("activation_1.txt")));
        assertThat(list.counts(0)).containsExactly(2, 4, 7);
    }

    @Test
    void sideFileRejectsCountsBeyondI32() {
        ActivationStats s = new ActivationStats(new long[][]{{1L << 31}}, 1, "m", ActivationStats.CRITERION_NONZERO, 0);
        assertThatThrownBy(() -> s.write(dir.resolve("x.gguf"))).hasMessageContaining("exceeds I32");
    }

    @Test
    void summariesOfASkewedLayer() {
        // 10 neurons: one carries 91 of 100 activations
        ActivationStats s = new ActivationStats(new long[][]{{91, 1, 1, 1, 1, 1, 1, 1, 1, 1}}, 100, "", ActivationStats.CRITERION_ABS_GT, 0.1f);
        assertThat(s.topShare(0, 0.1)).isCloseTo(0.91, within(1e-9));
        assertThat(s.neuronsCovering(0, 0.8)).isCloseTo(0.1, within(1e-9));
        assertThat(s.neuronsCovering(0, 0.95)).isCloseTo(0.5, within(1e-9));
        assertThat(ActivationPlot.svg(s)).contains("|h| &gt; 0.1");
    }

    /** A 32-layer power-law profile, plotted (ramp colours, 4 legend rows) to check the layout by eye when asked. */
    @Test
    void plotsManyLayers() throws Exception {
        int layers = 32, ff = 11008;
        long[][] c = new long[layers][ff];
        java.util.SplittableRandom r = new java.util.SplittableRandom(3);
        for (int l = 0; l < layers; l++)
            for (int i = 0; i < ff; i++) c[l][i] = (long) (1_000_000 * Math.pow(i + 1, -0.6 - l / 40.0) * (0.8 + 0.4 * r.nextDouble()));
        ActivationStats s = new ActivationStats(c, 1_000_000, "synthetic <7B>", ActivationStats.CRITERION_NONZERO, 0);
        String svg = ActivationPlot.svg(s);
        javax.xml.parsers.DocumentBuilderFactory.newInstance().newDocumentBuilder()
                .parse(new java.io.ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
        assertThat(svg.split("class=\"layer\"", -1)).hasSize(layers + 1);
        assertThat(svg.length()).isLessThan(1_000_000);
        if (System.getProperty("plot.many") != null) Files.writeString(Path.of(System.getProperty("plot.many")), svg);
    }

    private interface Body { void put(ByteBuffer b); }

    private static void writeNpy(Path p, String descr, String shape, Body body, int bytes) throws IOException {
        writeNpy(p, descr, shape, body, bytes, false);
    }

    private static void writeNpy(Path p, String descr, String shape, Body body, int bytes, boolean fortran) throws IOException {
        String h = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }\n";
        ByteBuffer b = ByteBuffer.allocate(10 + h.length() + bytes).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0).putShort((short) h.length());
        b.put(h.getBytes(StandardCharsets.US_ASCII));
        body.put(b);
        Files.write(p, b.array());
    }

    /** JSON goes through Jackson; what is wrong with a file is one line naming it. */
    @Test
    void badJsonIsOneLineError() throws IOException {
        Path broken = dir.resolve("broken.json"), shapeless = dir.resolve("shapeless.json"), ok = dir.resolve("ok.json");
        Files.writeString(broken, "{\"layers\": [ {\"counts\": [1, 2,");
        Files.writeString(shapeless, "{\"layers\": [ {\"counts\": \"many\"} ]}");
        Files.writeString(ok, "{\"n_tokens\": 4, \"layers\": [ {\"layer\": 1, \"counts\": [0, 4]}, {\"layer\": 0, \"counts\": [2, 1]} ]}");
        assertThatThrownBy(() -> ActivationStats.read(broken)).isInstanceOf(IOException.class).hasMessageStartingWith("broken.json: ")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        assertThatThrownBy(() -> ActivationStats.read(shapeless)).hasMessage("shapeless.json: each layer needs a \"counts\" array");
        ActivationStats s = ActivationStats.read(ok);
        assertThat(s.tokens()).isEqualTo(4);
        assertThat(s.layers()).isEqualTo(2);
    }
}
