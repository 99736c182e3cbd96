package org.powerinfer4j.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/** The README's Spark example, verbatim between the markers, so that it compiles and runs ({@link ReadmeExampleTest}). */
final class ReadmeExample {
    private ReadmeExample() {}

    static void run(SparkSession spark, String model, String ticketsPath, String outPath) {
        // README: begin
        Dataset<Row> tickets = spark.read().parquet(ticketsPath);          // a "prompt" column, any others kept
        PowerInferGenerator generator = new PowerInferGenerator()
                .setModelPath(model)                                        // a path every executor reads, or a cached model's name
                .setInputCol("prompt").setOutputCol("completion")
                .setMaxTokens(128).setTemperature(0).setChatTemplate(true);
        generator.transform(tickets)                                        // + completion, prompt_tokens, completion_tokens, finish_reason, error
                .write().mode("overwrite").parquet(outPath);

        PowerInferFunctions.register(spark, generator);                     // the same model and defaults in SQL
        spark.read().parquet(ticketsPath).createOrReplaceTempView("tickets");
        spark.sql("SELECT prompt, powerinfer_generate(prompt, map('max_tokens', '32')).completion AS summary FROM tickets").show();
        // README: end
    }
}
