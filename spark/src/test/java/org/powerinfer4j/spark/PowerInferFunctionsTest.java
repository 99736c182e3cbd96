package org.powerinfer4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

/** {@code powerinfer_generate(prompt, params)} in Spark SQL: the transformer's rows, per-row parameters, error rows. */
class PowerInferFunctionsTest {

    @Test
    void theSqlFunctionGivesTheTransformersRows() {
        SparkSession spark = SparkTestSupport.spark();
        PowerInferGenerator g = PowerInferGeneratorTest.generator();
        PowerInferFunctions.register(spark, g);
        PowerInferGeneratorTest.prompts(spark, 2, PowerInferGeneratorTest.PROMPTS).createOrReplaceTempView("prompts");
        Map<Integer, Row> expected = PowerInferGeneratorTest.byId(g.setSeedCol("seed").transform(spark.table("prompts")));

        Map<Integer, String> viaMap = texts(spark.sql("SELECT id, g.completion, g.error FROM (SELECT id, "
                + "powerinfer_generate(prompt, map('seed', CAST(seed AS STRING))) AS g FROM prompts)").collectAsList());
        Map<Integer, String> viaJson = texts(spark.sql("SELECT id, g.completion, g.error FROM (SELECT id, "
                + "powerinfer_generate(prompt, to_json(named_struct('seed', seed, 'max_tokens', 24))) AS g FROM prompts)").collectAsList());
        for (int i = 0; i < PowerInferGeneratorTest.PROMPTS.length; i++) {
            String want = expected.get(i).getString(expected.get(i).fieldIndex("completion"));
            assertThat(viaMap.get(i)).as("row %d, map params", i).isEqualTo(want);
            assertThat(viaJson.get(i)).as("row %d, JSON params", i).isEqualTo(want);
        }
    }

    @Test
    void theResultIsAStructWithTokenCountsAndFinishReason() {
        SparkSession spark = SparkTestSupport.spark();
        PowerInferFunctions.register(spark, PowerInferGeneratorTest.generator());
        Row r = spark.sql("SELECT powerinfer_generate('Once upon a time', map('max_tokens', '5', 'temperature', '0')) AS g").collectAsList().get(0).getStruct(0);
        assertThat(r.schema().fieldNames()).containsExactly("completion", "prompt_tokens", "completion_tokens", "finish_reason", "error");
        assertThat(r.getInt(2)).isEqualTo(5);
        assertThat(r.getString(3)).isEqualTo("length");
        assertThat(r.isNullAt(4)).isTrue();
    }

    @Test
    void aBadParameterGivesThatRowAnError() {
        SparkSession spark = SparkTestSupport.spark();
        PowerInferFunctions.register(spark, PowerInferGeneratorTest.generator());
        List<Row> rows = spark.sql("SELECT g.completion, g.error FROM (SELECT powerinfer_generate(p, params) AS g FROM VALUES "
                + "(1, 'Once upon a time', map('top_p', '2')), (2, 'Once upon a time', map('temprature', '0')), "
                + "(3, 'Once upon a time', map('max_tokens', 'many')), (4, 'Once upon a time', map('max_tokens', '3')) AS t(i, p, params) ORDER BY i)")
                .collectAsList();
        assertThat(rows.get(0).getString(1)).isEqualTo("top-p must be in [0, 1], is 2.0");
        assertThat(rows.get(1).getString(1)).startsWith("unknown parameter 'temprature' (known: max_tokens, temperature");
        assertThat(rows.get(2).getString(1)).isEqualTo("max_tokens must be an integer, not 'many'");
        for (int i = 0; i < 3; i++) assertThat(rows.get(i).isNullAt(0)).isTrue();
        assertThat(rows.get(3).isNullAt(1)).isTrue();
        assertThat(rows.get(3).getString(0)).isNotEmpty();

        assertThat(rowsError(spark)).startsWith("params are not valid JSON");
        PowerInferFunctions.register(spark, "strict_generate", PowerInferGeneratorTest.generator().setFailOnError(true));
        assertThatThrownBy(() -> spark.sql("SELECT strict_generate('x', map('top_p', '2'))").collectAsList()).hasMessageContaining("top-p must be in [0, 1]");
    }

    private static String rowsError(SparkSession spark) {
        return spark.sql("SELECT powerinfer_generate('x', 'not json').error").collectAsList().get(0).getString(0);
    }

    private static Map<Integer, String> texts(List<Row> rows) {
        Map<Integer, String> m = new TreeMap<>();
        for (Row r : rows) {
            assertThat(r.isNullAt(2)).as(r.toString()).isTrue();
            m.put(r.getInt(0), r.getString(1));
        }
        return m;
    }
}
