package org.powerinfer4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.tokenizer.ChatMessage;

/** The transformer on an embedded {@code local[2]} Spark over stories260K, row for row against the {@code generate} command. */
class PowerInferGeneratorTest {
    static final String[] PROMPTS = {"Once upon a time", "The little dog", "Lily wanted to", "One day, a boy named Tim",
            "The sun was", "Mom said"};

    /** (id, prompt, seed) rows in {@code partitions} partitions. */
    static Dataset<Row> prompts(SparkSession spark, int partitions, String... prompts) {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < prompts.length; i++) rows.add(RowFactory.create(i, prompts[i], 1000L + 17 * i));
        StructType schema = new StructType().add("id", DataTypes.IntegerType).add("prompt", DataTypes.StringType).add("seed", DataTypes.LongType);
        return spark.createDataFrame(rows, schema).repartition(partitions);
    }

    static PowerInferGenerator generator() {
        return new PowerInferGenerator().setModelPath(SparkTestSupport.STORIES.toString()).setMaxTokens(24).setThreads(1);
    }

    static Map<Integer, Row> byId(Dataset<Row> out) {
        Map<Integer, Row> m = new TreeMap<>();
        for (Row r : out.collectAsList()) m.put(r.getInt(r.fieldIndex("id")), r);
        return m;
    }

    @Test
    void everyRowIsWhatGenerateGivesForItsPromptAndSeed() throws Exception {
        SparkSession spark = SparkTestSupport.spark();
        PowerInferGenerator g = generator().setSeedCol("seed").setStreams(3);
        Map<Integer, Row> rows = byId(g.transform(prompts(spark, 3, PROMPTS)));
        assertThat(rows).hasSize(PROMPTS.length);
        try (Model m = Model.open(SparkTestSupport.STORIES, ModelOptions.defaults().withThreads(1))) {
            for (int i = 0; i < PROMPTS.length; i++) {
                Row r = rows.get(i);
                String expected = SparkTestSupport.generate(SparkTestSupport.STORIES, "-p", PROMPTS[i], "-n", "24", "-s", Long.toString(1000L + 17 * i), "-t", "1");
                assertThat(r.getString(r.fieldIndex("completion"))).as("row %d (%s)", i, PROMPTS[i]).isEqualTo(expected).isNotEmpty();
                assertThat(r.getInt(r.fieldIndex("prompt_tokens"))).isEqualTo(m.tokenizer().encode(PROMPTS[i], true, false).length);
                assertThat(r.getInt(r.fieldIndex("completion_tokens"))).isBetween(1, 24);
                assertThat(r.getString(r.fieldIndex("finish_reason"))).isIn("stop", "length");
                assertThat(r.isNullAt(r.fieldIndex("error"))).isTrue();
            }
        }
        // greedy, every row on the generator's seed
        Map<Integer, Row> greedy = byId(generator().setTemperature(0).transform(prompts(spark, 2, PROMPTS[0], PROMPTS[3])));
        assertThat(greedy.get(0).getString(greedy.get(0).fieldIndex("completion")))
                .isEqualTo(SparkTestSupport.generate(SparkTestSupport.STORIES, "-p", PROMPTS[0], "-n", "24", "--temp", "0", "-s", "0", "-t", "1"));
        assertThat(greedy.get(1).getString(greedy.get(1).fieldIndex("completion")))
                .isEqualTo(SparkTestSupport.generate(SparkTestSupport.STORIES, "-p", PROMPTS[3], "-n", "24", "--temp", "0", "-s", "0", "-t", "1"));
    }

    @Test
    void powerInferSparseAndHybridOptionsReachTheExecutorsModel() throws Exception {
        Path sparse = SparkTestSupport.TESTDATA.resolve("sparse/stories260K-relu.powerinfer.gguf");
        PowerInferGenerator g = new PowerInferGenerator().setModelPath(sparse.toString()).setMaxTokens(16).setThreads(1).setTemperature(0)
                .setSparse("predict").setGpu("simulated").setVramBudget(0.0002);
        Map<Integer, Row> rows = byId(g.transform(prompts(SparkTestSupport.spark(), 2, PROMPTS[0], PROMPTS[2], PROMPTS[4])));
        Model opened = ExecutorModels.get(g.modelSpec()).model;   // the executor's (local mode: this JVM's)
        assertThat(opened.sparseMode()).isEqualTo(org.powerinfer4j.engine.sparse.SparseMode.PREDICT);
        assertThat(opened.hybridFeedForward()).as("hot neurons on the simulated device, cold on the CPU").isNotNull();
        String[] asked = {PROMPTS[0], PROMPTS[2], PROMPTS[4]};
        for (int i = 0; i < asked.length; i++)
            assertThat(rows.get(i).getString(rows.get(i).fieldIndex("completion"))).as(asked[i]).isEqualTo(SparkTestSupport.generate(sparse,
                    "-p", asked[i], "-n", "16", "--temp", "0", "-t", "1", "--sparse", "predict", "--gpu", "simulated", "--vram-budget", "0.0002"));
    }

    @Test
    void rowsDoNotDependOnPartitioningOrOnTheRowsGeneratedBesideThem() {
        SparkSession spark = SparkTestSupport.spark();
        String[] many = new String[16];
        for (int i = 0; i < many.length; i++) many[i] = PROMPTS[i % PROMPTS.length] + (i >= PROMPTS.length ? " " + i : "");
        Map<Integer, Row> alone = byId(generator().setSeedCol("seed").setStreams(1).transform(prompts(spark, 1, many)));
        Map<Integer, Row> batched = byId(generator().setSeedCol("seed").setStreams(6).transform(prompts(spark, 4, many)));
        assertThat(batched).isEqualTo(alone);
    }

    @Test
    void chatTemplateRowsAreTheModelsChatReply() throws Exception {
        SparkSession spark = SparkTestSupport.spark();
        PowerInferGenerator g = generator().setChatTemplate(true).setSystemPrompt("Tell a story.").setTemperature(0);
        Row r = g.transform(prompts(spark, 1, "a dog")).collectAsList().get(0);
        try (Model m = Model.open(SparkTestSupport.STORIES, ModelOptions.defaults().withThreads(1)); Session s = m.newSession()) {
            String expected = s.chat(List.of(new ChatMessage("system", "Tell a story."), new ChatMessage("user", "a dog")),
                    g.generationSpec().params(0), null).text();
            assertThat(r.getString(r.fieldIndex("completion"))).isEqualTo(expected);
        }
    }

    @Test
    void aRowThatCannotBeGeneratedGetsAnErrorNotAFailedJob() {
        SparkSession spark = SparkTestSupport.spark();
        String tooLong = "Once upon a time there was a little dog. ".repeat(20);
        PowerInferGenerator g = generator().setContextLength(64);
        Dataset<Row> in = prompts(spark, 2, "Once upon a time", tooLong, null, "The sun was");
        Map<Integer, Row> rows = byId(g.transform(in));
        assertThat(rows.get(1).isNullAt(rows.get(1).fieldIndex("completion"))).isTrue();
        assertThat(rows.get(1).getString(rows.get(1).fieldIndex("error"))).startsWith("prompt too long: ").contains("context of 64");
        assertThat(rows.get(2).getString(rows.get(2).fieldIndex("error"))).isEqualTo("prompt is null");
        for (int ok : new int[] {0, 3}) {
            assertThat(rows.get(ok).isNullAt(rows.get(ok).fieldIndex("error"))).isTrue();
            assertThat(rows.get(ok).getString(rows.get(ok).fieldIndex("completion"))).isNotEmpty();
        }
        assertThat(g.lastMetrics().rowsFailed().value()).isEqualTo(2);
        assertThat(g.lastMetrics().promptsDone().value()).isEqualTo(4);

        assertThatThrownBy(() -> g.setFailOnError(true).transform(prompts(spark, 1, "Once upon a time", tooLong)).collectAsList())
                .hasMessageContaining("prompt too long");
    }

    @Test
    void accumulatorsCountThePromptsAndTheirTokens() {
        PowerInferGenerator g = generator();
        List<Row> rows = g.transform(prompts(SparkTestSupport.spark(), 2, PROMPTS)).collectAsList();
        GenerationMetrics m = g.lastMetrics();
        assertThat(m.promptsDone().value()).isEqualTo(PROMPTS.length);
        assertThat(m.rowsFailed().value()).isZero();
        assertThat(m.tokensGenerated().value()).isEqualTo(rows.stream().mapToLong(r -> r.getInt(r.fieldIndex("completion_tokens"))).sum());
        assertThat(m.promptTokens().value()).isEqualTo(rows.stream().mapToLong(r -> r.getInt(r.fieldIndex("prompt_tokens"))).sum());
        assertThat(m.promptsDone().name().get()).isEqualTo("powerinfer4j prompts done");   // named: the Spark UI lists it per stage
    }

    @Test
    void theModelIsOpenedOncePerExecutorAndClosedWhenItStops() {
        SparkSession spark = SparkTestSupport.spark();
        ExecutorModels.closeAll();
        int before = ExecutorModels.openedCount();
        PowerInferGenerator g = generator();
        g.transform(prompts(spark, 4, PROMPTS)).collectAsList();
        g.transform(prompts(spark, 3, PROMPTS)).collectAsList();
        PowerInferFunctions.register(spark, g);
        prompts(spark, 2, PROMPTS).createOrReplaceTempView("opened_once");
        spark.sql("SELECT powerinfer_generate(prompt, NULL) AS g FROM opened_once").collectAsList();
        assertThat(ExecutorModels.openedCount() - before).as("7 tasks and a SQL query, one executor (local mode)").isEqualTo(1);
        assertThat(ExecutorModels.openSpecs()).containsExactly(g.modelSpec());

        spark.stop();   // the plugin's shutdown closes the executor's models
        assertThat(ExecutorModels.openSpecs()).isEmpty();
    }

    @Test
    void schemaProblemsAreReportedOnTheDriver() {
        SparkSession spark = SparkTestSupport.spark();
        Dataset<Row> in = prompts(spark, 1, PROMPTS[0]);
        assertThatThrownBy(() -> generator().setInputCol("text").transform(in)).hasMessageContaining("inputCol 'text' is not a column");
        assertThatThrownBy(() -> generator().setInputCol("id").transform(in)).hasMessageContaining("must be a string column");
        assertThatThrownBy(() -> generator().setOutputCol("seed").transform(in)).hasMessageContaining("'seed' already exists");
        assertThatThrownBy(() -> generator().setSeedCol("prompt").transform(in)).hasMessageContaining("must be an integral column");
        assertThatThrownBy(() -> generator().setTopP(2).transform(in)).hasMessageContaining("top-p must be in [0, 1]");
        assertThatThrownBy(() -> generator().setSparse("sometimes").transform(in)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new PowerInferGenerator().transform(in)).hasMessage("modelPath is not set");
    }

    @Test
    void aModelPathNoExecutorCanOpenFailsTheJobNamingIt() {
        PowerInferGenerator g = generator().setModelPath("/no/such/model.gguf");
        assertThatThrownBy(() -> g.transform(prompts(SparkTestSupport.spark(), 1, PROMPTS[0])).collectAsList())
                .hasMessageContaining("cannot open model /no/such/model.gguf: no such file or cached model: /no/such/model.gguf");
    }

    @Test
    void savedAndLoadedWithItsParams(@TempDir Path dir) throws Exception {
        SparkTestSupport.spark();
        PowerInferGenerator g = generator().setSeedCol("seed").setStop("\n", ".").setTemperature(0.5).setStreams(2).setChatTemplate(true);
        g.write().overwrite().save(dir.resolve("g").toString());
        PowerInferGenerator loaded = PowerInferGenerator.load(dir.resolve("g").toString());
        assertThat(loaded.uid()).isEqualTo(g.uid());
        assertThat(loaded.modelSpec()).isEqualTo(g.modelSpec());
        assertThat(loaded.generationSpec()).isEqualTo(g.generationSpec());
        assertThat(loaded.getStreams()).isEqualTo(2);
    }
}
