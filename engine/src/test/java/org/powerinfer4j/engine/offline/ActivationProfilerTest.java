package org.powerinfer4j.engine.offline;

import org.powerinfer4j.engine.placement.ActivationStats;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.api.Model;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Profiling the ReLU-sparse stories260K student (dense FFN) on its own sampled text reproduces the shipped
 * activation counts ({@code sparse/activation_counts.json}, 131,072 held-out teacher tokens) in rank order.
 */
class ActivationProfilerTest {
    private static Model model;
    private static ActivationStats profiled;
    private static ActivationStats reference;

    @TempDir
    Path dir;

    @BeforeAll
    static void profile() throws Exception {
        model = SampledCorpus.openDense();
        // 32 × 256 = 8,192 tokens of the model's own text at temperature 1 (the reference used teacher samples at T = 1)
        List<int[]> corpus = SampledCorpus.get(model);
        profiled = ActivationProfiler.profile(model, corpus, 0f, null);
        reference = ActivationStats.read(org.powerinfer4j.engine.TestData.file("sparse/activation_counts.json"));
    }

    @AfterAll
    static void close() {
        if (model != null) model.close();
    }

    @Test
    void countsAgreeWithReferenceInRankOrder() {
        assertThat(profiled.layers()).isEqualTo(5);
        assertThat(profiled.tokens()).isEqualTo(32 * 256);
        assertThat(profiled.criterion()).isEqualTo(ActivationStats.CRITERION_NONZERO);
        for (int l = 0; l < 5; l++) {
            double rho = spearman(profiled.counts(l), reference.counts(l));
            Set<Integer> a = top(profiled.counts(l), 17), b = top(reference.counts(l), 17);
            a.retainAll(b);
            double fp = profiled.meanActiveFraction(l), fr = reference.meanActiveFraction(l);
            System.out.printf("layer %d: Spearman %.3f, top-10%% overlap %d/17, active %.3f vs %.3f%n", l, rho, a.size(), fp, fr);
            assertThat(rho).as("layer %d Spearman", l).isGreaterThan(0.9);
            assertThat(a.size()).as("layer %d top-17 overlap", l).isGreaterThanOrEqualTo(12);
            assertThat(fp).as("layer %d mean active fraction", l).isCloseTo(fr, org.assertj.core.api.Assertions.within(0.02));
        }
        profiled.summary().forEach(System.out::println);
    }

    @Test
    void sideFileRoundTrips() throws Exception {
        Path f = dir.resolve("m.activations.gguf");
        profiled.write(f);
        ActivationStats back = ActivationStats.read(f);
        assertThat(back.counts()).isDeepEqualTo(profiled.counts());
        assertThat(back.tokens()).isEqualTo(profiled.tokens());
        assertThat(back.criterion()).isEqualTo(profiled.criterion());
        assertThat(back.modelName()).isEqualTo(profiled.modelName());
    }

    @Test
    void plotIsWellFormedWithOneSeriesPerLayer() throws Exception {
        for (String name : new String[]{"p.svg", "p.html"}) {
            Path f = dir.resolve(name);
            ActivationPlot.write(profiled, f);
            String text = Files.readString(f);
            String svg = name.endsWith(".html") ? text.substring(text.indexOf("<svg"), text.indexOf("</svg>") + 6) : text;
            Document d = DocumentBuilderFactory.newInstance().newDocumentBuilder()
                    .parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
            assertThat(d.getDocumentElement().getTagName()).isEqualTo("svg");
            NodeList gs = d.getElementsByTagName("g");
            int series = 0;
            for (int i = 0; i < gs.getLength(); i++) {
                Element g = (Element) gs.item(i);
                if (!g.getAttribute("class").equals("layer")) continue;
                assertThat(g.getAttribute("data-layer")).isEqualTo(Integer.toString(series));
                assertThat(g.getElementsByTagName("path").getLength()).isEqualTo(2);
                series++;
            }
            assertThat(series).isEqualTo(5);
            assertThat(svg).contains("layer 4</text>").contains("neuron rank").contains("share of activations");
        }
        if (System.getProperty("plot.out") != null) ActivationPlot.write(profiled, Path.of(System.getProperty("plot.out")));
    }

    static double spearman(long[] a, long[] b) {
        double[] ra = ranks(a), rb = ranks(b);
        double ma = Arrays.stream(ra).average().orElse(0), mb = Arrays.stream(rb).average().orElse(0);
        double num = 0, da = 0, db = 0;
        for (int i = 0; i < ra.length; i++) {
            num += (ra[i] - ma) * (rb[i] - mb);
            da += (ra[i] - ma) * (ra[i] - ma);
            db += (rb[i] - mb) * (rb[i] - mb);
        }
        return num / Math.sqrt(da * db);
    }

    /** Ranks with ties averaged. */
    static double[] ranks(long[] v) {
        Integer[] idx = new Integer[v.length];
        for (int i = 0; i < idx.length; i++) idx[i] = i;
        Arrays.sort(idx, (x, y) -> Long.compare(v[x], v[y]));
        double[] r = new double[v.length];
        for (int i = 0; i < idx.length; ) {
            int j = i;
            while (j + 1 < idx.length && v[idx[j + 1]] == v[idx[i]]) j++;
            for (int k = i; k <= j; k++) r[idx[k]] = (i + j) / 2.0 + 1;
            i = j + 1;
        }
        return r;
    }

    static Set<Integer> top(long[] c, int k) {
        int[] o = org.powerinfer4j.engine.placement.PlacementTestAccess.sortedByCount(c);
        Set<Integer> s = new HashSet<>();
        for (int i = 0; i < k; i++) s.add(o[i]);
        return s;
    }
}
