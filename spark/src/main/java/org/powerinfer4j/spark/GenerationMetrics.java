package org.powerinfer4j.spark;

import java.io.Serializable;
import org.apache.spark.SparkContext;
import org.apache.spark.util.LongAccumulator;

/**
 * Named accumulators, shown per stage in the Spark UI while a job runs: prompts done, rows that failed, prompt tokens
 * evaluated and tokens generated. Registered on the driver; the tasks add to them.
 */
public record GenerationMetrics(LongAccumulator promptsDone, LongAccumulator rowsFailed, LongAccumulator promptTokens,
                                LongAccumulator tokensGenerated) implements Serializable {

    public static GenerationMetrics register(SparkContext sc) {
        return new GenerationMetrics(sc.longAccumulator("powerinfer4j prompts done"), sc.longAccumulator("powerinfer4j rows failed"),
                sc.longAccumulator("powerinfer4j prompt tokens"), sc.longAccumulator("powerinfer4j tokens generated"));
    }

    void record(Completion c) {
        promptsDone.add(1);
        if (c.error() != null) {
            rowsFailed.add(1);
            return;
        }
        promptTokens.add(c.promptTokens());
        tokensGenerated.add(c.completionTokens());
    }
}
