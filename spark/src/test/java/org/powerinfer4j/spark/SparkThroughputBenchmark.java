package org.powerinfer4j.spark;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;

/**
 * Throughput of the transformer on {@code local[2]} against the same prompts through {@code generate} in a loop — both
 * in one JVM (a session on one model, prompt after prompt: the engine without Spark) and as the command a user would
 * loop over (a JVM and a model load per prompt, measured on a few prompts). Run by {@code bench/spark-bench.sh}; not a test.
 *
 * <p>Arguments: MODEL [PROMPTS=32] [MAX_TOKENS=32] [STREAMS=4] [THREADS=2] [CLI_PROMPTS=4] [DECODE_BATCHING=exact].
 */
public final class SparkThroughputBenchmark {
    private static final String[] SEEDS = {"Once upon a time", "The little dog", "Lily wanted to", "One day, a boy named Tim", "The sun was",
            "Mom said", "In the park", "A big red ball"};

    public static void main(String[] args) throws Exception {
        Path model = Path.of(args[0]);
        int n = arg(args, 1, 32), maxTokens = arg(args, 2, 32), streams = arg(args, 3, 4), threads = arg(args, 4, 2), cliPrompts = arg(args, 5, 4);
        String batching = args.length > 6 ? args[6] : "exact";
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i < n; i++) prompts.add(SEEDS[i % SEEDS.length] + (i < SEEDS.length ? "" : " " + i));

        SparkSession spark = SparkSession.builder().master("local[2]").appName("powerinfer4j-bench").config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1").getOrCreate();
        spark.sparkContext().setLogLevel("WARN");
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) rows.add(RowFactory.create(i, prompts.get(i)));
        Dataset<Row> df = spark.createDataFrame(rows, new StructType().add("id", DataTypes.IntegerType).add("prompt", DataTypes.StringType)).repartition(2).cache();
        df.count();
        PowerInferGenerator g = new PowerInferGenerator().setModelPath(model.toString()).setMaxTokens(maxTokens).setTemperature(0)
                .setIgnoreEos(true).setStreams(streams).setThreads(threads).setDecodeBatching(batching);
        g.transform(df).collectAsList();   // opens the model and warms the JIT
        long t0 = System.nanoTime();
        List<Row> out = g.transform(df).collectAsList();
        double sparkSec = (System.nanoTime() - t0) / 1e9;
        long sparkTokens = out.stream().mapToLong(r -> r.getInt(r.fieldIndex("completion_tokens"))).sum();
        spark.stop();

        double loopSec;
        long loopTokens = 0;
        try (Model m = Model.open(model, ModelOptions.defaults().withThreads(threads)); Session s = m.newSession()) {
            var params = g.generationSpec().params(0);
            for (int i = 0; i < Math.min(n, 8); i++) s.generate(m.tokenizer().encode(prompts.get(i), true, false), params, null);   // warm-up
            long t1 = System.nanoTime();
            for (String p : prompts) {
                s.reset();
                GenerationResult r = s.generate(m.tokenizer().encode(p, true, false), params, null);
                loopTokens += r.generatedTokens().length;
            }
            loopSec = (System.nanoTime() - t1) / 1e9;
        }

        double cliSec = 0;
        for (int i = 0; i < cliPrompts; i++) {
            long t2 = System.nanoTime();
            SparkTestSupport.generate(model, "-p", prompts.get(i), "-n", Integer.toString(maxTokens), "--temp", "0", "--ignore-eos", "-t", Integer.toString(threads));
            cliSec += (System.nanoTime() - t2) / 1e9;
        }
        double cliPerPrompt = cliPrompts == 0 ? Double.NaN : cliSec / cliPrompts;

        System.out.printf("model %s, %d prompts x %d tokens, local[2], %d streams per task, %d threads, decode batching %s%n",
                model.getFileName(), n, maxTokens, streams, threads, batching);
        System.out.printf("spark transformer   : %7.2f prompts/s %8.1f tokens/s (%.2f s)%n", n / sparkSec, sparkTokens / sparkSec, sparkSec);
        System.out.printf("generate, in-process: %7.2f prompts/s %8.1f tokens/s (%.2f s)  -> spark/loop %.2fx%n", n / loopSec, loopTokens / loopSec,
                loopSec, (sparkTokens / sparkSec) / (loopTokens / loopSec));
        System.out.printf("generate, command   : %7.2f prompts/s %8.1f tokens/s (%.2f s per prompt, JVM and load included, %d prompts)  -> spark/command %.2fx%n",
                1 / cliPerPrompt, maxTokens / cliPerPrompt, cliPerPrompt, cliPrompts, (n / sparkSec) * cliPerPrompt);
    }

    private static int arg(String[] args, int i, int dflt) {
        return args.length > i ? Integer.parseInt(args[i]) : dflt;
    }
}
