package org.powerinfer4j.spark;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The SQL function, registered by one call:
 * <pre>{@code
 * PowerInferFunctions.register(spark, new PowerInferGenerator().setModelPath("/models/model.gguf").setMaxTokens(64));
 * spark.sql("SELECT g.completion, g.error FROM (SELECT powerinfer_generate(prompt, map('temperature', '0')) AS g FROM prompts)");
 * }</pre>
 * {@code powerinfer_generate(prompt, params)} returns a struct of {@code completion, prompt_tokens, completion_tokens,
 * finish_reason, error} (see {@link Completion}). {@code params} overrides the generator's settings for that row: NULL, a
 * {@code MAP<STRING, STRING>} or a JSON object string, with the keys of {@link GenerationSpec#PARAMETER_NAMES}
 * ({@code max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n, seed, stop, chat_template,
 * system_prompt, ignore_eos}). A bad parameter or prompt gives that row a null completion and an error, unless the
 * generator has {@code failOnError}. The model is the generator's, opened once per executor and shared with the
 * transformer's tasks. Rows are generated one at a time per task (SQL hands a function one row at a time); concurrent
 * tasks of an executor still share decode passes. For batches within a partition use {@link PowerInferGenerator}.
 */
public final class PowerInferFunctions {
    /** The function's name. */
    public static final String NAME = "powerinfer_generate";

    private PowerInferFunctions() {}

    /** Registers {@code powerinfer_generate(prompt, params)} in {@code spark} for the generator's model and settings. */
    public static GenerationMetrics register(SparkSession spark, PowerInferGenerator generator) {
        return register(spark, NAME, generator);
    }

    /** As {@link #register(SparkSession, PowerInferGenerator)}, under another name (for several models in one session). */
    public static GenerationMetrics register(SparkSession spark, String name, PowerInferGenerator generator) {
        ModelSpec model = generator.modelSpec();
        GenerationSpec defaults = generator.generationSpec();
        boolean failOnError = generator.getFailOnError();
        GenerationMetrics metrics = GenerationMetrics.register(spark.sparkContext());
        UDF2<String, Object, Row> fn = (prompt, params) -> {
            Completion c;
            GenerationSpec spec;
            try {
                spec = defaults.with(parameters(params));
            } catch (IllegalArgumentException e) {
                if (failOnError) throw e;
                c = Completion.failed(RowGenerator.oneLine(e));
                metrics.record(c);
                return RowFactory.create(c.values());
            }
            TaskContext task = TaskContext.get();
            c = RowGenerator.leased(ExecutorModels.get(model), prompt, spec, spec.seed(), failOnError, () -> task != null && task.isInterrupted());
            metrics.record(c);
            return RowFactory.create(c.values());
        };
        spark.udf().register(name, fn, Completion.structType());
        return metrics;
    }

    /** A row's {@code params} argument as key-value text: NULL, a SQL map, or a JSON object. */
    static Map<String, String> parameters(Object params) {
        if (params == null) return Map.of();
        if (params instanceof String json) return json.isBlank() ? Map.of() : GenerationSpec.parseJson(json);
        if (params instanceof scala.collection.Map<?, ?> m) {
            Map<String, String> out = new LinkedHashMap<>();
            CollectionConverters.asJava(m).forEach((k, v) -> out.put(String.valueOf(k), v == null ? null : String.valueOf(v)));
            return out;
        }
        throw new IllegalArgumentException("params must be NULL, a MAP<STRING, STRING> or a JSON object string, not " + params.getClass().getSimpleName());
    }
}
