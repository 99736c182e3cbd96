package org.powerinfer4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's example runs as printed there (its code is {@link ReadmeExample}'s, checked by this test to be the README's). */
class ReadmeExampleTest {

    @Test
    void theReadmeExampleRunsOnParquetFiles(@TempDir Path dir) throws Exception {
        SparkSession spark = SparkTestSupport.spark();
        String tickets = dir.resolve("tickets.parquet").toString(), out = dir.resolve("labelled.parquet").toString();
        spark.createDataFrame(List.of(RowFactory.create(1, "my order is late"), RowFactory.create(2, "the app crashes")),
                new StructType().add("ticket", DataTypes.IntegerType).add("prompt", DataTypes.StringType)).write().parquet(tickets);

        ReadmeExample.run(spark, SparkTestSupport.STORIES.toString(), tickets, out);

        List<Row> rows = spark.read().parquet(out).orderBy("ticket").collectAsList();
        assertThat(rows).hasSize(2);
        assertThat(rows.get(0).schema().fieldNames()).containsExactly("ticket", "prompt", "completion", "prompt_tokens", "completion_tokens",
                "finish_reason", "error");
        for (Row r : rows) assertThat(r.getString(2)).isNotEmpty();
    }

    @Test
    void theReadmeShowsThisCode() throws Exception {
        String source = Files.readString(Path.of("src/test/java/org/powerinfer4j/spark/ReadmeExample.java"));
        String code = source.substring(source.indexOf("// README: begin\n") + 17, source.indexOf("        // README: end")).stripTrailing().stripIndent();
        String readme = Files.readString(Path.of("../README.md"));
        assertThat(readme).as("README.md's Spark example").contains(code);
    }
}
